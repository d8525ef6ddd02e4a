/**
 * One buyer event of a run as a sentence, as a job's page and the Run page narrate it (ui/views/jobs.tsx Narration):
 * what `c0mpute run` prints (src/cli/render.ts), shorter; what other nodes wrote in it escaped as the CLI does. Free
 * of the DOM: the unit tests run it.
 */
import { looksLikeDid, shortDid } from '../src/util/did-text.js';
import { printable } from '../src/util/text.js';
import { windowEndText } from '../src/util/window-end.js';
import { verdictWord } from '../src/util/acceptance-text.js';
import { denyFigures } from '../src/util/deny-text.js';
import { fmtDuration, plural } from './format.js';
import { joulesText } from '../src/util/joules.js';

type Ev = Record<string, unknown> & { e: string };

const peer = (v: unknown): string => printable(String(v ?? ''));

/** One buyer event as a sentence (what `c0mpute run` prints, shorter); what other nodes wrote in it escaped as the CLI does (`peer`). */
export function narrate(e: Ev): string {
  const s = peer;
  const did = (v: unknown) => (looksLikeDid(v) ? shortDid(v) : s(v));
  switch (e.e) {
    case 'job':
      return `job ${s((e.job as { address?: string })?.address).slice(7, 19)}… announced`;
    case 'queued': {
      // the reason and any others, as `c0mpute run` prints them
      const also = Array.isArray(e.reasons) && e.reasons.length > 1 ? ` (also ${e.reasons.slice(1).map(s).join(', ')})` : '';
      return `the steward queued the claim: ${s(e.reason)}${also}; waiting for capacity`;
    }
    case 'admission':
      return admissionText(e.admission as Admission | undefined);
    case 'offer':
      return `offer ${s(e.count)} from ${did((e.offer as { signer?: string })?.signer)}`;
    case 'collected':
      return `collected ${typeof e.offers === 'number' ? plural(e.offers, 'offer') : `${s(e.offers)} offers`} in ${fmtDuration(Number(e.waitedMs))}${windowEndText(e.ended)}`;
    case 'decision': {
      // nothing is decided when no provider is eligible (QA qaCon F3: "decided by policy balanced" over no offers)
      const ok = (e.decision as { result?: { ok?: boolean } } | undefined)?.result?.ok;
      return ok === false ? 'no provider is eligible: nothing to decide' : `decided by policy ${s(e.policy)}`;
    }
    case 'selection':
      return `selected ${did((e.winner as { provider?: string })?.provider)} (attempt ${s(e.attempt)})`;
    case 'accepted':
      return `${did(e.provider)} accepted the job`;
    case 'progress':
      return `${did(e.provider)}: ${s(e.message)}${typeof e.permille === 'number' ? ` (${(Number(e.permille) / 10).toFixed(0)}%)` : ''}`;
    case 'receipt':
      return `receipt: ${s((e.receipt as { record?: { status?: string } })?.record?.status)}`;
    case 'verified':
      return `output ${e.ok ? 'verified' : 'did not verify'}: ${s(e.detail)}`;
    case 'acceptance':
      return `countersigned: ${s(verdictWord((e.acceptance as { record?: { verdict?: string } })?.record?.verdict, e.receiptStatus))}`;
    case 'failover':
      return `failover from ${did(e.from)}: ${s(e.reason)}`;
    case 'nondelivery':
      return `non-delivery by ${did(e.provider)}: ${s(e.reason)}`;
    case 'network':
      return `network: ${s(e.state)} ${s(e.reason)}`;
    case 'done':
      return 'run ended';
    default:
      return s(e.e);
  }
}

interface Admission {
  verdict?: string;
  reason?: string;
  reasons?: string[];
  reserved?: { uj: number; grade: string };
  borrowed_uj?: number;
  basis?: unknown;
}

/**
 * The steward's admission as `c0mpute run` words it (src/cli/render.ts): admitted with the energy reserved, or denied
 * (a queued claim left to expire) with the reason and any others. QA (session 49): the page printed the verdict alone,
 * "steward's admission: Deny", where the CLI says "✘ the steward denied: UNOBSERVED_EXCEEDS_GUARANTEE".
 */
export function admissionText(a: Admission | undefined): string {
  const s = (v: unknown) => printable(String(v ?? ''));
  if (!a) return "the steward's admission";
  // in joules, as every other energy on the console (src/util/joules.ts; QA qaCon F8: "1000000 µJ reserved")
  const j = (uj: unknown) => (typeof uj === 'number' ? joulesText(uj) : `${s(uj)} µJ`);
  if (a.verdict === 'Admit') return `admitted by the steward${a.reserved ? `: ${j(a.reserved.uj)} reserved (${s(a.reserved.grade)})` : ''}${a.borrowed_uj ? `, ${j(a.borrowed_uj)} borrowed` : ''}`;
  const others = a.reasons && a.reasons.length > 1 ? ` (${a.reasons.map(s).join(', ')})` : '';
  const what = a.verdict === 'Deny' ? 'denied' : a.verdict === 'Queue' ? 'queued the claim' : 'let the queued claim expire';
  // a Deny's figures, as the CLI prints them (src/util/deny-text.ts; numbers only, checked)
  return `✘ the steward ${what}: ${s(a.reason ?? '?')}${others}${denyFigures(a)}`;
}

/**
 * Where a run in progress stands, in words (the Jobs view's "Running now"), from its latest events: "collecting
 * offers", "running on uk62pUeG…RJ6t", "waiting for the receipt"… Never a verdict word: QA qaCon F5 read the raw event
 * name "✓ accepted" (the provider took the work), in green, beside the Acceptance column's verdicts.
 */
export function runningPhrase(events: ReadonlyArray<Ev>): string {
  const last = events.at(-1);
  if (!last) return 'starting';
  const did = (v: unknown) => (looksLikeDid(v) ? shortDid(v) : peer(v));
  // the provider the run is with: the latest selection's winner, or the latest event naming one
  const withWhom = [...events].reverse().map((e) => (e.e === 'selection' ? (e.winner as { provider?: unknown } | undefined)?.provider : e.e === 'accepted' || e.e === 'progress' ? e.provider : undefined)).find((p) => p !== undefined);
  const who = withWhom === undefined ? 'the provider' : did(withWhom);
  switch (last.e) {
    case 'job':
    case 'offer':
      return 'collecting offers';
    case 'admission':
    case 'queued':
      return last.e === 'queued' ? 'queued at the steward, waiting for capacity' : 'admitted by the steward; collecting offers';
    case 'collected':
    case 'decision':
      return 'choosing a provider';
    case 'selection':
      return `selected ${who}; sending it the job`;
    case 'accepted':
    case 'progress':
      return `running on ${who}`;
    case 'receipt':
    case 'verified':
      return `checking ${who}’s receipt and output`;
    case 'acceptance':
      return 'countersigning the receipt';
    case 'failover':
    case 'nondelivery':
      return `${did(last.e === 'failover' ? last.from : last.provider)} did not deliver; moving on`;
    case 'network':
      return `network: ${peer(last.state)}`;
    case 'done':
      return 'ending';
    default:
      return peer(last.e);
  }
}
