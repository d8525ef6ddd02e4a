/**
 * `POST /v1/batch/plan` (docs/matching.md "Batch plans"; issue #12): plan a
 * batch against this node's live-provider view, its reputation view and its
 * budget hooks. Nothing is signed or sent; the answer is the plan, or
 * BATCH_EXCEEDS_CAPACITY with the shortfall per workload in the message.
 * `exclude` (a list of DIDs) leaves providers out: `batch run` re-plans the
 * lines of a provider that failed over the live view minus it; `designated`
 * ({DID: lines}) adds lines already promised to a provider (the run's lines
 * still waiting there) to the open orders designated to it; `running` ({DID:
 * lines}) gives back the slots the run's own lines occupy there now (they
 * free them within the window, and the presence lags behind).
 */
import { C0Error } from '../errors.js';
import { isDid } from '../records/did.js';
import { parseBatch } from '../matching/batch-input.js';
import { BATCH_CEILING_MAX, BATCH_PROVIDER_CEILING, meetsRequirements, planBatch, type BatchPlan } from '../matching/batch-plan.js';
import type { OverlayNode } from './overlay.js';

const BODY_KEYS = new Set(['batch', 'ceiling', 'exclude', 'designated', 'running']);

export function batchPlan(o: OverlayNode, body: unknown): BatchPlan {
  refuseBatchOnStewarded(o);
  const b = (body ?? {}) as { batch?: unknown; ceiling?: unknown; exclude?: unknown; designated?: unknown; running?: unknown };
  if (typeof b !== 'object' || Array.isArray(b)) throw new C0Error('BATCH_FIELD_INVALID', 'the body must be {batch, ceiling?, exclude?, designated?, running?}');
  for (const k of Object.keys(b)) if (!BODY_KEYS.has(k)) throw new C0Error('BATCH_FIELD_INVALID', `${k} is not a field (batch, ceiling, exclude, designated, running)`, { field: k });
  const batch = parseBatch(b.batch, 'batch');
  let ceiling = BATCH_PROVIDER_CEILING;
  if (b.ceiling !== undefined) {
    // from 1, as the CLI's --ceiling: a ceiling of 0 planned nothing and was refused BATCH_EXCEEDS_CAPACITY with advice
    // (a longer window, more providers) that could not help (QA qaMatch F5)
    if (typeof b.ceiling !== 'number' || !Number.isSafeInteger(b.ceiling) || b.ceiling < 1 || b.ceiling > BATCH_CEILING_MAX) throw new C0Error('BATCH_FIELD_INVALID', `ceiling must be a whole number of lines from 1 to ${BATCH_CEILING_MAX}`, { field: 'ceiling' });
    ceiling = b.ceiling;
  }
  if (b.exclude !== undefined && (!Array.isArray(b.exclude) || b.exclude.length > 10_000 || !b.exclude.every((x) => typeof x === 'string'))) {
    throw new C0Error('BATCH_FIELD_INVALID', 'exclude must be a list of provider DIDs', { field: 'exclude' });
  }
  const excluded = new Set((b.exclude as string[] | undefined) ?? []);
  const extra = didCounts(b.designated, 'designated');
  const running = didCounts(b.running, 'running');
  const now = o.clock();
  const rep = o.market.reputation();
  // leases on open bids only: the orders designated to a provider are subtracted through designatedOrders
  const held = o.heldByProvider('open-bids');
  try {
    return plan();
  } catch (e) {
    // a re-plan's "nobody can take it" counts only the providers not left out: said, or it reads as if none served it
    if (e instanceof C0Error && e.code === 'BATCH_NO_PROVIDER' && excluded.size > 0) {
      throw new C0Error(e.code, `${e.message}; ${excluded.size} provider${excluded.size === 1 ? '' : 's'} this run struck off ${excluded.size === 1 ? 'is' : 'are'} left out`, { ...(e.field ? { field: e.field } : {}), ...(e.detail ? { detail: e.detail } : {}) });
    }
    throw e;
  }
  function plan() {
    return planBatch({
      batch,
      now,
      // never this node itself: a node that is buyer and provider planned lines onto itself, each refused
      // ORDER_DESIGNATED_SELF and planned again (QA pass, session 48)
      live: o
        .liveProviders(now)
        .filter((p) => !excluded.has(p.did) && p.did !== o.did)
        .map((p) => (running.has(p.did) ? { ...p, freeSlots: Math.max(0, p.freeSlots) + running.get(p.did)! } : p)),
      reputation: (did) => rep.scoreOf(did),
      ceiling,
      held: (did) => held.get(did) ?? 0,
      designated: (did) => o.designatedOrders(did) + (extra.get(did) ?? 0),
      eligible: meetsRequirements,
    });
  }
}

/** A {DID: whole number} body field, or BATCH_FIELD_INVALID naming it. */
function didCounts(v: unknown, field: string): Map<string, number> {
  const m = new Map<string, number>();
  if (v === undefined) return m;
  const bad = () => new C0Error('BATCH_FIELD_INVALID', `${field} must map provider DIDs to whole numbers of lines`, { field });
  if (typeof v !== 'object' || v === null || Array.isArray(v) || Object.keys(v).length > 10_000) throw bad();
  for (const [did, n] of Object.entries(v as Record<string, unknown>)) {
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n > 1_000_000 || !isDid(did)) throw bad();
    m.set(did, n);
  }
  return m;
}

/**
 * A batch's lines are open orders designated to their planned provider, which an overlay with a steward does not take
 * (the steward admits every job before it is announced: docs/matching.md "On the network"). Said at once, before
 * the batch is read or planned: before, the plan went ahead and `batch run` ended BATCH_EXCEEDS_CAPACITY, blaming the
 * network's capacity, or its lines each failed ORDERS_NOT_SUPPORTED.
 */
export function refuseBatchOnStewarded(o: Pick<OverlayNode, 'd' | 'name'>): void {
  if (!o.d.network.steward) return;
  throw new C0Error(
    'ORDERS_NOT_SUPPORTED',
    `overlay ${o.name} has a steward: a batch's lines are open orders, which it does not take (the steward admits every job before it is announced); run each job with \`c0mpute run\` and its entitlement, or the batch on an overlay without a steward (--overlay)`,
    { field: 'overlay' },
  );
}
