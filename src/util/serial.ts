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
