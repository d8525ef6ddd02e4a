/**
 * The answers of the runs this member did for other coordinators, kept for the coordinator that asked (docs/pools.md
 * "A stream that breaks after the work"): a coordinator whose stream to this member broke while its dispatch's budget
 * still ran asks again (`op: result`) and gets the answer the run gave, or waits for a run still going. Nothing is run
 * again. Kept in memory, per dispatch address and caller, for the run's own budget and RESULT_GRACE_MS after it (the
 * coordinator takes no output past its budget, which ends no later), at most RESULT_MAX_ENTRIES answers and
 * RESULT_MAX_BYTES of output (the oldest finished ones dropped first). Not across a restart: the run ended with the
 * process, and the coordinator fails the job as before.
 */
import type { PoolReply } from './protocol.js';

/** How long an answer is kept past the run's budget, ms: the coordinator's budget began before this member's run. */
export const RESULT_GRACE_MS = 10_000;
/** Answers kept at once (a member runs at most `provider.slots` at a time, each kept for its budget). */
export const RESULT_MAX_ENTRIES = 64;
/** Output bytes kept at once (an output is at most 3 MiB: POOL_MAX_OUTPUT_BYTES). */
export const RESULT_MAX_BYTES = 16 * 1024 * 1024;

interface Kept {
  from: string;
  job: string;
  /** Monotonic ms after which the answer is dropped. */
  until: number;
  reply?: PoolReply;
  pending: Promise<PoolReply>;
  bytes: number;
}

export class RunResults {
  readonly #kept = new Map<string, Kept>();

  constructor(
    private readonly now: () => number,
    private readonly maxEntries = RESULT_MAX_ENTRIES,
    private readonly maxBytes = RESULT_MAX_BYTES,
  ) {}

  /**
   * A run of `dispatch` for `from` starts, its budget `budgetMs`: returns what settles it with its answer. A dispatch
   * already held keeps its first run's answer (a second `run` of it is refused POOL_ALREADY_RUN, which must not
   * replace the output the first one made).
   */
  begin(dispatch: string, from: string, job: string, budgetMs: number): (reply: PoolReply) => void {
    this.#prune();
    if (this.#kept.has(dispatch)) return () => {};
    let settle!: (r: PoolReply) => void;
    const pending = new Promise<PoolReply>((res) => (settle = res));
    const k: Kept = { from, job, until: this.now() + budgetMs + RESULT_GRACE_MS, pending, bytes: 0 };
    this.#kept.set(dispatch, k);
    return (reply) => {
      k.reply = reply;
      k.bytes = reply.output?.length ?? 0;
      settle(reply);
      this.#prune();
    };
  }

  /** The answer of `dispatch`'s run for `from`: kept, or to come (a run still going); undefined when none is held. */
  get(dispatch: string, from: string): Promise<PoolReply> | undefined {
    this.#prune();
    const k = this.#kept.get(dispatch);
    return k && k.from === from ? (k.reply ? Promise.resolve(k.reply) : k.pending) : undefined;
  }

  /** Answers held (tests). */
  get size(): number {
    return this.#kept.size;
  }

  #prune(): void {
    const now = this.now();
    for (const [key, k] of this.#kept) if (k.reply && k.until <= now) this.#kept.delete(key);
    // Past the bounds the oldest finished answers go first (Map order is insertion order); runs still going stay.
    let bytes = [...this.#kept.values()].reduce((s, k) => s + k.bytes, 0);
    for (const [key, k] of this.#kept) {
      if (this.#kept.size <= this.maxEntries && bytes <= this.maxBytes) break;
      if (!k.reply) continue;
      this.#kept.delete(key);
      bytes -= k.bytes;
    }
  }
}
