/**
 * A run's event log, bounded whatever its provider sends (docs/console.md
 * "Live updates"): at most RUN_LOG_EVENTS events and RUN_LOG_BYTES of event
 * JSON. Past either, the oldest `progress` event goes first, then the oldest
 * `offer` or `claim`, then the oldest of any kind; the latest event always
 * stays, and `omitted` counts what was left out.
 *
 * One rule for the daemon's console hub (src/node/console-hub.ts) and the
 * console's pages (ui/views/jobs.tsx, ui/views/run.tsx), which hold a running
 * job's events too: the page kept every event and redrew them all on each new
 * one, and after an hour of a provider's 10 progress events a second (36,000)
 * the tab spent most of a second per event. Free of Node and of the DOM.
 */
export const RUN_LOG_EVENTS = 300;
export const RUN_LOG_BYTES = 256 * 1024;

/** Event kinds a full log drops first, in this order: the many that say the least (progress, then offers and claims as they came). */
const DROP_FIRST: ReadonlyArray<ReadonlySet<string>> = [new Set(['progress']), new Set(['offer', 'claim'])];

function jsonSize(ev: unknown): number {
  try {
    return JSON.stringify(ev)?.length ?? 0;
  } catch {
    return 0;
  }
}

export class RunEvents<E extends { e: string }> {
  /** The events kept, oldest first (the same array throughout: it is changed in place). */
  readonly events: E[] = [];
  /** Each kept event's number in arrival order (0 for the first pushed): a stable key for a page's list. */
  readonly seqs: number[] = [];
  /** Events left out to stay within the bounds. */
  omitted = 0;
  #sizes: number[] = [];
  #bytes = 0;
  #next = 0;

  constructor(
    private readonly maxEvents: number = RUN_LOG_EVENTS,
    private readonly maxBytes: number = RUN_LOG_BYTES,
  ) {}

  /** Add the latest event, dropping what the rule drops. */
  push(ev: E): void {
    const size = jsonSize(ev);
    this.events.push(ev);
    this.seqs.push(this.#next++);
    this.#sizes.push(size);
    this.#bytes += size;
    while (this.events.length > 1 && (this.events.length > this.maxEvents || this.#bytes > this.maxBytes)) {
      const last = this.events.length - 1;
      let i = -1;
      for (const kinds of DROP_FIRST) if (i < 0) i = this.events.findIndex((e, k) => k < last && kinds.has(e.e));
      if (i < 0) i = 0;
      this.events.splice(i, 1);
      this.seqs.splice(i, 1);
      this.#bytes -= this.#sizes.splice(i, 1)[0]!;
      this.omitted++;
    }
  }

  /** Every event this log has been given, kept or not. */
  get seen(): number {
    return this.#next;
  }
}
