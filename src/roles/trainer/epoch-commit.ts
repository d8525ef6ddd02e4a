/**
 * An epoch's commitment (spec/compute-pool.md, the worker in training mode;
 * docs/training.md "Epoch roots"): the elected coordinator
 * finalises the epoch's EpochAggregator, signs the epoch commitment, asks the
 * other members (or the run's named witnesses among them) to countersign it
 * and sends the result to every member; a member asked to witness recomputes
 * the root from the step commitments it holds and countersigns only the
 * elected coordinator's commitment with the same root and weights, once per
 * (view, epoch). Part of src/roles/trainer/worker.ts.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { C0Error } from '../../errors.js';
import type { Ed25519Signer } from '../../records/ed25519.js';
import { open, seal, type Opened } from '../../records/envelope.js';
import type { Clock } from '../../util/clock.js';
import { electCoordinator, type EpochAggregator } from '../../training/aggregator.js';
import { TRAIN_T, type TrainEpoch, type TrainRun, type TrainWitness } from '../../training/record-kinds.js';
import type { TrainWire } from '../../training/transport.js';
import { writeRecord } from './record-file.js';
import { makeDirs } from '../../util/make-dirs.js';

export interface EpochResult {
  epoch: number;
  view: number;
  address: string;
  root: string;
  coordinator: string;
  envelope: string;
  witnesses: Array<{ did: string; address: string; envelope: string }>;
  leaves: string[];
}

/** What an epoch's commitment needs of its worker. */
export interface EpochParty {
  runAddr: string;
  rec: TrainRun;
  did: string;
  signer: Ed25519Signer;
  /** The wall clock: signedAt, witnessedAt. */
  clock: Clock;
  /** The monotonic clock: how long an epoch waits for step commitments. */
  mono: Clock;
  /** What changes as the run goes (a view change): read when a commitment starts. */
  live(): { wire: TrainWire; view: number; members: string[]; dropped: string[] };
  /** The weights address this worker reached after (view, step). */
  ownWeights(view: number, step: number): string | undefined;
  /** The aggregator of (view, epoch), only within the window of epochs this worker holds state for (else TRAIN_EPOCH_OUT_OF_WINDOW, nothing created). */
  agg(view: number, epoch: number): EpochAggregator;
  /** `did` did something no honest member does (`code`): leave it out of the next view. */
  fault?(did: string, code: string): void;
}

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

/** The epoch's root once every member's step commitments are in, trying every 20 ms until the run's timeout (then its error), timed on `mono` (the monotonic clock: a step of the wall clock never stretches the wait). */
export async function finalised(agg: EpochAggregator, mono: Clock, timeoutMs: number): Promise<ReturnType<EpochAggregator['finalise']>> {
  const deadline = mono() + timeoutMs;
  for (;;) {
    try {
      return agg.finalise();
    } catch (e) {
      if (mono() > deadline) throw e;
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}

/** The coordinator's side: finalise, sign, collect countersignatures, send the result to every member. */
export async function commitEpoch(p: EpochParty, epoch: number, agg: EpochAggregator): Promise<EpochResult> {
  const { wire, members, dropped } = p.live();
  const fin = await finalised(agg, p.mono, p.rec.timeoutMs);
  const s = agg.scope;
  const rec: TrainEpoch = {
    run: p.runAddr,
    epoch,
    view: s.view,
    fromStep: s.fromStep,
    toStep: s.toStep,
    members,
    leaves: fin.leaves.length,
    root: fin.root,
    weights: p.ownWeights(s.view, s.toStep)!,
    ...(dropped.length ? { dropped: [...dropped].sort() } : {}),
    signedAt: p.clock(),
  };
  const env = seal(TRAIN_T.epoch, rec as never, p.signer);
  const named = p.rec.witnesses?.filter((w) => members.includes(w) && w !== p.did);
  const witnesses = named ?? members.filter((d) => d !== p.did);
  const got = await Promise.allSettled(witnesses.map((w) => wire.send(w, { k: 'witness' }, env.bytes, p.rec.timeoutMs * 2).then((frames) => ({ w, frames }))));
  const cosigned: EpochResult['witnesses'] = [];
  for (const g of got) {
    if (g.status !== 'fulfilled') continue;
    const b = g.value.frames[0];
    if (!(b instanceof Uint8Array)) continue;
    try {
      const wo = open(b, TRAIN_T.witness) as Opened<TrainWitness>;
      if (wo.signer === g.value.w && wo.record.epochCommitment === env.address && wo.record.root === rec.root) cosigned.push({ did: wo.signer, address: wo.address, envelope: hex(b) });
    } catch {
      /* a bad countersignature is not kept */
    }
  }
  const result: EpochResult = { epoch, view: s.view, address: env.address, root: rec.root, coordinator: p.did, envelope: hex(env.bytes), witnesses: cosigned, leaves: fin.leaves };
  const body = new TextEncoder().encode(JSON.stringify({ ...result, leaves: [] }));
  await Promise.allSettled(members.filter((d) => d !== p.did).map((d) => wire.send(d, { k: 'final', tag: `final/v${s.view}/e${epoch}` }, body, p.rec.timeoutMs)));
  return result;
}

/**
 * Why an epoch commitment does not say what epoch `e.epoch` was for this
 * worker, or undefined when it does: its step range is the epoch's own
 * ([epoch × stepsPerEpoch, + stepsPerEpoch − 1]), the epoch is one of the
 * run's, `leaves` is members × steps, `weights` is this worker's own after the
 * last step in that view, and `dropped` is this worker's (sorted; none
 * recorded as an empty list). The root is checked apart (recomputed).
 */
export function epochMismatch(p: Pick<EpochParty, 'rec' | 'ownWeights'>, e: TrainEpoch, dropped: string[]): string | undefined {
  const spe = p.rec.stepsPerEpoch;
  if (!Number.isSafeInteger(e.epoch) || e.epoch < 0 || e.epoch >= p.rec.epochs) return `epoch ${e.epoch} is not one of the run’s ${p.rec.epochs}`;
  if (e.fromStep !== e.epoch * spe || e.toStep !== e.fromStep + spe - 1) return `steps ${e.fromStep}–${e.toStep} are not epoch ${e.epoch}’s (${e.epoch * spe}–${e.epoch * spe + spe - 1})`;
  if (e.leaves !== e.members.length * spe) return `${e.leaves} leaves, not members × steps (${e.members.length * spe})`;
  if (p.ownWeights(e.view, e.toStep) !== e.weights) return `weights after the epoch ${e.weights} are not the ones reached here after step ${e.toStep}`;
  const mine = [...dropped].sort().join();
  if ((e.dropped ?? []).join() !== mine) return `dropped [${(e.dropped ?? []).join(', ')}] is not this member’s [${mine}]`;
  return undefined;
}

/** A member's side: countersign an epoch commitment when it is the elected coordinator's, says what its epoch was (`epochMismatch`) and its root is the one this worker computes. */
export class Witness {
  /** (view:epoch) → the root countersigned */
  readonly #witnessed = new Map<string, string>();
  readonly #dir: string | undefined;

  /** With `dir`, every root countersigned is kept in `<dir>/witnessed/<view>-<epoch>.json` (synced before the countersignature is returned) and read back here, so a restart does not forget it. */
  constructor(
    private readonly p: EpochParty,
    dir?: string,
  ) {
    this.#dir = dir === undefined ? undefined : join(dir, 'witnessed');
    if (!this.#dir) return;
    // a refusal is DATA_DIR_UNWRITABLE, as for the run's records (record-file.ts); not mkdirSync's recursive form, which never returns under /proc (src/util/make-dirs.ts)
    makeDirs(this.#dir, { code: 'DATA_DIR_UNWRITABLE', field: 'dataDir', what: `cannot write ${this.#dir}` });
    for (const f of readdirSync(this.#dir)) {
      const m = /^(0|[1-9]\d*)-(0|[1-9]\d*)\.json$/.exec(f);
      if (!m) continue;
      const { root } = JSON.parse(readFileSync(join(this.#dir, f), 'utf8')) as { root?: unknown };
      if (typeof root === 'string') this.#witnessed.set(`${m[1]}:${m[2]}`, root);
    }
  }

  /** Keep `root` as the one countersigned for (view, epoch), on disk first; a different root already kept is TRAIN_WITNESS_CONFLICT. */
  remember(view: number, epoch: number, root: string, commitment?: string): void {
    const key = `${view}:${epoch}`;
    const held = this.#witnessed.get(key);
    if (held === root) return;
    if (held) throw new C0Error('TRAIN_WITNESS_CONFLICT', `already witnessed root ${held} for view ${view}, epoch ${epoch}`);
    if (this.#dir) {
      const path = join(this.#dir, `${view}-${epoch}.json`);
      if (existsSync(path)) throw new C0Error('TRAIN_WITNESS_CONFLICT', `${path} already holds a root for view ${view}, epoch ${epoch}`);
      writeRecord(path, new TextEncoder().encode(JSON.stringify({ view, epoch, root, ...(commitment ? { epochCommitment: commitment } : {}) })));
    }
    this.#witnessed.set(key, root);
  }

  async countersign(from: string, payload: Uint8Array): Promise<Uint8Array> {
    const p = this.p;
    const ep = open(payload, TRAIN_T.epoch) as Opened<TrainEpoch>;
    const e = ep.record;
    if (ep.signer !== from || e.run !== p.runAddr) throw new C0Error('TRAIN_WITNESS_REFUSED', 'epoch commitment for another run or not signed by the sender');
    if (electCoordinator(p.runAddr, e.epoch, e.members) !== ep.signer) throw new C0Error('TRAIN_WITNESS_NOT_COORDINATOR', 'the signer is not the elected coordinator of this epoch');
    const key = `${e.view}:${e.epoch}`;
    const held = this.#witnessed.get(key);
    if (held && held !== e.root) throw new C0Error('TRAIN_WITNESS_CONFLICT', 'already witnessed another root for this epoch');
    const { view, members, dropped } = p.live();
    if (e.view !== view || e.members.join() !== members.join()) throw new C0Error('TRAIN_WITNESS_REFUSED', 'epoch commitment for another membership view');
    const range = e.fromStep === e.epoch * p.rec.stepsPerEpoch && e.toStep === e.fromStep + p.rec.stepsPerEpoch - 1;
    if (!range) throw new C0Error('TRAIN_WITNESS_REFUSED', `epoch commitment: steps ${e.fromStep}–${e.toStep} are not epoch ${e.epoch}’s`);
    let agg: EpochAggregator;
    try {
      agg = p.agg(e.view, e.epoch);
    } catch (err) {
      // the elected coordinator signed a commitment for an epoch ahead of this one: no honest member does (the epoch's ring needs this member)
      if (err instanceof C0Error && err.code === 'TRAIN_EPOCH_OUT_OF_WINDOW' && err.detail?.ahead === true) p.fault?.(from, err.code);
      throw err;
    }
    const mine = await finalised(agg, p.mono, p.rec.timeoutMs);
    if (mine.root !== e.root) throw new C0Error('TRAIN_WITNESS_ROOT_MISMATCH', `root ${e.root} differs from the one recomputed here (${mine.root})`);
    // checked once this worker has done the epoch's steps (its weights after the last one are known)
    const why = epochMismatch(p, e, dropped);
    if (why) throw new C0Error('TRAIN_WITNESS_REFUSED', `epoch commitment: ${why}`);
    // checked again and kept (synced) before answering: two requests for one (view, epoch) may have waited for the root together
    this.remember(e.view, e.epoch, e.root, ep.address);
    const w: TrainWitness = { epochCommitment: ep.address, run: p.runAddr, epoch: e.epoch, root: e.root, witnessedAt: p.clock() };
    return seal(TRAIN_T.witness, w as never, p.signer).bytes;
  }
}
