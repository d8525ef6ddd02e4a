/**
 * A serialiser: async sections that run one at a time, in the order they were
 * asked for (a FIFO mutex). The steward runs every decision that can lead to
 * an `Admitted` append in one (pool/1 §4: the next decision must see the book
 * after the previous append; src/roles/steward-admission.ts).
 *
 * A section that throws (or rejects) releases the serialiser: the next one
 * runs, and the caller gets the error. Not re-entrant: a section that awaits
 * another section of the same serialiser never finishes — schedule it instead
 * (`void s.run(...)`).
 */
export class Serial {
  #tail: Promise<void> = Promise.resolve();

  /** Run `fn` once every section asked for before it has ended; resolves (or rejects) with its outcome. */
  run<T>(fn: () => Promise<T> | T): Promise<T> {
    const out = this.#tail.then(() => fn());
    this.#tail = out.then(
      () => undefined,
      () => undefined,
    );
    return out;
  }
}

/**
 * At most `n` async sections at a time, started in the order they were asked
 * for (a FIFO counting semaphore; Serial is the case n = 1 without the count).
 * A section that throws frees its place like one that returns.
 */
export class Slots {
  #free: number;
  readonly #waiting: Array<() => void> = [];

  constructor(readonly n: number) {
    if (!(n >= 1)) throw new Error('Slots needs at least one place');
    this.#free = n;
  }

  /** Sections running or waiting for a place. */
  get busy(): number {
    return this.n - this.#free + this.#waiting.length;
  }

  /**
   * Run `fn` once a place is free. `signal` ends a wait for a place (rejecting with its reason, the place never
   * taken); it does not break off `fn` once started.
   */
  async run<T>(fn: () => Promise<T> | T, signal?: AbortSignal): Promise<T> {
    signal?.throwIfAborted();
    if (this.#free > 0) this.#free--;
    else
      await new Promise<void>((resolve, reject) => {
        const take = () => {
          signal?.removeEventListener('abort', leave);
          resolve();
        };
        const leave = () => {
          const i = this.#waiting.indexOf(take);
          if (i >= 0) this.#waiting.splice(i, 1);
          reject(signal!.reason);
        };
        this.#waiting.push(take);
        signal?.addEventListener('abort', leave, { once: true });
      });
    try {
      return await fn();
    } finally {
      // the place passes to the next waiting section, or back to the pool
      const next = this.#waiting.shift();
      if (next) next();
      else this.#free++;
    }
  }
}
