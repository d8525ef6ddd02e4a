/**
 * Energy meters. Every figure carries its grade (pool/1 §2.3), and the grade
 * is honest:
 *  - `rapl`: the CPU package counters under /sys/class/powercap. A counter read
 *    for this work is `HwShunt` only when the job ran alone; when other jobs
 *    overlapped, the device figure is split by time and graded `ModelBased`
 *    (a division is a model, §2.5).
 *  - `nvml`: `nvidia-smi --query-gpu=total_energy_consumption` (mJ since driver
 *    load), summed over GPUs; same grading as RAPL.
 *  - `estimator`: configured watts × the time this process ran the work, graded `Estimator`: the span's time on the
 *    monotonic clock less the time this process was frozen meanwhile (SIGSTOP, a paused VM: src/util/stall-watch.ts).
 *    Before, a provider stopped 30 s during a 5 s sleep claimed 3,580 J at 100 W for it (QA qaRep F4). A counter
 *    reading (rapl, nvml) is what the device drew over the span, frozen or not, and stays as read.
 * `auto` picks NVML when a GPU reports energy, else RAPL when readable, else
 * the estimator.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import type { Energy } from '../../records/kinds.js';
import { C0Error } from '../../errors.js';
import { StallWatch } from '../../util/stall-watch.js';

export interface MeterSpan {
  /** Stop the span and return the energy attributed to it. */
  stop(): Energy;
  /** The energy so far, graded as stop() would grade it now (for a steward's idle check, pool/1 §2.7). */
  sample(): Energy;
}

export interface Meter {
  readonly kind: 'rapl' | 'nvml' | 'estimator';
  start(): MeterSpan;
}

export interface MeterOptions {
  type?: 'auto' | 'rapl' | 'nvml' | 'estimator';
  /** Power draw assumed by the estimator, in watts. */
  estimatorWatts?: number;
  powercapRoot?: string;
  nvidiaSmi?: string;
  now?: () => number;
  /** The estimator's watch on this process's freezes (default: one on `now` when `now` is not given, else none). */
  stalls?: StallWatch;
}

/** Tracks overlapping spans so a shared-device figure is graded as the split it is. */
class Occupancy {
  active = 0;
  /** Spans ever started: a span that sees this change between its start and stop overlapped another. */
  started = 0;
}

abstract class CounterMeter implements Meter {
  abstract readonly kind: 'rapl' | 'nvml';
  private occ = new Occupancy();
  constructor(protected now: () => number) {}
  /** One counter per device domain, in µJ (each monotonic modulo its wrap range). */
  protected abstract read(): number[];
  /** Wrap range per domain (same order as read()); 0 or undefined when unknown. */
  protected abstract wrapRanges(): Array<number | undefined>;

  start(): MeterSpan {
    const e0 = this.read();
    // Another span still running when this one starts, or any span started before this one stops, overlaps it.
    const sharedAtStart = this.occ.active > 0;
    const started0 = ++this.occ.started;
    this.occ.active++;
    let stopped = false;
    const measure = (): Energy => {
      const shared = sharedAtStart || this.occ.started !== started0;
      const e1 = this.read();
      const ranges = this.wrapRanges();
      let total = 0;
      for (let i = 0; i < e1.length; i++) {
        let d = e1[i]! - (e0[i] ?? 0);
        const range = ranges[i];
        // A counter wraps per domain; a domain whose range is unknown contributes nothing rather than a negative figure.
        if (d < 0 && range) d += range;
        if (d > 0) total += d;
      }
      // A device counter divided between occupants is a model, never HwShunt (pool/1 §2.5).
      return { uj: Math.round(total), grade: shared ? 'ModelBased' : 'HwShunt' };
    };
    return {
      stop: (): Energy => {
        if (!stopped) {
          stopped = true;
          this.occ.active--;
        }
        return measure();
      },
      sample: measure,
    };
  }
}

export class RaplMeter extends CounterMeter {
  readonly kind = 'rapl' as const;
  private files: Array<{ energy: string; range: number }>;
  constructor(root: string, now: () => number) {
    super(now);
    this.files = raplDomains(root);
  }
  static available(root: string): boolean {
    try {
      const d = raplDomains(root);
      if (d.length === 0) return false;
      readFileSync(d[0]!.energy, 'utf8');
      return true;
    } catch {
      return false;
    }
  }
  protected read(): number[] {
    return this.files.map((f) => Number.parseInt(readFileSync(f.energy, 'utf8'), 10));
  }
  protected wrapRanges(): Array<number | undefined> {
    return this.files.map((f) => f.range || undefined);
  }
}

/** Top-level package domains only (intel-rapl:N), not their sub-zones, so nothing is counted twice. */
function raplDomains(root: string): Array<{ energy: string; range: number }> {
  let names: string[];
  try {
    names = readdirSync(root);
  } catch {
    return [];
  }
  return names
    .filter((n) => /^intel-rapl:[0-9]+$/.test(n))
    .sort()
    .map((n) => {
      let range = 0;
      try {
        range = Number.parseInt(readFileSync(join(root, n, 'max_energy_range_uj'), 'utf8'), 10);
      } catch {
        /* unknown range */
      }
      return { energy: join(root, n, 'energy_uj'), range };
    });
}

export class NvmlMeter extends CounterMeter {
  readonly kind = 'nvml' as const;
  constructor(
    private bin: string,
    now: () => number,
  ) {
    super(now);
  }
  static available(bin: string): boolean {
    try {
      return Number.isFinite(readNvml(bin));
    } catch {
      return false;
    }
  }
  protected read(): number[] {
    return [readNvml(this.bin)];
  }
  protected wrapRanges(): Array<number | undefined> {
    return [undefined];
  }
}

function readNvml(bin: string): number {
  const outText = execFileSync(bin, ['--query-gpu=total_energy_consumption', '--format=csv,noheader,nounits'], { timeout: 3000, encoding: 'utf8' });
  let mj = 0;
  for (const l of outText.split('\n')) {
    const v = Number.parseFloat(l.trim());
    if (Number.isFinite(v)) mj += v;
  }
  if (!outText.trim()) throw new Error('no GPU energy reported');
  return mj * 1000; // mJ → µJ
}

export class EstimatorMeter implements Meter {
  readonly kind = 'estimator' as const;
  /**
   * `now`: monotonic milliseconds; `stalls`: a watch on this process's freezes (on the same clock), whose time is left
   * out. An exec command's process group is not frozen with the daemon by a SIGSTOP of the daemon alone, so what it
   * did meanwhile goes unclaimed: the estimate errs low, never high.
   */
  constructor(
    private watts: number,
    private now: () => number,
    private stalls?: StallWatch,
  ) {}
  start(): MeterSpan {
    const t0 = this.now();
    const watch = this.stalls?.begin();
    const figure = (t: number, frozen: number): Energy => ({ uj: Math.round(this.watts * Math.max(0, t - t0 - frozen) * 1000), grade: 'Estimator' });
    let stopped: Energy | undefined;
    return {
      stop: () => {
        if (!stopped) {
          stopped = figure(this.now(), watch?.totalFreezeMs() ?? 0);
          watch?.end();
        }
        return stopped;
      },
      sample: () => stopped ?? figure(this.now(), watch?.totalFreezeMs() ?? 0),
    };
  }
}

export function createMeter(opts: MeterOptions = {}): Meter {
  const now = opts.now ?? (() => performance.now());
  const root = opts.powercapRoot ?? '/sys/class/powercap';
  const smi = opts.nvidiaSmi ?? 'nvidia-smi';
  const type = opts.type ?? 'auto';
  const watts = opts.estimatorWatts ?? 100;
  // A meter the operator asked for by name must be there: a missing counter
  // would otherwise read as 0 µJ graded HwShunt, a reading nobody took.
  if (type === 'nvml' && !NvmlMeter.available(smi)) throw new C0Error('METER_UNAVAILABLE', `meter type nvml: ${smi} reports no GPU energy on this machine (use auto or estimator)`, { field: 'provider.meter.type' });
  if (type === 'rapl' && !RaplMeter.available(root)) throw new C0Error('METER_UNAVAILABLE', `meter type rapl: no readable RAPL counters under ${root} (use auto or estimator)`, { field: 'provider.meter.type' });
  if (type === 'nvml' || (type === 'auto' && NvmlMeter.available(smi))) return new NvmlMeter(smi, now);
  if (type === 'rapl' || (type === 'auto' && RaplMeter.available(root))) return new RaplMeter(root, now);
  return new EstimatorMeter(watts, now, opts.stalls ?? (opts.now ? undefined : new StallWatch({ now })));
}
