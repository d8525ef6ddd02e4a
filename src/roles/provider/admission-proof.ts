/**
 * A provider on an overlay with a steward runs only admitted work (pool/1
 * §1.1 "may this claim start", §2.1; DESIGN.md §1 step 7; docs/overlays.md
 * "Providers run only admitted work"). The proof is what the steward already
 * signs for an admission: its `Admitted` ledger entry (a `pool/1` envelope,
 * src/ledger/entry.ts) for the job's claim. The buyer carries it in the exec
 * header (`admission`); a buyer that sends none (one before this version) has
 * the provider ask the steward for it (`/c0mpute/steward/1` op `admission`).
 *
 * The entry binds: signed by the steward the provider's own config names
 * (`network.steward`), event `Admitted`, and its claim is the job's address (a
 * single job) or the gang claim the job's signed params cite (a member job of
 * a gang, docs/training.md "A gang on a stewarded overlay"). Anything else is
 * refused EXEC_NOT_ADMITTED before a slot is taken.
 */
import { C0Error } from '../../errors.js';
import { open, type Opened } from '../../records/envelope.js';
import type { Job } from '../../records/kinds.js';
import { POOL_TYPE, type LedgerEntry } from '../../ledger/entry.js';
import { citeOf } from '../gang-cite.js';

export const EXEC_NOT_ADMITTED = 'EXEC_NOT_ADMITTED';

/** The claim a job runs under on a stewarded overlay: its gang's (cited in its params), else its own address. */
export function claimOfJob(job: Opened<Job>): string {
  return citeOf(job.record.params)?.claim ?? job.address;
}

/**
 * Check `proof` admits `job` under `steward`; throws EXEC_NOT_ADMITTED saying why. `proof` undefined: the buyer sent
 * none and the steward had none to give.
 */
export function checkAdmission(job: Opened<Job>, proof: Uint8Array | undefined, steward: string): void {
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
  const claim = claimOfJob(job);
  if (e.record.claim !== claim) throw refuse(`the entry admits claim ${e.record.claim.slice(0, 80)}, not this job's ${claim.slice(0, 80)}`);
}
