/**
 * Semantic checks per record kind, run by the validation pipeline on every path
 * a record arrives by (gossip with or without an attachment, and sync): DESIGN
 * §3.4 "semantic checks", §4 rule 5 (records link by address); issue #10.
 * docs/network.md §Semantic checks lists what runs where.
 *
 * A hook judges a record against the records it cites, through narrow lookups
 * (advert, offer, job, receipt by address). What it cannot judge because the
 * cited record is not held here is either ignored (no penalty, not relayed, not
 * stored) or let through, per kind:
 *
 *   offer       attached advert must be the cited one, same signer → else reject OFFER_ADVERT_MISMATCH
 *               cited advert held and signed by another provider  → reject OFFER_FOREIGN_ADVERT
 *               cited advert not held and not attached            → ignore OFFER_UNKNOWN_ADVERT
 *   receipt     (signer = provider named: the kind's own rule, on open)
 *               cited offer held: its signer (a pooled receipt: the pool of its advert), job and price must match → else reject RECEIPT_OFFER_MISMATCH
 *               cited job held: its signer must be the receipt's buyer and its workload the receipt's → else reject RECEIPT_JOB_MISMATCH
 *               referents not held → accepted (evidence links are checked again by reputation)
 *   acceptance  cited receipt held: signer must be its buyer → else reject ACCEPTANCE_NOT_BUYER
 *               cited receipt not held                   → held up to `pendingMs` waiting for it
 *                                                            (a buyer publishes the receipt, then the
 *                                                            acceptance: they may be validated out of
 *                                                            order), then ignore ACCEPTANCE_RECEIPT_UNKNOWN
 *   receipt, acceptance, non-delivery (/1 and /2)
 *               dated beyond now + the clock-skew window (a receipt's startedAt or completedAt, an acceptance's or
 *               non-delivery's signedAt)                        → ignore EVIDENCE_FROM_THE_FUTURE (not kept, not
 *                                                                 relayed, no penalty: a sync may bring it again
 *                                                                 once its time has come; notFromTheFuture)
 *   advert      pooled (docs/pools.md): proved by an older roster than the newest seen for its pool,
 *               or an expired one                               → ignore POOL_ROSTER_STALE / POOL_ROSTER_EXPIRED
 *               (also for the advert an offer carries)
 *   pool-witness (witnessHook below)
 *               signed by a key not named in network.witnesses   → ignore WITNESS_NOT_NAMED
 *               naming another steward than network.steward      → ignore WITNESS_FOREIGN_STEWARD
 *   pool-evidence (evidenceHook below)
 *               about another steward than network.steward       → ignore EVIDENCE_FOREIGN_STEWARD
 *   pool-head (poolHeadHook below)
 *               signed by another key than network.steward       → ignore HEAD_FOREIGN_STEWARD
 */
import { rejectError, ignoreError, type SemanticHook } from '../net/gossip-validation.js';
import { DEFAULT_SKEW_MS } from '../records/freshness.js';
import type { TopicKind } from '../net/topics.js';
import { open, type Opened } from '../records/envelope.js';
import { T, type Acceptance, type Advert, type Job, type Offer, type Receipt } from '../records/kinds.js';
import { moneyEquals } from '../records/money.js';
import { chainOf, receiptProviderFor, RosterView } from '../pools/chain.js';
import type { C0Error } from '../errors.js';
import type { WitnessReceipt } from '../ledger/entry.js';
import type { EquivocationEvidence } from '../ledger/evidence.js';

export const HOOK_ERR = {
  OFFER_ADVERT_MISMATCH: 'OFFER_ADVERT_MISMATCH',
  OFFER_FOREIGN_ADVERT: 'OFFER_FOREIGN_ADVERT',
  OFFER_UNKNOWN_ADVERT: 'OFFER_UNKNOWN_ADVERT',
  RECEIPT_OFFER_MISMATCH: 'RECEIPT_OFFER_MISMATCH',
  RECEIPT_JOB_MISMATCH: 'RECEIPT_JOB_MISMATCH',
  ACCEPTANCE_NOT_BUYER: 'ACCEPTANCE_NOT_BUYER',
  ACCEPTANCE_RECEIPT_UNKNOWN: 'ACCEPTANCE_RECEIPT_UNKNOWN',
  WITNESS_NOT_NAMED: 'WITNESS_NOT_NAMED',
  WITNESS_FOREIGN_STEWARD: 'WITNESS_FOREIGN_STEWARD',
  EVIDENCE_FOREIGN_STEWARD: 'EVIDENCE_FOREIGN_STEWARD',
  HEAD_FOREIGN_STEWARD: 'HEAD_FOREIGN_STEWARD',
  EVIDENCE_FROM_THE_FUTURE: 'EVIDENCE_FROM_THE_FUTURE',
} as const;

type Found<R> = Opened<R> | undefined | Promise<Opened<R> | undefined>;

/** What the hooks may look up: records held here, by content address. */
export interface RecordLookups {
  advert(address: string): Found<Advert>;
  offer(address: string): Found<Offer>;
  job(address: string): Found<Job>;
  receipt(address: string): Found<Receipt>;
}

/** Re-open held envelope bytes (already verified when they were accepted) as `type`; undefined when absent or another type. */
export function openHeld<R>(bytes: Uint8Array | undefined, type: string): Opened<R> | undefined {
  if (!bytes) return undefined;
  try {
    return open(bytes, type, { trusted: true }) as Opened<R>;
  } catch {
    return undefined;
  }
}

export interface RecordHookOptions {
  /** How long an acceptance waits for the receipt it cites before it is ignored, ms (default 2 000; 0 = not at all). */
  pendingMs: number;
  /** How often the wait looks again, ms (default 100). */
  pollMs: number;
  /**
   * Acceptances waiting at once, in all and per peer (default 64 and 8). A wait holds a validation slot, so past
   * these one is looked up once and ignored if its receipt is not held: acceptances citing receipts nobody has
   * cannot fill the validation queue (1,024 slots) and stall every other kind.
   */
  maxPending: number;
  maxPendingPerPeer: number;
  /** The clock-skew window, ms (network.clockSkewMs; default 30 000): evidence dated later than now + it is ignored. */
  skewMs: number;
}

export const RECORD_HOOK_DEFAULTS: RecordHookOptions = { pendingMs: 2_000, pollMs: 100, maxPending: 64, maxPendingPerPeer: 8, skewMs: DEFAULT_SKEW_MS };

/**
 * Outcome evidence (a receipt, an acceptance, a non-delivery /1 or /2) dated beyond now + the clock-skew window is
 * ignored before `hook` runs: EVIDENCE_FROM_THE_FUTURE. These kinds have no freshness window (kinds.ts
 * validityWindow: evidence may be old), so without this a record dated a year ahead would be kept, relayed, and left
 * out of every decision's view until then at the cost of a derivation per decision (docs/market.md "Evidence dated
 * ahead"). An ignore, not a reject: an honest relay whose clock is at the other edge of the window must not lose
 * score, and an ignore is not remembered, so the record is taken if it comes again in its time (a records/1 sync; gossipsub drops a repeat of the same message).
 */
export function notFromTheFuture(hook: SemanticHook | undefined, skewMs = DEFAULT_SKEW_MS): SemanticHook {
  return async (rec, ctx) => {
    const r = rec.record as { startedAt?: unknown; completedAt?: unknown; signedAt?: unknown };
    const latest = ctx.now + skewMs;
    for (const field of ['startedAt', 'completedAt', 'signedAt'] as const) {
      const t = r[field];
      if (typeof t === 'number' && t > latest) throw ignoreError(HOOK_ERR.EVIDENCE_FROM_THE_FUTURE, `the ${field} is ${t - ctx.now} ms after now, beyond the clock-skew window (${skewMs} ms): taken when it comes again in its time`, field);
    }
    await hook?.(rec, ctx);
  };
}

/** Look `find` up until it is found or `ms` have passed (polling every `every` ms). */
async function within<R>(find: () => Found<R>, ms: number, every: number): Promise<Opened<R> | undefined> {
  const end = performance.now() + ms;
  for (;;) {
    const r = await find();
    if (r || performance.now() >= end) return r;
    await new Promise((res) => setTimeout(res, Math.min(every, Math.max(1, end - performance.now()))));
  }
}

export function recordHooks(l: RecordLookups, options: Partial<RecordHookOptions> = {}): Partial<Record<TopicKind, SemanticHook>> {
  const o = { ...RECORD_HOOK_DEFAULTS, ...options };
  // Acceptances waiting for their receipt, in all and per peer.
  let pending = 0;
  const pendingBy = new Map<string, number>();
  const waitFor = async <R>(find: () => Found<R>, from: string): Promise<Opened<R> | undefined> => {
    const mine = pendingBy.get(from) ?? 0;
    if (pending >= o.maxPending || mine >= o.maxPendingPerPeer) return find();
    pending++;
    pendingBy.set(from, mine + 1);
    try {
      return await within(find, o.pendingMs, o.pollMs);
    } finally {
      pending--;
      const left = (pendingBy.get(from) ?? 1) - 1;
      if (left > 0) pendingBy.set(from, left);
      else pendingBy.delete(from);
    }
  };
  // Pooled adverts (docs/pools.md): the newest roster seen per pool; an advert proved by an older or expired roster is ignored.
  const rosters = new RosterView();
  const currentRoster = (a: Opened<Advert>, now: number) => {
    if (!a.record.pool) return;
    try {
      rosters.check(a.record.pool, a.signer, now, chainOf(a));
    } catch (e) {
      throw ignoreError((e as C0Error).code ?? 'POOL_ROSTER_INVALID', (e as Error).message, 'pool');
    }
  };
  return {
    advert: (rec, ctx) => currentRoster(rec as Opened<Advert>, ctx.now),
    offer: async (rec, ctx) => {
      const offer = rec as Opened<Offer>;
      for (const a of ctx.attachments) if (a.type === T.advert) currentRoster(a as Opened<Advert>, ctx.now);
      for (const a of ctx.attachments) {
        if (a.type !== T.advert || a.address !== offer.record.advert || a.signer !== offer.signer) {
          throw rejectError(HOOK_ERR.OFFER_ADVERT_MISMATCH, 'the attached advert is not the one the offer cites, or another provider signed it', 'advert');
        }
      }
      if (ctx.attachments.length) return;
      const advert = await l.advert(offer.record.advert);
      if (!advert) throw ignoreError(HOOK_ERR.OFFER_UNKNOWN_ADVERT, 'the offer cites an advert this node does not hold and did not attach it', 'advert');
      if (advert.signer !== offer.signer) throw rejectError(HOOK_ERR.OFFER_FOREIGN_ADVERT, 'the offer cites another provider’s advert', 'advert');
      // the held advert is checked against the pool's newest roster as an attached one is: a member a newer roster
      // removed does not quote as the pool on the advert it signed before (review s55)
      currentRoster(advert, ctx.now);
    },
    receipt: notFromTheFuture(async (rec) => {
      const r = (rec as Opened<Receipt>).record;
      const offer = await l.offer(r.offer);
      // A pooled receipt names the pool of the offer's advert (docs/pools.md); advert not held: only its chain (verified on open) is checked.
      let provider = offer?.signer;
      if (offer && r.pool) {
        const advert = await l.advert(offer.record.advert);
        provider = advert ? receiptProviderFor(offer.signer, advert) : r.provider;
      }
      if (offer && (provider !== r.provider || offer.record.job !== r.job || !moneyEquals(offer.record.price, r.price))) {
        throw rejectError(HOOK_ERR.RECEIPT_OFFER_MISMATCH, 'the receipt does not match the offer it cites (provider, job or price)', 'offer');
      }
      const job = await l.job(r.job);
      if (job && job.signer !== r.buyer) throw rejectError(HOOK_ERR.RECEIPT_JOB_MISMATCH, 'the receipt names a buyer that did not sign the job it cites', 'buyer');
      // the receipt's workload is its market (docs/network.md §14): it must be the job's
      if (job && job.record.workload !== r.workload) throw rejectError(HOOK_ERR.RECEIPT_JOB_MISMATCH, 'the receipt names another workload than the job it cites', 'workload');
    }, o.skewMs),
    acceptance: notFromTheFuture(async (rec, ctx) => {
      const acc = rec as Opened<Acceptance>;
      const receipt = await waitFor(() => l.receipt(acc.record.receipt), ctx.from);
      if (!receipt) throw ignoreError(HOOK_ERR.ACCEPTANCE_RECEIPT_UNKNOWN, 'the acceptance cites a receipt this node does not hold', 'receipt');
      if (receipt.record.buyer !== acc.signer) throw rejectError(HOOK_ERR.ACCEPTANCE_NOT_BUYER, 'an acceptance must be signed by the buyer of the receipt it cites', 'receipt');
    }, o.skewMs),
  };
}

/**
 * Witness receipts on an overlay that names its witnesses or its steward (docs/overlays.md "Witnesses"). Anyone on
 * the overlay can sign a receipt; one from a key nobody named would be kept by every node and, covering a head the
 * steward never had, make `c0mpute ledger verify` on an honest ledger read as rewritten. So a receipt from a key not
 * named, or (with the overlay's steward set) for another steward, is ignored: not relayed, not stored, no penalty (the
 * sender may only be relaying what a node configured otherwise let through). Undefined when the overlay names
 * neither: every key's receipt for any steward is then kept, a bounded set per key (src/store/witness-keep.ts).
 */
export function witnessHook(o: { witnesses?: readonly string[]; steward?: string }): SemanticHook | undefined {
  if (!o.witnesses && o.steward === undefined) return undefined;
  const named = o.witnesses ? new Set(o.witnesses) : undefined;
  return (rec) => {
    if (named && !named.has(rec.signer)) throw ignoreError(HOOK_ERR.WITNESS_NOT_NAMED, 'the receipt is signed by a key this overlay does not name as a witness (network.witnesses)', 'signer');
    const steward = (rec as Opened<WitnessReceipt>).record.steward;
    if (o.steward !== undefined && steward !== o.steward) throw ignoreError(HOOK_ERR.WITNESS_FOREIGN_STEWARD, `the receipt is for steward ${steward}, not this overlay's (network.steward)`, 'steward');
  };
}

/**
 * Equivocation evidence on an overlay that names its steward (docs/overlays.md "What a node keeps of witness
 * records"). Evidence needs only a key that signed two conflicting entries, and a throwaway key is as good a
 * "steward" as any: every node would keep it and log it. So evidence about another steward than `network.steward` is
 * ignored, as a receipt for one is: not relayed, not stored, no penalty (the sender may only be relaying). Undefined
 * when the overlay names no steward: evidence about any steward is then kept, within `witnessRecords.maxEvidence`.
 */
export function evidenceHook(o: { steward?: string }): SemanticHook | undefined {
  if (o.steward === undefined) return undefined;
  return (rec) => {
    const steward = (rec as Opened<EquivocationEvidence>).record.steward;
    if (steward !== o.steward) throw ignoreError(HOOK_ERR.EVIDENCE_FOREIGN_STEWARD, `the evidence is about steward ${steward}, not this overlay's (network.steward)`, 'steward');
  };
}

/**
 * Ledger heads on an overlay that names its steward (docs/overlays.md "Witnesses"). A head is any key's signed pool/1
 * entry: throwaway keys cost nothing, and each head of one would be relayed to every node and make a witness without a
 * list spend a catch-up slot and a dial on it. Only the overlay's steward signs its heads, so a head signed by another
 * key is ignored, as a receipt or evidence about another steward is: not relayed, not delivered, no penalty (the sender
 * may only be relaying). Undefined when the overlay names no steward: heads of any key pass (a witness bounds them).
 */
export function poolHeadHook(o: { steward?: string }, foreign?: (signer: string) => void): SemanticHook | undefined {
  if (o.steward === undefined) return undefined;
  return (rec) => {
    if (rec.signer === o.steward) return;
    // counted (the signature checked already): a witness whose network.steward names the wrong key says so (ForeignHeads)
    foreign?.(rec.signer);
    throw ignoreError(HOOK_ERR.HEAD_FOREIGN_STEWARD, `the head is signed by ${rec.signer}, not by this overlay's steward (network.steward)`, 'signer');
  };
}

/**
 * Heads on pool-head dropped since start because another key than network.steward signed them (HEAD_FOREIGN_STEWARD):
 * how many, and the last signer and when. On a witness whose network.steward names the wrong key, the real steward's
 * heads are all dropped here, silently but for a metric; its `witness status` shows this (QA witness pass, finding 3).
 * Any key can sign a head, so it is a count and one signer, not a list.
 */
export class ForeignHeads {
  dropped = 0;
  last: { signer: string; at: number } | undefined;
  constructor(private readonly clock: () => number) {}

  note(signer: string): void {
    this.dropped++;
    this.last = { signer, at: this.clock() };
  }

  view(): { dropped: number; last: { signer: string; at: number } } | undefined {
    return this.last ? { dropped: this.dropped, last: { ...this.last } } : undefined;
  }
}
