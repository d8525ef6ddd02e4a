/**
 * The EpochAggregator (spec/compute-pool.md, the worker: "only registered
 * members count toward a root and each (worker, step) pair counts once";
 * docs/training.md "Epoch roots"), and the deterministic coordinator election.
 *
 * `offer` takes a step-commitment envelope from anyone and either counts it or
 * says why not, with a stable code, changing nothing on refusal:
 *   TRAIN_COMMIT_INVALID      does not open as c0mpute.train-step/1 (bad signature, shape)
 *   TRAIN_COMMIT_WRONG_RUN    for another run
 *   TRAIN_COMMIT_UNREGISTERED signer is not a member of this epoch's view
 *   TRAIN_COMMIT_OUT_OF_EPOCH step outside [fromStep, toStep] or another view
 *   TRAIN_COMMIT_DUPLICATE    (worker, step) already counted (same or different bytes)
 *   TRAIN_COMMIT_FORGED       its weights hash differs from the weights this
 *                             node reached after that step (work not done)
 * A commitment for a step this node has not reached yet (its own weights
 * unknown) is held, not counted: `settle` decides it (counted or FORGED) once
 * the weights are known; held ones count as duplicates of their (worker, step).
 * Every signer found FORGED is kept in `forged`: the worker drops it.
 * `finalise` builds the root only when every (member, step) is counted;
 * otherwise TRAIN_EPOCH_INCOMPLETE: a root is never signed over work not done.
 * Pure (no clock; ignores are kept for status).
 */
import { keccak_256 } from '@noble/hashes/sha3.js';
import { C0Error } from '../errors.js';
import { open, type Opened } from '../records/envelope.js';
import { merkleRoot } from './merkle.js';
import { TRAIN_T, type TrainStep } from './record-kinds.js';

export interface EpochScope {
  run: string;
  epoch: number;
  view: number;
  fromStep: number;
  toStep: number;
  /** Members of the view, in DID order. */
  members: string[];
}

export interface Ignored {
  code: string;
  signer?: string;
  step?: number;
}

/** The elected coordinator of (run, epoch): members[u64(keccak256(run ‖ ":" ‖ epoch)[24..32]) mod n]. */
export function electCoordinator(run: string, epoch: number, members: string[]): string {
  if (members.length === 0) throw new C0Error('TRAIN_NO_MEMBERS', 'no members to elect from');
  const d = keccak_256(new TextEncoder().encode(`${run}:${epoch}`));
  let x = 0n;
  for (let i = 24; i < 32; i++) x = (x << 8n) | BigInt(d[i]!);
  return members[Number(x % BigInt(members.length))]!;
}

type Held = { bytes: Uint8Array; address: string; rec: TrainStep; signer: string };

export class EpochAggregator {
  readonly #counted = new Map<string, Held>();
  /** Commitments for steps whose own weights were unknown when offered, by (step, worker). */
  readonly #held = new Map<string, Held>();
  readonly ignored: Ignored[] = [];
  /** Members that signed a commitment with weights other than the ones this node reached. */
  readonly forged = new Set<string>();
  readonly #members: Set<string>;

  constructor(
    readonly scope: EpochScope,
    /** Weights hash this node reached after each step (undefined = not known yet: then FORGED is checked in finalise). */
    private readonly ownWeights: (step: number) => string | undefined,
    private readonly maxIgnored = 1_000,
  ) {
    this.#members = new Set(scope.members);
  }

  #ignore(code: string, signer?: string, step?: number): Ignored {
    const i: Ignored = { code, ...(signer ? { signer } : {}), ...(step !== undefined ? { step } : {}) };
    if (this.ignored.length < this.maxIgnored) this.ignored.push(i);
    return i;
  }

  /**
   * Count a step commitment, or return why it is ignored. Given opened (the
   * caller has already checked its signature and shape, or sealed it), it is not
   * opened again: each commitment's signature is verified once.
   */
  offer(input: Uint8Array | Opened<TrainStep>): { counted: true; address: string; signer: string } | { counted: false; ignored: Ignored } | { counted: false; held: true; signer: string } {
    let o: Opened<TrainStep>;
    if (input instanceof Uint8Array) {
      try {
        o = open(input, TRAIN_T.step) as Opened<TrainStep>;
      } catch {
        return { counted: false, ignored: this.#ignore('TRAIN_COMMIT_INVALID') };
      }
    } else o = input;
    const bytes = o.bytes;
    const rec = o.record;
    const s = this.scope;
    if (rec.run !== s.run) return { counted: false, ignored: this.#ignore('TRAIN_COMMIT_WRONG_RUN', o.signer, rec.step) };
    if (!this.#members.has(o.signer)) return { counted: false, ignored: this.#ignore('TRAIN_COMMIT_UNREGISTERED', o.signer, rec.step) };
    if (rec.view !== s.view || rec.step < s.fromStep || rec.step > s.toStep) return { counted: false, ignored: this.#ignore('TRAIN_COMMIT_OUT_OF_EPOCH', o.signer, rec.step) };
    const key = `${rec.step}|${o.signer}`;
    if (this.#counted.has(key) || this.#held.has(key)) return { counted: false, ignored: this.#ignore('TRAIN_COMMIT_DUPLICATE', o.signer, rec.step) };
    const c: Held = { bytes, address: o.address, rec, signer: o.signer };
    const own = this.ownWeights(rec.step);
    if (own === undefined) {
      this.#held.set(key, c);
      return { counted: false, held: true, signer: o.signer };
    }
    if (own !== rec.weights) return { counted: false, ignored: this.#forged(c) };
    this.#counted.set(key, c);
    return { counted: true, address: o.address, signer: o.signer };
  }

  #forged(c: Held): Ignored {
    this.forged.add(c.signer);
    return this.#ignore('TRAIN_COMMIT_FORGED', c.signer, c.rec.step);
  }

  /**
   * Decide the held commitments whose step's own weights are now known: each
   * is counted, or ignored as TRAIN_COMMIT_FORGED (its signer added to `forged`).
   */
  settle(): Array<{ counted: true; signer: string; step: number } | { counted: false; ignored: Ignored }> {
    const out: Array<{ counted: true; signer: string; step: number } | { counted: false; ignored: Ignored }> = [];
    for (const [key, c] of this.#held) {
      const own = this.ownWeights(c.rec.step);
      if (own === undefined) continue;
      this.#held.delete(key);
      if (own !== c.rec.weights) {
        out.push({ counted: false, ignored: this.#forged(c) });
        continue;
      }
      this.#counted.set(key, c);
      out.push({ counted: true, signer: c.signer, step: c.rec.step });
    }
    return out;
  }

  /** Step commitments held for (step, worker), if counted. */
  get(step: number, worker: string): { bytes: Uint8Array; address: string } | undefined {
    return this.#counted.get(`${step}|${worker}`);
  }

  missing(): Array<{ step: number; worker: string }> {
    const out: Array<{ step: number; worker: string }> = [];
    for (let st = this.scope.fromStep; st <= this.scope.toStep; st++) for (const m of this.scope.members) if (!this.#counted.has(`${st}|${m}`)) out.push({ step: st, worker: m });
    return out;
  }

  /** Leaves in (step, worker DID) order: the addresses under the root. */
  leaves(): string[] {
    const out: string[] = [];
    for (let st = this.scope.fromStep; st <= this.scope.toStep; st++) {
      for (const m of this.scope.members) {
        const c = this.#counted.get(`${st}|${m}`);
        if (c) out.push(c.address);
      }
    }
    return out;
  }

  /** The root over every (member, step) of the epoch; throws TRAIN_EPOCH_INCOMPLETE or TRAIN_COMMIT_FORGED. */
  finalise(): { root: string; leaves: string[] } {
    this.settle();
    const miss = this.missing();
    if (miss.length > 0) throw new C0Error('TRAIN_EPOCH_INCOMPLETE', `${miss.length} step commitments missing (first: step ${miss[0]!.step} of ${miss[0]!.worker})`, { detail: { missing: miss.length, member: miss[0]!.worker, epoch: this.scope.epoch } });
    for (const c of this.#counted.values()) {
      const own = this.ownWeights(c.rec.step);
      if (own === undefined || own !== c.rec.weights) throw new C0Error('TRAIN_COMMIT_FORGED', `step ${c.rec.step} of ${c.signer} does not match the weights reached`);
    }
    const leaves = this.leaves();
    return { root: merkleRoot(leaves), leaves };
  }
}
