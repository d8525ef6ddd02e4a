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
import type { Advert, Requirements } from '../records/kinds.js';
import type { Opened } from '../records/envelope.js';
import { isAmount, type Money } from '../records/money.js';
import { candidates, type CandidateOrder, type CandidatesResult } from './candidates.js';
import { memoryRotationStore, Rotation, type RotationStore } from './rotation.js';
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

export class ProbeService {
  private constructor(
    private readonly deps: ProbeDeps,
    readonly rotation: Rotation,
  ) {}

  static async open(deps: ProbeDeps, store: RotationStore = memoryRotationStore()): Promise<ProbeService> {
    return new ProbeService(deps, await Rotation.open(store));
  }

  /** Rank the candidates for `order`; an unpinned probe marks its first candidate as picked. */
  async probe(order: CandidateOrder): Promise<ProbeResult> {
    const now = this.deps.clock();
    const r = candidates({
      order,
      live: this.deps.liveProviders(now),
      rotation: this.rotation,
      now,
      ...(this.deps.held ? { held: this.deps.held() } : {}),
      ...(this.deps.known ? { known: this.deps.known() } : {}),
      ...(this.deps.skewMs !== undefined ? { skewMs: this.deps.skewMs } : {}),
    });
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
  if (b.designated !== undefined && (typeof b.designated !== 'string' || !b.designated.startsWith('did:'))) throw bad('designated', 'must be a provider DID');
  let requirements: Requirements = {};
  if (b.requirements !== undefined) {
    if (typeof b.requirements !== 'object' || b.requirements === null) throw bad('requirements', 'must be an object');
    requirements = b.requirements as Requirements;
  }
  return { workload: b.workload, requirements, maxPrice, inputSize, inputSealed: sealed, timeoutMs, ...(typeof b.designated === 'string' ? { designated: b.designated } : {}) };
}
