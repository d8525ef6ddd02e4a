/**
 * What a buyer held when it restarted after a crash (review rvC C1), for the tests of the leftover-claim withdraw
 * (admission-leftovers: which claims and how they are sent; buyer-leftover-claims: when the buyer sends them): a job
 * its crash broke off (the provider's EXEC_BUYER_GONE receipt came late), one that completed and was accepted, one
 * that never got a receipt, and one past its deadline.
 */
import { randomBytes } from 'node:crypto';
import { Ed25519Signer, didFromPublicKey, seal, T, type Acceptance, type Job, type Opened, type Receipt } from '../../../src/records/index.js';
import { hashHex } from '../../../src/records/address.js';
import { citeParams } from '../../../src/roles/gang-cite.js';

export const now = Date.now();
export const buyerKey = Ed25519Signer.generate();
export const buyer = didFromPublicKey(buyerKey.publicKey);
export const providerKey = Ed25519Signer.generate();
export const provider = didFromPublicKey(providerKey.publicKey);

export function job(deadline = now + 600_000, over: Partial<Job> = {}): Opened<Job> {
  const input = randomBytes(8);
  return seal(T.job, { workload: 'builtin.sleep', requirements: {}, maxPrice: { amount: '0.01', currency: 'EUR' }, announcedAt: now - 5_000, deadline, timeoutMs: 30_000, input: { hash: hashHex(input), size: 8 }, inputSealed: 'no', ...over }, buyerKey) as Opened<Job>;
}

/** A gang's member job (docs/training.md "A gang on a stewarded overlay"): its params cite the gang claim, its allowlist the member's provider. */
export function memberJob(claim: string, member: number, deadline = now + 600_000, allow = provider): Opened<Job> {
  return job(deadline, { workload: 'builtin.train-member', params: citeParams({ claim, member }), requirements: { allowlist: [allow] } });
}

export function receipt(j: Opened<Job>, status: 'completed' | 'failed', by = providerKey): Opened<Receipt> {
  const failure = status === 'failed' ? { failure: { code: 'EXEC_BUYER_GONE', message: 'the buyer went away' } } : {};
  const out = status === 'completed' ? { outputHash: hashHex(randomBytes(4)) } : {};
  return seal(T.receipt, { job: j.address, offer: 'sha256:' + 'cd'.repeat(32), buyer, provider: didFromPublicKey(by.publicKey), workload: j.record.workload, status, startedAt: now - 4_000, completedAt: now - 1_000, inputHash: j.record.input.hash, ...out, price: { amount: '0.001', currency: 'EUR' }, energy: { uj: 7, grade: 'Estimator' }, ...failure }, by) as Opened<Receipt>;
}

/** This buyer's acceptance of a receipt. */
export function accept(r: Opened<Receipt>): Opened<Acceptance> {
  return seal(T.acceptance, { receipt: r.address, verdict: 'accepted', signedAt: now - 500 }, buyerKey) as Opened<Acceptance>;
}

/** The four jobs, the late receipt, and the evidence as the node's store answers for them. */
export function held() {
  const broken = job();
  const done = job();
  const silent = job();
  const past = job(now - 1);
  const gone = receipt(broken, 'failed');
  const ok = receipt(done, 'completed');
  const accepted = seal(T.acceptance, { receipt: ok.address, verdict: 'accepted', signedAt: now - 500 }, buyerKey) as Opened<Acceptance>;
  const receipts = new Map<string, Array<Opened<Receipt>>>([[broken.address, [gone]], [done.address, [ok]]]);
  const evidence = { receiptsOf: (j: string) => receipts.get(j) ?? [], acceptancesOf: (r: string) => (r === ok.address ? [accepted] : []) };
  return { broken, done, silent, past, gone, evidence, jobs: [broken, done, silent, past] };
}
