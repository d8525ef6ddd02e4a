/**
 * The steward's accounts of its open claims (pool/1 §6.2): who bought each
 * admitted job, which providers a selection named, the receipts they signed,
 * and the deadline timer. A claim is released (`Released`, the actual energy
 * in place of the reservation) on a completed receipt, on a reclaimed one
 * (EXEC_PREEMPTED, EXEC_IDLE_RECLAIMED), when its buyer withdraws it, or at its
 * deadline with failures alone: the sum of every receipt the job's providers
 * signed (a failed attempt spent energy too) at the worst grade among them (a
 * grade never improves). A gang's claim (src/roles/steward-gangs.ts) is
 * charged every member job's receipts and released once, when every member
 * has a final receipt (completed or failed), when its buyer withdraws it, or
 * at its deadline. Part of src/roles/steward.ts.
 *
 * A claim stays tracked until its `Released` append succeeds: a failed append
 * (a store error) leaves it open and tracked, and the release is tried again
 * (RELEASE_RETRY: doubling waits, a bounded number of times; after the last,
 * at its deadline if that is still ahead, or on its next receipt or withdraw,
 * or at the next start). An actual figure the ledger cannot add (the
 * entitlement's usage would pass 2^53 − 1 µJ, POOL_UJ_TOO_LARGE) is capped at
 * what it can, graded `Estimator`: see #actual.
 */
import type { Opened } from '../records/envelope.js';
import type { Energy, Receipt, Selection } from '../records/kinds.js';
import { worseGrade } from '../pool/grades.js';
import type { Ledger } from '../ledger/store.js';
import type { Clock } from '../util/clock.js';
import type { Logger } from '../util/log.js';

const GRACE_MS = 5_000;

/** A failed `Released` append is tried again after baseMs, doubling up to maxMs, at most `tries` times. */
export const RELEASE_RETRY = { baseMs: 1_000, maxMs: 60_000, tries: 6 } as const;

export interface OpenJob {
  claim: string;
  buyer: string;
  deadline: number;
  receipts: Map<string, Opened<Receipt>>;
  winners: Set<string>;
  provider?: string;
  entitlement: string;
  timer?: NodeJS.Timeout;
  /** A gang's claim: its size (member jobs are bound to it in src/roles/steward-gangs.ts). */
  gang?: number;
  /** Its `Released` append is in flight: the claim is still tracked, but nothing else releases it meanwhile. */
  releasing?: boolean;
  /** Failed `Released` appends so far (RELEASE_RETRY). */
  releaseFailures?: number;
}

export interface AccountsDeps {
  ledger: Ledger;
  /** This steward's DID (its own selections name providers too). */
  did: string;
  clock: Clock;
  log: Logger;
  stopped: () => boolean;
  /** Append a ledger entry and publish the new head. */
  append: Ledger['append'];
  /** A claim is closing: drop what else is kept about it (sampled usage, idle verdicts). Runs before the append. */
  forget: (claim: string) => void;
  /** Retrying a failed `Released` append (default RELEASE_RETRY). */
  releaseRetry?: { baseMs: number; maxMs: number; tries: number };
  /** Capacity freed: decide the queue again. */
  freed: () => Promise<void>;
  /** A gang's member jobs: the claim a job is bound to, and its member index (src/roles/steward-gangs.ts). */
  gangs?: {
    claimOf(job: string): string | undefined;
    memberOf(job: string): number | undefined;
    /** Keep a receipt charged to a gang (it survives a restart). */
    noteReceipt(claim: string, r: Opened<Receipt>): Promise<void>;
    /** The gang's claim was released. */
    released(claim: string): Promise<void>;
  };
}

export class ClaimAccounts {
  readonly #open = new Map<string, OpenJob>();

  constructor(private d: AccountsDeps) {}

  /** An open claim's accounts; undefined once its release is under way (a usage answer in flight then keeps nothing). */
  get(claim: string): OpenJob | undefined {
    const oj = this.#open.get(claim);
    return oj?.releasing ? undefined : oj;
  }

  track(claim: string, entitlement: string, buyer: string, deadline: number, gang?: number): OpenJob {
    const oj: OpenJob = { claim, buyer, deadline, entitlement, receipts: new Map(), winners: new Set(), ...(gang === undefined ? {} : { gang }) };
    this.#open.set(claim, oj);
    this.#armDeadline(oj);
    return oj;
  }

  #armDeadline(oj: OpenJob): void {
    if (oj.timer) clearTimeout(oj.timer);
    const wait = Math.max(0, oj.deadline + GRACE_MS - this.d.clock());
    oj.timer = setTimeout(() => void this.#closeAtDeadline(oj), wait);
    oj.timer.unref();
  }

  async #closeAtDeadline(oj: OpenJob): Promise<void> {
    if (this.d.stopped() || !this.#open.has(oj.claim)) return;
    // Failures alone (or nothing at all): the work is over; charge what was spent. A failed append is tried again (release).
    await this.release(oj, 'deadline').catch(() => {});
  }

  /** The provider doing a claim's work: the one a selection named, or the first winner the steward chose. */
  providerOf(claim: string): string | undefined {
    const oj = this.#open.get(claim);
    return oj?.provider ?? [...(oj?.winners ?? [])][0];
  }

  /** The energy of every receipt a claim's providers signed so far. */
  receiptsUj(claim: string): number {
    return [...(this.#open.get(claim)?.receipts.values() ?? [])].reduce((sum, r) => sum + r.record.energy.uj, 0);
  }

  /** The claim a job's records are charged to: its gang's, or its own. */
  #claimOf(job: string): string {
    return this.d.gangs?.claimOf(job) ?? job;
  }

  onSelection(s: Opened<Selection>): void {
    const oj = this.#open.get(this.#claimOf(s.record.job));
    // A gang names no single provider: it is never a preemption or idle victim (stopping every member is not built).
    if (!oj || oj.gang !== undefined) return;
    // Only the buyer's (or our own) selection names the provider doing the work.
    if (s.signer !== oj.buyer && s.signer !== this.d.did) return;
    const w = s.record.considered.find((c) => c.offer === s.record.winner);
    if (w) {
      oj.winners.add(w.provider);
      oj.provider = w.provider;
    }
  }

  async onReceipt(r: Opened<Receipt>): Promise<void> {
    const oj = this.#open.get(this.#claimOf(r.record.job));
    if (!oj) return;
    if (r.record.buyer !== oj.buyer) return; // a receipt for someone else's purchase of this job: not ours
    // A gang's member receipts are charged by the job they name (bound to the claim), whichever selection the steward heard.
    if (oj.gang === undefined && oj.winners.size && !oj.winners.has(r.record.provider)) {
      this.d.log.warn({ claim: oj.claim, provider: r.record.provider }, 'receipt from a provider no selection named; not charged');
      return;
    }
    if (oj.receipts.has(r.address)) return;
    oj.receipts.set(r.address, r);
    if (oj.gang !== undefined) await this.d.gangs?.noteReceipt(oj.claim, r);
    const reclaimed = reclaimedCode(r);
    if (reclaimed) await this.release(oj, reclaimed);
    else if (oj.gang !== undefined) {
      if (this.gangEnded(oj)) await this.release(oj, 'gang ended');
    } else if (r.record.status === 'completed') await this.release(oj, r.record.status);
  }

  /** Every member of a gang has a final receipt (completed or failed): its work is over. */
  gangEnded(oj: OpenJob): boolean {
    const ended = new Set<number>();
    for (const r of oj.receipts.values()) {
      const m = this.d.gangs?.memberOf(r.record.job);
      if (m !== undefined) ended.add(m);
    }
    return oj.gang !== undefined && ended.size >= oj.gang;
  }

  /**
   * Append the claim's `Released` (the actual figure, #actual). It stays
   * tracked until the append succeeds: while it is in flight nothing else
   * releases it (get() answers undefined); if it fails, the claim is tracked
   * again as it was and the release is tried again (#retry), and the error is
   * thrown to the caller.
   */
  async release(oj: OpenJob, why: string): Promise<void> {
    // Released once: a second path reaching here (a receipt, a withdraw, the deadline) finds it gone, or under way.
    if (this.#open.get(oj.claim) !== oj || oj.releasing) return;
    if (oj.timer) clearTimeout(oj.timer);
    oj.timer = undefined;
    if (!this.d.ledger.book.open.has(oj.claim)) {
      this.#open.delete(oj.claim);
      return;
    }
    const rs = [...oj.receipts.values()];
    const actual = this.#actual(oj, rs);
    oj.releasing = true;
    this.d.forget(oj.claim);
    let r: Awaited<ReturnType<Ledger['append']>>;
    try {
      r = await this.d.append({ event: 'Released', claim: oj.claim, actual });
    } catch (e) {
      oj.releasing = false;
      this.#retry(oj, why, e as Error);
      throw e;
    }
    this.#open.delete(oj.claim);
    this.d.log.info({ claim: oj.claim, actual, why, seq: r.seq, ...(oj.gang === undefined ? {} : { gang: oj.gang, receipts: rs.length }) }, 'claim released');
    if (oj.gang !== undefined) await this.d.gangs?.released(oj.claim);
    await this.d.freed();
  }

  /**
   * The actual figure a release charges: the sum of the receipts at the worst
   * grade among them, or {0, Estimator} with none. A sum the ledger cannot add
   * (the entitlement's usage would pass 2^53 − 1 µJ, POOL_UJ_TOO_LARGE, from a
   * provider-signed figure near 2^53 or several of them) is capped at the most
   * it can add and graded `Estimator`: the claim is still released (refusing
   * would hold its devices and reservation for ever, and charge nothing),
   * charged as much as the ledger can hold (pool/1 §6.3: an overrun is charged
   * what it cost, as near as can be written), and the capped figure, which no
   * meter read, never passes as observed evidence (§2.3, §2.6).
   */
  #actual(oj: OpenJob, rs: Opened<Receipt>[]): Energy {
    // Nothing ran that anyone signed for: nothing was spent that we can show.
    if (!rs.length) return { uj: 0, grade: 'Estimator' };
    let sum = 0n;
    let grade = rs[0]!.record.energy.grade;
    for (const r of rs) {
      sum += BigInt(r.record.energy.uj);
      grade = worseGrade(grade, r.record.energy.grade);
    }
    const admitted = this.d.ledger.book.open.get(oj.claim)!;
    const room = BigInt(Number.MAX_SAFE_INTEGER) - BigInt(this.d.ledger.book.usage(admitted.entitlement).usedUj - admitted.reserved.uj);
    if (sum <= room) return { uj: Number(sum), grade };
    const capped = room > 0n ? Number(room) : 0;
    this.d.log.error({ claim: oj.claim, receiptsUj: sum.toString(), chargedUj: capped, receipts: rs.length }, 'the receipts sum past what the ledger can add (2^53 - 1 µJ per entitlement); charged the most it can, graded Estimator');
    return { uj: capped, grade: 'Estimator' };
  }

  /** A failed `Released` append: the claim is tracked as before; try again later, a bounded number of times. */
  #retry(oj: OpenJob, why: string, e: Error): void {
    const n = (oj.releaseFailures = (oj.releaseFailures ?? 0) + 1);
    if (this.d.stopped()) return;
    const policy = this.d.releaseRetry ?? RELEASE_RETRY;
    if (n > policy.tries) {
      const ahead = oj.deadline + GRACE_MS > this.d.clock();
      this.d.log.error({ claim: oj.claim, why, failures: n, err: e.message }, ahead ? 'release failed again; the claim stays open until its deadline, its next receipt or withdraw, or the next start' : 'release failed again; the claim stays open until its next receipt or withdraw, or the next start');
      if (ahead) this.#armDeadline(oj);
      return;
    }
    const wait = Math.min(policy.baseMs * 2 ** (n - 1), policy.maxMs);
    this.d.log.warn({ claim: oj.claim, why, failures: n, retryInMs: wait, err: e.message }, 'release failed; the claim stays open and is released again shortly');
    oj.timer = setTimeout(() => {
      if (this.d.stopped()) return;
      void this.release(oj, why).catch(() => {});
    }, wait);
    oj.timer.unref();
  }

  stop(): void {
    for (const oj of this.#open.values()) if (oj.timer) clearTimeout(oj.timer);
  }
}

/** The failure code of a receipt for work the steward reclaimed (preempted, or measured idle), if it is one. */
function reclaimedCode(r: Opened<Receipt>): 'EXEC_PREEMPTED' | 'EXEC_IDLE_RECLAIMED' | undefined {
  const c = r.record.failure?.code;
  return c === 'EXEC_PREEMPTED' || c === 'EXEC_IDLE_RECLAIMED' ? c : undefined;
}
