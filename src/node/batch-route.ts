/**
 * `POST /v1/batch/plan` (docs/matching.md "Batch plans"; issue #12): plan a
 * batch against this node's live-provider view, its reputation view and its
 * budget hooks. Nothing is signed or sent; the answer is the plan, or
 * BATCH_EXCEEDS_CAPACITY with the shortfall per workload in the message.
 * `exclude` (a list of DIDs) leaves providers out: `batch run` re-plans the
 * lines of a provider that failed over the live view minus it; `designated`
 * ({DID: lines}) adds lines already promised to a provider (the run's lines
 * still waiting there) to the open orders designated to it.
 */
import { C0Error } from '../errors.js';
import { parseBatch } from '../matching/batch-input.js';
import { BATCH_PROVIDER_CEILING, meetsRequirements, planBatch, type BatchPlan } from '../matching/batch-plan.js';
import type { OverlayNode } from './overlay.js';

export function batchPlan(o: OverlayNode, body: unknown): BatchPlan {
  const b = (body ?? {}) as { batch?: unknown; ceiling?: unknown; exclude?: unknown; designated?: unknown };
  const batch = parseBatch(b.batch, 'batch');
  let ceiling = BATCH_PROVIDER_CEILING;
  if (b.ceiling !== undefined) {
    if (typeof b.ceiling !== 'number' || !Number.isInteger(b.ceiling) || b.ceiling < 0) throw new C0Error('BATCH_FIELD_INVALID', 'ceiling must be a whole number of lines', { field: 'ceiling' });
    ceiling = b.ceiling;
  }
  if (b.exclude !== undefined && (!Array.isArray(b.exclude) || b.exclude.length > 10_000 || !b.exclude.every((x) => typeof x === 'string'))) {
    throw new C0Error('BATCH_FIELD_INVALID', 'exclude must be a list of provider DIDs', { field: 'exclude' });
  }
  const excluded = new Set((b.exclude as string[] | undefined) ?? []);
  const extra = new Map<string, number>();
  if (b.designated !== undefined) {
    const ok = typeof b.designated === 'object' && b.designated !== null && !Array.isArray(b.designated) && Object.keys(b.designated).length <= 10_000;
    for (const [did, n] of ok ? Object.entries(b.designated as Record<string, unknown>) : [['', -1] as const]) {
      if (!ok || typeof n !== 'number' || !Number.isInteger(n) || n < 0) throw new C0Error('BATCH_FIELD_INVALID', 'designated must map provider DIDs to whole numbers of lines', { field: 'designated' });
      extra.set(did, n);
    }
  }
  const now = o.clock();
  const rep = o.market.reputation();
  const held = o.heldByProvider();
  return planBatch({
    batch,
    now,
    live: o.liveProviders(now).filter((p) => !excluded.has(p.did)),
    reputation: (did) => rep.scoreOf(did),
    ceiling,
    held: (did) => held.get(did) ?? 0,
    designated: (did) => o.designatedOrders(did) + (extra.get(did) ?? 0),
    eligible: meetsRequirements,
  });
}
