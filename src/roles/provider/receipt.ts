/**
 * The receipt of one run (DESIGN §3.3), shared by the provider's runs
 * (provider.ts), the work a crashed run left behind (crash-recovery.ts) and a
 * pool coordinator's receipts (roles/pool-member/coordinator.ts).
 */
import { hashHex } from '../../records/address.js';
import type { Opened } from '../../records/envelope.js';
import type { Job, Offer, Receipt } from '../../records/kinds.js';

/**
 * The receipt of one run of `job` under `offer` (DESIGN §3.3): the buyer is the
 * job's signer, the provider the offer's, the price the offer's; `failed` when
 * a failure is given, else `completed` with the output's hash and size.
 */
export function receiptFor(job: Opened<Job>, offer: Opened<Offer>, run: { startedAt: number; completedAt: number; energy: Receipt['energy']; failure?: Receipt['failure']; output?: Uint8Array }): Receipt {
  return {
    job: job.address,
    offer: offer.address,
    buyer: job.signer,
    provider: offer.signer,
    workload: job.record.workload,
    status: run.failure ? 'failed' : 'completed',
    startedAt: run.startedAt,
    completedAt: run.completedAt,
    inputHash: job.record.input.hash,
    ...(run.output ? { outputHash: hashHex(run.output), outputSize: run.output.length } : {}),
    price: offer.record.price,
    energy: run.energy,
    ...(run.failure ? { failure: run.failure } : {}),
  };
}
