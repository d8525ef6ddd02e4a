/**
 * What the preemption tests share (steward-preempt-asked, -barred, -restart): a two-team overlay where `hi` outranks
 * `lo` and one device is all there is (one provider without GPUs), claims of one device on an estimate, a buyer's
 * selection of one offer, and the frame a `stop` or `usage` request carries.
 */
import { seal } from '../../../src/records/envelope.js';
import { T, type Selection } from '../../../src/records/kinds.js';
import type { Claim } from '../../../src/pool/admission.js';
import { NOW, type Party, type offer } from '../market/fixtures.js';

export const TREE = `entitlements:
  - { id: lab, guarantee_uj: 100000000, guarantee_devices: 4, over_quota_weight: 0, priority: 0 }
  - { id: hi, parent: lab, guarantee_uj: 50000000, guarantee_devices: 2, over_quota_weight: 0, priority: 2 }
  - { id: lo, parent: lab, guarantee_uj: 50000000, guarantee_devices: 2, over_quota_weight: 0, priority: 0 }
`;
export const est = { uj: 10_000_000, grade: 'Estimator' as const };
export const claimOf = (id: string, entitlement: string): Claim => ({ id, entitlement, gang_size: 1, devices_per_member: 1, estimate: est });

/** `buyer`'s selection of offer `o`, the only one it considered, from `provider`. */
export function selection(buyer: Party, o: ReturnType<typeof offer>, provider: Party) {
  const s: Selection = { job: o.record.job, buyer: buyer.did, policy: 'balanced', winner: o.address, considered: [{ provider: provider.did, offer: o.address }], decidedAt: NOW };
  return seal(T.selection, s, buyer.signer);
}

export type Frame = { op: string; job: string; deadline?: number };
