/**
 * A provider on an overlay with a steward runs only admitted work (pool/1
 * §1.1 "may this claim start", §2.1; DESIGN.md §1 step 7; docs/overlays.md
 * "Providers run only admitted work"). The proof is what the steward already
 * signs for an admission: its `Admitted` ledger entry (a `pool/1` envelope,
 * src/ledger/entry.ts) for the job's claim.
 *
 * Ledger entries are public (pool-head gossip, ledger/1), and an entry says
 * neither whether its claim is a gang nor which jobs the steward bound to it,
 * so where the entry comes from matters:
 * - the exec header's `admission` (the buyer's) admits a job only when the
 *   entry's claim is the job's own address (a single job's claim);
 * - anything else (a gang member job, whose claim is the gang the job's params
 *   cite; a buyer that sent no proof, one before this version; a header proof
 *   for another claim) has the provider ask the steward (`/c0mpute/steward/1`
 *   op `admission` {job}), which answers only for a job whose own claim is
 *   open or that it bound to an open gang. Its entry is then taken for a claim
 *   that is the job's address or the gang the job's signed params cite.
 * Either way the entry is signed by the steward the provider's own config
 * names (`network.steward`) and is an `Admitted`. Anything else is refused
 * EXEC_NOT_ADMITTED before a slot is taken.
 */
import { C0Error } from '../../errors.js';
import { open, type Opened } from '../../records/envelope.js';
import type { Job } from '../../records/kinds.js';
import { POOL_TYPE, type LedgerEntry } from '../../ledger/entry.js';
import { citeOf } from '../gang-cite.js';

export const EXEC_NOT_ADMITTED = 'EXEC_NOT_ADMITTED';

/**
 * Where a proof came from: `header` the buyer's exec header (only the job's own claim binds: a job's params cannot
 * choose the claim, any entry being public); `steward` the steward's `admission` answer for this job (it answers only
 * for a job it admitted or bound to an open gang, so the gang the job's signed params cite binds too).
 */
export type ProofSource = 'header' | 'steward';

/**
 * Check `proof` admits `job` under `steward`; throws EXEC_NOT_ADMITTED saying why. `proof` undefined: the buyer sent
 * none and the steward had none to give.
 */
export function checkAdmission(job: Opened<Job>, proof: Uint8Array | undefined, steward: string, from: ProofSource = 'header'): void {
  const refuse = (why: string) => new C0Error(EXEC_NOT_ADMITTED, `this overlay's steward ${steward} has not admitted this job (${why}); a buyer on it names the steward (network.steward) and the job's entitlement`, { detail: { steward } });
  if (!proof) throw refuse('no admission sent, and the steward has none for it');
  let e: Opened<LedgerEntry>;
  try {
    e = open(proof, POOL_TYPE) as unknown as Opened<LedgerEntry>;
  } catch (err) {
    throw refuse(`the admission is not a ledger entry: ${(err as C0Error).code ?? (err as Error).message}`);
  }
  if (e.signer !== steward) throw refuse('the admission is signed by another key than the steward');
  if (e.record.event !== 'Admitted') throw refuse(`the entry is a ${e.record.event}, not an Admitted`);
  if (e.record.claim === job.address) return;
  const gang = from === 'steward' ? citeOf(job.record.params)?.claim : undefined;
  if (gang !== undefined && e.record.claim === gang) return;
  throw refuse(
    from === 'steward'
      ? `the steward's entry admits claim ${e.record.claim.slice(0, 80)}, neither this job nor the gang its params cite`
      : `the entry admits claim ${e.record.claim.slice(0, 80)}, not this job; a gang member's admission comes from the steward`,
  );
}
