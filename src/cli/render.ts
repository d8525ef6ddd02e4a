/** Human rendering of buyer events and results (shared by `run` and the devnet). */
import type { WireEvent, WireRecord } from '../node/events.js';
import { out } from './context.js';
import { DEFAULT_LIST_LIMIT, moreProviders, num, pickShown } from './summary.js';
import { short, shortAddr } from './short.js';
import { plural, printable } from '../util/text.js';
import { FIRST_CLAIM_POLICY } from '../records/kinds.js';
import { windowEndText } from '../util/window-end.js';
import { verdictLine } from '../util/verdict-text.js';
import { verdictWord } from '../util/acceptance-text.js';
import { explanationLines } from '../util/run-failure.js';
import { denyFigures } from '../util/deny-text.js';

// Light, for commands that print names without rendering events.
export { short, shortAddr };

/** How much a narration lists: `limit` entries of each long list (providers, ranking, offers), the rest summarised. */
export interface RenderOptions {
  limit?: number;
}

type Rec<T> = WireRecord & { record: T };
interface Ranked {
  rank: number;
  provider: string;
  offer: string;
  price: { amount: string; currency: string };
  durationMs: number;
  tier: string;
  scores: { price: number; speed: number; reputation: number; trust: number };
  total: number;
}
interface Failure {
  code: string;
  message: string;
}
interface Verdict {
  provider: string;
  eligible: boolean;
  failures: Failure[];
}
interface Explanation {
  summary: string;
  relaxations: Array<{ text: string }>;
  providers: Verdict[];
  expired: string[];
}

export function renderEvent(ev: WireEvent, names: (did: string) => string = short, write: (s: string) => void = out, opts: RenderOptions = {}): void {
  const limit = opts.limit ?? DEFAULT_LIST_LIMIT;
  // an event's text is largely other nodes' (failure messages, progress, reasons): one line each, controls escaped
  const print = (s: string) => write(printable(s));
  switch (ev.e) {
    case 'job': {
      const j = ev.job as Rec<{ workload: string; maxPrice: { amount: string; currency: string }; deadline: number; announcedAt: number }>;
      print(`▸ job ${j.address} published: ${j.record.workload}, max ${j.record.maxPrice.amount} ${j.record.maxPrice.currency}, deadline in ${Math.round((j.record.deadline - j.record.announcedAt) / 1000)}s`);
      break;
    }
    case 'offer': {
      const o = ev.offer as Rec<{ price: { amount: string; currency: string }; durationMs: number }>;
      const held = Number(ev.count);
      if (held > limit) {
        if (held === limit + 1) print(`  … more offers arriving (the first ${limit} are listed; the total follows when collection ends)`);
        break;
      }
      print(`  offer from ${names(o.signer)}: ${o.record.price.amount} ${o.record.price.currency}, ~${o.record.durationMs} ms  (${String(ev.count)} held)`);
      break;
    }
    case 'order': {
      const bid = ev.bid as { amount: string; currency: string };
      // whom it takes (docs/matching.md "Whom an order takes"): the floor on this node's reputation view of a claimant
      const takes = [ev.recordOnly === 'yes' ? 'with a record above a stranger’s' : '', typeof ev.minReputation === 'number' ? `scoring at least ${ev.minReputation}` : ''].filter(Boolean).join(' and ');
      print(`▸ order posted: ${ev.designated ? `designated to ${names(ev.designated as string)}` : 'open bid'} at ${bid.amount} ${bid.currency}; the first valid claim wins${takes ? ` (from a provider ${takes} in this node’s reputation view)` : ''}`);
      break;
    }
    case 'order-check': {
      const raise = ev.raiseTo as { amount: string; currency: string } | undefined;
      print(`⚠ no live provider can claim this order now: ${String(ev.summary).replace(/\.$/, '')}${raise ? `; raise maxPrice to ${raise.amount} ${raise.currency} for one to claim it` : ''}. It is posted anyway and waits for a claim until its deadline (Ctrl-C withdraws it)`);
      break;
    }
    case 'claim':
      if (ev.verdict === 'won') print(`  claim from ${names(ev.provider as string)} (arrival ${String(ev.seq)}): first valid claim, taken`);
      else print(`  claim from ${ev.provider ? names(ev.provider as string) : '(unreadable)'} (arrival ${String(ev.seq)}) refused ${String(ev.code)}${ev.refusal ? ` (signed ${shortAddr(ev.refusal as string)})` : ''}`);
      break;
    case 'queued':
      print(`▸ the steward queued the claim: ${String(ev.reason)}${(ev.reasons as string[]).length > 1 ? ` (also ${(ev.reasons as string[]).slice(1).join(', ')})` : ''}; waiting for capacity`);
      break;
    case 'admission-wait':
      print(`▸ the steward takes no new claim from this buyer for now (${String(ev.code)}: too many of its claims were withdrawn without running lately); asking again in ${Math.ceil(Number(ev.waitMs) / 1000)} s, while the job's deadline allows`);
      break;
    case 'admission': {
      const a = ev.admission as { verdict: string; reason?: string; reserved?: { uj: number; grade: string }; borrowed_uj?: number; basis?: unknown };
      if (a.verdict === 'Admit') print(`▸ admitted by the steward: ${a.reserved?.uj} µJ reserved (${a.reserved?.grade})${a.borrowed_uj ? `, ${a.borrowed_uj} µJ borrowed` : ''}`);
      else print(`✘ the steward ${a.verdict === 'Deny' ? 'denied' : 'let the queued claim expire'}: ${a.reason ?? '?'}${denyFigures(a)}`);
      break;
    }
    case 'collected':
      print(`▸ collected ${plural(Number(ev.offers), 'offer')} in ${String(ev.waitedMs)} ms${windowEndText(ev.ended)}`);
      break;
    case 'decision': {
      const d = ev.decision as { result: { ok: boolean; ranked: Ranked[]; why?: string; ineligible: Verdict[]; explanation?: Explanation }; market?: Explanation };
      const r = d.result;
      print(`▸ eligibility of every known provider (policy ${String(ev.policy)}):`);
      const verdicts = d.market?.providers ?? [...r.ranked.map((c) => ({ provider: c.provider, eligible: true, failures: [] })), ...r.ineligible];
      const { shown, hidden } = pickShown(verdicts, limit);
      // each reason with its code, as `market probe` and `market explain` name them (ASK_ABOVE_PRICE, OFFER_MISSING, …)
      for (const v of shown) print(`  ${verdictLine(v, names)}`);
      if (hidden.length) print(`  ${moreProviders(hidden)}`);
      if (d.market && !r.ok) print(`  ${d.market.summary}`);
      if (r.ok) {
        print('▸ ranking:');
        print('  rank  provider            price          duration  price  speed  reput  trust  total');
        for (const c of r.ranked.slice(0, limit)) {
          print(
            `  ${String(c.rank).padEnd(4)}  ${names(c.provider).padEnd(18)}  ${`${c.price.amount} ${c.price.currency}`.padEnd(13)}  ${`${c.durationMs}ms`.padEnd(8)}  ${c.scores.price.toFixed(3)}  ${c.scores.speed.toFixed(3)}  ${c.scores.reputation.toFixed(3)}  ${c.scores.trust.toFixed(3)}  ${c.total.toFixed(3)}`,
          );
        }
        if (r.ranked.length > limit) print(`  … and ${num(r.ranked.length - limit)} more ranked (--all lists every one)`);
        print(`  why: ${r.why}`);
      } else if (r.explanation) renderExplanation(r.explanation, names, print, opts);
      break;
    }
    case 'selection': {
      const s = ev.selection as Rec<{ policy?: string; considered: unknown[]; arrivals?: unknown[] }>;
      const w = ev.winner as { provider: string };
      // an order's selection considers claims, every one it lists in `arrivals` (QA qaOrd F6: "1 offer considered")
      const claims = s.record.policy === FIRST_CLAIM_POLICY;
      const n = claims ? (s.record.arrivals ?? s.record.considered).length : s.record.considered.length;
      print(`▸ selection ${shortAddr(s.address)} signed (attempt ${String(ev.attempt)}): winner ${names(w.provider)}, ${plural(n, claims ? 'claim' : 'offer')} considered`);
      break;
    }
    case 'accepted':
      print(`▸ ${names(ev.provider as string)} accepted the work`);
      break;
    case 'progress':
      print(`  progress ${ev.permille === undefined ? '' : `${((ev.permille as number) / 10).toFixed(0)}% `}${String(ev.message)}`);
      break;
    case 'receipt': {
      const r = ev.receipt as Rec<{ status: string; startedAt: number; completedAt: number; energy: { uj: number; grade: string }; outputHash?: string; failure?: Failure }>;
      print(
        `▸ receipt ${shortAddr(r.address)}: ${r.record.status}${r.record.failure ? ` (${r.record.failure.code})` : ''}, ${r.record.completedAt - r.record.startedAt} ms, energy ${r.record.energy.uj} µJ (${r.record.energy.grade})`,
      );
      break;
    }
    case 'verified':
      print(`▸ ${ev.ok ? 'verified' : 'NOT verified'}: ${String(ev.detail)}`);
      break;
    case 'acceptance': {
      const a = ev.acceptance as Rec<{ verdict: string; reason?: string }>;
      print(`▸ countersigned ${verdictWord(a.record.verdict, ev.receiptStatus)}${a.record.reason ? ` (${a.record.reason})` : ''}: ${shortAddr(a.address)}`);
      break;
    }
    case 'failover':
      print(`▸ ${names(ev.from as string)} did not deliver (${String(ev.reason)}); moving to the runner-up`);
      break;
    case 'nondelivery':
      print(`▸ non-delivery by ${names(ev.provider as string)} (${String(ev.reason)}) signed: ${shortAddr(ev.address as string)}`);
      break;
    case 'network':
      print(`⚠ ${String(ev.message)} [${String(ev.code)}]`);
      break;
    case 'interrupted':
      print(`✘ ${String(ev.message)} [${String(ev.code)}]`);
      break;
    default:
      break;
  }
}

export function renderExplanation(x: Explanation, names: (did: string) => string = short, write: (s: string) => void = out, opts: RenderOptions = {}): void {
  // worded once, for the console's Run page too (src/util/run-failure.ts)
  for (const l of explanationLines(x, names, opts.limit ?? DEFAULT_LIST_LIMIT)) write(l);
}
