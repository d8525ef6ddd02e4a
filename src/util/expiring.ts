/**
 * Keys remembered each until a time of its own (an order's deadline, a refusal's end), at most `max` of them. Used
 * where forgetting a key too early lets something through again: the open orders' decided, early-selected and
 * evicted orders (src/matching/open-orders.ts) and the claimer's claimed orders (src/roles/provider/claimer.ts).
 *
 * What is forgotten, in this order: a key whose time has come (each `set` drops the lapsed keys at the front, and
 * past `max` every lapsed key anywhere); only when none has lapsed, the key set longest ago. So a live key never goes
 * while a lapsed one is kept, and nothing is forgotten wholesale: a flood of new keys pushes out the oldest live keys
 * one by one, and only once there are `max` live keys newer than them.
 *
 * Cost: `set` is O(1) amortised while keys are set in the order they lapse (a fixed lifetime); with mixed lifetimes
 * a full sweep runs only past `max` and only once some key may have lapsed since the last one (`#sweepAt`, a lower
 * bound on the earliest time still held), and each such sweep drops at least one key.
 */
export class ExpiringKeys {
  /** Key → until when, in the order set (a re-set moves to the end). */
  readonly #m = new Map<string, number>();
  /** No key held lapses before this (a lower bound; Infinity when empty). */
  #sweepAt = Infinity;

  constructor(readonly max: number) {
    if (!(max >= 1)) throw new RangeError('ExpiringKeys: max must be at least 1');
  }

  /** Keys held, lapsed ones not yet dropped included. */
  get size(): number {
    return this.#m.size;
  }

  /** Is `key` remembered at `now` (set, and its time not come)? */
  has(key: string, now: number): boolean {
    const u = this.#m.get(key);
    return u !== undefined && u > now;
  }

  /** Until when `key` is remembered (undefined when it is not held; it may have lapsed). */
  until(key: string): number | undefined {
    return this.#m.get(key);
  }

  delete(key: string): boolean {
    return this.#m.delete(key);
  }

  /** Remember `key` until `until` (a key whose time has already come is only forgotten). */
  set(key: string, until: number, now: number): void {
    for (const [k, u] of this.#m) {
      if (u > now) break;
      this.#m.delete(k);
    }
    this.#m.delete(key);
    if (until <= now) return;
    this.#m.set(key, until);
    if (until < this.#sweepAt) this.#sweepAt = until;
    if (this.#m.size > this.max) this.#makeRoom(now);
  }

  /** Over `max`: every lapsed key goes; if none had, the key set longest ago. */
  #makeRoom(now: number): void {
    if (this.#sweepAt <= now) {
      let earliest = Infinity;
      for (const [k, u] of this.#m) {
        if (u <= now) this.#m.delete(k);
        else if (u < earliest) earliest = u;
      }
      this.#sweepAt = earliest;
    }
    while (this.#m.size > this.max) this.#m.delete(this.#m.keys().next().value!);
  }
}
