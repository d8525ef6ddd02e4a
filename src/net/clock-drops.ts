/**
 * Offers this node dropped for their dates, kept per job so the buyer can say why a provider it waited for has no
 * offer (docs/market.md "An offer dropped for its date"). An offer sent directly (offer/1) by the key that signed it
 * whose validity window does not hold here is ignored by the pipeline (RECORD_FROM_FUTURE: issued past this node's
 * clock-skew window; RECORD_EXPIRED: its window ended), before its signature is checked. Only such offers are noted:
 * the stream's remote peer is the offer's signer (offer/1 refuses any other), so a note can only ever be about the
 * peer that sent it, never put on another provider. An offer relayed by gossip is not noted: its sender is not its
 * signer, and anyone could date a copy of another provider's key's record.
 *
 * Only offers for this node's own jobs are noted (`expect`: the jobs it published, the MAX_EXPECTED most recent): an
 * offer for any other job is one no buyer here waits for, and noting it would let a peer with a few keys push the notes
 * of this buyer's jobs out with offers for jobs made up (review s54).
 *
 * Bounded: the most recent MAX_JOBS jobs, MAX_PER_JOB providers each (the first ones noted); a provider's note is
 * its latest drop for the job.
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

export const CLOCK_DROP_CODES: ReadonlySet<string> = new Set<ClockDropCode>(['RECORD_FROM_FUTURE', 'RECORD_EXPIRED']);

const MAX_JOBS = 256;
const MAX_PER_JOB = 64;
const MAX_EXPECTED = 1024;

export class ClockDrops {
  readonly #jobs = new Map<string, Map<string, ClockDrop>>();
  /** This node's own jobs, the most recent last: only their offers are noted. */
  readonly #expected = new Set<string>();

  readonly #skewMs: number;

  /** `skewMs`: the pipeline's clock-skew window (an offer issued past it is from the future). */
  constructor(skewMs = DEFAULT_SKEW_MS) {
    this.#skewMs = skewMs;
  }

  /** `job` is this node's own (it published it): offers for it dropped for their dates are noted from now on. */
  expect(job: string): void {
    this.#expected.delete(job);
    this.#expected.add(job);
    if (this.#expected.size > MAX_EXPECTED) this.#expected.delete(this.#expected.values().next().value!);
  }

  /**
   * Note an offer (`envelope`, its signer `signer`, the stream's peer) the pipeline ignored with `code` at `now`.
   * Anything that does not read as an offer is passed over.
   */
  note(envelope: Uint8Array, signer: string, code: ClockDropCode, now: number): void {
    let job: string;
    let window: [number, number] | undefined;
    try {
      // not verified: dated outside its window, its signature was never checked; its signer is the peer that sent it
      const o = open(envelope, T.offer, { trusted: true, deferKeyCheck: true });
      if (o.signer !== signer) return;
      job = o.record.job;
      window = validityWindow(T.offer, o.record);
    } catch {
      return;
    }
    if (typeof job !== 'string' || !window || !this.#expected.has(job)) return;
    const byMs = code === 'RECORD_FROM_FUTURE' ? window[0] - now : now - window[1];
    // the offer's own dates must be what failed: the pipeline checks every record of the message, and an offer in date
    // carrying an expired advert (a republish race, no clock wrong) comes back with the advert's code (review s54)
    if (code === 'RECORD_FROM_FUTURE' ? byMs <= this.#skewMs : byMs < 0) return;
    let per = this.#jobs.get(job);
    if (per) {
      this.#jobs.delete(job); // the most recent job last
      this.#jobs.set(job, per);
    } else {
      per = new Map();
      this.#jobs.set(job, per);
      if (this.#jobs.size > MAX_JOBS) this.#jobs.delete(this.#jobs.keys().next().value!);
    }
    if (!per.has(signer) && per.size >= MAX_PER_JOB) return;
    per.set(signer, { code, byMs: Math.max(0, byMs), at: now });
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
    let byMs: number;
    try {
      const a = open(envelope, T.advert, { trusted: true, deferKeyCheck: true });
      if (a.signer !== fromDid) return;
      const window = validityWindow(T.advert, a.record);
      if (!window) return;
      byMs = window[0] - now;
    } catch {
      return;
    }
    if (!(byMs > this.#skewMs)) return;
    this.#by.delete(fromDid);
    this.#by.set(fromDid, { did: fromDid, byMs, at: now });
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

