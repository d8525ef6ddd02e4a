/**
 * The jobs a provider has run (sublevel `provider-runs`): job address → the
 * address of its receipt, written in a synced batch once the receipt is
 * signed, so a job is never run twice here (exec refuses it with
 * EXEC_ALREADY_RUN, and a crashed run's orphan gets no second receipt).
 *
 * An entry matters only until the job's deadline (exec refuses a job past it
 * first), so it is job history like the record store's, dropped with it
 * `history.keepDays` later (docs/node.md "Job history"): `~t!<time>!<job>`
 * orders the entries by the later of the deadline and the receipt's end. Keys
 * of jobs are `sha256:…`, so the `~` keys never meet them. Entries written
 * before the time index are dated by the first open that found them.
 *
 * A job the overlay's steward reclaimed while it was not running here is
 * barred (`~b!<job>` → its refusal code and until when; Provider.preempt,
 * docs/overlays.md "Preemption"), so a restart between the steward's `stop`
 * and the buyer's exec still refuses it. A bar is dated by its `until` and
 * goes with the history as a run's entry does.
 *
 * A job accepted for work is noted before it runs (`~n!<job>` → the job and
 * offer envelopes and when it started; `note`), and the note goes in the same
 * batch as the job's run entry (`record`). A note left at start is work a
 * crashed run took with it: the provider signs its failed receipt
 * (EXEC_PROVIDER_CRASHED; docs/node.md "Orphaned work after a crash"). The
 * note is one unsynced put (it survives the process being killed, which is
 * what it is for; an operating-system crash may lose it), dated by the job's
 * deadline, and goes with the history as the others do (its index entry
 * stays until then even once `record` superseded it).
 *
 * A receipt its exec stream did not deliver and its buyer could not be sent
 * directly yet (`~d!<receipt>` → the receipt envelope and until when it waits;
 * src/roles/provider/receipt-delivery.ts) is kept here too, so a provider
 * restart does not drop it: one unsynced batch, like a run note, dated by its
 * `until` and dropped once the buyer answered, or with the history. Every
 * receipt is first written so, marked `untried` (neither acknowledged on the
 * exec stream nor sent directly yet), in the synced batch of its run entry
 * (`record`): a provider killed before its buyer showed it got the receipt
 * still sends it at the next start. The buyer's acknowledgement drops it with
 * one unsynced delete (lost only with the operating system, and then the
 * receipt is sent once more, which the buyer answers as a copy).
 */
import { syncBatch, timeKey, type Db, type Sub } from './db.js';
import type { HistoryPruned } from './records.js';

const INDEXED = '~indexed';
const T = '~t!';
const BAR = '~b!';
const NOTE = '~n!';
const DELIVER = '~d!';

export type BarCode = 'EXEC_PREEMPTED' | 'EXEC_IDLE_RECLAIMED';
export interface Bar {
  code: BarCode;
  until: number;
}
const EMPTY = new Uint8Array(0);

/** A receipt waiting for its buyer (receipt-delivery.ts). */
export interface WaitingReceipt {
  address: string;
  bytes: Uint8Array;
  until: number;
  /**
   * Neither acknowledged by its buyer on the exec stream nor sent to it directly yet (written with the receipt, or
   * kept by a stop): the next start sends it at once, and gossips it, instead of waiting for the buyer to connect.
   */
  untried?: boolean;
}

/** Work accepted here and not yet given a receipt: enough to sign its failed receipt after a crash. */
export interface RunNote {
  job: string;
  /** The job and offer (or claim) envelopes. */
  jobEnvelope: Uint8Array;
  offerEnvelope: Uint8Array;
  startedAt: number;
}

export class ProviderRuns {
  #db: Db;
  #runs: Sub;

  private constructor(db: Db, runs: Sub) {
    this.#db = db;
    this.#runs = runs;
  }

  /** Open the sublevel, dating each entry from before the time index at `now`. */
  static async open(db: Db, runs: Sub, now: number): Promise<ProviderRuns> {
    const r = new ProviderRuns(db, runs);
    if ((await runs.get(INDEXED)) === undefined) {
      let ops: unknown[] = [];
      for await (const job of runs.keys({ lt: '~' })) {
        ops.push({ type: 'put', key: `${T}${timeKey(now)}!${job}`, value: EMPTY, sublevel: runs });
        if (ops.length >= 2000) {
          await syncBatch(db, ops);
          ops = [];
        }
      }
      ops.push({ type: 'put', key: INDEXED, value: new TextEncoder().encode('1'), sublevel: runs });
      await syncBatch(db, ops);
    }
    return r;
  }

  async has(job: string): Promise<boolean> {
    return (await this.#runs.get(job)) !== undefined;
  }

  /** The address of the receipt `job` ran here with, if it did. */
  async receiptOf(job: string): Promise<string | undefined> {
    const v = await this.#runs.get(job);
    return v === undefined ? undefined : new TextDecoder().decode(v);
  }

  /**
   * Note that `job` ran here, its receipt `receipt`; dropped with the history after `until` (the job's deadline or
   * later). Supersedes its run note. With `waiting`, the receipt's wait for its buyer (`awaitDelivery`) goes in the
   * same synced batch: no write of its own, and no moment where the receipt is kept but its delivery is not.
   */
  async record(job: string, receipt: string, until: number, waiting?: WaitingReceipt): Promise<void> {
    await syncBatch(this.#db, [
      { type: 'put', key: job, value: new TextEncoder().encode(receipt), sublevel: this.#runs },
      { type: 'put', key: `${T}${timeKey(until)}!${job}`, value: EMPTY, sublevel: this.#runs },
      { type: 'del', key: `${NOTE}${job}`, sublevel: this.#runs },
      ...(waiting ? this.#waitOps(waiting) : []),
    ]);
  }

  /** Note work accepted here before it runs (one unsynced batch), until its receipt is recorded; dropped with the history after `until` (the job's deadline). */
  async note(n: RunNote, until: number): Promise<void> {
    const value = new TextEncoder().encode(JSON.stringify({ job: Buffer.from(n.jobEnvelope).toString('base64'), offer: Buffer.from(n.offerEnvelope).toString('base64'), startedAt: n.startedAt }));
    await this.#db.batch([
      { type: 'put', key: `${NOTE}${n.job}`, value, sublevel: this.#runs },
      { type: 'put', key: `${T}${timeKey(until)}!${NOTE}${n.job}`, value: EMPTY, sublevel: this.#runs },
    ] as never);
  }

  /** Drop the run note of `job` (its work ended without a receipt being recorded). */
  async dropNote(job: string): Promise<void> {
    await this.#runs.del(`${NOTE}${job}`);
  }

  /** The run notes held: work accepted here whose receipt was never recorded (at start: what a crash left). Unreadable ones are dropped. */
  async notes(): Promise<RunNote[]> {
    return this.#readJson(NOTE, (job, n: { job?: unknown; offer?: unknown; startedAt?: unknown }) => {
      if (typeof n.job !== 'string' || typeof n.offer !== 'string' || !Number.isSafeInteger(n.startedAt)) return undefined;
      return { job, jobEnvelope: new Uint8Array(Buffer.from(n.job, 'base64')), offerEnvelope: new Uint8Array(Buffer.from(n.offer, 'base64')), startedAt: n.startedAt as number };
    });
  }

  /** Every JSON entry under `prefix`, read by `read` (given the key past the prefix); one it refuses or that is not JSON is dropped. */
  async #readJson<R, J>(prefix: string, read: (rest: string, json: J) => R | undefined): Promise<R[]> {
    const out: R[] = [];
    for await (const [key, v] of this.#runs.iterator({ gt: prefix, lt: `${prefix}\xff` })) {
      let r: R | undefined;
      try {
        r = read(key.slice(prefix.length), JSON.parse(new TextDecoder().decode(v)) as J);
      } catch {
        r = undefined;
      }
      if (r === undefined) await this.#runs.del(key);
      else out.push(r);
    }
    return out;
  }

  /** Keep a receipt waiting for its buyer until `until` (one unsynced batch; dropped with the history after `until`). */
  async awaitDelivery(w: WaitingReceipt): Promise<void> {
    await this.#db.batch(this.#waitOps(w) as never);
  }

  #waitOps(w: WaitingReceipt): Array<{ type: 'put'; key: string; value: Uint8Array; sublevel: Sub }> {
    const value = new TextEncoder().encode(JSON.stringify({ r: Buffer.from(w.bytes).toString('base64'), until: w.until, ...(w.untried ? { untried: 1 } : {}) }));
    return [
      { type: 'put', key: `${DELIVER}${w.address}`, value, sublevel: this.#runs },
      { type: 'put', key: `${T}${timeKey(w.until)}!${DELIVER}${w.address}`, value: EMPTY, sublevel: this.#runs },
    ];
  }

  /** The receipt `address` no longer waits (its buyer answered, it lapsed, or a newer one pushed it out). */
  async delivered(address: string): Promise<void> {
    await this.#runs.del(`${DELIVER}${address}`);
  }

  /** The receipts waiting for their buyer, oldest `until` first. Unreadable entries are dropped. */
  async waitingReceipts(): Promise<WaitingReceipt[]> {
    const out = await this.#readJson(DELIVER, (address, w: { r?: unknown; until?: unknown; untried?: unknown }) =>
      typeof w.r === 'string' && Number.isSafeInteger(w.until) ? { address, bytes: new Uint8Array(Buffer.from(w.r, 'base64')), until: w.until as number, ...(w.untried === 1 ? { untried: true } : {}) } : undefined,
    );
    return out.sort((a, b) => a.until - b.until);
  }

  /** Bar `job` (reclaimed by the steward while not running here): its exec is refused with `code` until `until`. */
  async bar(job: string, code: BarCode, until: number): Promise<void> {
    await syncBatch(this.#db, [
      { type: 'put', key: `${BAR}${job}`, value: new TextEncoder().encode(JSON.stringify({ code, until })), sublevel: this.#runs },
      { type: 'put', key: `${T}${timeKey(until)}!${BAR}${job}`, value: EMPTY, sublevel: this.#runs },
    ]);
  }

  /** The bar on `job`, if one is held (past its `until` or not: the caller compares with its clock). */
  async barOf(job: string): Promise<Bar | undefined> {
    const v = await this.#runs.get(`${BAR}${job}`);
    if (v === undefined) return undefined;
    try {
      const b = JSON.parse(new TextDecoder().decode(v)) as Partial<Bar>;
      if ((b.code === 'EXEC_PREEMPTED' || b.code === 'EXEC_IDLE_RECLAIMED') && Number.isSafeInteger(b.until)) return { code: b.code, until: b.until! };
    } catch {
      // not ours: treated as no bar
    }
    return undefined;
  }

  /** Drop the entries dated before `before`, at most `max` in one synced batch; pass the result's `after` to the next call. */
  async pruneHistory(before: number, max = 1000, after?: string): Promise<HistoryPruned> {
    const ops: unknown[] = [];
    let removed = 0;
    let more = false;
    let last: string | undefined;
    for await (const key of this.#runs.keys({ gt: after ?? T, lt: `${T}${timeKey(before)}` })) {
      if (removed >= max) {
        more = true;
        break;
      }
      ops.push({ type: 'del', key, sublevel: this.#runs }, { type: 'del', key: key.slice(T.length + 17), sublevel: this.#runs });
      last = key;
      removed++;
    }
    if (ops.length) await syncBatch(this.#db, ops);
    return { removed, more, ...(last !== undefined ? { after: last } : {}) };
  }
}
