/**
 * Whether a job's outcome another member hands this one checks out (docs/pools.md "What a member believes of
 * another"): a `closed` message, an `op: status` answer recovery takes, an outcome this member already holds. A
 * member keeps only outcomes that pass, so what `pool-provider status` tallies is what the job's coordinator signed
 * and settled. Pure: the rosters this member holds come in as a lookup.
 *
 * An outcome is one of:
 * - **a coordinator's own**: the pool's receipt for the job, signed by a member that dispatched it (one of this
 *   member's trail entries of the job) for the offer that dispatch names; completed, with that coordinator's
 *   settlement of it (the receipt's address and price, parts exactly `splitPrice(price, roster)` for the roster that
 *   coordinator's dispatch names, which this member holds); failed, with none; or, where the caller allows it
 *   (`unsettled`), completed without a settlement: the receipt alone, heard outside the pool (the node's evidence
 *   store: gossiped, or delivered to it) when its coordinator went down before its `closed` — the job completed, and
 *   its split counts once the coordinator's settlement arrives;
 * - **a lost dispatch's**: a failed receipt `POOL_COORDINATOR_LOST` for the entry's own offer, signed by the member
 *   (on the roster: the receipt's pool proof says so) that closed a dispatch nobody would finish; no settlement.
 */
import { C0Error } from '../errors.js';
import { open, type Opened } from '../records/envelope.js';
import { T, type PoolDispatch, type PoolRoster, type PoolSettlement, type Receipt } from '../records/kinds.js';
import { splitPrice } from './settlement.js';
import type { TrailEntry } from './trail.js';

export const LOST_CODE = 'POOL_COORDINATOR_LOST';

export interface OutcomeContext {
  /** This member's pool. */
  pool: string;
  /** Every entry of the job this member holds (one per coordinator that dispatched it). */
  entries: readonly TrailEntry[];
  /** A roster of the pool this member holds (in use, heard, or one a kept dispatch was recorded under: DispatchTrail.rosterOf), by address. */
  roster(address: string): Opened<PoolRoster> | undefined;
  /** The envelopes were kept by this member (their signatures were checked when they came in): opened without verifying them again. */
  trusted?: boolean;
  /** A coordinator's completed receipt may come without its settlement (one heard outside the pool); the outcome then has none. */
  unsettled?: boolean;
}

export interface VerifiedOutcome {
  state: 'completed' | 'failed';
  receipt: Opened<Receipt>;
  settlement?: Opened<PoolSettlement>;
  /** The coordinator whose own outcome this is (the receipt's signer dispatched the job); undefined for a lost dispatch's. */
  coordinator?: string;
  /** A POOL_COORDINATOR_LOST receipt signed by a member that did not dispatch the job. */
  lost: boolean;
}

function bad(code: string, message: string): never {
  throw new C0Error(code, message);
}

/** Check an outcome offered for `target` (one of `c.entries`). Throws POOL_OUTCOME_MISMATCH, POOL_CLOSE_NOT_ENTITLED, POOL_SETTLEMENT_INVALID or the envelope's own codes. */
export function verifyOutcome(target: TrailEntry, receiptBytes: unknown, settlementBytes: unknown, c: OutcomeContext): VerifiedOutcome {
  if (!(receiptBytes instanceof Uint8Array)) bad('POOL_OUTCOME_MISMATCH', 'an outcome carries its receipt envelope');
  if (settlementBytes !== undefined && !(settlementBytes instanceof Uint8Array)) bad('POOL_SETTLEMENT_INVALID', 'the settlement is not an envelope');
  const job = open(target.job, T.job, { trusted: true });
  const dispatch = open(target.dispatch, T.poolDispatch, { trusted: true });
  const receipt = open(receiptBytes, T.receipt, { trusted: c.trusted === true });
  const r = receipt.record;
  if (r.provider !== c.pool || r.pool === undefined) bad('POOL_OUTCOME_MISMATCH', 'the receipt is not this pool’s');
  if (r.job !== job.address || r.buyer !== job.signer || r.workload !== job.record.workload || r.inputHash !== job.record.input.hash) bad('POOL_OUTCOME_MISMATCH', 'the receipt is not for this job');
  const dispatches: Array<Opened<PoolDispatch>> = c.entries.map((e) => open(e.dispatch, T.poolDispatch, { trusted: true }));
  const own = dispatches.find((d) => d.signer === receipt.signer && d.record.offer === r.offer && d.record.job === job.address);
  if (own) {
    if (r.status === 'failed') {
      if (settlementBytes !== undefined) bad('POOL_SETTLEMENT_INVALID', 'a failed job is not settled');
      return { state: 'failed', receipt, coordinator: own.signer, lost: false };
    }
    if (settlementBytes === undefined && c.unsettled === true) return { state: 'completed', receipt, coordinator: own.signer, lost: false };
    const settlement = checkSettlement(receipt, settlementBytes, own, c);
    return { state: 'completed', receipt, settlement, coordinator: own.signer, lost: false };
  }
  if (r.status === 'failed' && r.failure?.code === LOST_CODE && r.offer === dispatch.record.offer) {
    if (settlementBytes !== undefined) bad('POOL_SETTLEMENT_INVALID', 'a failed job is not settled');
    return { state: 'failed', receipt, lost: true };
  }
  return bad('POOL_CLOSE_NOT_ENTITLED', 'the receipt is signed by no coordinator of this job, nor is it a lost dispatch’s failure');
}

function checkSettlement(receipt: Opened<Receipt>, bytes: unknown, dispatch: Opened<PoolDispatch>, c: OutcomeContext): Opened<PoolSettlement> {
  const coordinator = dispatch.signer;
  if (!(bytes instanceof Uint8Array)) bad('POOL_SETTLEMENT_INVALID', 'a completed job’s outcome carries its coordinator’s settlement');
  const s = open(bytes, T.poolSettlement, { trusted: c.trusted === true });
  const x = s.record;
  if (s.signer !== coordinator) bad('POOL_SETTLEMENT_INVALID', 'the settlement is not signed by the job’s coordinator');
  if (x.pool !== c.pool || x.job !== receipt.record.job || x.receipt !== receipt.address) bad('POOL_SETTLEMENT_INVALID', 'the settlement is not of this receipt');
  if (x.price.amount !== receipt.record.price.amount || x.price.currency !== receipt.record.price.currency) bad('POOL_SETTLEMENT_INVALID', 'the settlement’s price is not the receipt’s');
  // The roster the job was dispatched under (its coordinator's dispatch names it, and a member keeps a dispatch only
  // under a roster of the pool it holds): never another roster the pool once signed, e.g. an older one with other
  // weights that a receipt's pool proof may carry.
  if (x.roster !== dispatch.record.roster) bad('POOL_SETTLEMENT_INVALID', 'the settlement is not split by the roster the job was dispatched under');
  const roster = c.roster(x.roster);
  if (!roster || roster.signer !== c.pool) bad('POOL_SETTLEMENT_INVALID', 'the settlement names a roster this member does not hold');
  const want = splitPrice(x.price, roster.record.members);
  const same = want.length === x.parts.length && want.every((p, i) => p.member === x.parts[i]!.member && p.weight === x.parts[i]!.weight && p.amount === x.parts[i]!.amount);
  if (!same) bad('POOL_SETTLEMENT_INVALID', 'the settlement’s parts are not the price divided by the roster’s weights');
  return s;
}

/**
 * Whether a closed entry's outcome gives way to its coordinator's own: one closed by another member's lost-dispatch
 * receipt (the coordinator was alive after all), one closed with the coordinator's completed receipt alone (heard
 * outside the pool: its settlement completes it), or one that does not open (kept by a build before these checks).
 */
export function givesWay(entry: TrailEntry): boolean {
  if (!entry.receipt) return true;
  if (entry.state === 'completed' && entry.settlement === undefined) return true;
  try {
    const r = open(entry.receipt, T.receipt, { trusted: true });
    return r.record.status === 'failed' && r.record.failure?.code === LOST_CODE && r.signer !== open(entry.dispatch, T.poolDispatch, { trusted: true }).signer;
  } catch {
    return true;
  }
}
