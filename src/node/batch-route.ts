/**
 * `POST /v1/batch/plan` (docs/matching.md "Batch plans"; issue #12): plan a
 * batch against this node's live-provider view, its reputation view and its
 * budget hooks. Nothing is signed or sent; the answer is the plan, or
 * BATCH_EXCEEDS_CAPACITY with the shortfall per workload in the message.
 */
import { C0Error } from '../errors.js';
import { parseBatch } from '../matching/batch-input.js';
import { BATCH_PROVIDER_CEILING, meetsRequirements, planBatch, type BatchPlan } from '../matching/batch-plan.js';
import type { OverlayNode } from './overlay.js';

export function batchPlan(o: OverlayNode, body: unknown): BatchPlan {
  const b = (body ?? {}) as { batch?: unknown; ceiling?: unknown };
  const batch = parseBatch(b.batch, 'batch');
  let ceiling = BATCH_PROVIDER_CEILING;
  if (b.ceiling !== undefined) {
    if (typeof b.ceiling !== 'number' || !Number.isInteger(b.ceiling) || b.ceiling < 0) throw new C0Error('BATCH_FIELD_INVALID', 'ceiling must be a whole number of lines', { field: 'ceiling' });
    ceiling = b.ceiling;
  }
  const now = o.clock();
  const rep = o.market.reputation();
  const held = o.heldByProvider();
  return planBatch({
    batch,
    now,
    live: o.liveProviders(now),
    reputation: (did) => rep.scoreOf(did),
    ceiling,
    held: (did) => held.get(did) ?? 0,
    designated: (did) => o.designatedOrders(did),
    eligible: meetsRequirements,
  });
}
