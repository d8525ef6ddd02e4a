/**
 * A training worker's status (docs/training.md "Status"; spec/compute-pool.md,
 * the worker in training mode): the view `c0mpute train status`, the devnet
 * training scenario and a provider's member job read, and its file
 * `status.json`. Part of src/roles/trainer/worker.ts.
 *
 * - `Contributions`: step commitments counted per member over the current
 *   view's epochs and every committed epoch, kept as each commitment is
 *   counted (never rebuilt over the epochs kept).
 * - `StatusFile`: written at once at join, epoch ends, view changes and the
 *   finish; while steps run, at most every `everyMs` of the worker's
 *   monotonic clock (a wall clock stepped back would stop the writes as long).
 */
import { z } from 'zod';
import { C0Error } from '../../errors.js';
import { baselineAccuracy, iris } from '../../training/data.js';
import { addressOf } from '../../training/engine.js';
import { weightsBytes } from '../../training/model.js';
import type { TrainerWorker } from './worker.js';
import { replaceFile } from './record-file.js';
import { processStart } from '../../node/daemon-info.js';
export { interruptedPid } from './worker-gone.js';

/** Default least interval between two step-time writes of status.json, ms. */
export const STATUS_EVERY_MS = 250;

/** An epoch's aggregator key: `${view}:${epoch}`. */
const viewOf = (key: string): number => Number(key.slice(0, key.indexOf(':')));

export class Contributions {
  readonly #total = new Map<string, number>();
  /** What each aggregator not (yet) committed counted, per member: taken back if its view ends uncommitted. */
  readonly #open = new Map<string, Map<string, number>>();
  readonly #committed = new Set<string>();

  #add(member: string, n: number): void {
    const v = (this.#total.get(member) ?? 0) + n;
    if (v === 0) this.#total.delete(member);
    else this.#total.set(member, v);
  }

  /** The aggregator `key` counted a step commitment of `member`. */
  counted(key: string, member: string): void {
    this.#add(member, 1);
    if (this.#committed.has(key)) return;
    let per = this.#open.get(key);
    if (!per) this.#open.set(key, (per = new Map()));
    per.set(member, (per.get(member) ?? 0) + 1);
  }

  /** The epoch of aggregator `key` is committed: its counts stay, whatever view comes next. */
  committed(key: string): void {
    this.#committed.add(key);
    this.#open.delete(key);
  }

  /** The membership view is now `view`: what earlier views' uncommitted epochs counted no longer counts. */
  viewChanged(view: number): void {
    for (const [key, per] of this.#open) {
      if (viewOf(key) === view) continue;
      for (const [m, n] of per) this.#add(m, -n);
      this.#open.delete(key);
    }
  }

  /** Per member DID (sorted), the commitments counted. */
  view(): Record<string, number> {
    return Object.fromEntries([...this.#total].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)));
  }
}

/** This process's start (daemon-info.ts processStart), read once: written beside its pid. */
const SELF_START = processStart('self');

/** The committed epochs status.json (and a member job's output) lists: the last ones; `epochsCommitted` counts them all. */
export const STATUS_EPOCHS = 50;

/** What status.json shows, as the worker holds it. */
export type StatusSource = Pick<TrainerWorker, 'runAddr' | 'rec' | 'status' | 'stopReason' | 'view' | 'members' | 'dropped' | 'losses' | 'epochs' | 'views' | 'ignoredCount' | 'ignored' | 'state' | 'accuracy'>;

export function statusView(w: StatusSource, more: { self: string; stepsPerSec: number; contributions: Record<string, number> }): Record<string, unknown> {
  return {
    run: w.runAddr,
    name: w.rec.name,
    self: more.self,
    status: w.status,
    // the process writing it: a `joining`/`training` status whose process is gone was interrupted (interruptedPid)
    pid: process.pid,
    // and when it started, as the kernel counts it: a later process given the same pid is not this one
    ...(SELF_START === undefined ? {} : { procStart: SELF_START }),
    ...(w.stopReason ? { stopReason: w.stopReason } : {}),
    view: w.view,
    members: w.members,
    dropped: w.dropped,
    step: w.losses.length ? w.losses[w.losses.length - 1]!.step : -1,
    totalSteps: w.rec.epochs * w.rec.stepsPerEpoch,
    stepsPerSec: more.stepsPerSec,
    losses: w.losses.slice(-50),
    contributions: more.contributions,
    // the committed epochs: how many, and the last STATUS_EPOCHS of them (each is in epochs/<e>.json): the file is
    // rewritten at every epoch's end, so a list of every epoch grew it without bound (QA ffTrainDay2 F2: 618 KB after 1,500 epochs,
    // about 4 MB a write at the 10,000 epochs a run may ask for, more with many witnesses per epoch)
    epochsCommitted: w.epochs.length,
    epochs: w.epochs.slice(-STATUS_EPOCHS).map((e) => ({ epoch: e.epoch, view: e.view, root: e.root, address: e.address, coordinator: e.coordinator, witnesses: e.witnesses.map((x) => x.did) })),
    views: w.views,
    ignored: { count: w.ignoredCount, recent: w.ignored.slice(-20) },
    weights: addressOf(weightsBytes(w.state.w)),
    ...(w.accuracy !== undefined ? { accuracy: w.accuracy, baseline: baselineAccuracy(iris().test) } : {}),
  };
}

/** status.json: written now, or (a step) only when `everyMs` have passed on the (monotonic) clock since the last write. */
export class StatusFile {
  #last = -Infinity;

  constructor(
    private readonly path: string,
    private readonly view: () => Record<string, unknown>,
    /** The monotonic clock (TrainerOptions.monoClock): the cadence is a duration, never compared with a record's time. */
    private readonly clock: () => number,
    private readonly everyMs = STATUS_EVERY_MS,
  ) {}

  /** Join, an epoch's end, a view change, the finish: written now. */
  write(): void {
    this.#last = this.clock();
    replaceFile(this.path, JSON.stringify(this.view(), null, 2));
  }

  /** A step: written if the last write is at least `everyMs` old. */
  step(): void {
    if (this.clock() - this.#last >= this.everyMs) this.write();
  }
}

/** status.json as `train status` reads it: the fields it shows, the others kept as they are. */
const statusFileSchema = z
  .object({
    run: z.string(),
    name: z.string(),
    status: z.string(),
    // `worker`: the worker's own reason, beside the receipt's code the node's recovery put first (run-dirs.ts)
    stopReason: z.object({ code: z.string(), worker: z.object({ code: z.unknown() }).passthrough().nullable().optional() }).passthrough().optional(),
    view: z.number(),
    step: z.number(),
    totalSteps: z.number(),
    stepsPerSec: z.number(),
    losses: z.array(z.object({ step: z.number(), loss: z.number() }).passthrough()),
    contributions: z.record(z.string(), z.number()),
    epochs: z.array(z.object({ epoch: z.number(), root: z.string(), coordinator: z.string(), witnesses: z.array(z.string()) }).passthrough()),
    // absent in a status written before the list was bounded (it then listed every epoch)
    epochsCommitted: z.number().optional(),
    ignored: z.object({ count: z.number() }).passthrough(),
    // absent in a status written before views were kept
    views: z.array(z.object({ view: z.number(), members: z.array(z.string()), dropped: z.array(z.string()), resumeEpoch: z.number(), cause: z.string(), silent: z.string().optional() }).passthrough()).optional(),
    weights: z.string(),
    pid: z.number().optional(),
    procStart: z.string().optional(),
    accuracy: z.number().optional(),
    baseline: z.number().optional(),
  })
  .passthrough();

export type StatusFileView = z.infer<typeof statusFileSchema>;

/**
 * A run's status.json read back (`train status`): one that is not JSON or not a worker's status (torn by hand, another
 * file put there) is TRAIN_STATUS_UNREADABLE naming the file and the field, not an internal error. The worker writes it
 * whole by a rename (record-file.ts replaceFile), so a run of this build never leaves one half written.
 */
export function parseStatusFile(text: string, path: string): StatusFileView {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new C0Error('TRAIN_STATUS_UNREADABLE', `${path}: not JSON (${(e as Error).message.slice(0, 80)}); not a worker's status`, { field: 'status.json', detail: { path } });
  }
  const p = statusFileSchema.safeParse(raw);
  if (!p.success) {
    const i = p.error.issues[0]!;
    throw new C0Error('TRAIN_STATUS_UNREADABLE', `${path}: not a worker's status (${i.path.join('.') || 'the file'}: ${i.message})`, { field: 'status.json', detail: { path } });
  }
  return p.data;
}

