/**
 * Pipeline mode (spec/compute-pool.md, the worker in pipeline mode;
 * docs/training.md "Pipeline"): the model's layers split into contiguous
 * stages, each stage a function from activations to activations, and a
 * GPipe-style schedule: the batch is cut into micro-batches, every stage
 * works through them in order one at a time, and micro-batch m+1 enters a
 * stage while m is in the next, so all stages are busy at once. Each row's
 * arithmetic is the same whatever batch it travels in (layerForward works row
 * by row in a fixed order), so the output equals a single-process forward pass
 * bit for bit. The stage runners are a port: local functions or remote stages
 * over `/c0mpute/pipeline/1` (src/training/pipeline-net.ts).
 */
import { C0Error } from '../errors.js';
import { layerForward, type MlpShape } from './model.js';

/** Layer ranges [from, to) for `stages` contiguous stages (the first stages take the extra layer). */
export function partition(shape: MlpShape, stages: number): Array<[number, number]> {
  const L = shape.layers.length - 1;
  if (!Number.isInteger(stages) || stages < 1 || stages > L) throw new C0Error('PIPELINE_STAGES_INVALID', `stages must be 1 to ${L} for this model`, { field: 'stages' });
  const out: Array<[number, number]> = [];
  for (let k = 0; k < stages; k++) out.push([Math.floor((k * L) / stages), Math.floor(((k + 1) * L) / stages)]);
  return out;
}

/**
 * What a stage of layers [from, to) serves, as the stage and the driver say it (docs/training.md "Pipeline"): the
 * layers by their numbers, both ends included, and the widths they go through, e.g. `layer 0 of 2 (4→16)`,
 * `layers 1–2 of 3 (16→16→3)`. Layer l maps width l to width l+1. Before (QA qaTrn F9), the half-open range was
 * printed as `layers 0–1` and `1–2`, which read as if adjacent stages shared a layer.
 */
export function servesText(shape: MlpShape, range: [number, number]): string {
  const L = shape.layers.length - 1;
  const [from, to] = range;
  const widths = shape.layers.slice(from, to + 1).join('→');
  return to - from === 1 ? `layer ${from} of ${L} (${widths})` : `layers ${from}–${to - 1} of ${L} (${widths})`;
}

/** Forward through layers [from, to) on a batch. */
export function stageForward(shape: MlpShape, w: Float64Array, range: [number, number], x: Float64Array, batch: number): Float64Array {
  let a = x;
  for (let l = range[0]; l < range[1]; l++) a = layerForward(shape, w, l, a, batch);
  return a;
}

/** The index of the first value of `a` that is not finite (±Infinity, NaN), or -1. */
export function firstNonFinite(a: Float64Array): number {
  for (let i = 0; i < a.length; i++) if (!Number.isFinite(a[i]!)) return i;
  return -1;
}

/**
 * stageForward, refusing a layer whose output is not finite (PIPELINE_OUTPUT_NOT_FINITE naming the layer and the row
 * of the batch, `detail.layer`, `detail.row`): float64 overflowed (inputs around 1e308), and JSON cannot carry the
 * value on. Before (QA qaTrn F5), such a row came back as Infinity, printed as `null` by `train infer --json`, exit 0.
 */
export function stageForwardFinite(shape: MlpShape, w: Float64Array, range: [number, number], x: Float64Array, batch: number): Float64Array {
  let a = x;
  for (let l = range[0]; l < range[1]; l++) {
    a = layerForward(shape, w, l, a, batch);
    const i = firstNonFinite(a);
    if (i >= 0) {
      const width = shape.layers[l + 1]!;
      const row = Math.floor(i / width);
      throw new C0Error('PIPELINE_OUTPUT_NOT_FINITE', `layer ${l} (widths ${shape.layers[l]}→${width}) gave ${a[i]} for row ${row} of the micro-batch: float64 overflowed; scale the input down`, { detail: { layer: l, row } });
    }
  }
  return a;
}

export type StageRunner = (x: Float64Array, batch: number, microBatch: number) => Promise<Float64Array>;

/** One stage works on one micro-batch at a time, in arrival order. */
export function serial(run: StageRunner): StageRunner {
  let tail: Promise<unknown> = Promise.resolve();
  return (x, batch, mb) => {
    const p = tail.then(() => run(x, batch, mb));
    tail = p.catch(() => {});
    return p;
  };
}

/** Bounds of a stage server's compute queue (StageQueue): requests waiting or running, per caller and in all. */
export const STAGE_QUEUE = {
  /** per caller: the requests one caller may have held at a stage (serveStage counts them waiting, computed or forwarding); half the streams one connection may carry (PIPELINE_LIMITS.maxInboundStreams) */
  perCaller: 64,
  total: 256,
};

interface QueuedWork {
  caller: string;
  signal: AbortSignal | undefined;
  work: () => Promise<unknown> | unknown;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

/**
 * A stage server's compute queue: one micro-batch at a time, like `serial`,
 * but bounded and fair. A caller may have at most `perCaller` requests waiting
 * or running, and all callers together `total`; one more is refused at once
 * with PIPELINE_BUSY (`detail.scope` caller | total). Callers take turns (each
 * one's requests in arrival order), so one caller's backlog does not hold up
 * the others; and a request whose caller left while it waited (its signal
 * aborted: the stream's deadline, or the caller reset it) is not computed
 * (PIPELINE_CALLER_LEFT).
 */
export class StageQueue {
  readonly #waiting = new Map<string, QueuedWork[]>();
  readonly #held = new Map<string, number>();
  #count = 0;
  #running = false;
  constructor(private readonly limits: typeof STAGE_QUEUE = STAGE_QUEUE) {}

  /** Requests waiting or running, in all. */
  get size(): number {
    return this.#count;
  }

  run<T>(caller: string, signal: AbortSignal | undefined, work: () => Promise<T> | T): Promise<T> {
    const mine = this.#held.get(caller) ?? 0;
    if (mine >= this.limits.perCaller) return Promise.reject(new C0Error('PIPELINE_BUSY', `this caller has ${mine} requests waiting or running at this stage, at most ${this.limits.perCaller}`, { detail: { scope: 'caller' } }));
    if (this.#count >= this.limits.total) return Promise.reject(new C0Error('PIPELINE_BUSY', `this stage has ${this.#count} requests waiting or running, at most ${this.limits.total}`, { detail: { scope: 'total' } }));
    this.#held.set(caller, mine + 1);
    this.#count++;
    return new Promise<T>((resolve, reject) => {
      const q = this.#waiting.get(caller) ?? [];
      q.push({ caller, signal, work, resolve: resolve as (v: unknown) => void, reject });
      this.#waiting.set(caller, q);
      void this.#pump();
    });
  }

  /** The next request: the first of the caller whose turn it is; that caller goes to the back of the turns. */
  #next(): QueuedWork | undefined {
    for (const [caller, q] of this.#waiting) {
      const w = q.shift();
      this.#waiting.delete(caller);
      if (q.length) this.#waiting.set(caller, q);
      if (w) return w;
    }
    return undefined;
  }

  async #pump(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    try {
      for (let w = this.#next(); w; w = this.#next()) {
        try {
          if (w.signal?.aborted) throw new C0Error('PIPELINE_CALLER_LEFT', 'the caller left before its turn: not computed');
          w.resolve(await w.work());
        } catch (e) {
          w.reject(e);
        } finally {
          this.#count--;
          const n = (this.#held.get(w.caller) ?? 1) - 1;
          if (n > 0) this.#held.set(w.caller, n);
          else this.#held.delete(w.caller);
        }
      }
    } finally {
      this.#running = false;
    }
  }
}

/**
 * Run `x` ([batch][inWidth]) through the stages in `micro` micro-batches (micro = 1: no micro-batching, one whole
 * batch at a time). Returns [batch][outWidth]. `inFlight` bounds how many micro-batches are out at once (default: all
 * of them): the next one is sent as soon as one comes back, in order, so a remote stage is never asked to hold more of
 * one caller's requests than its bound (PIPELINE_BUSY; docs/training.md "Driving it"). After a failure no further
 * micro-batch is sent.
 */
export async function gpipeForward(stages: StageRunner[], x: Float64Array, batch: number, inWidth: number, outWidth: number, micro: number, opts: { serialise?: boolean; inFlight?: number } = {}): Promise<Float64Array> {
  const m = Math.max(1, Math.min(micro, batch));
  // Local stages are serialised here; remote stages serialise themselves (src/training/pipeline-net.ts).
  const serialStages = opts.serialise === false ? stages : stages.map(serial);
  const out = new Float64Array(batch * outWidth);
  let nextK = 0;
  let failed = false;
  const one = async (k: number): Promise<void> => {
    const a = Math.floor((k * batch) / m);
    const b = Math.floor(((k + 1) * batch) / m);
    if (b === a) return;
    let act: Float64Array = x.slice(a * inWidth, b * inWidth);
    for (const s of serialStages) act = await s(act, b - a, k);
    if (act.length !== (b - a) * outWidth) {
      // said as widths (a stage left out, or a model other than --layers), not only counts (QA qaTrn F8: 'stage output of 32 values, expected 6')
      const w = act.length / (b - a);
      const width = Number.isInteger(w) ? `${w} wide` : `${act.length} values for ${b - a} rows`;
      throw new C0Error('PIPELINE_BAD_OUTPUT', `the last stage's output is ${width}, the model's output (its last layer) ${outWidth}: a stage is missing after the last one given, or the stages serve another model than --layers (stage output of ${act.length} values, expected ${(b - a) * outWidth})`, { detail: { width: w, expected: outWidth } });
    }
    out.set(act, a * outWidth);
  };
  // `lanes` workers each take the next micro-batch in order once theirs is back
  const lane = async (): Promise<void> => {
    while (!failed && nextK < m) {
      const k = nextK++;
      try {
        await one(k);
      } catch (e) {
        failed = true;
        throw e;
      }
    }
  };
  const lanes = Math.max(1, Math.min(m, opts.inFlight ?? m));
  await Promise.all(Array.from({ length: lanes }, lane));
  return out;
}

export function localStages(shape: MlpShape, w: Float64Array, stages: number): StageRunner[] {
  return partition(shape, stages).map((r) => async (x, batch) => stageForward(shape, w, r, x, batch));
}
