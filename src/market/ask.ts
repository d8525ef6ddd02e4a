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
import type { Money } from '../records/money.js';
import { askFor, askWithin, cachedScale, orderFromJob } from '../matching/candidates.js';
import { REASON, type Failure } from './eligibility.js';

/** The ask's failure for one advert: ASK_CURRENCY_MISMATCH or ASK_ABOVE_PRICE, else undefined. */
export type AskJudge = (advert: Advert) => Failure | undefined;

/** An ask judge for a job (its order built once, exact costs kept: a market's providers share prices). */
export function askJudge(job: Job): AskJudge {
  const order = orderFromJob(job);
  const scale = cachedScale();
  return (advert) => {
    const a = askWithin(advert, order, scale);
    if (a.ok) return undefined;
    const r = a.reason;
    if (r.code !== REASON.ASK_ABOVE_PRICE && r.code !== REASON.ASK_CURRENCY_MISMATCH) return undefined;
    return { gate: 'offer', code: r.code, field: r.field, wanted: r.wanted, offered: r.offered, message: r.message };
  };
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
