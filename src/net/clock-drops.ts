/**
 * Offers this node dropped for their dates, kept per job so the buyer can say why a provider it waited for has no
 * offer (docs/market.md "An offer dropped for its date"). An offer sent directly (offer/1) by the key that signed it
 * whose validity window does not hold here is ignored by the pipeline (RECORD_FROM_FUTURE: issued past this node's
 * clock-skew window; RECORD_EXPIRED: its window ended), before its signature is checked. Only such offers are noted:
 * the stream's remote peer is the offer's signer (offer/1 refuses any other), so a note can only ever be about the
 * peer that sent it, never put on another provider. An offer relayed by gossip is not noted: its sender is not its
 * signer, and anyone could date a copy of another provider's key's record.
 *
 * Only offers for this node's own jobs are noted (`expect`: the MAX_JOBS it announced last, kept in that order): an
 * offer for any other job is one no buyer here waits for, and a note never moves a job, so a peer sending dated offers
 * for jobs made up, or for the buyer's older jobs, cannot push out the notes of the jobs it waits for now (reviews
 * s54, s55).
 *
 * Bounded: MAX_JOBS jobs, MAX_PER_JOB providers each (the first ones noted); a provider's note is its latest drop for
 * the job.
 */
import { open } from '../records/envelope.js';
import { T, validityWindow } from '../records/kinds.js';
import { DEFAULT_SKEW_MS } from '../records/freshness.js';

export type ClockDropCode = 'RECORD_FROM_FUTURE' | 'RECORD_EXPIRED';

export interface ClockDrop {
  code: ClockDropCode;
  /** how far past the window the offer was when it came, ms: ahead of this node's clock (FROM_FUTURE), or since its end (EXPIRED) */
  byMs: number;
  /** this node's clock when it came */
  at: number;
}

const MAX_JOBS = 256;
const MAX_PER_JOB = 64;

/**
 * How far past its validity window a record in `envelope` of `type` was at `now` (`code`: ahead of it, or since its
 * end), when `fromDid`, the peer that sent it, signed it; undefined for anything else. Not verified: a record dated
 * outside its window is dropped before its signature is checked, so only its sender's own are taken (anyone can date
 * a copy of another key's record).
 */
function datedBy(envelope: Uint8Array, type: typeof T.offer | typeof T.advert, fromDid: string, code: ClockDropCode, now: number): { record: unknown; byMs: number } | undefined {
  try {
    const r = open(envelope, type, { trusted: true, deferKeyCheck: true });
    if (r.signer !== fromDid) return undefined;
    const window = validityWindow(type, r.record);
    if (!window) return undefined;
    return { record: r.record, byMs: code === 'RECORD_FROM_FUTURE' ? window[0] - now : now - window[1] };
  } catch {
    return undefined;
  }
}

export class ClockDrops {
  /**
   * This node's own jobs, in the order it announced them (the most recent last; the MAX_JOBS last), each with the
   * drops noted for it: a note never moves a job, so no peer can push out the notes of the jobs waited for now.
   */
  readonly #jobs = new Map<string, Map<string, ClockDrop>>();

  readonly #skewMs: number;

  /** `skewMs`: the pipeline's clock-skew window (an offer issued past it is from the future). */
  constructor(skewMs = DEFAULT_SKEW_MS) {
    this.#skewMs = skewMs;
  }

  /** `job` is this node's own (it announced it): offers for it dropped for their dates are noted from now on. */
  expect(job: string): void {
    if (this.#jobs.has(job)) return;
    this.#jobs.set(job, new Map());
    if (this.#jobs.size > MAX_JOBS) this.#jobs.delete(this.#jobs.keys().next().value!);
  }

  /**
   * Note an offer (`envelope`) sent directly by `signer` (the stream's peer), which the pipeline ignored with `code` at
   * `now`. Anything that does not read as that peer's offer for a job expected is passed over.
   */
  note(envelope: Uint8Array, signer: string, code: ClockDropCode, now: number): void {
    const d = datedBy(envelope, T.offer, signer, code, now);
    const job = (d?.record as { job?: unknown } | undefined)?.job;
    const per = typeof job === 'string' ? this.#jobs.get(job) : undefined;
    if (!d || !per) return;
    // the offer's own dates must be what failed: the pipeline checks every record of the message, and an offer in date
    // carrying an expired advert (a republish race, no clock wrong) comes back with the advert's code (review s54)
    if (code === 'RECORD_FROM_FUTURE' ? d.byMs <= this.#skewMs : d.byMs < 0) return;
    if (!per.has(signer) && per.size >= MAX_PER_JOB) return;
    per.set(signer, { code, byMs: Math.max(0, d.byMs), at: now });
  }

  /** The drops noted for `job`, by provider DID. */
  of(job: string): ReadonlyMap<string, ClockDrop> {
    return this.#jobs.get(job) ?? new Map();
  }
}

/** How long a provider's advert dated ahead is said after it came, ms (its next advert, in date, clears it sooner). */
export const ADVERT_AHEAD_SAID_MS = 10 * 60_000;
const MAX_AHEAD = 64;

/** A provider whose advert came dated ahead of this node's clock, past the clock-skew window. */
export interface AdvertAhead {
  did: string;
  /** how far its advert was issued past this node's clock when it came, ms */
  byMs: number;
  /** this node's clock when it came */
  at: number;
}

/**
 * Providers whose adverts this node dropped as from the future (RECORD_FROM_FUTURE), so its network health can say
 * why it hears no market (docs/network.md "Health"): a provider's clock ahead, or this node's behind, hides that
 * provider altogether. Only an advert sent by its own signer is noted (the gossip or sync peer is the advert's
 * key: a provider connected to this node), for the reason ClockDrops gives: an advert dated ahead is dropped before
 * its signature is checked, and anyone can date a copy of another key's record. An advert of the provider taken
 * since clears its note (its clock was put right); a note is said for ADVERT_AHEAD_SAID_MS at most. Bounded: the
 * MAX_AHEAD providers noted last.
 */
export class AdvertsAhead {
  readonly #by = new Map<string, AdvertAhead>();
  readonly #skewMs: number;

  constructor(skewMs = DEFAULT_SKEW_MS) {
    this.#skewMs = skewMs;
  }

  /** Note an advert (`envelope`) that `fromDid`, the peer it came from, sent, dropped as from the future at `now`. */
  note(envelope: Uint8Array, fromDid: string, now: number): void {
    const d = datedBy(envelope, T.advert, fromDid, 'RECORD_FROM_FUTURE', now);
    if (!d || !(d.byMs > this.#skewMs)) return;
    this.#by.delete(fromDid);
    this.#by.set(fromDid, { did: fromDid, byMs: d.byMs, at: now });
    if (this.#by.size > MAX_AHEAD) this.#by.delete(this.#by.keys().next().value!);
  }

  /** An advert of `did` was taken: its clock is in the window now. */
  taken(did: string): void {
    this.#by.delete(did);
  }

  /** The providers noted within ADVERT_AHEAD_SAID_MS before `now`, the most recent last. */
  recent(now: number): AdvertAhead[] {
    return [...this.#by.values()].filter((a) => now - a.at < ADVERT_AHEAD_SAID_MS);
  }
}

