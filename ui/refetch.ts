/**
 * One view's data, fetched one request at a time (docs/console.md, "Live
 * updates"). A view refetches when the feed says its data changed; on a busy
 * node that can be more often than the daemon answers. Dropping the answer in
 * flight for a newer request, as the console first did, then drops every
 * answer, and the view shows "loading" for as long as the node stays busy.
 * Here a request asked for while one is in flight is remembered, and one more
 * fetch follows when the answer in flight lands; every answer is shown.
 *
 * Free of the DOM and of preact, so the unit tests run it in Node.
 */
export type Outcome<T> = { data: T } | { error: unknown };

export class Refetch<T> {
  #busy = false;
  #again = false;
  #closed = false;

  /**
   * @param load one fetch of the data
   * @param apply each answer in turn; `more` is true when another fetch is
   *   already due (the view is still loading a newer version)
   */
  constructor(
    private readonly load: () => Promise<T>,
    private readonly apply: (o: Outcome<T>, more: boolean) => void,
  ) {}

  /** The data may have changed: fetch it now, or once more after the fetch in flight. */
  request(): void {
    if (this.#closed) return;
    if (this.#busy) {
      this.#again = true;
      return;
    }
    this.#busy = true;
    void this.#run();
  }

  /** The view is gone (or shows something else): apply nothing more, fetch nothing more. */
  close(): void {
    this.#closed = true;
  }

  async #run(): Promise<void> {
    for (;;) {
      this.#again = false;
      let o: Outcome<T>;
      try {
        o = { data: await this.load() };
      } catch (error) {
        o = { error };
      }
      if (this.#closed) return;
      const more = this.#again;
      this.apply(o, more);
      if (!more) {
        this.#busy = false;
        return;
      }
    }
  }
}
