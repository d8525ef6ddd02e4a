/**
 * Token buckets and a decaying per-key counter, with an injected clock
 * (DESIGN §3.4 "queues are bounded"; issue #10 "valid-looking floods";
 * docs/network.md §Rate limits). Pure arithmetic: no timers, no clock
 * reads of its own; every decision takes the time from the clock it was given.
 *
 * Give them the monotonic clock (util/clock.ts `monotonicClock`): they only
 * measure elapsed time. Should the clock they were given go backwards anyway
 * (a wall clock stepped by NTP), the step counts as no time at all and refill
 * and decay go on from the new reading; they never freeze until the clock
 * catches up with a time it already showed.
 *
 *   const b = new KeyedBuckets({ ratePerSec: 10, burst: 50 }, clock)
 *   if (!b.take(signer)) → over the limit
 */
import type { Clock } from '../util/clock.js';

export interface BucketSpec {
  /** Tokens added per second (the sustained rate). */
  ratePerSec: number;
  /** Bucket size (the burst allowed after a quiet period). */
  burst: number;
}

/** One token bucket. Starts full. */
export class TokenBucket {
  #tokens: number;
  #at: number;
  constructor(
    readonly spec: BucketSpec,
    private readonly clock: Clock,
  ) {
    this.#tokens = spec.burst;
    this.#at = clock();
  }

  /** Tokens available now (refilled lazily). */
  available(): number {
    const now = this.clock();
    // a step backwards is no elapsed time (nothing refilled, nothing lost); refill resumes from the new reading
    if (now > this.#at) this.#tokens = Math.min(this.spec.burst, this.#tokens + ((now - this.#at) / 1000) * this.spec.ratePerSec);
    this.#at = now;
    return this.#tokens;
  }

  /** Would `n` tokens be granted now? (Takes nothing.) */
  has(n = 1): boolean {
    return this.available() >= n;
  }

  /** Take `n` tokens if available; false (nothing taken) otherwise. */
  take(n = 1): boolean {
    if (this.available() < n) return false;
    this.#tokens -= n;
    return true;
  }

  /** Take `n` tokens even when that goes below zero (charging bytes already sent). */
  charge(n: number): void {
    this.available();
    this.#tokens -= n;
  }

  /** Give back `n` tokens taken earlier (a reservation that was not used), never above the burst. */
  refund(n: number): void {
    this.#tokens = Math.min(this.spec.burst, this.available() + n);
  }

  /** Is the bucket full (so forgetting it changes nothing)? */
  full(): boolean {
    return this.available() >= this.spec.burst;
  }
}

/**
 * One bucket per key, at most `maxKeys` of them. When full, buckets that have
 * refilled completely are forgotten first (they hold no information); if none
 * has, the oldest is, which errs towards granting (never towards refusing an
 * honest key because an attacker made many).
 */
export class KeyedBuckets {
  readonly #m = new Map<string, TokenBucket>();
  readonly #max: number;
  constructor(
    readonly spec: BucketSpec,
    private readonly clock: Clock,
    maxKeys = 16_384,
  ) {
    this.#max = Math.max(1, maxKeys);
  }

  #get(key: string): TokenBucket {
    let b = this.#m.get(key);
    if (!b) {
      if (this.#m.size >= this.#max) this.#evict();
      b = new TokenBucket(this.spec, this.clock);
      this.#m.set(key, b);
    }
    return b;
  }

  #evict(): void {
    let n = 0;
    for (const [k, b] of this.#m) {
      if (b.full()) this.#m.delete(k);
      if (++n >= 64) break;
    }
    if (this.#m.size >= this.#max) {
      const first = this.#m.keys().next();
      if (!first.done) this.#m.delete(first.value);
    }
  }

  has(key: string, n = 1): boolean {
    const b = this.#m.get(key);
    return b ? b.has(n) : this.spec.burst >= n;
  }
  take(key: string, n = 1): boolean {
    return this.#get(key).take(n);
  }
  charge(key: string, n: number): void {
    this.#get(key).charge(n);
  }
  refund(key: string, n = 1): void {
    this.#m.get(key)?.refund(n);
  }
  available(key: string): number {
    const b = this.#m.get(key);
    return b ? b.available() : this.spec.burst;
  }
  get size(): number {
    return this.#m.size;
  }
}

/**
 * A per-key counter that decays exponentially with a half-life (the abuse
 * score behind the gossipsub application-specific score). `add` and `value`
 * are exact for any sequence of calls at non-decreasing times; a step
 * backwards counts as no time (decay resumes from the new reading).
 */
export class DecayingCounter {
  readonly #m = new Map<string, { v: number; at: number }>();
  readonly #max: number;
  constructor(
    readonly halfLifeMs: number,
    private readonly clock: Clock,
    maxKeys = 16_384,
  ) {
    this.#max = Math.max(1, maxKeys);
  }

  #decayed(e: { v: number; at: number }, now: number): number {
    return now <= e.at ? e.v : e.v * Math.pow(0.5, (now - e.at) / this.halfLifeMs);
  }

  add(key: string, amount = 1): number {
    const now = this.clock();
    const e = this.#m.get(key);
    const v = (e ? this.#decayed(e, now) : 0) + amount;
    this.#m.delete(key);
    this.#m.set(key, { v, at: now });
    if (this.#m.size > this.#max) {
      const first = this.#m.keys().next();
      if (!first.done) this.#m.delete(first.value);
    }
    return v;
  }

  value(key: string): number {
    const e = this.#m.get(key);
    if (!e) return 0;
    const now = this.clock();
    const v = this.#decayed(e, now);
    if (v < 0.01) {
      this.#m.delete(key);
      return 0;
    }
    // rebase after a step backwards, so decay resumes from here rather than once the clock is back at e.at
    if (now < e.at) this.#m.set(key, { v, at: now });
    return v;
  }

  delete(key: string): void {
    this.#m.delete(key);
  }
}
