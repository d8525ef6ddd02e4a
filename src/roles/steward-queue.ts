/**
 * The steward's queue of pending claims, kept across restarts (pool/1 §4.5,
 * §6.2). A Queue verdict is not a ledger event, so the ledger cannot rebuild
 * the queue; this store keeps it instead, in the node's LevelDB under the
 * overlay's `steward-queue` sublevel:
 *
 *   key   = arrival number, 16 digits (key order is arrival order)
 *   value = canonical CBOR {job (envelope), entitlement, class?, estimate {uj, grade},
 *           since (ms), reason, reasons}
 *
 * An entry is written in a synced batch before the buyer is told "queued",
 * and deleted once the claim leaves the queue (admitted and appended, denied,
 * expired at its deadline, or given up after its buyer stayed away). On start
 * the entries come back in arrival order with no buyer attached: the buyer
 * re-asks with the same job (same address) and is attached to its entry,
 * keeping its place in line (src/roles/steward.ts decides; this module only
 * keeps the line).
 */
import { decodeCanonical, encodeCanonical } from '../records/cbor.js';
import { open, type Opened } from '../records/envelope.js';
import { T, type Energy, type Job } from '../records/kinds.js';
import type { Sub } from '../store/db.js';
import type { Logger } from '../util/log.js';

export interface QueuedClaimRecord {
  /** arrival number: the place in line */
  n: number;
  job: Opened<Job>;
  entitlement: string;
  class?: string;
  estimate: Energy;
  since: number;
  reason: string;
  reasons: string[];
}

const key = (n: number) => String(n).padStart(16, '0');

export class ClaimQueueStore {
  #next = 0;

  constructor(
    private readonly sub: Sub,
    private readonly log?: Logger,
  ) {}

  /** Every stored entry in arrival order (an entry that no longer decodes is dropped and logged). */
  async load(): Promise<QueuedClaimRecord[]> {
    const out: QueuedClaimRecord[] = [];
    const bad: string[] = [];
    for await (const [k, v] of this.sub.iterator()) {
      const n = Number(k);
      this.#next = Math.max(this.#next, n + 1);
      try {
        const m = decodeCanonical(v) as unknown as { job: Uint8Array; entitlement: string; class?: string; estimate: Energy; since: number; reason: string; reasons: string[] };
        out.push({ n, job: open(m.job, T.job), entitlement: m.entitlement, ...(m.class === undefined ? {} : { class: m.class }), estimate: m.estimate, since: m.since, reason: m.reason, reasons: m.reasons });
      } catch (e) {
        bad.push(k);
        this.log?.warn({ key: k, err: (e as Error).message }, 'a stored queued claim does not decode; dropped');
      }
    }
    if (bad.length) await this.sub.batch(bad.map((k) => ({ type: 'del' as const, key: k })), { sync: true } as never);
    return out;
  }

  /** The next arrival number (after everything loaded or added). */
  next(): number {
    return this.#next++;
  }

  /** Write one entry, synced: resolves once it is on disk. */
  async put(q: QueuedClaimRecord): Promise<void> {
    this.#next = Math.max(this.#next, q.n + 1);
    const value = encodeCanonical({
      job: q.job.bytes,
      entitlement: q.entitlement,
      ...(q.class === undefined ? {} : { class: q.class }),
      estimate: { uj: q.estimate.uj, grade: q.estimate.grade },
      since: q.since,
      reason: q.reason,
      reasons: q.reasons,
    });
    await this.sub.batch([{ type: 'put', key: key(q.n), value }], { sync: true } as never);
  }

  async remove(n: number): Promise<void> {
    await this.sub.batch([{ type: 'del', key: key(n) }], { sync: true } as never);
  }
}
