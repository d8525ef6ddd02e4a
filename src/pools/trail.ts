/**
 * The durable state of a pool member (docs/pools.md "Dispatch trail" and
 * "At most once"; spec/compute-pool.md "record the dispatch before the call").
 *
 * - DispatchTrail (the coordinator's side): a signed dispatch is written in a
 *   synced batch, with the job and offer envelopes it needs to finish or fail
 *   the job later, before the input goes to the member. Each entry ends
 *   `completed` or `failed` with its receipt; `pending()` is what a restarted
 *   coordinator (or the next epoch's) must close.
 * - RunLog (the member's side): a job is claimed once, durably, before it runs;
 *   a second claim of the same job, whoever asks, is refused (POOL_ALREADY_RUN).
 *
 * Values are canonical CBOR maps; keys are job addresses.
 */
import { C0Error } from '../errors.js';
import { decodeCanonical, encodeCanonical } from '../records/cbor.js';
import type { Sub } from '../store/db.js';

export interface TrailEntry {
  dispatch: Uint8Array;
  job: Uint8Array;
  offer: Uint8Array;
  state: 'dispatched' | 'completed' | 'failed';
  receipt?: Uint8Array;
  settlement?: Uint8Array;
}

function enc(v: unknown): Uint8Array {
  return encodeCanonical(v as never);
}

/**
 * Keys are `<job>|<coordinator DID>`: two coordinators that briefly both
 * believe they are elected each keep their own dispatch of the same job (the
 * member refuses the second run), and closing a job closes every entry of it.
 */
export class DispatchTrail {
  constructor(private db: Sub) {}

  static key(job: string, coordinator: string): string {
    return `${job}|${coordinator}`;
  }

  /** Every entry for `job` (one per coordinator that dispatched it), in key order. */
  async entries(job: string): Promise<Array<{ key: string; entry: TrailEntry }>> {
    const out: Array<{ key: string; entry: TrailEntry }> = [];
    for await (const [k, v] of this.db.iterator({ gt: `${job}|`, lt: `${job}|\uffff` })) out.push({ key: k, entry: decodeCanonical(v) as unknown as TrailEntry });
    return out;
  }

  /** The first entry for `job` (any coordinator). */
  async get(job: string): Promise<TrailEntry | undefined> {
    return (await this.entries(job))[0]?.entry;
  }

  /** Make a dispatch durable (synced) unless this coordinator already has one for the job; returns the entry that holds. */
  async record(job: string, coordinator: string, e: Omit<TrailEntry, 'state'>): Promise<{ entry: TrailEntry; fresh: boolean }> {
    const key = DispatchTrail.key(job, coordinator);
    const cur = await this.db.get(key);
    if (cur !== undefined) return { entry: decodeCanonical(cur) as unknown as TrailEntry, fresh: false };
    const entry: TrailEntry = { ...e, state: 'dispatched' };
    await this.db.batch([{ type: 'put', key, value: enc(entry) }], { sync: true } as never);
    return { entry, fresh: true };
  }

  /**
   * Close the open entry of `job` made by `coordinator` (every open entry of the job when
   * undefined) with its receipt (and settlement, when completed); closed entries keep their outcome.
   */
  async close(job: string, coordinator: string | undefined, state: 'completed' | 'failed', receipt: Uint8Array, settlement?: Uint8Array): Promise<number> {
    const ops = [];
    for (const { key, entry } of await this.entries(job)) {
      if (entry.state !== 'dispatched') continue;
      if (coordinator !== undefined && key !== DispatchTrail.key(job, coordinator)) continue;
      ops.push({ type: 'put' as const, key, value: enc({ ...entry, state, receipt, ...(settlement ? { settlement } : {}) }) });
    }
    if (ops.length) await this.db.batch(ops, { sync: true } as never);
    return ops.length;
  }

  /** Dispatches not yet closed (a crashed or replaced coordinator's trail). */
  async pending(): Promise<Array<{ job: string; entry: TrailEntry }>> {
    return (await this.all()).filter((x) => x.entry.state === 'dispatched');
  }

  async all(): Promise<Array<{ job: string; entry: TrailEntry }>> {
    const out: Array<{ job: string; entry: TrailEntry }> = [];
    for await (const [k, v] of this.db.iterator()) out.push({ job: k.slice(0, k.indexOf('|')), entry: decodeCanonical(v) as unknown as TrailEntry });
    return out;
  }
}

/** A member's at-most-once log of the jobs it agreed to run. */
export class RunLog {
  #claiming = new Set<string>();
  constructor(private db: Sub) {}

  /** Claim `job` for running: durable before it returns; POOL_ALREADY_RUN if it was claimed before (by any coordinator). */
  async claim(job: string, by: string, at: number): Promise<void> {
    if (this.#claiming.has(job)) throw new C0Error('POOL_ALREADY_RUN', 'this member already runs or ran this job');
    this.#claiming.add(job);
    try {
      if ((await this.db.get(job)) !== undefined) throw new C0Error('POOL_ALREADY_RUN', 'this member already runs or ran this job');
      await this.db.batch([{ type: 'put', key: job, value: enc({ by, at }) }], { sync: true } as never);
    } catch (e) {
      this.#claiming.delete(job);
      throw e;
    }
    // Stays in #claiming: the durable entry now answers, and the set keeps the check synchronous for racers.
  }
}
