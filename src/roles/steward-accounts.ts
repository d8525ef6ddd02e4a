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
 */
import type { Opened } from '../records/envelope.js';
import type { Energy, Receipt, Selection } from '../records/kinds.js';
import { worseGrade } from '../pool/grades.js';
import type { Ledger } from '../ledger/store.js';
import type { Clock } from '../util/clock.js';
import type { Logger } from '../util/log.js';

const GRACE_MS = 5_000;

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

  get(claim: string): OpenJob | undefined {
    return this.#open.get(claim);
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
    // Failures alone (or nothing at all): the work is over; charge what was spent.
    await this.release(oj, 'deadline');
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
    const reclaimed = r.record.failure?.code === 'EXEC_PREEMPTED' || r.record.failure?.code === 'EXEC_IDLE_RECLAIMED';
    if (reclaimed) await this.release(oj, r.record.failure!.code);
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

  async release(oj: OpenJob, why: string): Promise<void> {
    // Released once: a second path reaching here (a receipt, a withdraw, the deadline) finds it gone.
    if (this.#open.get(oj.claim) !== oj) return;
    if (!this.d.ledger.book.open.has(oj.claim)) {
      this.#open.delete(oj.claim);
      return;
    }
    const rs = [...oj.receipts.values()];
    let actual: Energy;
    if (rs.length) {
      actual = rs.slice(1).reduce<Energy>((a, r) => ({ uj: a.uj + r.record.energy.uj, grade: worseGrade(a.grade, r.record.energy.grade) }), { ...rs[0]!.record.energy });
    } else {
      // Nothing ran that anyone signed for: nothing was spent that we can show.
      actual = { uj: 0, grade: 'Estimator' };
    }
    if (oj.timer) clearTimeout(oj.timer);
    this.#open.delete(oj.claim);
    this.d.forget(oj.claim);
    const r = await this.d.append({ event: 'Released', claim: oj.claim, actual });
    this.d.log.info({ claim: oj.claim, actual, why, seq: r.seq, ...(oj.gang === undefined ? {} : { gang: oj.gang, receipts: rs.length }) }, 'claim released');
    if (oj.gang !== undefined) await this.d.gangs?.released(oj.claim);
    await this.d.freed();
  }

  stop(): void {
    for (const oj of this.#open.values()) if (oj.timer) clearTimeout(oj.timer);
  }
}
