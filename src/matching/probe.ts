/**
 * The market probe (spec/matching-and-leases.md "The market probe";
 * docs/matching.md "Candidates and the probe"): every live provider that could
 * serve an order now, ranked with its ask — no offer round, nothing signed.
 * An unpinned probe (no designated provider) with at least one candidate marks
 * its first candidate as picked, as an open order does; a pinned one does not.
 *
 * The node wires it with hooks (the live-provider view, what each provider
 * holds, the known adverts), so it depends on no particular presence module.
 */
import { C0Error } from '../errors.js';
import { isDid } from '../records/did.js';
import { T, type Advert, type Job, type Presence, type Requirements } from '../records/kinds.js';
import { kindOf } from '../records/envelope.js';
import { toCore } from '../records/schema.js';
import { DEFAULT_SKEW_MS } from '../records/freshness.js';
import type { Sub } from '../store/db.js';
import type { Opened } from '../records/envelope.js';
import { compareAmounts, isAmount, type Money } from '../records/money.js';
import { candidates, type CandidateOrder, type CandidatesResult } from './candidates.js';
import { levelRotationStore, memoryRotationStore, Rotation, type RotationStore } from './rotation.js';
import { PresenceView } from './presence.js';
import type { LiveProvider } from './types.js';

export interface ProbeDeps {
  clock: () => number;
  /** the providers live now (the presence view) */
  liveProviders: (now: number) => readonly LiveProvider[];
  /** leases and jobs each provider holds now */
  held?: () => ReadonlyMap<string, number>;
  /** adverts known to this node (providers among them that are not live are reported NOT_LIVE) */
  known?: () => Iterable<Opened<Advert>>;
  skewMs?: number;
}

export interface ProbeResult extends CandidatesResult {
  /** when the probe was answered */
  at: number;
  /** whether it advanced the rotation (unpinned, with a first candidate) */
  picked?: string;
}

/** What `ProbeService.check` says of an order before it is posted (and when it went unclaimed). */
export interface OrderCheck {
  /** live providers that could claim it now */
  candidates: number;
  /** the probe's sentence: why none, when none */
  summary: string;
  /** reason code → providers failing it */
  counts: Record<string, number>;
  /** the lowest bid at which a provider now above the bid (and failing nothing else) could claim it */
  raiseTo?: Money;
}

export class ProbeService {
  private constructor(
    private readonly deps: ProbeDeps,
    readonly rotation: Rotation,
  ) {}

  static async open(deps: ProbeDeps, store: RotationStore = memoryRotationStore()): Promise<ProbeService> {
    return new ProbeService(deps, await Rotation.open(store));
  }

  /**
   * Whether a live provider could claim `order` now, said as the probe says it (QA qaMatch F6): the candidates'
   * count, the probe's summary and reasons, and — when every provider that is no candidate would be one at a higher
   * bid — the lowest such bid (`raiseTo`). Marks nothing: an order picks nobody, the claims decide.
   */
  check(order: CandidateOrder): OrderCheck {
    const r = this.#rank(order, this.deps.clock());
    let raiseTo: Money | undefined;
    for (const p of r.rejected) {
      if (p.reasons.length === 0 || !p.reasons.every((x) => x.code === 'ASK_ABOVE_PRICE')) continue;
      const cost = p.reasons[0]!.offered as Money;
      if (cost?.currency === order.maxPrice.currency && isAmount(cost.amount) && (!raiseTo || compareAmounts(cost.amount, raiseTo.amount) < 0)) raiseTo = cost;
    }
    return { candidates: r.candidates.length, summary: r.summary, counts: r.counts, ...(raiseTo ? { raiseTo } : {}) };
  }

  #rank(order: CandidateOrder, now: number): CandidatesResult {
    return candidates({
      order,
      live: this.deps.liveProviders(now),
      rotation: this.rotation,
      now,
      ...(this.deps.held ? { held: this.deps.held() } : {}),
      ...(this.deps.known ? { known: this.deps.known() } : {}),
      ...(this.deps.skewMs !== undefined ? { skewMs: this.deps.skewMs } : {}),
    });
  }

  /** Rank the candidates for `order`; an unpinned probe marks its first candidate as picked. */
  async probe(order: CandidateOrder): Promise<ProbeResult> {
    const now = this.deps.clock();
    const r = this.#rank(order, now);
    const first = r.candidates[0];
    if (order.designated === undefined && first) {
      await this.rotation.pick(first.provider);
      return { ...r, at: now, picked: first.provider };
    }
    return { ...r, at: now };
  }
}

/**
 * An order from a probe request: a job spec as JSON (the shape /v1/run takes:
 * workload, requirements, maxPrice, deadlineMs, timeoutMs, sealInput, input as
 * base64 or `inputSize`) plus an optional `designated` DID. GET query
 * parameters come as strings and are read the same way.
 */
export function parseProbeOrder(body: unknown): CandidateOrder {
  const b = body as Record<string, unknown>;
  const bad = (field: string, why: string) => new C0Error('PROBE_SPEC_INVALID', `probe: ${field} ${why}`, { field });
  if (typeof b !== 'object' || b === null) throw new C0Error('PROBE_SPEC_INVALID', 'probe: the order must be an object');
  if (typeof b.workload !== 'string' || b.workload === '') throw bad('workload', 'must be a workload namespace');
  let maxPrice: Money;
  if (typeof b.maxPrice === 'string') {
    const m = /^\s*([0-9.]+)\s*([A-Z][A-Z0-9]{1,11})\s*$/.exec(b.maxPrice);
    if (!m || !isAmount(m[1])) throw bad('maxPrice', 'must be "0.05 USD" or {amount, currency}');
    maxPrice = { amount: m[1]!, currency: m[2]! };
  } else if (typeof b.maxPrice === 'object' && b.maxPrice !== null && isAmount((b.maxPrice as Money).amount) && typeof (b.maxPrice as Money).currency === 'string') maxPrice = { amount: (b.maxPrice as Money).amount, currency: (b.maxPrice as Money).currency };
  else throw bad('maxPrice', 'must be "0.05 USD" or {amount, currency}');
  const int = (k: string): number | undefined => {
    const v = b[k];
    if (v === undefined || v === null) return undefined;
    const n = typeof v === 'string' && /^[0-9]{1,15}$/.test(v) ? Number(v) : v;
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) throw bad(k, 'must be a whole number');
    return n;
  };
  const inputSize = int('inputSize') ?? (typeof b.input === 'string' ? Buffer.from(b.input, 'base64').length : 0);
  const timeoutMs = int('timeoutMs') ?? int('deadlineMs') ?? 60_000;
  if (timeoutMs <= 0) throw bad('timeoutMs', 'must be positive');
  const sealed = b.sealInput === true || b.sealInput === 'true' || b.sealInput === '1';
  if (b.designated !== undefined && (typeof b.designated !== 'string' || !isDid(b.designated))) throw bad('designated', 'must be a provider DID');
  let requirements: Requirements = {};
  if (b.requirements !== undefined) {
    let r: unknown = b.requirements;
    if (typeof r === 'string') {
      try {
        r = JSON.parse(r) as unknown;
      } catch {
        throw bad('requirements', 'must be a JSON object');
      }
    }
    if (typeof r !== 'object' || r === null || Array.isArray(r)) throw bad('requirements', 'must be an object');
    requirements = r as Requirements;
  }
  const order: CandidateOrder = { workload: b.workload, requirements, maxPrice, inputSize, inputSealed: sealed, timeoutMs, ...(typeof b.designated === 'string' ? { designated: b.designated } : {}) };
  // the order must be what a c0mpute.job/1 record may say (workload, requirements, money): the job schema judges it
  const asJob: Job = { workload: order.workload, requirements, maxPrice, announcedAt: 0, deadline: 1, timeoutMs, input: { hash: 'sha256:' + '0'.repeat(64), size: inputSize }, inputSealed: sealed ? 'yes' : 'no' };
  try {
    toCore(kindOf(T.job).schema, asJob);
  } catch (e) {
    if (!(e instanceof C0Error)) throw e;
    throw new C0Error('PROBE_SPEC_INVALID', `probe: ${e.message}`, { ...(e.field !== undefined ? { field: e.field } : {}), cause: e });
  }
  return order;
}

/** What `openNodeProbe` reads of a node (an OverlayNode has all of it). */
export interface ProbeHost {
  /** the node's own DID: never its own candidate */
  did: string;
  clock: () => number;
  liveProviders: (now: number) => readonly LiveProvider[];
  heldByProvider: () => ReadonlyMap<string, number>;
  market: { adverts: { latest: ReadonlyMap<string, Opened<Advert>> } };
  sub(name: string): Sub;
  d: { network: { clockSkewMs: number } };
}

/** A node's probe: its hooks, its known adverts, and the rotation in the overlay's `matching-rotation` sublevel. */
export function openNodeProbe(host: ProbeHost): Promise<ProbeService> {
  return ProbeService.open(
    // a node that is buyer and provider is not its own candidate (it ranked itself first, and an order designated to
    // itself is refused ORDER_DESIGNATED_SELF; QA pass, session 48)
    {
      clock: () => host.clock(),
      liveProviders: (now) => host.liveProviders(now).filter((p) => p.did !== host.did),
      held: () => host.heldByProvider(),
      known: () => [...host.market.adverts.latest.values()].filter((a) => a.signer !== host.did),
      skewMs: host.d.network.clockSkewMs,
    },
    levelRotationStore(host.sub('matching-rotation')),
  );
}

/**
 * Live providers from records alone (the offline `market probe --records`), by
 * the daemon's own rule: each provider's newest presence (issued by `now` plus
 * skew; equal issuedAt: the higher address) goes through a PresenceView
 * (presence.ts) — live while inside its window, the window capped as the view
 * caps it for the market's size, its workloads those its advert also lists —
 * joined with the provider's current advert: of those
 * issued by `now` (plus skew), the highest seq (then the lower address), live
 * while it has not expired, as the daemon's advert store answers. A provider
 * without both is not live. The records are read in any order: a presence the
 * view finds past its window while the market is still small is offered again
 * once the others are held (the cap grows with the market), until none more is
 * kept.
 */
export function liveFromRecords(presences: Iterable<Opened<Presence>>, adverts: Iterable<Opened<Advert>>, now: number, skewMs = DEFAULT_SKEW_MS): LiveProvider[] {
  const ad = new Map<string, Opened<Advert>>();
  for (const a of adverts) {
    if (a.record.issuedAt > now + skewMs) continue;
    const c = ad.get(a.signer);
    if (!c || a.record.seq > c.record.seq || (a.record.seq === c.record.seq && a.address < c.address)) ad.set(a.signer, a);
  }
  const view = new PresenceView(
    (did, t) => {
      const a = ad.get(did);
      return a && a.record.expiresAt > t ? a : undefined;
    },
    { skewMs },
  );
  // each provider's newest presence (issued by now + skew; equal issuedAt: the higher address, as the view keeps):
  // an older one does not stand in for a newer one past its window
  const newest = new Map<string, Opened<Presence>>();
  for (const p of presences) {
    if (p.record.issuedAt > now + skewMs) continue;
    const c = newest.get(p.signer);
    if (!c || p.record.issuedAt > c.record.issuedAt || (p.record.issuedAt === c.record.issuedAt && p.address > c.address)) newest.set(p.signer, p);
  }
  let left = [...newest.values()];
  for (;;) {
    const again = left.filter((p) => view.add(p, now) === 'expired');
    if (again.length === left.length) break;
    left = again;
  }
  return view.live(now);
}
