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
 * Cost: O(log n) a `set`. Lapsed keys are found through a min-heap of their times (entries of a key set again or
 * deleted are skipped when they surface, and the heap is rebuilt once it holds twice as many entries as keys); the
 * key set longest ago is the first of the map (insertion order, a re-set moves to the end). Before, a full set with
 * mixed lifetimes swept every key on almost every `set` (0.4–0.8 ms at 40,000 keys).
 */
export class ExpiringKeys {
  /** Key → until when and the `set` it came from, in the order set (a re-set moves to the end). */
  readonly #m = new Map<string, { until: number; seq: number }>();
  /** Min-heap on `until` of [until, key, seq]; an entry whose seq is not its key's current one is stale. */
  #heap: Array<[number, string, number]> = [];
  #seq = 0;

  constructor(readonly max: number) {
    if (!(max >= 1)) throw new RangeError('ExpiringKeys: max must be at least 1');
  }

  /** Keys held, lapsed ones not yet dropped included. */
  get size(): number {
    return this.#m.size;
  }

  /** Is `key` remembered at `now` (set, and its time not come)? */
  has(key: string, now: number): boolean {
    const e = this.#m.get(key);
    return e !== undefined && e.until > now;
  }

  /** Until when `key` is remembered (undefined when it is not held; it may have lapsed). */
  until(key: string): number | undefined {
    return this.#m.get(key)?.until;
  }

  delete(key: string): boolean {
    return this.#m.delete(key);
  }

  /** Remember `key` until `until` (a key whose time has already come is only forgotten). */
  set(key: string, until: number, now: number): void {
    this.#dropLapsed(now);
    this.#m.delete(key);
    if (until <= now) return;
    const seq = ++this.#seq;
    this.#m.set(key, { until, seq });
    this.#push([until, key, seq]);
    while (this.#m.size > this.max) this.#m.delete(this.#m.keys().next().value!);
    if (this.#heap.length > 2 * this.#m.size + 16) this.#rebuild();
  }

  /** Forget every key whose time has come (the heap's top while it has lapsed). */
  #dropLapsed(now: number): void {
    const h = this.#heap;
    while (h.length && h[0]![0] <= now) {
      const [, key, seq] = this.#pop();
      if (this.#m.get(key)?.seq === seq) this.#m.delete(key);
    }
  }

  #rebuild(): void {
    this.#heap = [...this.#m].map(([k, e]): [number, string, number] => [e.until, k, e.seq]).sort((a, b) => a[0] - b[0]);
  }

  #push(e: [number, string, number]): void {
    const h = this.#heap;
    h.push(e);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (h[p]![0] <= e[0]) break;
      h[i] = h[p]!;
      i = p;
    }
    h[i] = e;
  }

  #pop(): [number, string, number] {
    const h = this.#heap;
    const top = h[0]!;
    const last = h.pop()!;
    if (h.length) {
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= h.length) break;
        const c = l + 1 < h.length && h[l + 1]![0] < h[l]![0] ? l + 1 : l;
        if (h[c]![0] >= last[0]) break;
        h[i] = h[c]!;
        i = c;
      }
      h[i] = last;
    }
    return top;
  }
}
