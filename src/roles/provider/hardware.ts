/**
 * Hardware detection for the provider's advert: CPU cores and memory from the
 * OS, GPUs from `nvidia-smi` when present. Config overrides any detected figure.
 */
import { execFile } from 'node:child_process';
import { availableParallelism, totalmem } from 'node:os';
import type { Gpu, Hardware } from '../../records/kinds.js';

export interface DetectOptions {
  /** Path or name of nvidia-smi; false to skip GPU detection. */
  nvidiaSmi?: string | false;
  timeoutMs?: number;
}

export async function detectHardware(opts: DetectOptions = {}): Promise<Hardware> {
  const hw: Hardware = { cpuCores: availableParallelism(), memoryMiB: Math.floor(totalmem() / (1024 * 1024)) };
  if (opts.nvidiaSmi !== false) {
    const gpus = await detectNvidia(opts.nvidiaSmi ?? 'nvidia-smi', opts.timeoutMs ?? 5000);
    if (gpus.length) hw.gpus = gpus;
  }
  return hw;
}

/** Query nvidia-smi; returns [] when it is absent or fails. Identical cards are grouped with a count. */
export async function detectNvidia(bin: string, timeoutMs: number): Promise<Gpu[]> {
  const text = await new Promise<string | undefined>((resolve) => {
    execFile(bin, ['--query-gpu=name,memory.total,compute_cap', '--format=csv,noheader,nounits'], { timeout: timeoutMs }, (err, stdout) => {
      resolve(err ? undefined : stdout);
    });
  });
  return text === undefined ? [] : parseNvidiaSmi(text);
}

export function parseNvidiaSmi(text: string): Gpu[] {
  const groups = new Map<string, Gpu>();
  for (const line of text.split('\n')) {
    const parts = line.split(',').map((s) => s.trim());
    if (parts.length < 2 || !parts[0]) continue;
    const model = parts[0].replace(/[^\x20-\x7e]/g, '').slice(0, 64);
    const vramMiB = Number.parseInt(parts[1]!, 10);
    if (!Number.isSafeInteger(vramMiB) || vramMiB <= 0) continue;
    const cc = parts[2] && /^[0-9]+\.[0-9]+$/.test(parts[2]) ? `sm${parts[2].replace('.', '')}` : undefined;
    const features = ['cuda', ...(cc ? [cc] : [])].sort();
    const key = `${model}|${vramMiB}|${features.join(',')}`;
    const g = groups.get(key);
    if (g) g.count++;
    else groups.set(key, { model, vramMiB, features, count: 1 });
  }
  return [...groups.values()].sort((a, b) => (a.model < b.model ? -1 : a.model > b.model ? 1 : a.vramMiB - b.vramMiB));
}

/** Apply config overrides on top of detected hardware (any given field replaces the detected one). */
export function mergeHardware(detected: Hardware, override: Partial<Hardware> | undefined): Hardware {
  if (!override) return detected;
  const out: Hardware = { ...detected, ...Object.fromEntries(Object.entries(override).filter(([, v]) => v !== undefined)) };
  if (out.gpus && out.gpus.length === 0) delete out.gpus;
  return out;
}
