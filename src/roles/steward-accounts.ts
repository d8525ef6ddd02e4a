/**
 * The steward's accounts of its open claims (pool/1 §6.2): who bought each
 * admitted job, which providers a selection named, the receipts they signed,
 * and the deadline timer. A claim is released (`Released`, the actual energy
 * in place of the reservation) on a completed receipt, on a reclaimed one
 * (EXEC_PREEMPTED, EXEC_IDLE_RECLAIMED) from a provider this steward asked to
 * stop it (AccountsDeps.stopAsked; one nobody asked for is an ordinary failed
 * receipt), when its buyer withdraws it, or at its
 * deadline with failures alone (after a last look: its buyer and provider are
 * asked for its receipts first, #closeAtDeadline): the sum of every receipt the job's providers
 * signed (a failed attempt spent energy too) at the worst grade among them (a
 * grade never improves). A gang's claim (src/roles/steward-gangs.ts) is
 * charged every member job's receipts and released once, when every member
 * has a final receipt (completed or failed), when its buyer withdraws it, or
 * at its deadline. Part of src/roles/steward.ts.
 *
 * Only who did the work is charged (onReceipt): a single job's claim only
 * receipts from the provider that signed a selection's winning offer for that
 * job (resolved from the offer itself, src/roles/steward-winners.ts, never
 * from the `considered` text alone) or, when that offer cites a pool's advert,
 * the pool's receipts for that offer (docs/pools.md: they name the pool's DID;
 * their chain must prove a member of that pool). One heard before that
 * selection is held aside, bounded (and kept on disk, so a restart before the
 * selection loses none), and charged once a selection chooses who signed it.
 * A gang's only receipts signed by the run member bound to the job they name.
 * Anyone can sign a receipt naming the job and buyer.
 *
 * A single job's receipts, those held aside, and the providers chosen for it
 * (winners, the winning offers with the pool each stands for, and the provider
 * of the latest selection's winning offer) are kept in the `steward-claims`
 * store as well (ClaimStore below; a gang's receipts are kept by
 * src/roles/steward-gangs.ts), so after a restart its release still charges
 * every receipt signed before it, a completed receipt heard before the
 * restart releases it at once, a receipt held aside before the restart is
 * charged when a selection after it names its provider, and its provider can
 * still be preempted or reclaimed. Who this steward asked to stop the claim
 * is kept there too (a stop mark, written and synced before the `stop` is
 * sent: src/roles/steward-reclaim.ts), so a reclaimed-coded receipt from a
 * provider it asked, heard before a crash, still releases the claim as
 * reclaimed at the start, as does a provider's answer that freed the devices
 * (its receipt, or `barred`), and the buyer's `reclaimed` question is answered
 * as before the restart. The entries go when the claim's `Released` is
 * appended.
 *
 * A claim stays tracked until its `Released` append succeeds: a failed append
 * (a store error) leaves it open and tracked, and the release is tried again
 * (RELEASE_RETRY: doubling waits, a bounded number of times; after the last,
 * at its deadline if that is still ahead, or on its next receipt or withdraw,
 * or at the next start). An actual figure the ledger cannot add (the
 * entitlement's usage would pass 2^53 − 1 µJ, POOL_UJ_TOO_LARGE) is capped at
 * what it can, graded `Estimator`: see #actual.
 *
 * Store (the overlay's `steward-claims` sublevel): `r/<claim>/<receipt
 * address>` → a charged receipt's envelope; `a/<claim>/<receipt address>` → the
 * envelope of one held aside (at most MAX_ASIDE_RECEIPTS per claim; moved to
 * `r/` in one batch when charged); `w/<claim>/<provider>` → the order it was
 * chosen in (decimal); `o/<claim>/<offer>` → a winning offer as resolved (JSON
 * ChosenOffer: its signer, cited advert, the pool it stands for); `p/<claim>` →
 * the signer of the latest selection's winning offer; `s/<claim>/<provider>` →
 * a stop mark, the steward asked that provider to stop the claim (JSON
 * StopMark without its provider: `{reason, freed, answered?}`; a claim gets at
 * most the few providers it was asked to stop at); `x/<claim>` → a claim released after
 * this steward asked a provider to stop it (JSON ReclaimedNote: why, its buyer,
 * its deadline, the providers asked, the failovers' providers waiting to be
 * asked, the one whose stop was going out), written with each stop mark (before
 * the stop goes out), again in the batch that drops the claim's other entries,
 * again before a stop to a failover's provider asked after the release goes
 * out (that provider asked, and `sending`), again when a failover's provider
 * starts to wait for its turn, and once a stop settles (unsynced: a note still
 * saying `sending` only has that provider asked again); kept until the claim's
 * deadline, so the buyer's `reclaimed` question naming a provider asked is
 * answered `priority`/`idle` after a restart too, never `closed` or `no` (which
 * the buyer does not take as a reclaim), and the providers waiting, or whose
 * stop had not settled, are still asked.
 */
import { open as openEnvelope, type Opened } from '../records/envelope.js';
import { T, type Energy, type Offer, type Receipt, type Selection } from '../records/kinds.js';
import { worseGrade } from '../pool/grades.js';
import type { Ledger } from '../ledger/store.js';
import type { Sub } from '../store/db.js';
import { monotonicClock, type Clock } from '../util/clock.js';
import type { Logger } from '../util/log.js';
import { raceTimeout, setLongTimeout, type LongTimer } from '../util/timers.js';
import { pooledReceiptFor, type ChosenOffer, type WinnerResolver } from './steward-winners.js';

const GRACE_MS = 5_000;

/**
 * The last look before a claim is released at its deadline (ClaimAccounts #closeAtDeadline) waits at most this long
 * for its parties' answers, and what they bring to be handled.
 */
export const DEADLINE_LOOK_MS = 5_000;

/**
 * A claim past its deadline when the steward starts has its last look no sooner than this after the start: the
 * network starts after the roles (as the first catch-up round, src/roles/steward.ts), and a look asked before it
 * reaches nobody.
 */
export const START_LOOK_MS = 2_000;

/** A failed `Released` append is tried again after baseMs, doubling up to maxMs, at most `tries` times. */
export const RELEASE_RETRY = { baseMs: 1_000, maxMs: 60_000, tries: 6 } as const;

const utf8 = new TextEncoder();
const fromUtf8 = new TextDecoder();

/** What is kept of a single job's claim across a restart. */
export interface SavedClaim {
  receipts: Opened<Receipt>[];
  /** held aside: from providers no selection had named */
  aside: Opened<Receipt>[];
  /** in the order they were chosen */
  winners: string[];
  /** the winning offers as resolved (a pool's among them) */
  chosen: ChosenOffer[];
  provider?: string;
  /** the providers this steward asked to stop it (ClaimStore `s/`) */
  stops: StopMark[];
  /** released after this steward asked a provider to stop it (ClaimStore `x/`) */
  reclaimed?: ReclaimedNote;
}

/**
 * This steward asked `provider` to stop a single job's claim (src/roles/steward-reclaim.ts Reclaimer): for a higher
 * priority or because it was idle, and whether the provider's answer freed the devices (its stop receipt, or
 * `barred`). Kept on disk before the `stop` is sent, so a restart does not forget who was asked.
 *
 * What a mark on disk of a claim still open says of the newest stop to its provider: `freed`, its answer freed the
 * devices (the claim is released at the start); `answered`, the provider answered it without freeing them (a refusal,
 * `stopped: "no"` without `barred`, or an error), the mark kept all the same (an error, an earlier stop to it on
 * record); neither, its answer is unknown: it got none, or the steward stopped before it came.
 * Only the last, for a higher priority, is a stop the steward asks again first after a restart, as it would have
 * without one (Reclaimer.restoreAsked). A mark written before `answered` existed reads as unanswered.
 */
export interface StopMark {
  provider: string;
  reason: 'priority' | 'idle';
  freed: boolean;
  /** The provider answered the newest stop without freeing the devices (see above); absent: no such answer. */
  answered?: boolean;
}

/**
 * A claim released after this steward asked a provider to stop it (ClaimStore `x/`): kept until its deadline, so a
 * restart still knows it was reclaimed (src/roles/steward-reclaim.ts Reclaimer.reclaimedNote, restoreAsked).
 */
export interface ReclaimedNote {
  reason: 'priority' | 'idle';
  buyer: string;
  deadline: number;
  /** the providers asked to stop it (oldest first; at most MAX_ASKED_PER_CLAIM: the first, and the newest after it) */
  asked: string[];
  /**
   * Failovers' providers found and not asked yet, waiting for the claim's turn in the stop line (oldest first, at most
   * MAX_PENDING_SELECTIONS): given back at the start and asked in turns (src/roles/steward-reclaim.ts). Absent in a
   * note written before it existed, or with none waiting.
   */
  waiting?: string[];
  /**
   * The failover's provider whose stop was going out (sent, or still dialling) and had not settled, answered or timed
   * out, when the note was written. It is among `asked` (it counts as asked: its reclaimed-coded receipt and the buyer's
   * `reclaimed` question naming it are the reclaim's), and it is asked again at the start: the stop may never have
   * reached it, and a stop asked twice only bars the job again. Absent when no stop was going out, and in a note
   * written before it existed.
   */
  sending?: string;
}

/** A kept reclaimed note (ClaimStore `x/`), or undefined when it does not read as one. */
function reclaimedNoteFrom(text: string): ReclaimedNote | undefined {
  try {
    const m = JSON.parse(text) as Partial<ReclaimedNote>;
    if (m.reason !== 'priority' && m.reason !== 'idle') return undefined;
    if (typeof m.buyer !== 'string' || !m.buyer || !Number.isSafeInteger(m.deadline) || !Array.isArray(m.asked) || !m.asked.every((a) => typeof a === 'string' && a)) return undefined;
    // a waiting list that does not read is left out: who was asked, and why, still count (the buyer's next selection
    // names its failover again)
    const waiting = Array.isArray(m.waiting) && m.waiting.length && m.waiting.every((a) => typeof a === 'string' && a) ? m.waiting.slice(-MAX_PENDING_SELECTIONS) : undefined;
    // likewise a `sending` that does not read (its provider counts as asked still, from `asked`)
    const sending = typeof m.sending === 'string' && m.sending ? m.sending : undefined;
    return { reason: m.reason, buyer: m.buyer, deadline: m.deadline!, asked: cappedAsked(m.asked), ...(waiting ? { waiting } : {}), ...(sending ? { sending } : {}) };
  } catch {
    return undefined;
  }
}

/** A kept stop mark (ClaimStore `s/`), or undefined when it does not read as one. */
function stopMarkFrom(provider: string, text: string): StopMark | undefined {
  try {
    const m = JSON.parse(text) as { reason?: unknown; freed?: unknown; answered?: unknown };
    if ((m.reason !== 'priority' && m.reason !== 'idle') || typeof m.freed !== 'boolean' || !provider) return undefined;
    // an `answered` that does not read is left out: the stop is then taken for one whose answer is unknown (asked again)
    return { provider, reason: m.reason, freed: m.freed, ...(m.answered === true ? { answered: true } : {}) };
  } catch {
    return undefined;
  }
}

/** A single job's receipts and chosen providers, on disk (see the module comment for the keys). */
export class ClaimStore {
  constructor(private readonly sub: Sub) {}

  /**
   * What is kept, by claim. Every receipt envelope is opened (its signature checked) again. A charged receipt that
   * does not open fails the load (it was charged: a release without it would under-charge); one held aside that does
   * not open is left out and handed to `unreadable` (it was never charged; it goes with its claim), as is a stop mark
   * that does not read as one (a reclaimed-coded receipt from that provider then counts as a failure, as one nobody
   * asked for).
   */
  async load(unreadable?: (key: string, err: Error) => void): Promise<Map<string, SavedClaim>> {
    const out = new Map<string, SavedClaim>();
    const winners = new Map<string, Array<[number, string]>>();
    const of = (claim: string) => {
      let c = out.get(claim);
      if (!c) out.set(claim, (c = { receipts: [], aside: [], winners: [], chosen: [], stops: [] }));
      return c;
    };
    for await (const [k, v] of this.sub.iterator()) {
      if (k.startsWith('r/')) of(k.slice(2, k.lastIndexOf('/'))).receipts.push(openEnvelope(v, T.receipt));
      else if (k.startsWith('a/')) {
        const c = of(k.slice(2, k.lastIndexOf('/')));
        try {
          c.aside.push(openEnvelope(v, T.receipt));
        } catch (e) {
          unreadable?.(k, e as Error);
        }
      } else if (k.startsWith('w/')) {
        const claim = k.slice(2, k.lastIndexOf('/'));
        of(claim);
        winners.set(claim, [...(winners.get(claim) ?? []), [Number(fromUtf8.decode(v)), k.slice(k.lastIndexOf('/') + 1)]]);
      } else if (k.startsWith('o/')) {
        const c = chosenFrom(fromUtf8.decode(v));
        if (c) of(k.slice(2, k.lastIndexOf('/'))).chosen.push(c);
      } else if (k.startsWith('p/')) of(k.slice(2)).provider = fromUtf8.decode(v);
      else if (k.startsWith('s/')) {
        const c = of(k.slice(2, k.lastIndexOf('/')));
        const m = stopMarkFrom(k.slice(k.lastIndexOf('/') + 1), fromUtf8.decode(v));
        if (m) c.stops.push(m);
        else unreadable?.(k, new Error('not a stop mark'));
      } else if (k.startsWith('x/')) {
        const c = of(k.slice(2));
        const n = reclaimedNoteFrom(fromUtf8.decode(v));
        if (n) c.reclaimed = n;
        else unreadable?.(k, new Error('not a reclaimed note'));
      }
    }
    for (const [claim, ws] of winners) of(claim).winners = ws.sort((a, b) => a[0] - b[0]).map(([, w]) => w);
    return out;
  }

  /** A receipt charged to the claim (no longer held aside, if it was: one batch). */
  async putReceipt(claim: string, r: Opened<Receipt>): Promise<void> {
    await this.sub.batch(
      [
        { type: 'put', key: `r/${claim}/${r.address}`, value: r.bytes },
        { type: 'del', key: `a/${claim}/${r.address}` },
      ],
      { sync: true } as never,
    );
  }

  /** A receipt held aside for the claim (the caller keeps at most MAX_ASIDE_RECEIPTS per claim). */
  async putAside(claim: string, r: Opened<Receipt>): Promise<void> {
    await this.sub.batch([{ type: 'put', key: `a/${claim}/${r.address}`, value: r.bytes }], { sync: true } as never);
  }

  async dropAside(claim: string, address: string): Promise<void> {
    await this.sub.batch([{ type: 'del', key: `a/${claim}/${address}` }], { sync: true } as never);
  }

  async putWinner(claim: string, provider: string, order: number): Promise<void> {
    await this.sub.batch([{ type: 'put', key: `w/${claim}/${provider}`, value: utf8.encode(String(order)) }], { sync: true } as never);
  }

  async putChosen(claim: string, c: ChosenOffer): Promise<void> {
    await this.sub.batch([{ type: 'put', key: `o/${claim}/${c.offer}`, value: utf8.encode(JSON.stringify(c)) }], { sync: true } as never);
  }

  async putProvider(claim: string, provider: string): Promise<void> {
    await this.sub.batch([{ type: 'put', key: `p/${claim}`, value: utf8.encode(provider) }], { sync: true } as never);
  }

  /**
   * Keep (or update) a stop mark, and with it (`note`) that the claim is reclaimed (`x/`, what outlives its release):
   * synced, in one batch, so that once this resolves a restart still knows the provider was asked, and the claim was
   * reclaimed even if the steward dies between the claim's `Released` append and the drop of its other entries.
   */
  async putStopMark(claim: string, m: StopMark, note?: ReclaimedNote, drop: string[] = []): Promise<void> {
    await this.sub.batch(
      [
        { type: 'put', key: `s/${claim}/${m.provider}`, value: utf8.encode(JSON.stringify({ reason: m.reason, freed: m.freed, ...(m.answered ? { answered: true } : {}) })) },
        ...(note ? [{ type: 'put' as const, key: `x/${claim}`, value: utf8.encode(JSON.stringify(note)) }] : []),
        // the marks of providers the note no longer names as asked (MAX_ASKED_PER_CLAIM)
        ...drop.map((p) => ({ type: 'del' as const, key: `s/${claim}/${p}` })),
      ],
      { sync: true } as never,
    );
  }

  async dropStopMark(claim: string, provider: string): Promise<void> {
    await this.sub.batch([{ type: 'del', key: `s/${claim}/${provider}` }], { sync: true } as never);
  }

  /**
   * Keep (or update) a released claim's reclaimed note (`x/`): a provider was asked to stop it after its release, or
   * waits to be. Synced unless `sync` is false (a write whose loss costs nothing but a stop asked again).
   */
  async putReclaimedNote(claim: string, note: ReclaimedNote, sync = true): Promise<void> {
    await this.sub.batch([{ type: 'put', key: `x/${claim}`, value: utf8.encode(JSON.stringify(note)) }], { sync } as never);
  }

  /**
   * Drop what is kept of a claim, in one batch; `reclaimed`: it was released after this steward asked a provider to
   * stop it, and that is kept (`x/`) until its deadline (dropReclaimed), in the same batch. Given as a function, it is
   * read right before the batch, so a provider asked to stop meanwhile (its note written while the keys were read)
   * is not written over by an older note.
   */
  async remove(claim: string, reclaimed?: ReclaimedNote | (() => ReclaimedNote | undefined)): Promise<void> {
    const ops: Array<{ type: 'del'; key: string } | { type: 'put'; key: string; value: Uint8Array }> = [{ type: 'del', key: `p/${claim}` }];
    for (const pre of ['r', 'a', 'w', 'o', 's']) for await (const k of this.sub.keys({ gt: `${pre}/${claim}/`, lt: `${pre}/${claim}/~` })) ops.push({ type: 'del', key: k });
    const note = typeof reclaimed === 'function' ? reclaimed() : reclaimed;
    ops.push(note ? { type: 'put', key: `x/${claim}`, value: utf8.encode(JSON.stringify(note)) } : { type: 'del', key: `x/${claim}` });
    await this.sub.batch(ops, { sync: true } as never);
  }

  /** A reclaimed claim's deadline has come (or it is no longer remembered): its note goes. */
  async dropReclaimed(claim: string): Promise<void> {
    await this.sub.batch([{ type: 'del', key: `x/${claim}` }], { sync: true } as never);
  }
}

/**
 * How many receipts from providers no selection named yet are held aside per
 * single job's claim (in memory and in the claims store; see
 * ClaimAccounts.onReceipt). Past it a further one is dropped, not charged.
 */
export const MAX_ASIDE_RECEIPTS = 16;

/** How many selections whose winning offer could not be found yet are kept per claim (memory only; tried again at each catch-up). */
export const MAX_PENDING_SELECTIONS = 8;

/**
 * How many providers asked to stop a reclaimed claim are remembered per claim (ReclaimedNote `asked`, in memory and
 * on disk; src/roles/steward-reclaim.ts): the first asked (the provider the claim was reclaimed from) and the newest
 * after it. Only the claim's buyer (or the steward) adds to it, a selection at a time, so a buyer naming a throwaway
 * provider in each selection cannot grow the note, or the bytes rewritten with it, without bound. What the list is
 * for: the buyer's `reclaimed` question naming a provider, asked as soon as that provider refuses or ends the job
 * (shortly after its stop), and not asking a provider twice. An honest buyer stops failing over once told its claim
 * was reclaimed, so it never nears the cap; one pushed out is asked again if a selection names it again (a stop asked
 * twice only bars the job again), and only the buyer that pushed it out is told `no` about it.
 */
export const MAX_ASKED_PER_CLAIM = 32;

/** `asked` within MAX_ASKED_PER_CLAIM: its first, and the newest after it. */
export function cappedAsked(asked: string[]): string[] {
  return asked.length <= MAX_ASKED_PER_CLAIM ? asked : [asked[0]!, ...asked.slice(-(MAX_ASKED_PER_CLAIM - 1))];
}

/**
 * How many claims may have a winning offer (or its advert) fetched in the background at once, over every claim (open
 * ones, and reclaimed ones a failover selection names; the stop requests to those failovers' providers have their own
 * bound, src/roles/steward-reclaim.ts MAX_RECLAIM_STOPS); one at a time per claim and per buyer. Past it a claim waits for the next
 * catch-up round (ClaimAccounts.retryPending, Reclaimer.retryPending) or its next selection.
 */
export const MAX_BACKGROUND_RESOLVES = 4;

/** A claim whose background fetch found nothing waits this long, doubled at each further miss, up to 5 minutes. */
export const FETCH_BACKOFF_MS = 1000;
export const FETCH_BACKOFF_MAX_MS = 5 * 60_000;

/**
 * The backoff of what background fetches are for (an open claim's accounts, a reclaimed claim's failovers): a duration
 * the steward measures for itself, on the monotonic clock (StewardPorts.monoClock), so a wall clock stepped back does
 * not hold the fetches back as long, nor one stepped forward cut the backoff short. Memory only.
 */
export interface FetchBackoff {
  /** Background fetches for it that found nothing in a row. */
  fetchMisses?: number;
  /** When the next may start, on the monotonic clock. */
  fetchNotBefore?: number;
}

/** Whether what `backoff` is for backs off at `now` (monotonic: its background fetches found nothing lately). */
export function backingOff(backoff: FetchBackoff, now: number): boolean {
  return backoff.fetchNotBefore !== undefined && now < backoff.fetchNotBefore;
}

/** After a background fetch for what `backoff` is for, at `now` (monotonic): reset when it found what it looked for, else back off longer. */
export function noteFetched(backoff: FetchBackoff, found: boolean, now: number): void {
  if (found) {
    backoff.fetchMisses = 0;
    delete backoff.fetchNotBefore;
    return;
  }
  backoff.fetchMisses = (backoff.fetchMisses ?? 0) + 1;
  backoff.fetchNotBefore = now + Math.min(FETCH_BACKOFF_MAX_MS, FETCH_BACKOFF_MS * 2 ** (backoff.fetchMisses - 1));
}

/**
 * The steward's background fetches over records/1 for claims (a selection's winning offer, its advert), shared by the
 * accounts and the reclaimer (a reclaimed claim's failovers' offers) so that one bound holds over both: at most one in flight per claim and one per buyer, at most
 * MAX_BACKGROUND_RESOLVES in all, none while the claim backs off after fetches that found nothing (FETCH_BACKOFF_MS,
 * doubled at each further miss, up to FETCH_BACKOFF_MAX_MS; work given no backoff keeps its own), none once the
 * steward stops. Work refused a slot is not queued: its owner keeps what it must look for or ask and offers it again
 * (a catch-up round, the next selection). So a buyer whose selections name offers nobody serves holds one slot at a time, and never the slots other buyers' claims need. Never awaited by a
 * gossip handler.
 */
export class BackgroundFetches {
  readonly #claims = new Set<string>();
  readonly #buyers = new Set<string>();

  /** `mono`: the monotonic clock of the backoffs (FetchBackoff). */
  constructor(private readonly d: { mono: Clock; log: Logger; stopped: () => boolean; max?: number }) {}

  /** How many are in flight. */
  get size(): number {
    return this.#claims.size;
  }

  /**
   * Run `work` for `claim` (bought by `buyer`) in the background, if a slot is free for it (see the class comment);
   * `work` answers whether it found what it looked for, which resets `backoff` (else it grows). Without `backoff` the
   * work is not held back by one, and its answer is not kept (its owner keeps its own: noteFetched). Answers whether
   * the work was started.
   */
  run(claim: string, buyer: string, backoff: FetchBackoff | undefined, what: string, work: () => Promise<boolean>): boolean {
    if (this.#claims.has(claim) || this.#buyers.has(buyer) || this.#claims.size >= (this.d.max ?? MAX_BACKGROUND_RESOLVES) || this.d.stopped()) return false;
    if (backoff && backingOff(backoff, this.d.mono())) return false;
    this.#claims.add(claim);
    this.#buyers.add(buyer);
    void work()
      .then((found) => {
        if (backoff) noteFetched(backoff, found, this.d.mono());
      })
      .catch((e) => this.d.log.warn({ claim, err: (e as Error).message }, `${what} failed`))
      .finally(() => {
        this.#claims.delete(claim);
        this.#buyers.delete(buyer);
      });
    return true;
  }
}

/** A kept ChosenOffer (ClaimStore `o/`), or undefined when it does not read as one (skipped: the claim is charged without it). */
function chosenFrom(text: string): ChosenOffer | undefined {
  try {
    const c = JSON.parse(text) as Partial<ChosenOffer>;
    if (typeof c.offer !== 'string' || typeof c.provider !== 'string' || typeof c.advert !== 'string' || typeof c.advertKnown !== 'boolean') return undefined;
    if (c.pool !== undefined && typeof c.pool !== 'string') return undefined;
    return { offer: c.offer, provider: c.provider, advert: c.advert, advertKnown: c.advertKnown, ...(c.pool === undefined ? {} : { pool: c.pool }) };
  } catch {
    return undefined;
  }
}

/** A claim's winners: a set that tells its owner of each provider added (so a winner chosen anywhere is kept on disk). */
class Winners extends Set<string> {
  onAdd?: (provider: string, order: number) => void;

  override add(provider: string): this {
    if (this.has(provider)) return this;
    super.add(provider);
    this.onAdd?.(provider, this.size - 1);
    return this;
  }
}

export interface OpenJob extends FetchBackoff {
  claim: string;
  buyer: string;
  deadline: number;
  receipts: Map<string, Opened<Receipt>>;
  winners: Set<string>;
  /** A single job's winning offers as resolved, by offer address (a pool's receipts are charged against these). */
  chosen: Map<string, ChosenOffer>;
  /** The signer of the latest selection's winning offer: who runs the job (asked for usage, to stop). */
  provider?: string;
  /** Selections whose winning offer was not found yet (memory only, at most MAX_PENDING_SELECTIONS): resolved again at each catch-up. */
  pending?: Map<string, Opened<Selection>>;
  entitlement: string;
  timer?: LongTimer;
  /** A gang's claim: its size (member jobs are bound to it in src/roles/steward-gangs.ts). */
  gang?: number;
  /** Its `Released` append is in flight: the claim is still tracked, but nothing else releases it meanwhile. */
  releasing?: boolean;
  /** Failed `Released` appends so far (RELEASE_RETRY). */
  releaseFailures?: number;
  /**
   * A single job's receipts from providers no selection for it has named (yet): held aside, not charged, at most
   * MAX_ASIDE_RECEIPTS, kept on disk too (ClaimStore `a/`); charged once a selection names their provider
   * (ClaimAccounts.onReceipt).
   */
  aside?: Map<string, Opened<Receipt>>;
  /** The aside was full and a receipt was dropped (logged once). */
  asideDropped?: boolean;
}

export interface AccountsDeps {
  ledger: Ledger;
  /** This steward's DID (its own selections name providers too). */
  did: string;
  clock: Clock;
  /** The monotonic clock of the background fetches' backoff (default monotonicClock; StewardPorts.monoClock). */
  monoClock?: Clock;
  log: Logger;
  stopped: () => boolean;
  /** Append a ledger entry and publish the new head. */
  append: Ledger['append'];
  /**
   * Whether this steward asked `provider` to stop claim `claim` (src/roles/steward-reclaim.ts Reclaimer.stopAsked):
   * only then does its receipt coded EXEC_PREEMPTED or EXEC_IDLE_RECLAIMED release the claim as reclaimed. Absent:
   * nobody was asked, every such receipt is an ordinary failure.
   */
  stopAsked?: (claim: string, provider: string) => boolean;
  /**
   * After a restart, before any kept receipt is judged: the stop marks kept for an open single job's claim (ClaimStore
   * `s/`), or the providers a released one's reclaimed note names as asked, handed back to whoever answers stopAsked
   * (src/roles/steward-reclaim.ts Reclaimer.restoreAsked), with the failovers' providers its note says still wait to
   * be asked (`waiting`), and the one whose stop had not settled (`sending`: asked again).
   */
  restoreAsked?: (claim: string, buyer: string, deadline: number, marks: StopMark[], again?: Pick<ReclaimedNote, 'waiting' | 'sending'>) => void;
  /**
   * The claim was reclaimed (a provider asked to stop it, before its deadline): what is kept of it once released
   * (ClaimStore `x/`; src/roles/steward-reclaim.ts Reclaimer.reclaimedNote).
   */
  reclaimedNote?: (claim: string) => ReclaimedNote | undefined;
  /** A claim is closing: drop what else is kept about it (sampled usage, idle verdicts). Runs before the append. */
  forget: (claim: string) => void;
  /** Resolves a selection's winning offer: who signed it, the pool its receipts name (src/roles/steward-winners.ts). */
  winners: WinnerResolver;
  /** The background fetches' slots (default: the accounts' own); the reclaimer takes its fetches from the same ones. */
  background?: BackgroundFetches;
  /** Where a single job's receipts and chosen providers are kept across a restart (absent: in memory only). */
  store?: ClaimStore;
  /** Retrying a failed `Released` append (default RELEASE_RETRY). */
  releaseRetry?: { baseMs: number; maxMs: number; tries: number };
  /**
   * Ask a party for its records of `kinds` naming `jobs` (records/1 `jobs`), and wait until what came is handled by
   * the steward's handlers (src/roles/steward-reclaim.ts Reclaimer.askJobs; never throws): the last look before a
   * deadline release (#closeAtDeadline). Absent: no look, a claim is released at its deadline with what is held.
   */
  askJobs?: (party: string, kinds: Array<'selection' | 'receipt'>, jobs: string[]) => Promise<unknown>;
  /** Capacity freed: decide the queue again. */
  freed: () => Promise<void>;
  /** A gang's member jobs: the claim a job is bound to, and its member index (src/roles/steward-gangs.ts). */
  gangs?: {
    claimOf(job: string): string | undefined;
    memberOf(job: string): number | undefined;
    /** Whether a receipt for a bound member job was signed by the run member bound to that job (src/roles/steward-gangs.ts). */
    signedByMember(r: Opened<Receipt>): boolean;
    /** Keep a receipt charged to a gang (it survives a restart). */
    noteReceipt(claim: string, r: Opened<Receipt>): Promise<void>;
    /** The gang's claim was released. */
    released(claim: string): Promise<void>;
  };
}

export class ClaimAccounts {
  readonly #open = new Map<string, OpenJob>();
  /** The background fetches' slots (BackgroundFetches), shared with the reclaimer (src/roles/steward-reclaim.ts). */
  readonly background: BackgroundFetches;
  /** When these accounts were made (the steward's start), on the monotonic clock: START_LOOK_MS counts from it. */
  readonly #startedAt: number;
  /** Claims whose deadline came, waiting for their last look (#closeAtDeadline). */
  readonly #due = new Set<OpenJob>();
  /** A last look is under way: claims coming due meanwhile wait for the next. */
  #looking = false;

  constructor(private d: AccountsDeps) {
    this.background = d.background ?? new BackgroundFetches({ mono: d.monoClock ?? monotonicClock, log: d.log, stopped: d.stopped });
    this.#startedAt = this.#mono();
  }

  #mono(): number {
    return (this.d.monoClock ?? monotonicClock)();
  }

  /** An open claim's accounts; undefined once its release is under way (a usage answer in flight then keeps nothing). */
  get(claim: string): OpenJob | undefined {
    const oj = this.#open.get(claim);
    return oj?.releasing ? undefined : oj;
  }

  track(claim: string, entitlement: string, buyer: string, deadline: number, gang?: number): OpenJob {
    const winners = new Winners();
    const oj: OpenJob = { claim, buyer, deadline, entitlement, receipts: new Map(), winners, chosen: new Map(), ...(gang === undefined ? {} : { gang }) };
    const store = this.d.store;
    // A single job's winners are kept on disk, whoever chose them (a selection heard, or this steward's own in select()).
    if (store && gang === undefined) {
      winners.onAdd = (provider, order) => void store.putWinner(claim, provider, order).catch((e) => this.d.log.warn({ claim, provider, err: (e as Error).message }, 'cannot keep a chosen provider on disk'));
    }
    this.#open.set(claim, oj);
    this.#armDeadline(oj);
    return oj;
  }

  /**
   * After a restart: give the claims tracked again what was kept of them
   * (receipts, those held aside, winners, the provider), drop what was kept of
   * claims no longer open, charge the receipts held aside that a selection
   * before the restart already named (it was chosen, then the process died),
   * hand the stop marks back (restoreAsked), and release at once a claim whose
   * final receipt was heard before the restart: completed, or reclaimed-coded
   * from a provider this steward had asked to stop it; or one whose provider's
   * answer to that stop had freed the devices (its receipt, or `barred`).
   */
  async restore(): Promise<void> {
    const store = this.d.store;
    if (!store) return;
    const unreadable = (key: string, err: Error) => this.d.log.warn({ key, err: err.message }, 'a receipt held aside or a stop mark on disk does not read; left out (dropped with its claim)');
    /** Claims whose provider's answer to a stop freed the devices before the restart, and why they were asked. */
    const freed = new Map<string, 'priority' | 'idle'>();
    for (const [claim, saved] of await store.load(unreadable)) {
      const oj = this.#open.get(claim);
      if (!oj || oj.gang !== undefined || !this.d.ledger.book.open.has(claim)) {
        // released as reclaimed: remembered until its deadline (the buyer's `reclaimed` question, a failover's stop)
        const note = !oj && saved.reclaimed && saved.reclaimed.deadline > this.d.clock() ? saved.reclaimed : undefined;
        if (note) this.d.restoreAsked?.(claim, note.buyer, note.deadline, note.asked.map((provider) => ({ provider, reason: note.reason, freed: true })), note);
        await store.remove(claim, note);
        continue;
      }
      for (const r of saved.receipts) oj.receipts.set(r.address, r);
      for (const w of saved.winners) Set.prototype.add.call(oj.winners, w);
      for (const c of saved.chosen) oj.chosen.set(c.offer, c);
      if (saved.provider) oj.provider = saved.provider;
      if (saved.stops.length) {
        this.d.restoreAsked?.(claim, oj.buyer, oj.deadline, saved.stops, saved.reclaimed);
        const f = saved.stops.find((m) => m.freed);
        if (f) freed.set(claim, f.reason);
      }
      for (const r of saved.aside) {
        // one charged as its aside entry was written (a race, or a crash between the two) is not held again
        if (oj.receipts.has(r.address) || r.record.job !== claim || r.record.buyer !== oj.buyer) continue;
        const aside = (oj.aside ??= new Map());
        if (aside.size < MAX_ASIDE_RECEIPTS) aside.set(r.address, r);
      }
    }
    for (const oj of [...this.#open.values()]) {
      if (!oj.aside?.size || this.#open.get(oj.claim) !== oj) continue;
      await this.#chargeAside(oj).catch((e) => this.d.log.warn({ claim: oj.claim, err: (e as Error).message }, 'charging the receipts held aside after a restart failed'));
    }
    for (const oj of [...this.#open.values()]) {
      if (oj.gang !== undefined) continue;
      // a reclaimed-coded receipt is final only from a provider this steward asked to stop (its marks restored above)
      const receipts = [...oj.receipts.values()];
      const reclaimed = receipts.map((r) => this.#reclaimedCode(oj, r)).find((c) => c !== undefined);
      const stopFreed = freed.get(oj.claim);
      const why = receipts.some((r) => r.record.status === 'completed')
        ? 'completed'
        : (reclaimed ?? (stopFreed ? `${stopFreed === 'idle' ? 'EXEC_IDLE_RECLAIMED' : 'EXEC_PREEMPTED'} (stop answered)` : undefined));
      if (!why) continue;
      await this.release(oj, `${why} before a restart`).catch((e) => this.d.log.warn({ claim: oj.claim, err: (e as Error).message }, 'release after a restart failed; tried again'));
    }
  }

  /** Release the claim at its deadline (+GRACE_MS), and one past it at the start no sooner than START_LOOK_MS after it. */
  #armDeadline(oj: OpenJob): void {
    oj.timer?.clear();
    const wait = Math.max(0, oj.deadline + GRACE_MS - this.d.clock(), START_LOOK_MS - (this.#mono() - this.#startedAt));
    oj.timer = setLongTimeout(() => void this.#closeAtDeadline(oj), wait).unref();
  }

  /**
   * The claim's deadline came with no final receipt held: the work is over, and it is released charging what was
   * spent, after a last look (#lastLook) for what this steward may not have heard: a completed receipt still unread
   * on a connection (a steward suspended across the deadline runs its overdue timer before reading what was buffered
   * meanwhile), or gossiped while it was down (the deadline passed at the start). `Released` is final (pool/1 §6.4:
   * a second release of a claim is refused), so a receipt coming after it is never charged. One look at a time: the
   * claims coming due meanwhile are looked at together after it (their parties asked once each). A failed append is
   * tried again (release).
   */
  async #closeAtDeadline(oj: OpenJob): Promise<void> {
    if (this.d.stopped() || this.#open.get(oj.claim) !== oj) return;
    this.#due.add(oj);
    if (this.#looking) return;
    this.#looking = true;
    try {
      while (this.#due.size && !this.d.stopped()) {
        // the other timers due by now (a restart's overdue claims, a resumed process's) join this look
        await new Promise((ok) => setImmediate(ok));
        const due = [...this.#due];
        this.#due.clear();
        await this.#lastLook(due);
        for (const d of due) {
          // released meanwhile: on a completed receipt the look brought, a withdraw, …
          if (this.d.stopped() || this.#open.get(d.claim) !== d) continue;
          await this.release(d, 'deadline').catch(() => {});
        }
      }
    } finally {
      this.#looking = false;
    }
  }

  /**
   * Ask the buyer and the provider of each single job's claim in `due` (the signer of the latest selection's winning
   * offer, else the first chosen) for the selections and receipts naming its job (AccountsDeps.askJobs: records/1
   * `jobs`, one request per party for all its claims), resolve the selections whose winning offer was not held, and
   * wait for what came to be handled (a completed receipt releases its claim as it would have on gossip), at most
   * DEADLINE_LOOK_MS in all. A gang's claim is not looked at (the catch-up rounds ask for its members' records).
   */
  async #lastLook(due: OpenJob[]): Promise<void> {
    const ask = this.d.askJobs;
    if (!ask) return;
    const asked = new Set<string>();
    /** Each party of a claim still open not asked yet about it → the claims to ask it about. */
    const round = (): Map<string, string[]> => {
      const parties = new Map<string, string[]>();
      for (const oj of due) {
        if (oj.gang !== undefined || this.#open.get(oj.claim) !== oj) continue;
        for (const p of new Set([oj.buyer, oj.provider ?? [...oj.winners][0]])) {
          if (!p || p === this.d.did || asked.has(`${p} ${oj.claim}`)) continue;
          asked.add(`${p} ${oj.claim}`);
          const jobs = parties.get(p);
          if (jobs) jobs.push(oj.claim);
          else parties.set(p, [oj.claim]);
        }
      }
      return parties;
    };
    const ask1 = async (parties: Map<string, string[]>): Promise<void> => {
      await Promise.all([...parties].map(([p, jobs]) => ask(p, ['selection', 'receipt'], jobs).catch(() => undefined)));
      for (const oj of due) if (oj.pending?.size && this.#open.get(oj.claim) === oj) await this.#resolvePending(oj);
    };
    const first = round();
    if (!first.size) return;
    // a claim whose provider was not known (a claims store from before winners were kept, a selection never resolved)
    // learns it from the buyer's selection: that provider, which holds the receipt, is asked in a second round
    const look = ask1(first).then(async () => {
      const second = round();
      if (second.size && !this.d.stopped()) await ask1(second);
    });
    // unref'd: a stop during the look does not keep the process for the rest of it
    await raceTimeout(look.catch((e) => this.d.log.debug({ err: (e as Error).message }, 'last look before a deadline release failed')), DEADLINE_LOOK_MS, undefined, { unref: true });
    this.d.log.debug({ claims: due.length, asked: asked.size }, 'asked claims’ parties for their receipts before releasing them at their deadline');
  }

  /** The provider doing a claim's work: the signer of the latest selection's winning offer, or the first winner chosen. */
  providerOf(claim: string): string | undefined {
    const oj = this.#open.get(claim);
    // a claim whose release is under way is no one's to stop (no preemption or idle victim)
    if (!oj || oj.releasing) return undefined;
    return oj.provider ?? [...oj.winners][0];
  }

  /** The energy of every receipt a claim's providers signed so far. */
  receiptsUj(claim: string): number {
    return [...(this.#open.get(claim)?.receipts.values() ?? [])].reduce((sum, r) => sum + r.record.energy.uj, 0);
  }

  /** The claim a job's records are charged to: its gang's, or its own. */
  #claimOf(job: string): string {
    return this.d.gangs?.claimOf(job) ?? job;
  }

  /**
   * A selection heard (the buyer's, or this steward's own): its winning offer is resolved (src/roles/steward-winners.ts)
   * and, when it checks out, its signer is chosen (and, for a pool's offer, the pool's receipts for it). One naming a
   * provider that did not sign the winning offer is refused (logged, nothing chosen); one whose offer is not held here
   * is kept aside and fetched in the background (#resolveLater), and again at each catch-up (retryPending). Nothing
   * here waits on another node: the node hands gossip to its handlers one record at a time, so a fetch from a party
   * the buyer named (one that never answers) would hold every receipt, advert and selection behind it.
   */
  async onSelection(s: Opened<Selection>): Promise<void> {
    const oj = this.#open.get(this.#claimOf(s.record.job));
    // A gang names no single provider: it is never a preemption or idle victim (stopping every member is not built).
    if (!oj || oj.gang !== undefined) return;
    // Only the buyer's (or our own) selection names the provider doing the work.
    if (s.signer !== oj.buyer && s.signer !== this.d.did) return;
    if ((await this.#resolve(oj, s, false)) === 'unresolved') this.#resolveLater(oj);
  }

  /**
   * The signer of a selection's winning offer (who runs the job), resolved and checked without looking for the advert
   * it cites: only from what is held here unless `remote` (then fetched in the caller's turn: a gossip handler never
   * asks for that, the background does, BackgroundFetches).
   */
  async winnerOf(s: Opened<Selection>, remote = false): Promise<{ provider: string } | { refused: string } | { unresolved: string }> {
    const w = await this.d.winners.winningOffer(s, remote);
    return 'offer' in w ? { provider: w.offer.signer } : 'refused' in w ? { refused: w.refused } : w;
  }

  /** Resolve a selection's winner (only from what is held here unless `remote`); 'unresolved' when it was kept pending. */
  async #resolve(oj: OpenJob, s: Opened<Selection>, remote: boolean): Promise<'done' | 'unresolved'> {
    const r = await this.d.winners.resolve(s, remote);
    if (this.#open.get(oj.claim) !== oj) return 'done';
    if ('refused' in r) {
      oj.pending?.delete(s.address);
      this.d.log.warn({ claim: oj.claim, selection: s.address, code: r.refused, detail: r.detail }, 'a selection’s winner does not check out against its offer: nothing chosen from it');
      return 'done';
    }
    if ('unresolved' in r) {
      const pending = (oj.pending ??= new Map());
      if (!pending.has(s.address) && pending.size >= MAX_PENDING_SELECTIONS) pending.delete(pending.keys().next().value!);
      const known = pending.has(s.address);
      pending.set(s.address, s);
      if (remote && !known) this.d.log.info({ claim: oj.claim, selection: s.address, offer: s.record.winner, why: r.unresolved }, 'a selection’s winning offer was not found: resolved again at the next catch-up');
      return 'unresolved';
    }
    oj.pending?.delete(s.address);
    // The provider first: charging what is held aside can release the claim (a completed receipt), and what is kept
    // of a released claim goes with it (written after, it would be left on disk until the next start).
    if (oj.provider !== r.chosen.provider) {
      oj.provider = r.chosen.provider;
      await this.d.store?.putProvider(oj.claim, r.chosen.provider).catch((e) => this.d.log.warn({ claim: oj.claim, err: (e as Error).message }, 'cannot keep the selected provider on disk'));
    }
    await this.choose(oj, r.chosen);
    return 'done';
  }

  /** Where the next catch-up round starts offering background fetches (they rotate over the open claims). */
  #fetchFrom = 0;

  /** Run `work` for a claim in the background, in one of the shared slots (BackgroundFetches: bounded, backing off). */
  #later(oj: OpenJob, what: string, work: () => Promise<boolean>): void {
    this.background.run(oj.claim, oj.buyer, oj, what, work);
  }

  /** Fetch the winning offers of a claim's pending selections from their parties, in the background. */
  #resolveLater(oj: OpenJob): void {
    this.#later(oj, 'fetching a selection’s winning offer', () => this.#resolvePending(oj, true));
  }

  /**
   * Resolve a claim's pending selections, newest first, fetching what is not held. In the background (`firstMiss`) it
   * stops at the first found nowhere (its parties are likely not answering; the rest wait for a later turn). Answers
   * whether nothing is left pending.
   */
  async #resolvePending(oj: OpenJob, firstMiss = false): Promise<boolean> {
    for (const s of [...(oj.pending?.values() ?? [])].reverse()) {
      if (this.#open.get(oj.claim) !== oj || oj.releasing || this.d.stopped()) return true;
      if ((await this.#resolve(oj, s, true)) === 'unresolved' && firstMiss) return false;
    }
    return !oj.pending?.size;
  }

  /**
   * Resolve again the selections whose winning offer was not found: a catch-up round (no `claim`) offers a background
   * fetch to each claim that has some, starting one further along each round (bounded, not awaited); a withdraw of
   * `claim` waits for its own (its stream, not the gossip queue).
   */
  async retryPending(claim?: string): Promise<void> {
    if (claim === undefined) {
      const waiting = [...this.#open.values()].filter((oj) => oj.pending?.size);
      if (!waiting.length) return;
      const from = this.#fetchFrom++ % waiting.length;
      for (const oj of [...waiting.slice(from), ...waiting.slice(0, from)]) this.#resolveLater(oj);
      return;
    }
    const oj = this.#open.get(claim);
    if (oj) await this.#resolvePending(oj);
  }

  /**
   * A receipt heard (gossip, a preempted provider's answer, a buyer's withdraw). Charged to an open claim only when
   * it names the claim's buyer and was signed by who did the work: for a single job, the signer of a selection's
   * winning offer for that job (the buyer's or this steward's), or, for a winning offer that cites a pool's advert,
   * the pool's receipt for that offer, signed by a member its chain proves (#doneBy); for a gang, the run member
   * bound to the member job it names. Anyone on the overlay can sign a receipt for any job, so one from another key
   * is never charged: a gang's is dropped; a single job's is held aside (the buyer's selection may reach the steward
   * after the receipt), at most MAX_ASIDE_RECEIPTS per claim, kept on disk (so a restart before the selection loses
   * none), and charged if a selection later chooses who signed it. It is dropped with the claim's release, or when
   * the aside is full (a flood from fresh keys fills it and nothing more: a receipt from the real provider dropped
   * then is charged only if it comes again, e.g. with a withdraw).
   */
  async onReceipt(r: Opened<Receipt>): Promise<void> {
    const oj = this.#open.get(this.#claimOf(r.record.job));
    if (!oj) return;
    if (r.record.buyer !== oj.buyer) return; // a receipt for someone else's purchase of this job: not ours
    if (oj.receipts.has(r.address)) return;
    if (oj.gang !== undefined) {
      if (!this.d.gangs?.signedByMember(r)) {
        this.d.log.debug({ claim: oj.claim, job: r.record.job, signer: r.signer }, 'gang receipt not signed by the run member bound to its job; not charged');
        return;
      }
    } else if (!(await this.#doneBy(oj, r))) {
      await this.#holdAside(oj, r);
      return;
    }
    if (this.#open.get(oj.claim) !== oj || oj.receipts.has(r.address)) return;
    await this.#charge(oj, r);
  }

  /**
   * Whether a single job's receipt is from who did its work: a plain receipt from a chosen provider; a pooled one
   * (naming a pool's DID) only as the pool's receipt for a winning offer that cites that pool's advert
   * (pooledReceiptFor). A winning offer whose advert was not found when it was chosen is looked at again here.
   */
  async #doneBy(oj: OpenJob, r: Opened<Receipt>): Promise<boolean> {
    if (!r.record.pool) return oj.winners.has(r.record.provider);
    let c = oj.chosen.get(r.record.offer);
    if (c && !c.advertKnown) {
      c = await this.d.winners.again(c, [oj.buyer], false);
      if (c.advertKnown && this.#open.get(oj.claim) === oj) await this.#keepChosen(oj, c);
      else this.#advertLater(oj, c); // the receipt waits aside until the advert is fetched
    }
    return pooledReceiptFor(r, c);
  }

  /** Fetch a winning offer's advert in the background (from the buyer or the offer's signer); then charge what it makes ours. */
  #advertLater(oj: OpenJob, c: ChosenOffer): void {
    this.#later(oj, 'fetching a winning offer’s advert', async () => {
      const found = await this.d.winners.again(c, [oj.buyer], true);
      if (!found.advertKnown) return false;
      if (this.#open.get(oj.claim) !== oj) return true;
      await this.#keepChosen(oj, found);
      await this.#chargeAside(oj);
      return true;
    });
  }

  /**
   * A single job's receipt from a provider no selection named (yet): kept aside, bounded, not charged; on disk too
   * before the handler returns, so a restart before the selection does not lose it.
   */
  async #holdAside(oj: OpenJob, r: Opened<Receipt>): Promise<void> {
    if (this.#open.get(oj.claim) !== oj) return; // released while its winners were looked at
    const aside = (oj.aside ??= new Map());
    if (aside.has(r.address)) return;
    if (aside.size >= MAX_ASIDE_RECEIPTS) {
      if (!oj.asideDropped) this.d.log.warn({ claim: oj.claim, provider: r.record.provider, held: aside.size }, 'receipts from providers no selection named: as many held aside as are kept; further ones are dropped, not charged');
      oj.asideDropped = true;
      return;
    }
    aside.set(r.address, r);
    this.d.log.debug({ claim: oj.claim, provider: r.record.provider }, 'receipt from a provider no selection named (yet); held aside, not charged');
    const store = this.d.store;
    if (!store) return;
    try {
      await store.putAside(oj.claim, r);
      // charged, or released (what was kept of it dropped), while this was written: drop it too (else with the claim)
      if (this.#open.get(oj.claim) !== oj || oj.receipts.has(r.address)) await store.dropAside(oj.claim, r.address);
    } catch (e) {
      this.d.log.warn({ claim: oj.claim, receipt: r.address, err: (e as Error).message }, 'cannot keep a receipt held aside on disk (lost if the steward restarts before a selection names its provider)');
    }
  }

  /**
   * A winning offer was chosen for a single job (a selection heard, or this steward's own): its signer is a winner,
   * the offer is kept with the pool it stands for, and the receipts held aside that are now from who did the work
   * (#doneBy) are charged.
   */
  async choose(oj: OpenJob, c: ChosenOffer): Promise<void> {
    oj.winners.add(c.provider);
    await this.#keepChosen(oj, c);
    await this.#chargeAside(oj);
  }

  /** Charge the receipts held aside that are now from who did the work (#doneBy). */
  async #chargeAside(oj: OpenJob): Promise<void> {
    if (!oj.aside) return;
    for (const [address, r] of [...oj.aside]) {
      if (!(await this.#doneBy(oj, r))) continue;
      oj.aside.delete(address);
      if (this.#open.get(oj.claim) !== oj || oj.receipts.has(address)) continue;
      await this.#charge(oj, r);
    }
  }

  /** The steward's own selection (a managed overlay): its winning offer, held by its market, is chosen. */
  async chooseOffer(oj: OpenJob, offer: Opened<Offer>): Promise<void> {
    await this.choose(oj, await this.d.winners.chosen(offer, [oj.buyer]));
  }

  /** Keep a winning offer as resolved (in memory, and on disk for a single job's claim). */
  async #keepChosen(oj: OpenJob, c: ChosenOffer): Promise<void> {
    const had = oj.chosen.get(c.offer);
    if (had && had.advertKnown === c.advertKnown && had.pool === c.pool && had.provider === c.provider) return;
    oj.chosen.set(c.offer, c);
    if (oj.gang === undefined) await this.d.store?.putChosen(oj.claim, c).catch((e) => this.d.log.warn({ claim: oj.claim, offer: c.offer, err: (e as Error).message }, 'cannot keep a winning offer on disk'));
  }

  /** Charge a receipt to its claim (kept on disk first), and release the claim when it is final. */
  async #charge(oj: OpenJob, r: Opened<Receipt>): Promise<void> {
    oj.receipts.set(r.address, r);
    if (oj.gang !== undefined) await this.d.gangs?.noteReceipt(oj.claim, r);
    // Kept on disk before anything is released on it; if it cannot be, the release below still charges it.
    else await this.d.store?.putReceipt(oj.claim, r).catch((e) => this.d.log.warn({ claim: oj.claim, receipt: r.address, err: (e as Error).message }, 'cannot keep a receipt on disk'));
    const reclaimed = this.#reclaimedCode(oj, r);
    if (reclaimed) await this.release(oj, reclaimed);
    else if (oj.gang !== undefined) {
      if (this.gangEnded(oj)) await this.release(oj, 'gang ended');
    } else if (r.record.status === 'completed') await this.release(oj, r.record.status);
  }

  /**
   * The reclaim a receipt reports (EXEC_PREEMPTED, EXEC_IDLE_RECLAIMED), only when this steward asked its provider to
   * stop the claim: the signer of the winning offer it answers (a pool's coordinator for a pool's receipt), as the
   * stop was sent to. Anyone else's (a provider ending the work and blaming the steward) is an ordinary failure: the
   * claim stays open for the buyer's failover. A gang is never asked to stop.
   */
  #reclaimedCode(oj: OpenJob, r: Opened<Receipt>): 'EXEC_PREEMPTED' | 'EXEC_IDLE_RECLAIMED' | undefined {
    const code = reclaimedCode(r);
    if (!code) return undefined;
    const provider = oj.gang !== undefined ? undefined : r.record.pool ? oj.chosen.get(r.record.offer)?.provider : r.record.provider;
    if (provider !== undefined && this.d.stopAsked?.(oj.claim, provider)) return code;
    this.d.log.warn({ claim: oj.claim, provider: r.record.provider, code }, 'a receipt reports a reclaim this steward did not ask its provider for: charged as a failure, the claim stays open');
    return undefined;
  }

  /**
   * Keep on disk (synced) that this steward asked `m.provider` to stop single job's claim `claim`, or that its answer
   * freed the devices, or that it answered without freeing them (`answered`, a mark kept because an earlier stop may
   * have landed): src/roles/steward-reclaim.ts writes it before the `stop` goes out; `drop`, the marks of
   * providers pushed out of the note's `asked` (MAX_ASKED_PER_CLAIM), go in the same batch. No-op without a store.
   */
  async keepStopMark(claim: string, m: StopMark, note?: ReclaimedNote, drop?: string[]): Promise<void> {
    await this.d.store?.putStopMark(claim, m, note, drop);
  }

  /**
   * Keep on disk (synced) what says released claim `claim` was reclaimed (its `x/` note), with a provider asked after
   * its release added: src/roles/steward-reclaim.ts writes it before that `stop` goes out; unsynced (`sync` false) once
   * it settles. No-op without a store.
   */
  async keepReclaimedNote(claim: string, note: ReclaimedNote, sync = true): Promise<void> {
    await this.d.store?.putReclaimedNote(claim, note, sync);
  }

  /** Forget on disk that `provider` was asked to stop `claim` (it answered it did not stop, and did not bar). */
  async dropStopMark(claim: string, provider: string): Promise<void> {
    await this.d.store?.dropStopMark(claim, provider);
  }

  /** A reclaimed claim no longer remembered (its deadline came, RECLAIMED_MAX, or nobody stopped after all): its note on disk goes. */
  async dropReclaimed(claim: string): Promise<void> {
    await this.d.store?.dropReclaimed(claim);
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
    oj.timer?.clear();
    oj.timer = undefined;
    if (!this.d.ledger.book.open.has(oj.claim)) {
      this.#open.delete(oj.claim);
      await this.#dropKept(oj);
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
    else await this.#dropKept(oj);
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
    oj.timer = setLongTimeout(() => {
      if (this.d.stopped()) return;
      void this.release(oj, why).catch(() => {});
    }, wait).unref();
  }

  /** A single job's receipts and winners kept on disk go with its claim (left over, they are dropped at the next start). */
  async #dropKept(oj: OpenJob): Promise<void> {
    if (oj.gang !== undefined || !this.d.store) return;
    await this.d.store.remove(oj.claim, () => this.d.reclaimedNote?.(oj.claim)).catch((e) => this.d.log.warn({ claim: oj.claim, err: (e as Error).message }, 'cannot drop what was kept of a released claim (dropped at the next start)'));
  }

  stop(): void {
    for (const oj of this.#open.values()) oj.timer?.clear();
  }
}

/** The failure code of a receipt for work the steward reclaimed (preempted, or measured idle), if it is one. */
function reclaimedCode(r: Opened<Receipt>): 'EXEC_PREEMPTED' | 'EXEC_IDLE_RECLAIMED' | undefined {
  const c = r.record.failure?.code;
  return c === 'EXEC_PREEMPTED' || c === 'EXEC_IDLE_RECLAIMED' ? c : undefined;
}
