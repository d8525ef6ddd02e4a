/**
 * The buyer's side of a training gang on a stewarded overlay (pool/1 §2.4,
 * §4, §6.2; docs/training.md "A gang on a stewarded overlay"), as the daemon's
 * routes `c0mpute train buy --entitlement` drives:
 *
 * - `POST /v1/gang/admit` {run (train-run envelope, hex), entitlement,
 *   energy?: {uj, grade}, class?, devicesPerMember?, deadlineMs} → asks the
 *   overlay's steward `admit-gang`; answers {admission} (Admit | Deny |
 *   Expired, the last for a gang that does not fit now: gangs do not wait in
 *   line).
 * - `POST /v1/gang/release` {claim, receipts: [receipt addresses]} → asks the
 *   steward to release the gang's claim now (`withdraw`), handing it the member
 *   receipts this node holds so the release sums every member's energy.
 *
 * Each member job then goes through `POST /v1/run` with `entitlement` and
 * `gang: {claim, member}` (src/node/overlay.ts passes it to the steward).
 */
import { Buffer } from 'node:buffer';
import { C0Error } from '../errors.js';
import { STEWARD_PROTOCOL } from '../roles/steward-ports.js';
import { inAskSlot, requestAdmission, withdrawClaim, type StewardRequest } from '../roles/admission-client.js';
import { open } from '../records/envelope.js';
import { TRAIN_T } from '../training/record-kinds.js';
import { GRADES } from '../records/kinds.js';
import type { Admission } from '../roles/buyer.js';
import type { Route } from './api.js';
import type { Daemon } from './daemon.js';
import type { OverlayNode } from './overlay.js';

function stewardOf(o: OverlayNode): string {
  const s = o.d.network.steward;
  if (!s) {
    // the node's overlays that do have one, where a gang with an entitlement belongs
    const { config } = o.d;
    const others = [config.network, ...config.overlays].filter((n) => n.steward && n.overlay !== o.name).map((n) => n.overlay);
    const hint = others.length ? `add --overlay ${others[0]} (this node's overlays with a steward: ${others.join(', ')}), or leave out --entitlement` : 'leave out --entitlement';
    throw new C0Error('GANG_NO_STEWARD', `overlay ${o.name} has no steward: a gang needs no admission there (${hint})`, { field: 'entitlement' });
  }
  return s;
}

/**
 * How long a gang's admission asks again after an ask that may have landed went unanswered. A gang never waits in
 * line, so asking again only recovers an answer lost with its stream; and a gang admitted much later could not run:
 * `c0mpute train buy` gives the gang 60 s more than its member jobs' own deadlines, counted from the buy, so members
 * bought after that are refused STEWARD_GANG_DEADLINE (s35i: a steward back after 70 s admitted a gang whose members
 * then all failed so).
 */
export const GANG_REASK_MS = 60_000;

export async function admitGang(o: OverlayNode, body: unknown): Promise<{ admission: Admission }> {
  const b = (body ?? {}) as Record<string, unknown>;
  const steward = stewardOf(o);
  if (typeof b.run !== 'string' || !/^[0-9a-f]+$/.test(b.run)) throw new C0Error('GANG_BAD_REQUEST', 'run must be the train-run envelope as hex', { field: 'run' });
  if (typeof b.entitlement !== 'string' || !b.entitlement) throw new C0Error('GANG_BAD_REQUEST', 'entitlement is required', { field: 'entitlement' });
  if (typeof b.deadlineMs !== 'number' || !Number.isSafeInteger(b.deadlineMs) || b.deadlineMs <= 0) throw new C0Error('GANG_BAD_REQUEST', 'deadlineMs must be a positive whole number', { field: 'deadlineMs' });
  const e = b.energy as { uj?: unknown; grade?: unknown } | undefined;
  if (e !== undefined && (typeof e !== 'object' || e === null || !Number.isSafeInteger(e.uj) || (e.uj as number) < 0 || !(GRADES as readonly string[]).includes(e.grade as string))) {
    throw new C0Error('GANG_BAD_REQUEST', 'energy must be {uj: whole µJ, grade: HwShunt | ModelBased | Estimator}', { field: 'energy' });
  }
  const dpm = b.devicesPerMember ?? 1;
  if (typeof dpm !== 'number' || !Number.isSafeInteger(dpm) || dpm < 1) throw new C0Error('GANG_BAD_REQUEST', 'devicesPerMember must be a whole number ≥ 1', { field: 'devicesPerMember' });
  const now = o.clock();
  const deadline = now + b.deadlineMs;
  const request = [{ op: 'admit-gang', run: new Uint8Array(Buffer.from(b.run, 'hex')), entitlement: b.entitlement, ...(typeof b.class === 'string' ? { class: b.class } : {}), ...(e ? { estimate: { uj: e.uj, grade: e.grade } } : {}), devices_per_member: dpm, deadline } as never];
  const ask: StewardRequest = (frames, opts) => o.net.request(steward, STEWARD_PROTOCOL, frames, opts);
  // The gang's claim is its run's address: what a withdraw names when the asking gives up after an ask that may have
  // landed (a run that does not open is refused by the steward, so nothing of it can be open there).
  let claim: string | undefined;
  try {
    claim = open(new Uint8Array(Buffer.from(b.run, 'hex')), TRAIN_T.run).address;
  } catch {
    claim = undefined;
  }
  // Asks again while the steward may hold the gang with no verdict heard (an `admitted` lost with its stream), for
  // GANG_REASK_MS at most (or until the gang's deadline, or the node's stop; src/roles/admission-client.ts)
  const stopping = o.buyer?.stopping;
  const admission = await requestAdmission({
    ask: (onFrame, signal) => inAskSlot(o.stewardAsks, () => ask(request, { limits: { deadlineMs: 60_000 }, onFrame, signal }), Math.min(deadline, now + GANG_REASK_MS), o.clock, signal),
    deadline: Math.min(deadline, now + GANG_REASK_MS),
    clock: o.clock,
    onQueued: () => {},
    ...(claim ? { withdraw: withdrawClaim(ask, claim) } : {}),
    ...(stopping ? { signal: stopping } : {}),
    log: o.log.child({ role: 'buyer', overlay: o.name, gang: claim }),
  });
  return { admission };
}

export async function releaseGang(o: OverlayNode, body: unknown): Promise<{ released: string }> {
  const b = (body ?? {}) as { claim?: unknown; receipts?: unknown };
  const steward = stewardOf(o);
  if (typeof b.claim !== 'string') throw new C0Error('GANG_BAD_REQUEST', 'claim is required', { field: 'claim' });
  const addrs = Array.isArray(b.receipts) ? b.receipts.filter((x): x is string => typeof x === 'string').slice(0, 256) : [];
  const held = o.market.evidence.receipts;
  const receipts = addrs.map((a) => held.get(a)?.bytes).filter((x): x is Uint8Array => x !== undefined);
  const frames = await o.net.request(steward, STEWARD_PROTOCOL, [{ op: 'withdraw', job: b.claim, receipts } as never], { limits: { deadlineMs: 30_000 } });
  return { released: String((frames[0] as { released?: unknown } | undefined)?.released ?? 'no') };
}

export function gangRoutes(d: Daemon): Route[] {
  const ov = (q: URLSearchParams) => d.overlay(q.get('overlay') ?? undefined);
  return [
    { method: 'POST', path: '/v1/gang/admit', handler: async ({ body, query }) => admitGang(ov(query), body) },
    { method: 'POST', path: '/v1/gang/release', handler: async ({ body, query }) => releaseGang(ov(query), body) },
  ];
}
