/**
 * A provider's ask for a job, for the explanation of a provider that has not
 * quoted (docs/market.md §2): the probe's rule (src/matching/candidates.ts
 * askWithin), so `run`, `market explain` and `market probe` give one reason.
 *
 * A provider does not quote a job priced in another currency or above the
 * job's maxPrice (src/roles/provider/provider.ts), so saying it "has not
 * quoted" hides the binding constraint: such a provider is reported with the
 * ask's reason (ASK_CURRENCY_MISMATCH, ASK_ABOVE_PRICE) and counts under
 * currency or price. An advert that prices the job in no unit the job counts,
 * or not at all, says nothing either way: the provider may still quote.
 */
import type { Advert, Job } from '../records/kinds.js';
import { wholeUnitsWithin, type Money } from '../records/money.js';
import { aboveMaxPrice, askFor, cachedScale, orderFromJob, type CandidateOrder, type CandidateReason, type PricedAsk } from '../matching/candidates.js';
import { cmpAmount } from './amount.js';
import { REASON, type Failure } from './eligibility.js';

/** The ask's failure for one advert: ASK_CURRENCY_MISMATCH or ASK_ABOVE_PRICE, else undefined. */
export type AskJudge = (advert: Advert) => Failure | undefined;

/** An ask judge for a job (its order built once, exact costs kept: a market's providers share prices). */
export function askJudge(job: Job): AskJudge {
  const order = orderFromJob(job);
  const scale = cachedScale();
  return (advert) => {
    // askWithin's rule, with the ask at hand to say a per-second one as a bound
    const a = askFor(advert, order, scale);
    if (!a.ok) return a.reason.code === REASON.ASK_CURRENCY_MISMATCH ? failure(a.reason) : undefined;
    if (cmpAmount(a.cost.amount, order.maxPrice.amount) <= 0) return undefined;
    const r = aboveMaxPrice(a, order);
    return failure(a.ask.unit === 'second' ? { ...r, message: perSecond(a, order) } : r);
  };
}

/** A candidate reason whose code is one of the explanation's (ASK_ABOVE_PRICE, ASK_CURRENCY_MISMATCH) as a Failure. */
function failure(r: CandidateReason): Failure {
  return { gate: 'offer', code: r.code as Failure['code'], field: r.field, wanted: r.wanted, offered: r.offered, message: r.message };
}

/**
 * A job's ask per second, said as what it is: the whole timeout is the ask's worst case, while a provider quotes its own
 * duration estimate (src/roles/provider/pricing.ts), so the price rules it out only for a run longer than maxPrice buys.
 * "asks 0.001 USD per second: above 0.1 for the job's whole 300 s timeout (0.3); it quotes only for a run it expects to
 * take at most 100 s" (the probe prices an open order at its timeout, which is what a claim is paid: its words stay).
 */
function perSecond(a: PricedAsk, order: CandidateOrder): string {
  const within = wholeUnitsWithin(order.maxPrice.amount, a.ask.price.amount);
  const quotes = within === 0 ? 'even one second costs more' : `it quotes only for a run it expects to take at most ${within} s`;
  return `asks ${a.ask.price.amount} ${a.cost.currency} per second: above ${order.maxPrice.amount} for the job's whole ${a.units} s timeout (${a.cost.amount}); ${quotes}`;
}

/** What the job would cost at the advert's ask, in the job's currency (undefined: no ask the job can count). */
export function askCost(job: Job, advert: Advert): Money | undefined {
  const a = askFor(advert, orderFromJob(job));
  return a.ok ? a.cost : undefined;
}

/**
 * Whether a provider will not quote a job whatever it estimates the job's duration to be (the buyer's "has everyone
 * quoted" check, MarketService.allQuoted): it prices the workload in no unit of the job's currency
 * (ASK_CURRENCY_MISMATCH), or its ask is above maxPrice and every price it has for the workload in that currency is
 * per job or per MiB, units the job alone decides. A per-second ask is costed here at the job's whole timeout, while
 * the provider quotes its own duration estimate, which may fit: such a provider is still waited for. Built once per
 * job (its order and scale), asked per advert.
 */
export function willNotQuote(job: Job): (advert: Advert) => boolean {
  const judge = askJudge(job);
  const cur = job.maxPrice.currency;
  return (advert) => {
    const f = judge(advert);
    if (!f) return false;
    if (f.code === REASON.ASK_CURRENCY_MISMATCH) return true;
    return (advert.prices ?? []).every((p) => p.workload !== job.workload || p.price.currency !== cur || p.unit === 'job' || p.unit === 'mib');
  };
}
