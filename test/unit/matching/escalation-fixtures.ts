/**
 * Live providers and open bids for the lease-escalation tests (lease-escalation, lease-escalation-places): one
 * workload, each provider's advert made once, a presence issued a second before `now`.
 */
import type { OpenOrder } from '../../../src/matching/leases.js';
import { MATCH_ESCALATE_MS, MATCH_LIVENESS_MS, type LiveProvider } from '../../../src/matching/types.js';
import { seal, T } from '../../../src/records/index.js';
import { P, advert } from '../market/fixtures.js';

export const W = 'infer.llm';
export const G = MATCH_ESCALATE_MS;
const adverts = new Map<number, ReturnType<typeof advert>>();

export function live(n: number, freeSlots: number, now: number): LiveProvider {
  let a = adverts.get(n);
  if (!a) adverts.set(n, (a = advert(P(n), { workloads: [W] })));
  const presence = seal(T.presence, { workloads: [W], freeSlots, issuedAt: now - 1_000, windowMs: MATCH_LIVENESS_MS }, P(n).signer);
  return { did: P(n).did, presence, advert: a, workloads: [W], freeSlots, liveUntil: now - 1_000 + MATCH_LIVENESS_MS };
}

export function order(i: number, announcedAt: number, over: Partial<OpenOrder> = {}): OpenOrder {
  return { address: `sha256:${i.toString(16).padStart(64, '0')}`, buyer: P(900).did, announcedAt, workload: W, openBid: true, ...over };
}
