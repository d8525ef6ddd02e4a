/**
 * The batch runner (spec/matching-and-leases.md "The batch plan"; issue #12
 * `c0mpute batch run`; docs/matching.md "Batch runs"). Given a batch and its
 * lines, it plans (through the node's planner), then runs every line as an
 * order designated to its planned provider, with bounded concurrency overall
 * and per provider. A provider that fails a line (failed receipt, dispute,
 * non-delivery, no answer, gone) is struck off for the rest of the run: its
 * waiting lines and the failed line are re-planned over the live view minus
 * every struck provider (lines a re-plan places on a provider struck while
 * it was in flight are re-planned again). It keeps every receipt and sums
 * what the completed lines cost, exactly.
 *
 * Losing the daemon itself (its connection breaks, it cannot be reached, it
 * stops and breaks the run off) is the buyer's side, not the provider's: no
 * provider is struck for it, nothing more is posted or re-planned, and the run
 * stops, its summary saying which lines were done, which were in flight (their
 * outcome unknown here) and which were never posted (`stopped`).
 *
 * It does no I/O of its own: planning, running a line, delivering an output
 * and the clock are ports (the CLI wires them to the daemon's control API; the
 * devnet scenario does the same), so the scheduling and re-planning are unit
 * tested with fakes.
 */
import { C0Error } from '../errors.js';
import type { Money } from '../records/money.js';
import type { Batch, BatchPlan } from './batch-plan.js';
import { assign, costOfDone, subBatch, type ReceiptView, type RunLine } from './batch-lines.js';

export { subBatch, type ReceiptView, type RunLine };

/** How many times one line is tried (each on a different provider) before it counts as failed. */
export const BATCH_LINE_ATTEMPTS = 3;
/** A refused re-plan is tried again this many times, `replanRetryMs` apart, before its lines fail (the run's own lines free slots meanwhile). */
export const BATCH_REPLAN_RETRIES = 3;

/**
 * Re-plan refusals that say "nobody can take these lines now", tried again: no room (BATCH_EXCEEDS_CAPACITY), or only
 * providers above maxPrice left (BATCH_MAX_PRICE_BELOW_ASK: the within-price ones struck off, or their presence lapsed
 * for a moment). Before, the latter failed the lines at once.
 */
const REPLAN_AGAIN: ReadonlySet<string> = new Set(['BATCH_EXCEEDS_CAPACITY', 'BATCH_NO_PROVIDER', 'BATCH_MAX_PRICE_BELOW_ASK']);
/**
 * What the runner's ports throw when the daemon itself is lost, not when it answers: it cannot be reached
 * (DAEMON_UNREACHABLE), the connection broke while it answered (DAEMON_STREAM_LOST: it died or restarted), or it did
 * not answer in time (DAEMON_NOT_ANSWERING: stopped, stuck). None says anything about a line's provider.
 */
export const DAEMON_LOST_CODES: ReadonlySet<string> = new Set(['DAEMON_UNREACHABLE', 'DAEMON_STREAM_LOST', 'DAEMON_NOT_ANSWERING']);
/** A line's run the daemon broke off because it is stopping (status `interrupted`; docs/node.md "A buyer that stops or stalls blames no provider"). */
const JOB_INTERRUPTED = 'JOB_INTERRUPTED';
/**
 * What the daemon itself answers because it is stopping, not because of a line's provider. Its stop first interrupts
 * the runs in flight (each ends with status `interrupted`, JOB_INTERRUPTED) and, until its control API closes, refuses
 * every new one with the same code, thrown before anything is signed ("this node is stopping: the job was not
 * started", Buyer.run; a stream `error` event). It is the only such code a `/v1/run` client can get: NODE_CLOSING is
 * the stopping buyer's answer to a provider's claim, and once the API is closed the CLI sees DAEMON_LOST_CODES.
 */
export const DAEMON_STOPPING_CODES: ReadonlySet<string> = new Set([JOB_INTERRUPTED]);
/**
 * The run's `signal` aborted (`c0mpute batch run`'s Ctrl-C): it stops as when it loses its daemon (`stopped` with this
 * code), its own doing: nothing more is posted, the lines in flight (whose streams the ports close on the same signal)
 * are `unknown`, the daemon withdrawing those no provider was selected for yet and letting the others run to their end.
 */
export const BATCH_INTERRUPTED = 'BATCH_INTERRUPTED';

/**
 * The code of `e` when it says the daemon was lost or is stopping (DAEMON_LOST_CODES, DAEMON_STOPPING_CODES), else
 * undefined (an answer: the line's own outcome).
 */
export function daemonSideCode(e: unknown): string | undefined {
  return e instanceof C0Error && (DAEMON_LOST_CODES.has(e.code) || DAEMON_STOPPING_CODES.has(e.code)) ? e.code : undefined;
}

/** The job a runLine throw names (`detail.job`: the daemon had signed the line's order before the run broke off). */
export function jobOfError(e: unknown): string | undefined {
  const job = e instanceof C0Error ? e.detail?.job : undefined;
  return typeof job === 'string' ? job : undefined;
}

/**
 * Lines started per second at most (token bucket, burst BATCH_START_BURST): each line
 * publishes a job and a selection, and the network drops a signer's jobs past
 * 10/s after a burst of 60 (FLOOD_DEFAULTS.signer.job), so a run stays under it.
 */
export const BATCH_STARTS_PER_SEC = 8;
export const BATCH_START_BURST = 30;
/** Default lines in flight at once, over all providers. */
export const BATCH_RUN_CONCURRENCY = 8;
/**
 * The most lines in flight a batch run takes: each holds one connection to the daemon's control API, which takes 256
 * at once (API_MAX_CONNECTIONS) and must keep room for the operator's CLI and console; past it the daemon closed the
 * extra connections and the run stopped as if it had lost its daemon (second-round review).
 */
export const BATCH_RUN_MAX_CONCURRENCY = 128;

/** What running one line at one provider gave. */
export interface LineOutcome {
  /** The buyer's verdict: `completed` (receipt completed and accepted) or anything else (the run's status). */
  status: string;
  output?: Uint8Array;
  job?: string;
  /** The receipt of this attempt, if the provider signed one. */
  receipt?: Omit<ReceiptView, 'line'>;
  /** Why it failed, for people. */
  detail?: string;
}

export type BatchRunEvent =
  | { e: 'planned'; plan: BatchPlan }
  /** `unknown`: the line was in flight when the run lost its daemon; what became of it is not known here (`job`: its job, if the daemon said it). */
  | { e: 'line'; line: string; provider: string; status: 'done' | 'failed' | 'retry' | 'unknown'; attempt: number; job?: string; receipt?: string; detail?: string }
  | { e: 'provider-failed'; provider: string; line: string; reason: string }
  /** `lines` and `assignments`: what this re-plan placed; `deferred`: lines it placed on a provider struck off meanwhile, sent back to the next re-plan. */
  | { e: 'replanned'; lines: number; excluded: string[]; assignments: Array<{ workload: string; provider: string; lines: number }>; deferred?: number }
  | { e: 'replan-refused'; lines: number; excluded: string[]; reason: string; retryInMs?: number }
  | { e: 'progress'; total: number; done: number; failed: number; replanned: number; inFlight: number }
  /** The run lost its daemon (`code`: DAEMON_LOST_CODES or DAEMON_STOPPING_CODES) or was interrupted (BATCH_INTERRUPTED): nothing more is posted; `inFlight` lines are let settle. */
  | { e: 'stopped'; code: string; message: string; inFlight: number };

export interface BatchRunPorts {
  /**
   * Plan this batch over the live view less `exclude`, counting `own.designated`
   * (this run's lines waiting at a provider) against each provider's share and
   * giving back the slots `own.running` (this run's lines running there)
   * occupy; throws BATCH_EXCEEDS_CAPACITY when it cannot be placed.
   */
  plan(batch: Batch, exclude: readonly string[], own: OwnLines): Promise<BatchPlan>;
  /**
   * Run one line as an order designated to `provider`; may throw (counted as a failure of that attempt), except with a
   * code of DAEMON_LOST_CODES or DAEMON_STOPPING_CODES, which stops the run without blaming the provider (a stopping
   * code with no job named: the daemon refused to start the run, so the line was not posted). A C0Error thrown after the daemon
   * named the line's job carries it as `detail.job` (see jobOfError): a line left `unknown` still says which job it is.
   */
  runLine(line: RunLine, provider: string): Promise<LineOutcome>;
  /** Lines one provider may run at once (its free slots when planned); at least 1 is used. */
  slots(provider: string): number;
  /** Keep a completed line's output (before the line counts as done). */
  deliver(line: RunLine, output: Uint8Array): Promise<void>;
  clock(): number;
  onEvent?(e: BatchRunEvent): void;
  /**
   * A line's entry each time what is known of it changes: `unknown` as it is posted (its outcome is not known until
   * it settles), then as it settles (done, failed, `not-posted` again to be re-planned, or `unknown` when the run lost
   * its daemon). Called synchronously; the entry is the runner's own: write it out, keep no reference. So a command
   * that is killed (no summary written) still leaves which lines were done and which may have run.
   */
  record?(line: LineReport): void;
  /** The providers live now (presence): one that has lines of this run and drops out is struck off. Absent: failures alone strike. */
  live?(): Promise<ReadonlySet<string>>;
}

/** This run's own lines per provider DID, for a re-plan. */
export interface OwnLines {
  designated: Record<string, number>;
  running: Record<string, number>;
}

export interface BatchRunOptions {
  batch: Batch;
  /** Every line, each workload's lines in order; per workload as many as the batch says. */
  lines: readonly RunLine[];
  concurrency?: number;
  attempts?: number;
  /** Wait before trying a refused re-plan again (default 2 000 ms: about two presence updates). */
  replanRetryMs?: number;
  /** How often `ports.live` is asked, ms (default 2 000). */
  livenessEveryMs?: number;
  /** Lines started per second at most (default BATCH_STARTS_PER_SEC; Infinity: no pacing) and the burst (default BATCH_START_BURST). */
  startsPerSec?: number;
  startBurst?: number;
  /** The operator's Ctrl-C: the run stops, `stopped` BATCH_INTERRUPTED (the ports close their streams on it too). */
  signal?: AbortSignal;
}

export interface LineReport {
  id: string;
  workload: string;
  /**
   * `done`, `failed`, or, when the run stopped because it lost its daemon: `unknown` (in flight then; the provider
   * ends it EXEC_BUYER_GONE if the daemon died, `c0mpute jobs` says), `not-posted` (never posted, or not again).
   */
  status: 'done' | 'failed' | 'unknown' | 'not-posted';
  provider?: string;
  job?: string;
  receipt?: string;
  /** A done line's price (its receipt's): so a later `--resume`, which carries this entry, still knows what the line cost. */
  price?: Money;
  attempts: Array<{ provider: string; status: string; job?: string; receipt?: string; detail?: string }>;
  detail?: string;
}

export interface BatchRunSummary {
  startedAt: number;
  finishedAt: number;
  lines: number;
  done: number;
  failed: number;
  /** Lines in flight when the run lost its daemon (status `unknown`); 0 unless `stopped`. */
  unknown: number;
  /** Lines not posted because the run stopped (status `not-posted`); 0 unless `stopped`. */
  notPosted: number;
  /** Set when the run stopped because it lost its daemon: the daemon's code (DAEMON_LOST_CODES, DAEMON_STOPPING_CODES) and message; or BATCH_INTERRUPTED when its `signal` aborted. */
  stopped?: { code: string; message: string };
  /** Line re-assignments made by re-planning (a line re-planned twice counts twice). */
  replanned: number;
  plan: BatchPlan;
  replans: Array<{ at: number; excluded: string[]; lines: number; assignments: Array<{ workload: string; provider: string; lines: number }>; deferred?: number; refused?: string }>;
  failedProviders: Array<{ provider: string; line: string; reason: string }>;
  /** Every receipt signed for this run, in the order they came back. */
  receipts: ReceiptView[];
  /** What the completed lines cost: the sum of their receipts' prices per currency (exact; never converted). */
  cost: Money[];
  perLine: LineReport[];
}

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Plan and run a batch. Refusal of the first plan (BATCH_EXCEEDS_CAPACITY)
 * propagates before any line is run; afterwards nothing throws: a line that
 * cannot be placed again or fails on every attempt is reported failed. A run
 * that loses its daemon returns with `stopped` set (see DAEMON_LOST_CODES).
 */
export async function runBatch(opts: BatchRunOptions, ports: BatchRunPorts): Promise<BatchRunSummary> {
  const emit = (e: BatchRunEvent) => ports.onEvent?.(e);
  const concurrency = Math.min(BATCH_RUN_MAX_CONCURRENCY, Math.max(1, opts.concurrency ?? BATCH_RUN_CONCURRENCY));
  const maxAttempts = Math.max(1, opts.attempts ?? BATCH_LINE_ATTEMPTS);
  const startedAt = ports.clock();
  const plan = await ports.plan(opts.batch, [], { designated: {}, running: {} });
  emit({ e: 'planned', plan });

  // every line ends done, failed or (only when the run stopped) unknown: one still `not-posted` at the end was not run
  const reports = new Map<string, LineReport>(opts.lines.map((l) => [l.id, { id: l.id, workload: l.workload, status: 'not-posted', attempts: [] }]));
  const queues = new Map<string, RunLine[]>();
  const inFlightAt = new Map<string, number>();
  const struck = new Map<string, string>();
  const toReplan: RunLine[] = [];
  const receipts: ReceiptView[] = [];
  const replans: BatchRunSummary['replans'] = [];
  const failedProviders: BatchRunSummary['failedProviders'] = [];
  let inFlight = 0;
  let done = 0;
  let failed = 0;
  let replanned = 0;
  let unknown = 0;
  /** The daemon was lost: no line is started and nothing re-planned after; the lines in flight are let settle. */
  let stopped: { code: string; message: string } | undefined;
  let replanning: Promise<void> | undefined;
  let refusals = 0;
  const retryMs = opts.replanRetryMs ?? 2_000;

  for (const [p, ls] of assign(plan, opts.lines)) queues.set(p, ls);

  const progress = () => emit({ e: 'progress', total: opts.lines.length, done, failed, replanned, inFlight });
  const finish = (l: RunLine, detail: string) => {
    const r = reports.get(l.id)!;
    r.status = 'failed';
    r.detail = detail;
    failed++;
  };

  let wake: () => void = () => {};
  const settled = new Promise<void>((resolve) => {
    wake = () => {
      pump();
      if (inFlight === 0 && !replanning && (stopped || (toReplan.length === 0 && [...queues.values()].every((q) => q.length === 0)))) resolve();
    };
  });

  // Pacing: a token bucket on line starts (see BATCH_STARTS_PER_SEC).
  const rate = opts.startsPerSec ?? BATCH_STARTS_PER_SEC;
  const burst = Math.max(1, opts.startBurst ?? BATCH_START_BURST);
  let tokens = burst;
  let filledAt = ports.clock();
  let paced: NodeJS.Timeout | undefined;
  const haveToken = (): boolean => {
    if (rate === Infinity) return true;
    const now = ports.clock();
    tokens = Math.min(burst, tokens + (Math.max(0, now - filledAt) * rate) / 1000);
    filledAt = now;
    if (tokens >= 1) return true;
    paced ??= setTimeout(() => {
      paced = undefined;
      wake();
    }, Math.ceil(((1 - tokens) * 1000) / rate));
    return false;
  };

  const pump = (): void => {
    if (stopped) return;
    for (let started = true; started && inFlight < concurrency; ) {
      started = false;
      // Providers in DID order, one line each per round, so a long queue does not starve the rest.
      for (const p of [...queues.keys()].sort(cmp)) {
        if (inFlight >= concurrency) break;
        const q = queues.get(p)!;
        if (!q.length || (inFlightAt.get(p) ?? 0) >= Math.max(1, ports.slots(p))) continue;
        if (!haveToken()) return;
        tokens -= 1;
        start(q.shift()!, p);
        started = true;
      }
    }
  };

  /** The operator's Ctrl-C (opts.signal): the run stops as when it loses its daemon. */
  const interrupt = opts.signal ?? new AbortController().signal;
  // the signal's reason names the stop when it is text (`c0mpute batch run`: 'SIGTERM', 'SIGHUP'), else it was Ctrl-C
  const stopWord = (): string => (typeof interrupt.reason === 'string' && /^SIG[A-Z]+$/.test(interrupt.reason) && interrupt.reason !== 'SIGINT' ? interrupt.reason : 'Ctrl-C');
  const interrupted = { code: BATCH_INTERRUPTED, message: 'interrupted with Ctrl-C' };

  /** The run lost its daemon: say so once; what is in flight settles, nothing more starts. */
  const stop = (why: { code: string; message: string }): void => {
    if (stopped) return;
    stopped = why;
    emit({ e: 'stopped', code: why.code, message: why.message, inFlight });
  };

  const start = (l: RunLine, p: string): void => {
    inFlight++;
    inFlightAt.set(p, (inFlightAt.get(p) ?? 0) + 1);
    const r = reports.get(l.id)!;
    const attempt = r.attempts.length + 1;
    let lost: { code: string; message: string } | undefined;
    /** The stopping daemon refused to start this run (a stopping code, no job named): nothing was signed or sent. */
    let refused = false;
    ports.record?.({ ...r, status: 'unknown', provider: p, detail: `posted to ${p}; its outcome is not recorded: the run ended before it settled (\`c0mpute jobs\` on the daemon says)` });
    /** The line's report as it now stands, to the record, the progress and the loop waiting for a free slot. */
    const settled = (): void => {
      ports.record?.(r);
      progress();
      wake();
    };
    void ports
      .runLine(l, p)
      .catch((e: unknown): LineOutcome => {
        const code = daemonSideCode(e);
        if (code) lost = { code, message: (e as C0Error).message };
        // its stream closed by the Ctrl-C (which the stream reports as a connection lost): in flight, not failed
        if (interrupt.aborted) lost = interrupted;
        const job = jobOfError(e);
        refused = code !== undefined && DAEMON_STOPPING_CODES.has(code) && job === undefined;
        return { status: 'error', ...(job ? { job } : {}), detail: e instanceof C0Error ? `${e.code}: ${e.message}` : (e as Error).message };
      })
      .then(async (o) => {
        if (o.receipt) receipts.push({ line: l.id, ...o.receipt });
        if (!refused) r.attempts.push({ provider: p, status: o.status, ...(o.job ? { job: o.job } : {}), ...(o.receipt ? { receipt: o.receipt.address } : {}), ...(o.detail ? { detail: o.detail } : {}) });
        // the daemon broke the run off as it stopped: its own doing, not the provider's (no receipt blames anyone)
        if (!lost && o.status === 'interrupted') lost = { code: JOB_INTERRUPTED, message: (o.detail ?? 'the daemon broke the run off as it stopped').replace(/^JOB_INTERRUPTED: /, '') };
        if (lost && refused) {
          // The daemon is stopping and said so before it signed anything: the line stays `not-posted` (no attempt),
          // so it is among the lines to run again, and nobody is blamed.
          inFlight--;
          inFlightAt.set(p, inFlightAt.get(p)! - 1);
          stop(lost);
          settled();
          return;
        }
        if (lost) {
          // The daemon is gone, not the provider: strike no one, re-plan nothing, and do not post the line again (it
          // may still be running: a daemon whose stream alone broke goes on with it, and one that died leaves the
          // provider to end it EXEC_BUYER_GONE). Stopped first: the lines in flight it reports count this one, which is
          // `unknown` as they are (it said 3 in flight, then 4 were unknown: QA pass on matching, session 49).
          stop(lost);
          inFlight--;
          inFlightAt.set(p, inFlightAt.get(p)! - 1);
          r.status = 'unknown';
          if (o.job) r.job = o.job;
          r.detail =
            lost === interrupted
              ? `in flight at ${stopWord()}, its stream closed: the daemon withdraws it if no provider was selected yet, else it runs to its end; its outcome: \`c0mpute jobs\` on the daemon`
              : `in flight when the run lost its daemon (${lost.code}); its outcome is not known here: \`c0mpute jobs\` on the daemon says`;
          unknown++;
          emit({ e: 'line', line: l.id, provider: p, status: 'unknown', attempt, ...(o.job ? { job: o.job } : {}), detail: `${lost.code}: ${lost.message}` });
          settled();
          return;
        }
        let ok = o.status === 'completed' && o.output !== undefined;
        if (ok) {
          try {
            await ports.deliver(l, o.output!);
          } catch (e) {
            ok = false;
            o = { ...o, status: 'undelivered', detail: `could not keep the output: ${(e as Error).message}` };
            r.attempts[r.attempts.length - 1]!.status = o.status;
          }
        }
        inFlight--;
        inFlightAt.set(p, inFlightAt.get(p)! - 1);
        if (ok) {
          r.status = 'done';
          r.provider = p;
          if (o.job) r.job = o.job;
          if (o.receipt) {
            r.receipt = o.receipt.address;
            r.price = o.receipt.price;
          }
          done++;
          emit({ e: 'line', line: l.id, provider: p, status: 'done', attempt, ...(o.receipt ? { receipt: o.receipt.address } : {}) });
        } else if (o.status === 'undelivered') {
          // our side failed (the output could not be written): not the provider's fault, nothing to re-plan
          finish(l, o.detail!);
          emit({ e: 'line', line: l.id, provider: p, status: 'failed', attempt, detail: o.detail! });
        } else {
          const reason = `${o.status}${o.detail ? `: ${o.detail}` : ''}`;
          strike(p, l.id, reason);
          if (attempt >= maxAttempts) {
            finish(l, `failed on ${attempt} providers; last: ${reason}`);
            emit({ e: 'line', line: l.id, provider: p, status: 'failed', attempt, detail: reason });
          } else {
            toReplan.push(l);
            emit({ e: 'line', line: l.id, provider: p, status: 'retry', attempt, detail: reason });
          }
          replan();
        }
        settled();
      });
  };

  /** Strike a provider off for the rest of the run: its waiting lines go back to be re-planned. */
  const strike = (p: string, line: string, reason: string): void => {
    if (struck.has(p)) return;
    struck.set(p, reason);
    failedProviders.push({ provider: p, line, reason });
    emit({ e: 'provider-failed', provider: p, line, reason });
    toReplan.push(...(queues.get(p) ?? []));
    queues.set(p, []);
  };

  /** Re-plan everything waiting for it, one re-plan at a time (lines failing meanwhile join the next one). */
  const replan = (): void => {
    if (stopped || replanning || toReplan.length === 0) return;
    const ls = toReplan.splice(0);
    const excluded = [...struck.keys()].sort(cmp);
    const counts = new Map<string, number>();
    for (const l of ls) counts.set(l.workload, (counts.get(l.workload) ?? 0) + 1);
    // What this run still has waiting at a provider counts against its share, as designated
    // orders do; the slots its running lines occupy are given back.
    const own: OwnLines = { designated: {}, running: {} };
    for (const p of [...new Set([...queues.keys(), ...inFlightAt.keys()])].sort(cmp)) {
      if (struck.has(p)) continue;
      if (queues.get(p)?.length) own.designated[p] = queues.get(p)!.length;
      if (inFlightAt.get(p)) own.running[p] = inFlightAt.get(p)!;
    }
    replanning = ports
      .plan(subBatch(opts.batch, counts), excluded, own)
      .then((p) => ({ p, placed: assign(p, ls) })) // a plan that does not place every line is a refusal
      .then(
        ({ p, placed }) => {
          // what this re-plan placed: not the lines it put on a provider struck off meanwhile
          const assignments = p.assignments.filter((a) => !struck.has(a.provider)).map((a) => ({ workload: a.workload, provider: a.provider, lines: a.lines }));
          let queued = 0;
          let deferred = 0;
          for (const [prov, more] of placed) {
            // Struck off while this plan was out: its lines go to the next re-plan, which excludes it.
            if (struck.has(prov)) {
              toReplan.push(...more);
              deferred += more.length;
              continue;
            }
            queues.set(prov, [...(queues.get(prov) ?? []), ...more]);
            queued += more.length;
          }
          replanned += queued;
          refusals = 0;
          const back = deferred ? { deferred } : {};
          replans.push({ at: ports.clock(), excluded, lines: queued, assignments, ...back });
          emit({ e: 'replanned', lines: queued, excluded, assignments, ...back });
        },
        async (e: unknown) => {
          const reason = e instanceof C0Error ? `${e.code}: ${e.message}` : (e as Error).message;
          replans.push({ at: ports.clock(), excluded, lines: ls.length, assignments: [], refused: reason });
          const lostCode = daemonSideCode(e);
          if (lostCode) {
            // no answer from the daemon about these lines: they stay unposted, and the run stops
            emit({ e: 'replan-refused', lines: ls.length, excluded, reason });
            toReplan.unshift(...ls);
            stop({ code: lostCode, message: (e as C0Error).message });
            return;
          }
          if (e instanceof C0Error && REPLAN_AGAIN.has(e.code) && refusals < BATCH_REPLAN_RETRIES) {
            // Busy now is not gone: the presence the plan reads lags, and lines finishing free slots. Nor is "only
            // dearer providers live": a within-price one whose presence lapsed a moment is back at the next read.
            refusals++;
            emit({ e: 'replan-refused', lines: ls.length, excluded, reason, retryInMs: retryMs });
            await new Promise((r) => setTimeout(r, retryMs));
            toReplan.unshift(...ls);
            return;
          }
          emit({ e: 'replan-refused', lines: ls.length, excluded, reason });
          for (const l of ls) finish(l, `could not be re-planned: ${reason}`);
        },
      )
      .then(() => {
        replanning = undefined;
        progress();
        replan();
        wake();
      });
  };

  // A provider that is gone is struck without waiting for its running lines to fail (an order
  // designated to a dead provider only ends at its deadline): its waiting lines move on now.
  const quit = new AbortController();
  const pause = (ms: number) =>
    new Promise<void>((r) => {
      const stop = () => (clearTimeout(t), r());
      const t = setTimeout(() => (quit.signal.removeEventListener('abort', stop), r()), ms);
      quit.signal.addEventListener('abort', stop, { once: true });
    });
  const watch = ports.live
    ? (async () => {
        const every = opts.livenessEveryMs ?? 2_000;
        while (!quit.signal.aborted) {
          await pause(every);
          if (quit.signal.aborted) break;
          let live: ReadonlySet<string>;
          try {
            live = await ports.live!();
          } catch {
            continue; // the view is unavailable: failures still strike
          }
          if (stopped) continue;
          let any = false;
          for (const p of [...new Set([...queues.keys(), ...inFlightAt.keys()])].sort(cmp)) {
            if (struck.has(p) || live.has(p) || (!(queues.get(p)?.length) && !inFlightAt.get(p))) continue;
            strike(p, '', 'gone: its presence lapsed');
            any = true;
          }
          if (any) {
            replan();
            progress();
            wake();
          }
        }
      })()
    : undefined;

  const onInterrupt = () => {
    interrupted.message = `interrupted with ${stopWord()}`;
    stop(interrupted);
    wake();
  };
  if (interrupt.aborted) onInterrupt();
  else interrupt.addEventListener('abort', onInterrupt, { once: true });
  progress();
  wake();
  await settled;
  interrupt.removeEventListener('abort', onInterrupt);
  if (paced) clearTimeout(paced);
  quit.abort();
  await watch;

  let notPosted = 0;
  for (const r of reports.values()) {
    if (r.status !== 'not-posted') continue;
    if (stopped) {
      notPosted++;
      r.detail = `${r.attempts.length ? 'not posted again' : 'not posted'}: ${stopped === interrupted ? `the run was interrupted with ${stopWord()}` : `the run stopped when it lost its daemon (${stopped.code})`}`;
    } else {
      // cannot happen (every line ends done or failed when the daemon stays); never reported as anything but failed
      r.status = 'failed';
      r.detail ??= 'not run';
      failed++;
    }
  }
  const perLine = opts.lines.map((l) => reports.get(l.id)!);
  return {
    startedAt,
    finishedAt: ports.clock(),
    lines: opts.lines.length,
    done,
    failed,
    unknown,
    notPosted,
    ...(stopped ? { stopped } : {}),
    replanned,
    plan,
    replans,
    failedProviders,
    receipts,
    cost: costOfDone(perLine, receipts),
    perLine,
  };
}
