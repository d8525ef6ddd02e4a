import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/**
 * Benchmark helpers. Targets are ratios against a baseline measured in the
 * same run, never absolute times (the machine is shared and noisy).
 */
export interface Rate {
  name: string;
  opsPerSec: number;
  /** ops per second of each repetition, for the spread */
  samples: number[];
}

/** Run `fn` repeatedly for about `ms`, `reps` times; report the median rate. */
export function measure(name: string, fn: () => void, opts: { ms?: number; reps?: number; batch?: number } = {}): Rate {
  const ms = opts.ms ?? 400;
  const reps = opts.reps ?? 5;
  const batch = opts.batch ?? 50;
  // warm up
  const warmEnd = performance.now() + Math.min(200, ms / 2);
  while (performance.now() < warmEnd) for (let i = 0; i < batch; i++) fn();
  const samples: number[] = [];
  for (let r = 0; r < reps; r++) {
    let n = 0;
    const t0 = performance.now();
    let t = t0;
    while (t - t0 < ms) {
      for (let i = 0; i < batch; i++) fn();
      n += batch;
      t = performance.now();
    }
    samples.push(n / ((t - t0) / 1000));
  }
  return { name, opsPerSec: median(samples), samples };
}

/** Time one call of an async or sync function, in ms. */
export async function timeOnce(fn: () => unknown): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

export function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

export function fmt(n: number): string {
  if (n >= 1e6) return (n / 1e6).toFixed(2) + 'M';
  if (n >= 1e4) return (n / 1e3).toFixed(1) + 'k';
  return n.toFixed(n >= 100 ? 0 : 2);
}

export function table(rows: Array<Record<string, string | number>>): string {
  if (rows.length === 0) return '';
  const cols = Object.keys(rows[0]!);
  const w = cols.map((c) => Math.max(c.length, ...rows.map((r) => String(r[c]).length)));
  const line = (vals: string[]) => vals.map((v, i) => v.padEnd(w[i]!)).join('  ');
  return [line(cols), line(w.map((x) => '-'.repeat(x))), ...rows.map((r) => line(cols.map((c) => String(r[c]))))].join('\n');
}

export interface BenchResult {
  /** Lines printed for people. */
  report: string;
  /** Targets checked: name, measured ratio, target, met. */
  targets: Array<{ name: string; ratio: number; target: number; met: boolean }>;
}

setFlagsFromString('--expose-gc');
const fullGc = runInNewContext('gc') as (() => void) | undefined;

/**
 * A full garbage collection, so a measurement does not start while the collector
 * is still marking what building the fixture left behind (the figures of the
 * first measurement after a large fixture otherwise depend on it).
 */
export function settle(): void {
  fullGc?.();
}

/**
 * Fastest of `reps` timed calls (the machine is shared: the minimum is the least
 * noisy estimate; both sides use it), after a warm-up of at least 3 calls and
 * 150 ms, so a sub-millisecond call is timed in optimised code, not while the
 * optimising compiler is still at work on the other core.
 */
export function timeMs(fn: () => unknown, reps: number): number {
  const warmEnd = performance.now() + 150;
  for (let i = 0; i < 3 || performance.now() < warmEnd; i++) fn();
  const xs: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    fn();
    xs.push(performance.now() - t0);
  }
  return Math.min(...xs);
}
