/**
 * What a job's page (ui/views/jobs.tsx) says about where the job stands and how it was decided, from the walk the
 * daemon sends (`GET /v1/console/job/:job`) and the run's events. Plain functions, no DOM: the unit tests run them.
 *
 * QA (session 49): a job whose run the daemon no longer held (after a restart, or any ended job) read "5 Execution …
 * running" beside a failed receipt, and its "3 Decision" showed the market as it is now ("No provider is eligible
 * among 4 known … 3 offers have expired") though step 4 showed the provider selected then. A job that got no offers
 * showed an empty ranking and nothing saying why.
 */
import { shortDid } from '../src/util/did-text.js';
import { printable } from '../src/util/text.js';
import { verdictLine } from '../src/util/verdict-text.js';

export interface Verdict {
  provider: string;
  eligible: boolean;
  failures: Array<{ code: string; message: string }>;
}
export interface Explanation {
  summary: string;
  relaxations?: Array<{ text: string }>;
  providers: Verdict[];
  expired?: string[];
}
export interface RankedView {
  rank: number;
  provider: string;
  offer: string;
  price: { amount: string; currency: string };
  durationMs: number;
  total: number;
  scores: Record<string, number>;
}
/** The run's `decision` event as the daemon sends it (src/roles/buyer.ts): the selection's result and the whole market's verdicts then. */
export interface DecisionEvent {
  e: 'decision';
  policy?: string;
  decision?: {
    result: { ok: boolean; why?: string; ranked: RankedView[]; ineligible: Verdict[]; explanation?: Explanation };
    market?: Explanation;
  };
}

/** The parts of the walk these functions read. */
export interface WalkFacts {
  job: { record: { deadline: number } };
  selections: unknown[];
  receipts: unknown[];
  acceptances: unknown[];
  nondeliveries: unknown[];
  run?: { done: boolean } | undefined;
}

/**
 * Where the job stands here: `running` while this node runs it; `ended` once the run said it ended, or (without a run
 * held) once it has a receipt, a non-delivery or an acceptance, or its deadline passed; `not-held` when this node
 * holds no run of it and nothing says it ended (the daemon restarted since it started: nothing here runs it now).
 */
export type JobState = 'running' | 'ended' | 'not-held';

export function jobState(w: WalkFacts, events: ReadonlyArray<{ e: string }>, now: number): JobState {
  if (w.run?.done || events.some((e) => e.e === 'done')) return 'ended';
  if (w.job.record.deadline <= now) return 'ended';
  if (w.run || events.length) return 'running';
  if (w.acceptances.length || w.receipts.length || w.nondeliveries.length) return 'ended';
  return 'not-held';
}

/** What step 5 says besides its events: nothing while running; why nothing ran, that the run was broken off, or that nothing runs it here now. */
export function executionNote(state: JobState, w: WalkFacts, outcome?: RunOutcome): string | undefined {
  if (state === 'running') return undefined;
  // QA qaCon F10: after a buyer SIGKILL, step 5 was an empty heading
  if (outcome?.code === 'JOB_INTERRUPTED') return 'broken off: this node stopped or crashed during the run (JOB_INTERRUPTED), so nothing was signed about its provider; a receipt it sends later shows as late';
  if (state === 'not-held') return 'not running: this node holds no run of this job (the daemon restarted since it started), so nothing here runs it now';
  if (!w.selections.length && !w.receipts.length && !w.nondeliveries.length) return 'nothing ran: no provider was selected';
  return undefined;
}

/**
 * What an empty step of an ended job says (QA qaCon F4: steps 4, 6 and 7 of a job that ended with no eligible provider
 * were bare headings): why there is no selection, receipt or acceptance. Undefined while running, or when the step has
 * something to show.
 */
export function emptyStepNote(step: 'selection' | 'receipt' | 'acceptance', state: JobState, w: WalkFacts): string | undefined {
  if (state === 'running') return undefined;
  const selected = w.selections.length > 0;
  if (step === 'selection') return selected ? undefined : 'none: no provider was selected';
  if (step === 'receipt') return w.receipts.length ? undefined : selected ? 'none held: no receipt came from the provider' : 'none: no provider ran it';
  if (w.acceptances.length) return undefined;
  return w.receipts.length ? 'none signed: no receipt came within the run (a late one gets no verdict)' : 'none: no receipt to accept';
}

/** The lines naming each provider that failed a gate, as `c0mpute run` prints them, at most `limit` and a count of the rest. */
export interface IneligibleLines {
  lines: string[];
  more: number;
}

export type DecisionView =
  | { kind: 'ranked'; why?: string; ranked: RankedView[]; ineligible: IneligibleLines }
  | { kind: 'none'; summary: string; relaxations: string[]; ineligible: IneligibleLines }
  | { kind: 'pending' }
  | { kind: 'unknown'; text: string };

/** How many ineligible providers a job's page lists (the CLI's narration lists 20 by default). */
export const INELIGIBLE_SHOWN = 20;

/**
 * The ineligible providers of a decision, each with every failure: the whole market's verdicts at the decision when
 * the event carries them (what `c0mpute run` prints), else the explanation's, else the offerers the result names.
 */
export function ineligibleLines(d: NonNullable<DecisionEvent['decision']>, limit = INELIGIBLE_SHOWN): IneligibleLines {
  const all = d.market?.providers ?? d.result.explanation?.providers ?? d.result.ineligible;
  const bad = all.filter((v) => !v.eligible);
  return { lines: bad.slice(0, limit).map((v) => printable(verdictLine(v, shortDid))), more: Math.max(0, bad.length - limit) };
}

/**
 * Step 3 of a job's page: the decision the run took (ranked, or none eligible with why), never today's market in its
 * place. Without the run's decision: pending while the run collects offers; else said to be unknown here, with the
 * market now labelled as now.
 */
export function decisionView(events: ReadonlyArray<{ e: string }>, state: JobState, marketNow: Explanation): DecisionView {
  const ev = events.find((e) => e.e === 'decision') as DecisionEvent | undefined;
  const d = ev?.decision;
  if (d) {
    const ineligible = ineligibleLines(d);
    if (d.result.ok) return { kind: 'ranked', ...(d.result.why ? { why: d.result.why } : {}), ranked: d.result.ranked, ineligible };
    const x = d.result.explanation ?? d.market;
    return { kind: 'none', summary: x?.summary ?? 'no provider was eligible', relaxations: (x?.relaxations ?? []).map((r) => r.text), ineligible };
  }
  if (state === 'running') return { kind: 'pending' };
  return {
    kind: 'unknown',
    text: `The decision is not held by this node (its run was before a restart, or older than the runs it keeps). The market now, not at the decision: ${marketNow.summary}`,
  };
}

/** How this node's run of its own job ended, as the daemon sends it (src/node/job-history.ts JobOutcome). */
export interface RunOutcome {
  status: 'completed' | 'failed' | 'none';
  provider?: string;
  verdict?: string;
  failure?: string;
  reason?: string;
  at?: number;
  /** ORDER_NOT_CLAIMED: an order of this node's whose deadline passed with no claim taken; JOB_INTERRUPTED: the run broken off by this node's stop or crash (src/node/job-history.ts outcomeNow) */
  code?: string;
  /** How a job with no outcome held stands (src/node/console-routes.ts endedAs): running, no-eligible-provider, interrupted… */
  ending?: { status: string; code?: string; note: string };
}

/**
 * The outcome as the Jobs list and a job's page say it, the words `c0mpute jobs` uses: the status of this node's run
 * (`completed`, `failed`; `unclaimed` for an order whose deadline passed with no claim taken; none held: undefined),
 * and how the attempt that decided it ended. A receipt that came after
 * the run ended is never the status (it is shown as late beside it).
 */
export function outcomeView(o: RunOutcome): { status?: string; text: string } {
  if (o.status === 'completed') return { status: 'completed', text: 'run completed: its receipt accepted' };
  if (o.status === 'failed') {
    const how = o.reason ? `non-delivery signed (${o.reason})` : o.verdict === 'disputed' ? 'its receipt disputed' : `the provider reported failed${o.failure ? ` (${o.failure})` : ''}`;
    return { status: 'failed', text: `run failed: ${how}` };
  }
  if (o.code === 'ORDER_NOT_CLAIMED') return { status: 'unclaimed', text: 'the order’s deadline passed with no claim taken (ORDER_NOT_CLAIMED)' };
  const e = o.ending;
  if (e && e.status !== 'running') return { status: e.status, text: `${e.note}${e.code ? ` (${e.code})` : ''}` };
  return { text: 'no outcome held' };
}

/**
 * A receipt that came after this node's run ended: a completed one's output never reached this node; a failed one has
 * no output, and no verdict was signed on it (QA qaCon F10: "late failed: output not received").
 */
export function lateText(status: string | undefined): string {
  if (status === 'completed') return 'late completed: output not received';
  if (status === 'failed') return 'late failed: no verdict signed';
  return 'late: no verdict signed';
}
