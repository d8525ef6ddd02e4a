/**
 * Relaxation hints for an empty (or thin) market (docs/market.md, "Hints"):
 * what the buyer could change in the job, with the value, and how many more
 * providers would then fit: "raise maxPrice to 0.15 USD → 1 more provider",
 * "accept tier standard → 2 more providers", "ask for ≤ 16 GiB memory and
 * raise maxPrice to 0.2 USD → 1 more provider".
 *
 * Every hint is a concrete change to the job (`change`); its gain is counted
 * by applying the change and running the gates again over the providers it
 * could admit (those failing at most two relaxable constraints and nothing
 * else but not having quoted yet), so a hint never promises what the gates
 * would not give. Off the hot path: only the explanation of a market with no
 * eligible offer computes hints. Pure; `now` injected.
 */
import type { Advert, Job, Offer, Tier } from '../records/kinds.js';
import type { Opened } from '../records/envelope.js';
import type { Money } from '../records/money.js';
import { compareDids } from '../records/did.js';
import { REASON, evaluate, gib, prepareJob, tierSatisfies, type AdvertIndex, type PreparedJob, type ReasonCode } from './eligibility.js';
import { RELAXABLE, constraintOf, type Constraint } from './constraints.js';
import { cmpAmount } from './amount.js';
import { duration, isoTime } from './say.js';
import { askCost, askJudge } from './ask.js';

type Gpu = NonNullable<Job['requirements']['gpu']>;

/** A change to a job's terms. `null` drops a requirement. */
export interface JobChange {
  maxPrice?: Money;
  tier?: Tier | null;
  regions?: string[] | null;
  allowlist?: string[];
  cpuCores?: number;
  memoryMiB?: number;
  gpu?: Gpu | null;
  deadline?: number;
  timeoutMs?: number;
}

export interface Relaxation {
  /** the first of `constraints` (kept for callers that group by one) */
  constraint: Constraint;
  /** the constraints the change relaxes (one, or two for a combined hint) */
  constraints: Constraint[];
  /** the change to the job's terms */
  change: JobChange;
  /** providers that would fit after the change (they fail nothing else, not having quoted aside) */
  gain: number;
  /** of those, how many have a live offer already */
  quoted: number;
  /**
   * Of those without an offer, how many have no live presence (RelaxContext.live; absent when it is not given): an
   * advert and nothing more, which `market probe` lists NOT_LIVE and which may never quote.
   */
  notLive?: number;
  text: string;
}

export interface RelaxContext {
  index: AdvertIndex;
  /** offers by address (the verdicts' offers) */
  offers: ReadonlyMap<string, Opened<Offer>>;
  now: number;
  skewMs: number;
  /** Whether a provider has a live presence now (the node's presence view); absent: not known, not said. */
  live?: (did: string) => boolean;
  /** The offer for the job this node dropped for its dates from a provider (explain.ts MarketInput.dropped). */
  dropped?: (did: string) => { code: string } | undefined;
}

/** The verdict fields hints read. */
interface VerdictLike {
  provider: string;
  advert?: string;
  offer?: string;
  failures: ReadonlyArray<{ code: string }>;
}

/** A job with a change applied (same address: the offers still answer it). */
export function applyChange(job: Job, ch: JobChange): Job {
  const r = { ...job.requirements };
  const set = <K extends keyof typeof r>(k: K, v: (typeof r)[K] | null | undefined) => {
    if (v === undefined) return;
    if (v === null) delete r[k];
    else r[k] = v;
  };
  set('tier', ch.tier);
  set('regions', ch.regions);
  set('allowlist', ch.allowlist);
  set('cpuCores', ch.cpuCores);
  set('memoryMiB', ch.memoryMiB);
  set('gpu', ch.gpu);
  return {
    ...job,
    requirements: r,
    ...(ch.maxPrice ? { maxPrice: ch.maxPrice } : {}),
    ...(ch.deadline !== undefined ? { deadline: ch.deadline } : {}),
    ...(ch.timeoutMs !== undefined ? { timeoutMs: ch.timeoutMs } : {}),
  };
}

const TIER_RANK: Record<Tier, number> = { community: 0, standard: 1, verified: 2, private: 3, enterprise: 4 };
const exactTier = (t: Tier) => t === 'private' || t === 'enterprise';
const sortedUnion = (a: readonly string[] | undefined, b: readonly string[]) => [...new Set([...(a ?? []), ...b])].sort();

/** The weakest GPU requirement (of the job's, relaxed) that this advert meets; null: it has no GPU. */
function gpuNeed(want: Gpu, a: Advert): Gpu | null {
  const gpus = a.hardware.gpus ?? [];
  if (gpus.length === 0) return null;
  let best: Gpu | undefined;
  for (const c of gpus) {
    const features = (want.features ?? []).filter((f) => c.features?.includes(f));
    const vramMiB = Math.min(want.vramMiB, c.vramMiB);
    let cards = 0;
    for (const d of gpus) if (d.vramMiB >= vramMiB && features.every((f) => d.features?.includes(f))) cards += d.count;
    const g: Gpu = { count: Math.min(want.count, cards), vramMiB, ...(features.length ? { features } : {}) };
    // least relaxed first: keep features, then VRAM, then count
    if (!best || gpuCloser(g, best) < 0) best = g;
  }
  return best!;
}

function gpuCloser(a: Gpu, b: Gpu): number {
  return (b.features?.length ?? 0) - (a.features?.length ?? 0) || b.vramMiB - a.vramMiB || b.count - a.count;
}

/** One constraint's change, as one provider needs it. */
function need(c: Constraint, job: Job, provider: string, advert: Advert | undefined, offer: Offer | undefined): JobChange | undefined {
  const r = job.requirements;
  switch (c) {
    case 'price': {
      // without an offer, the price failure is the advert's ask (ASK_ABOVE_PRICE): the job's cost at that ask admits it
      if (offer) return { maxPrice: offer.price };
      const cost = advert ? askCost(job, advert) : undefined;
      return cost ? { maxPrice: cost } : undefined;
    }
    case 'tier':
      return advert ? { tier: advert.tier } : undefined;
    case 'region':
      return advert ? { regions: advert.region === undefined ? null : sortedUnion(r.regions, [advert.region]) } : undefined;
    case 'allowlist':
      return { allowlist: sortedUnion(r.allowlist, [provider]).sort(compareDids) };
    case 'cpu':
      return advert ? { cpuCores: advert.hardware.cpuCores } : undefined;
    case 'memory':
      return advert ? { memoryMiB: advert.hardware.memoryMiB } : undefined;
    case 'gpu':
      return advert && r.gpu ? { gpu: gpuNeed(r.gpu, advert) } : undefined;
    case 'deadline': {
      if (!offer) return undefined;
      const ch: JobChange = {};
      const finish = offer.startBy + offer.durationMs;
      if (finish > job.deadline) ch.deadline = finish;
      if (offer.durationMs > job.timeoutMs) ch.timeoutMs = offer.durationMs;
      return ch;
    }
    default:
      return undefined;
  }
}

/** A change admitting whatever either change admits (same constraint). */
function merge(c: Constraint, a: JobChange, b: JobChange): JobChange {
  switch (c) {
    case 'price':
      return cmpAmount(a.maxPrice!.amount, b.maxPrice!.amount) >= 0 ? a : b;
    case 'tier': {
      const x = a.tier;
      const y = b.tier;
      if (x === null || y === null || x === undefined || y === undefined) return { tier: null };
      if (x === y) return a;
      const low = TIER_RANK[x] < TIER_RANK[y] ? x : y;
      const high = low === x ? y : x;
      return tierSatisfies(high, low) ? { tier: low } : { tier: null };
    }
    case 'region':
      return a.regions === null || b.regions === null ? { regions: null } : { regions: sortedUnion(a.regions, b.regions ?? []) };
    case 'allowlist':
      return { allowlist: sortedUnion(a.allowlist, b.allowlist ?? []).sort(compareDids) };
    case 'cpu':
      return { cpuCores: Math.min(a.cpuCores!, b.cpuCores!) };
    case 'memory':
      return { memoryMiB: Math.min(a.memoryMiB!, b.memoryMiB!) };
    case 'gpu': {
      if (!a.gpu || !b.gpu) return { gpu: null };
      const features = (a.gpu.features ?? []).filter((f) => b.gpu!.features?.includes(f));
      return { gpu: { count: Math.min(a.gpu.count, b.gpu.count), vramMiB: Math.min(a.gpu.vramMiB, b.gpu.vramMiB), ...(features.length ? { features } : {}) } };
    }
    case 'deadline': {
      const ch: JobChange = {};
      const d = Math.max(a.deadline ?? 0, b.deadline ?? 0);
      const t = Math.max(a.timeoutMs ?? 0, b.timeoutMs ?? 0);
      if (d > 0) ch.deadline = d;
      if (t > 0) ch.timeoutMs = t;
      return ch;
    }
    default:
      return a;
  }
}

/** Order of providers' needs, least relaxation first (region and allowlist have none: one step). */
function closer(c: Constraint, a: JobChange, b: JobChange): number {
  switch (c) {
    case 'price':
      return cmpAmount(a.maxPrice!.amount, b.maxPrice!.amount);
    case 'tier':
      return (b.tier ? TIER_RANK[b.tier] : -1) - (a.tier ? TIER_RANK[a.tier] : -1);
    case 'cpu':
      return b.cpuCores! - a.cpuCores!;
    case 'memory':
      return b.memoryMiB! - a.memoryMiB!;
    case 'gpu':
      return a.gpu === null || b.gpu === null ? (a.gpu === null ? 1 : 0) - (b.gpu === null ? 1 : 0) : gpuCloser(a.gpu!, b.gpu!);
    case 'deadline':
      return (a.deadline ?? 0) - (b.deadline ?? 0) || (a.timeoutMs ?? 0) - (b.timeoutMs ?? 0);
    default:
      return 0;
  }
}

/** The change said as advice ("raise maxPrice to 0.15 USD"). */
export function describeChange(job: Job, ch: JobChange): string {
  const r = job.requirements;
  const parts: string[] = [];
  if (ch.allowlist) {
    const added = ch.allowlist.filter((d) => !r.allowlist?.includes(d)).length;
    parts.push(`add ${added} ${added === 1 ? 'provider' : 'providers'} to the allowlist`);
  }
  if (ch.tier !== undefined) parts.push(ch.tier === null ? 'drop the tier requirement' : exactTier(ch.tier) ? `ask for tier ${ch.tier}` : `accept tier ${ch.tier}`);
  if (ch.regions !== undefined) parts.push(ch.regions === null ? 'drop the region constraint' : `also accept region ${ch.regions.filter((x) => !r.regions?.includes(x)).join(', ')}`);
  if (ch.gpu !== undefined) {
    const g = ch.gpu;
    parts.push(g === null ? 'drop the GPU requirement' : `ask for ${g.count === 1 ? 'one GPU' : `${g.count} GPUs`} with ≥ ${gib(g.vramMiB)} VRAM${g.features?.length ? ` and ${g.features.join(', ')}` : r.gpu?.features?.length ? ' and no feature' : ''}`);
  }
  if (ch.cpuCores !== undefined) parts.push(`ask for ≤ ${ch.cpuCores} CPU core${ch.cpuCores === 1 ? '' : 's'}`);
  if (ch.memoryMiB !== undefined) parts.push(`ask for ≤ ${gib(ch.memoryMiB)} memory`);
  if (ch.maxPrice) parts.push(`raise maxPrice to ${ch.maxPrice.amount} ${ch.maxPrice.currency}`);
  if (ch.deadline !== undefined) parts.push(`extend the deadline to ${isoTime(ch.deadline)}`);
  if (ch.timeoutMs !== undefined) parts.push(`raise the timeout to ${duration(ch.timeoutMs)}`);
  // "ask for ≤ 32 CPU cores and ≤ 256 GiB memory", not "… and ask for …"
  return parts.map((x, i) => (i > 0 && x.startsWith('ask for ≤') && parts[i - 1]!.startsWith('ask for') ? x.slice('ask for '.length) : x)).join(' and ');
}

interface Candidate {
  provider: string;
  advert: Opened<Advert> | undefined;
  offer: Opened<Offer> | undefined;
  /** the relaxable constraints it fails (one or two, RELAXABLE order) */
  cs: Constraint[];
}

/**
 * The hints for a market's verdicts: for each relaxable constraint, the
 * nearest change (admitting the provider that needs least) and, when it
 * differs, the change admitting every provider that fails only it; and for
 * each pair of constraints some provider fails together, the change to both.
 * Most gain first.
 */
export function relaxationsOf(pj: PreparedJob, verdicts: readonly VerdictLike[], ctx: RelaxContext): Relaxation[] {
  const job = pj.job;
  const cands: Candidate[] = [];
  for (const v of verdicts) {
    if (v.failures.length === 0) continue;
    const cs = new Set<Constraint>();
    let fixable = true;
    for (const f of v.failures) {
      if (f.code === REASON.OFFER_MISSING) continue;
      const c = constraintOf(f.code as ReasonCode);
      if (!RELAXABLE.includes(c)) fixable = false;
      cs.add(c);
    }
    if (!fixable || cs.size === 0 || cs.size > 2) continue;
    cands.push({ provider: v.provider, advert: v.advert !== undefined ? ctx.index.get(v.advert) : undefined, offer: v.offer !== undefined ? ctx.offers.get(v.offer) : undefined, cs: RELAXABLE.filter((c) => cs.has(c)) });
  }
  if (cands.length === 0) return [];

  const needOf = (c: Constraint, k: Candidate) => need(c, job, k.provider, k.advert?.record, k.offer?.record);
  const changes: Array<{ cs: Constraint[]; change: JobChange }> = [];
  for (const c of RELAXABLE) {
    const needs = cands.filter((k) => k.cs.length === 1 && k.cs[0] === c).map((k) => needOf(c, k)).filter((x): x is JobChange => x !== undefined);
    if (needs.length === 0) continue;
    needs.sort((a, b) => closer(c, a, b));
    const near = needs[0]!;
    const all = needs.reduce((a, b) => merge(c, a, b));
    changes.push({ cs: [c], change: near });
    if (JSON.stringify(all) !== JSON.stringify(near)) changes.push({ cs: [c], change: all });
  }
  const pairs = new Map<string, Candidate[]>();
  for (const k of cands) if (k.cs.length === 2) pairs.set(k.cs.join('+'), [...(pairs.get(k.cs.join('+')) ?? []), k]);
  for (const group of pairs.values()) {
    const cs = group[0]!.cs;
    let change: JobChange = {};
    let ok = true;
    for (const c of cs) {
      const needs = group.map((k) => needOf(c, k));
      if (needs.some((x) => x === undefined)) ok = false;
      else change = { ...change, ...needs.reduce((a, b) => merge(c, a!, b!))! };
    }
    if (ok) changes.push({ cs, change });
  }

  const out: Relaxation[] = [];
  const seen = new Set<string>();
  for (const { cs, change } of changes) {
    const relaxed = applyChange(job, change);
    const rpj = prepareJob({ ...pj.opened, record: relaxed });
    // a provider without an offer fits when the gates pass and its ask no longer rules it out (ask.ts), as judgeAll says
    const askOf = askJudge(relaxed);
    let gain = 0;
    let quoted = 0;
    let notLive = 0;
    for (const k of cands) {
      if (!k.cs.every((c) => cs.includes(c))) continue;
      if (evaluate(rpj, k.advert, k.offer, ctx.now, ctx.skewMs) === undefined && (k.offer !== undefined || k.advert === undefined || askOf(k.advert.record) === undefined)) {
        gain++;
        if (k.offer) quoted++;
        else if (ctx.live && !ctx.live(k.provider)) notLive++;
      }
    }
    if (gain === 0) continue;
    const what = describeChange(job, change);
    if (seen.has(what)) continue;
    seen.add(what);
    const wait = gain - quoted;
    // which of those that have not quoted are not live (an advert, no presence: QA qaWit F5, where every one of 186 was)
    const dead = notLive === 0 ? '' : notLive === wait ? `, and ${notLive === 1 ? 'it has no' : 'none of them has a'} live presence [NOT_LIVE]` : `, ${notLive} of those with no live presence [NOT_LIVE]`;
    const text = `${what} → ${gain} more ${gain === 1 ? 'provider' : 'providers'}${wait ? ` (${wait} of them ${wait === 1 ? 'has' : 'have'} not quoted yet${dead})` : ''}`;
    out.push({ constraint: cs[0]!, constraints: cs, change, gain, quoted, ...(ctx.live ? { notLive } : {}), text });
  }
  const rank = (r: Relaxation) => RELAXABLE.indexOf(r.constraints[0]!) * 16 + (r.constraints[1] ? RELAXABLE.indexOf(r.constraints[1]) + 1 : 0);
  // the hints that admit the most providers that can quote (live, or quoted already) first
  const likely = (r: Relaxation) => r.gain - (r.notLive ?? 0);
  return out.sort((a, b) => likely(b) - likely(a) || b.gain - a.gain || a.constraints.length - b.constraints.length || rank(a) - rank(b) || (a.text < b.text ? -1 : a.text > b.text ? 1 : 0));
}
