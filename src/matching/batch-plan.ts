/**
 * The batch planner (spec/matching-and-leases.md, "The batch plan"; issue #12
 * "Batch plans"; docs/matching.md "Batch plans"). Pure: no I/O, no clock reads
 * (`now` is injected), exact decimals. Given a batch (per workload a line
 * count, summed units and a window) and the live providers, it says how many
 * lines each provider takes at its ask, or refuses the whole batch with the
 * shortfall per workload before anything is signed.
 *
 *   advertised(p, w) = p.freeSlots × ⌊windowMs / lineMs(w)⌋
 *   capacity(p, w)   = ⌊reputation(p) × min(advertised(p, w), ceiling)⌋
 *   share(p, w)      = max(0, capacity − held(p) − designated(p) − lines p took for earlier workloads of this batch)
 *
 * A provider's ask is the cheapest of its advert's prices for the workload in
 * the batch's currency and a unit the batch states (cheapestAsk, the rule askFor
 * applies to one order). Providers are filled cheapest first (the cost of one
 * line at that ask); equal prices take turns, one line at a time, in DID order.
 */
import { Decimal } from 'decimal.js';
import { C0Error } from '../errors.js';
import type { Money } from '../records/money.js';
import type { Requirements } from '../records/kinds.js';
import { tierSatisfies } from '../market/eligibility.js';
import { MIB, cheapestAsk } from './candidates.js';
import type { LiveProvider } from './types.js';
import { BATCH_PROVIDER_CEILING } from './batch-limits.js';

export { BATCH_CEILING_MAX, BATCH_PROVIDER_CEILING } from './batch-limits.js';

/** Money amounts carry at most 30 decimal places (records/money.ts AMOUNT_RE); a non-terminating cost rounds up there. */
const MAX_SCALE = 30;
const D = Decimal.clone({ precision: 200, rounding: Decimal.ROUND_UP });

export interface BatchWorkload {
  workload: string;
  /** How many lines (jobs) of this workload the batch holds. */
  lines: number;
  /** Summed units over all lines, per pricing unit (e.g. `second`, `mib`); `job` is always `lines`. Decimal strings. */
  units: Record<string, string>;
  /** Expected time one line occupies a slot, ms. */
  lineMs: number;
  /**
   * The timeout each line's job carries, ms: the file's `timeout`, else the buyer's default, the line's deadline (the
   * CLI always fills it). A per-second ask bills a line by it; without it a per-second ask is not priced.
   */
  timeoutMs?: number;
  /**
   * The largest input of any line, bytes (`batch run` reads it from the lines' inputs). A per-MiB ask bills each line
   * by its own input, so the planner prices every line as this one; without it, as the summed `units.mib` ÷ lines.
   */
  lineInputBytes?: number;
  /** The most one line may cost (as a job file's maxPrice); its currency is the workload's. */
  maxPrice: Money;
  requirements?: Requirements;
}

export interface Batch {
  windowMs: number;
  workloads: BatchWorkload[];
}

export interface PlanInputs {
  batch: Batch;
  live: readonly LiveProvider[];
  now: number;
  /** The provider's reputation score, 0..1 (the node's reputation view). */
  reputation: (did: string) => number;
  /** Per-provider ceiling on lines (default BATCH_PROVIDER_CEILING). */
  ceiling?: number;
  /** Jobs the provider holds now (default 0). */
  held?: (did: string) => number;
  /** Open orders already designated to the provider (default 0). */
  designated?: (did: string) => number;
  /** The eligibility gate per (provider, workload) (default: everyone passes). */
  eligible?: (p: LiveProvider, w: BatchWorkload) => boolean;
}

export interface PlanAssignment {
  workload: string;
  provider: string;
  lines: number;
  /** The provider's ask: its advertised price per unit. */
  ask: Money;
  unit: string;
  /** What these lines cost at that ask (exact; rounded up at the 30th decimal only when the division does not terminate). */
  cost: Money;
}

export interface BatchPlan {
  plannedAt: number;
  windowMs: number;
  /** In workload order, then cheapest first, then DID order. */
  assignments: PlanAssignment[];
  /** Per provider (DID order): lines and cost per currency. */
  providers: Array<{ provider: string; lines: number; cost: Money[] }>;
  /** Total cost per currency (currency order). */
  totals: Money[];
  lines: number;
}

/** A workload every live provider serving it (and passing its gate) prices above its maxPrice a line. */
export interface PricedOut {
  workload: string;
  maxPrice: Money;
  /** The cheapest ask for one line among them, and the unit it bills in. */
  cheapest: Money;
  unit?: string;
  /** The seconds a per-second ask bills a line for (lineSeconds: its timeout), when the workload gives it. */
  lineSeconds?: number;
  /** The MiB a per-MiB ask bills a line for at most (lineUnits), when the workload gives its inputs' size. */
  lineMib?: number;
}

export interface Shortfall {
  workload: string;
  lines: number;
  planned: number;
  shortfall: number;
  /**
   * Why, when it is not capacity: no live provider serves the workload (`no-provider`), none serving it prices it
   * in the batch's currency (`no-currency`), none in a unit a line can be billed in (`no-unit`: per second with no
   * timeout said), or none serving it passes its requirements (`no-eligible`).
   */
  reason?: 'no-provider' | 'no-currency' | 'no-unit' | 'no-eligible';
}

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * The whole seconds a per-second ask bills one line of `w` for — what the claimer and the probe count from the timeout
 * the line's order carries (unitsOf: the timeout in seconds rounded up, at least 1): the workload's `timeoutMs`;
 * undefined without it (a per-second ask is then not priced). Never the summed `units.second` ÷ lines: that is an
 * estimate of how long a line runs (its `lineMs`), and a line's timeout is a hard limit, so an average there killed
 * every line that ran longer than it.
 */
export function lineSeconds(w: BatchWorkload): number | undefined {
  return w.timeoutMs === undefined ? undefined : Math.max(1, Math.ceil(w.timeoutMs / 1000));
}

/**
 * The units an ask in `unit` bills one line of `w` for — at most, for a per-MiB ask — as the claimer and the probe
 * count them from the line's order (candidates.ts unitsOf): `job` 1; `second` lineSeconds; `mib` the largest line's
 * input (`lineInputBytes`), else the summed `units.mib` ÷ lines, in whole MiB rounded up, at least 1. Undefined when
 * the workload does not say (the ask is then not priced) and for every other unit: the claimer cannot count it, so a
 * provider asking only in it would never claim a line.
 */
export function lineUnits(w: BatchWorkload, unit: string): number | undefined {
  if (unit === 'job') return 1;
  if (unit === 'second') return lineSeconds(w);
  if (unit === 'mib') {
    if (w.lineInputBytes !== undefined) return Math.max(1, Math.ceil(w.lineInputBytes / MIB));
    const mib = w.units.mib;
    return mib === undefined ? undefined : Math.max(1, new D(mib).div(w.lines).ceil().toNumber());
  }
  return undefined;
}

/**
 * Plan a batch, or throw BATCH_MAX_PRICE_BELOW_ASK (a workload that every live provider serving it asks more than its
 * maxPrice a line for: detail.priced) or BATCH_EXCEEDS_CAPACITY (detail.shortfall per workload).
 */
export function planBatch(inp: PlanInputs): BatchPlan {
  const { batch, now } = inp;
  const ceiling = inp.ceiling ?? BATCH_PROVIDER_CEILING;
  const live = [...inp.live].filter((p) => p.liveUntil > now).sort((a, b) => cmp(a.did, b.did));
  // The same DID twice (should not happen): keep the one live longest, deterministically.
  const byDid = new Map<string, LiveProvider>();
  for (const p of live) {
    const q = byDid.get(p.did);
    if (!q || p.liveUntil > q.liveUntil || (p.liveUntil === q.liveUntil && cmp(p.presence.address, q.presence.address) < 0)) byDid.set(p.did, p);
  }
  const providers = [...byDid.values()];
  const taken = new Map<string, number>();
  const assignments: PlanAssignment[] = [];
  const shortfalls: Shortfall[] = [];
  const priced: PricedOut[] = [];

  for (const w of batch.workloads) {
    const perSlot = Math.floor(batch.windowMs / w.lineMs);
    const currency = w.maxPrice.currency;
    const lines = new D(w.lines);
    const maxTotal = new D(w.maxPrice.amount).times(lines);
    const perLineSeconds = lineSeconds(w);
    const perLineMib = lineUnits(w, 'mib');
    // providers that serve the workload and pass the gate: how many ask at most maxPrice a line, and the cheapest above
    let withinPrice = 0;
    let cheapestAbove: Decimal | undefined;
    let cheapestAboveUnit: string | undefined;
    // how far the live providers got, for a shortfall that is not capacity: serving it, pricing it here, eligible
    let serving = 0;
    let inCurrency = 0;
    let priceable = 0;
    let eligible = 0;
    // Candidates: eligible, priced in the workload's currency, under maxPrice, with a share left.
    const cands: Array<{ p: LiveProvider; key: Decimal; ask: Money; unit: string; qty: Decimal; share: number }> = [];
    for (const p of providers) {
      if (!p.workloads.includes(w.workload)) continue;
      serving++;
      // Its ask as askFor picks one for an order (cheapestAsk): of its prices for the workload in the batch's
      // currency and in a unit a line can be billed in (lineUnits; an entry in another unit cannot be costed), the
      // cheapest here.
      const pick = cheapestAsk(
        p.advert.record.prices ?? [],
        w.workload,
        currency,
        (pe) => {
          // billed per line as its order's claim will be: lines × the units one line is billed for
          const per = lineUnits(w, pe.unit);
          if (per === undefined) return undefined;
          const qty = lines.times(per);
          return { qty, key: new D(pe.price.amount).times(qty) }; // key: cost of all lines; per line = key / lines
        },
        (a, b) => a.key.lt(b.key),
      );
      if ((p.advert.record.prices ?? []).some((pe) => pe.workload === w.workload && pe.price.currency === currency)) inCurrency++;
      if (!pick) continue;
      priceable++;
      if (inp.eligible && !inp.eligible(p, w)) continue;
      eligible++;
      if (pick.cost.key.gt(maxTotal)) {
        if (!cheapestAbove || pick.cost.key.lt(cheapestAbove)) {
          cheapestAbove = pick.cost.key;
          cheapestAboveUnit = pick.entry.unit;
        }
        continue;
      }
      withinPrice++;
      const pe = pick.entry;
      const { qty, key } = pick.cost;
      const rep = Decimal.min(1, Decimal.max(0, new D(inp.reputation(p.did))));
      const advertised = Math.max(0, p.freeSlots) * Math.max(0, perSlot);
      const capacity = rep.times(Math.min(advertised, ceiling)).floor().toNumber();
      const share = Math.max(0, capacity - (inp.held?.(p.did) ?? 0) - (inp.designated?.(p.did) ?? 0) - (taken.get(p.did) ?? 0));
      if (share > 0) cands.push({ p, key, ask: pe.price, unit: pe.unit, qty, share });
    }
    cands.sort((a, b) => a.key.cmp(b.key) || cmp(a.p.did, b.p.did));
    let left = w.lines;
    const got = new Map<string, number>();
    for (let i = 0; i < cands.length && left > 0; ) {
      let j = i;
      while (j < cands.length && cands[j]!.key.eq(cands[i]!.key)) j++;
      // Equal prices take turns: one line each per round, DID order, until the group or the workload is exhausted.
      let active = cands.slice(i, j).map((c) => ({ c, rest: c.share }));
      while (left > 0 && active.length) {
        const m = Math.min(...active.map((a) => a.rest));
        const full = Math.min(m, Math.floor(left / active.length));
        if (full > 0) {
          for (const a of active) {
            a.rest -= full;
            got.set(a.c.p.did, (got.get(a.c.p.did) ?? 0) + full);
          }
          left -= full * active.length;
        } else {
          // A partial round: the first `left` in DID order take one more line each.
          for (const a of active.slice(0, left)) {
            a.rest -= 1;
            got.set(a.c.p.did, (got.get(a.c.p.did) ?? 0) + 1);
          }
          left = 0;
        }
        active = active.filter((a) => a.rest > 0);
      }
      i = j;
    }
    for (const c of cands) {
      const n = got.get(c.p.did);
      if (!n) continue;
      taken.set(c.p.did, (taken.get(c.p.did) ?? 0) + n);
      const cost = new D(c.ask.amount).times(c.qty).times(n).div(lines);
      assignments.push({ workload: w.workload, provider: c.p.did, lines: n, ask: c.ask, unit: c.unit, cost: { amount: amount(cost), currency } });
    }
    if (left > 0) {
      const reason = serving === 0 ? 'no-provider' : inCurrency === 0 ? 'no-currency' : priceable === 0 ? 'no-unit' : eligible === 0 ? 'no-eligible' : undefined;
      shortfalls.push({ workload: w.workload, lines: w.lines, planned: w.lines - left, shortfall: left, ...(reason ? { reason } : {}) });
    }
    // the units a line is billed for only when the cheapest ask bills by them: "(120 s)" beside a per-job ask read as
    // per-second billing that does not exist (QA pass on matching, session 49)
    if (withinPrice === 0 && cheapestAbove) {
      priced.push({
        workload: w.workload,
        maxPrice: w.maxPrice,
        cheapest: { amount: amount(cheapestAbove.div(lines)), currency },
        ...(cheapestAboveUnit ? { unit: cheapestAboveUnit } : {}),
        ...(perLineSeconds === undefined || cheapestAboveUnit !== 'second' ? {} : { lineSeconds: perLineSeconds }),
        ...(perLineMib === undefined || cheapestAboveUnit !== 'mib' ? {} : { lineMib: perLineMib }),
      });
    }
  }

  if (priced.length) {
    const said = priced.map((x) => `${x.workload}: the cheapest asks ${x.cheapest.amount} ${x.cheapest.currency} a line${x.lineSeconds === undefined && x.lineMib === undefined ? '' : ` (${[x.lineSeconds === undefined ? '' : `${x.lineSeconds} s`, x.lineMib === undefined ? '' : `${x.lineMib} MiB`].filter(Boolean).join(', ')})`}, above maxPrice ${x.maxPrice.amount} ${x.maxPrice.currency}`).join('; ');
    throw new C0Error('BATCH_MAX_PRICE_BELOW_ASK', `no live provider would claim a line at its maxPrice (${said})`, { field: 'maxPrice', detail: { priced, shortfall: shortfalls } });
  }
  // A workload no live provider can take at all is not a matter of capacity: said so, with why (QA pass on matching,
  // session 49: a batch in EUR, or of a workload nobody serves, was told "a longer window … take more")
  const none = shortfalls.filter((x) => x.reason !== undefined);
  if (none.length) {
    const why = (x: Shortfall) =>
      x.reason === 'no-provider'
        ? 'no live provider serves it'
        : x.reason === 'no-currency'
          ? `no live provider serving it prices it in ${batch.workloads.find((w) => w.workload === x.workload)!.maxPrice.currency} (prices are never converted)`
          : x.reason === 'no-unit'
            ? 'no live provider serving it prices it in a unit a line can be billed in (per second needs the lines’ timeout)'
            : 'no live provider serving it meets its requirements';
    throw new C0Error('BATCH_NO_PROVIDER', `no live provider can take ${none.map((x) => `${x.workload} (${why(x)})`).join('; ')}: \`c0mpute market probe\` names each provider's reason`, { field: 'workloads', detail: { shortfall: shortfalls } });
  }
  if (shortfalls.length) {
    const said = shortfalls.map((s) => `${s.workload}: ${s.shortfall} of ${s.lines} lines unplaced`).join('; ');
    // a line as long as the window (no lineTime given, or one that long) holds its slot for the whole window: a longer
    // window takes no more then (QA s49); a lineTime longer than the window is refused before (parseBatch). Not "has no
    // lineTime": the planner cannot tell a lineTime given as long as the window from none (QA qaMatch F4)
    const whole = shortfalls.filter((x) => batch.workloads.find((w) => w.workload === x.workload)!.lineMs >= batch.windowMs).map((x) => x.workload);
    const more = whole.length ? `; each line of ${whole.join(', ')} holds its slot for the whole window (no lineTime given, or one as long as the window), so a longer window takes no more: give lineTime (how long a line runs), and a slot takes window ÷ lineTime lines` : '; a longer window, or providers with a record here, take more';
    // the rule, said: an operator with three free slots and three lines read "2 of 3 unplaced" without the reputation
    // that scales each provider's share (QA pass, session 48)
    throw new C0Error('BATCH_EXCEEDS_CAPACITY', `the live network cannot take this batch in its window (${said}): a provider takes at most its reputation × its free slots × the lines that fit in the window (at most ${ceiling}), less what it holds already${more}`, { detail: { shortfall: shortfalls } });
  }

  const perProvider = new Map<string, { lines: number; cost: Map<string, Decimal> }>();
  const totals = new Map<string, Decimal>();
  for (const a of assignments) {
    const e = perProvider.get(a.provider) ?? { lines: 0, cost: new Map<string, Decimal>() };
    e.lines += a.lines;
    e.cost.set(a.cost.currency, (e.cost.get(a.cost.currency) ?? new D(0)).plus(a.cost.amount));
    perProvider.set(a.provider, e);
    totals.set(a.cost.currency, (totals.get(a.cost.currency) ?? new D(0)).plus(a.cost.amount));
  }
  const moneyList = (m: Map<string, Decimal>): Money[] => [...m.entries()].sort((a, b) => cmp(a[0], b[0])).map(([currency, v]) => ({ amount: amount(v), currency }));
  return {
    plannedAt: now,
    windowMs: batch.windowMs,
    assignments,
    providers: [...perProvider.entries()].sort((a, b) => cmp(a[0], b[0])).map(([provider, e]) => ({ provider, lines: e.lines, cost: moneyList(e.cost) })),
    totals: moneyList(totals),
    lines: assignments.reduce((s, a) => s + a.lines, 0),
  };
}

/** A decimal as a record amount: plain notation, no trailing zeros, at most 30 places (rounded up). */
function amount(v: Decimal): string {
  const r = v.decimalPlaces() > MAX_SCALE ? v.toDecimalPlaces(MAX_SCALE, Decimal.ROUND_UP) : v;
  return r.toFixed();
}

/**
 * The default eligibility gate for a batch line: the provider's advert meets
 * the workload's requirements (tier, region, allowlist, CPU, memory, GPUs),
 * as the auction's eligibility checks read them.
 */
export function meetsRequirements(p: LiveProvider, w: BatchWorkload): boolean {
  const r = w.requirements;
  if (!r) return true;
  const a = p.advert.record;
  if (r.tier && !tierSatisfies(a.tier, r.tier)) return false;
  if (r.regions?.length && (!a.region || !r.regions.includes(a.region))) return false;
  if (r.allowlist?.length && !r.allowlist.includes(p.did)) return false;
  if (r.cpuCores !== undefined && a.hardware.cpuCores < r.cpuCores) return false;
  if (r.memoryMiB !== undefined && a.hardware.memoryMiB < r.memoryMiB) return false;
  if (r.gpu) {
    const g = r.gpu;
    const fit = (a.hardware.gpus ?? []).filter((x) => x.vramMiB >= g.vramMiB && (g.features ?? []).every((f) => (x.features ?? []).includes(f)));
    if (fit.reduce((s, x) => s + x.count, 0) < g.count) return false;
  }
  return true;
}
