/**
 * The last lines of a run that did not complete, worded once for `c0mpute run` (src/cli/commands/node-actions.ts) and
 * the console's Run page (ui/views/run.tsx): the failed attempts with their codes, why no provider was eligible and
 * what would widen the market, a steward's refusal, an order nobody claimed. Light (no node, no CLI context): the
 * page's bundle imports it. QA qaCon F3: the Run page ended a failed run with "Result: ✗ failed" alone.
 */
import { shortDid } from './did-text.js';
import { printable } from './text.js';
import { denyFigures } from './deny-text.js';

/** An auction's run, kept with its job while it runs (Buyer #noteRun): found so at a restart, it died with the process before. */
export const JOB_RUNNING = 'JOB_RUNNING';
/** An auction's run that ended with offers but none of the providers tried selected (each named: lapsed, not reached…). */
export const JOB_NO_PROVIDER_SELECTED = 'JOB_NO_PROVIDER_SELECTED';

/** A market explanation as the wire carries it (src/market/explain.ts). */
export interface ExplanationText {
  summary: string;
  relaxations?: Array<{ text: string }>;
  expired?: string[];
}

const num = (n: number): string => n.toLocaleString('en-US');

/**
 * How a run that selected no provider ended, one sentence each: `c0mpute run`'s last line, `c0mpute jobs`, `GET
 * /v1/jobs` (outcome.code) and the console's Jobs list say it in these words, during the run and after a restart (the
 * buyer keeps the code with the job: RecordStore.noteAttempt by the job's address). Before, one outcome read three ways:
 * "no provider answered" (run), "no provider offered before the offer window closed" (console, until a restart, then
 * "no provider selected") and "no outcome held (no provider was selected)" (jobs).
 */
export const NO_PROVIDER_ENDED = {
  'no-offers': { code: 'JOB_NO_OFFERS', said: 'no provider offered before the offer window closed' },
  'no-eligible-provider': { code: 'JOB_NO_ELIGIBLE_PROVIDER', said: 'no offer came from an eligible provider' },
} as const;

/** The run's status of a NO_PROVIDER_ENDED code, if it is one. */
export function noProviderStatus(code: string | undefined): keyof typeof NO_PROVIDER_ENDED | undefined {
  return code === NO_PROVIDER_ENDED['no-offers'].code ? 'no-offers' : code === NO_PROVIDER_ENDED['no-eligible-provider'].code ? 'no-eligible-provider' : undefined;
}

/** Why no provider was eligible, what would make one eligible, the adverts that expired: `c0mpute run`'s lines. */
export function explanationLines(x: ExplanationText, names: (did: string) => string = shortDid, limit = 12): string[] {
  const lines = [`✘ no eligible provider: ${x.summary}`];
  for (const r of x.relaxations ?? []) lines.push(`  · ${r.text}`);
  const expired = x.expired ?? [];
  if (expired.length) lines.push(`  · expired adverts: ${expired.slice(0, limit).map(names).join(', ')}${expired.length > limit ? ` and ${num(expired.length - limit)} more` : ''}`);
  return lines.map((l) => printable(l));
}

/**
 * The final lines of a run that did not complete (`result`: the run's result on the wire). A steward's Deny or a claim
 * still queued at its deadline is its own answer: said once, from the admission event when it came (`verdictSaid`),
 * and never followed by the generic "the job failed: no attempt could be made before the deadline" (QA witness pass,
 * finding 4: that line followed every Deny). A run broken off (`interrupted`) says its code.
 */
export function runFailureLines(result: Record<string, unknown>, o: { verdictSaid: boolean; limit?: number; names?: (did: string) => string }): string[] {
  const names = o.names ?? shortDid;
  const status = result.status as string;
  const lines: string[] = [];
  if (status === 'denied' || status === 'queue-expired') {
    if (o.verdictSaid) return lines;
    const a = result.admission as { verdict?: string; reason?: string; reasons?: string[]; basis?: unknown } | undefined;
    lines.push(`✘ ${status === 'denied' ? 'the steward denied the claim' : 'the claim was still queued at its deadline'}: ${a?.reason ?? '?'}${a?.reasons && a.reasons.length > 1 ? ` (${a.reasons.join(', ')})` : ''}${denyFigures(a)}`);
  } else if (status === 'no-eligible-provider' || status === 'no-offers') {
    const network = result.network as { code: string; message: string } | undefined;
    if (network) lines.push(`✘ ${network.message} [${network.code}]`);
    const decision = result.decision as { result: { explanation?: ExplanationText } } | undefined;
    if (status === 'no-offers' && !decision?.result.explanation) lines.push(`✘ ${NO_PROVIDER_ENDED['no-offers'].said} [${NO_PROVIDER_ENDED['no-offers'].code}]`);
    if (decision?.result.explanation) lines.push(...explanationLines(decision.result.explanation, names, o.limit));
  } else if (status === 'unclaimed') {
    const err = result.error as { code: string; message: string } | undefined;
    lines.push(`✘ ${err?.message ?? 'no valid claim arrived before the deadline'} [${err?.code ?? 'ORDER_NOT_CLAIMED'}]`);
  } else if (status === 'interrupted') {
    const err = result.error as { code: string; message: string } | undefined;
    lines.push(`✘ ${err?.message ?? 'the run was broken off because the node is stopping'} [${err?.code ?? 'JOB_INTERRUPTED'}]`);
  } else {
    lines.push(`✘ the job failed: ${((result.attempts as Array<{ provider: string; outcome: string; detail?: string }> | undefined) ?? []).map((a) => `${names(a.provider)} ${a.outcome}${a.detail ? ` (${a.detail})` : ''}`).join('; ') || 'no attempt could be made before the deadline'}`);
  }
  // the explanation's lines are escaped (as the CLI always printed them); the rest as before: the caller escapes them
  return lines;
}
