/**
 * A pooled open order whose coordinator went down: another member of the pool fails the job from the dispatch trail
 * with a POOL_COORDINATOR_LOST receipt for the claim the buyer took (docs/pools.md "A coordinator that crashes"), and
 * the buyer takes it directly as its own evidence, as it does for an auction's offer. The node's lookups
 * (ownReceiptLookups, what overlay.ts checks a direct receipt against) find what a selection took in a real store: an
 * offer, or an open order's won claim. Before, they looked up offers only, so the claim was not found and the member's
 * receipt was ignored RECEIPT_NOT_SELECTED (noticed by the fix of QA qaOrd F1).
 */
import '../../../src/polyfill.js';
import '../../../src/pools/chain.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { C0Error } from '../../../src/errors.js';
import { seal, T, type Advert, type Claim, type Job, type Opened, type Receipt } from '../../../src/records/index.js';
import { closeDb, openDb } from '../../../src/store/db.js';
import { RecordStore } from '../../../src/store/records.js';
import { signFirstClaimSelection } from '../../../src/matching/first-claim.js';
import { checkOwnReceipt, LATE_RECEIPT_ERR, ownReceiptLookups } from '../../../src/node/late-receipts.js';
import { records, buyer, NOW, BUYER } from '../records/fixtures.js';
import { MEMBERS, POOL, keyOf, outsider, pooledAdvert, proof, roster } from '../pools/helpers.js';
import { didFromPublicKey } from '../../../src/records/did.js';

const [A, B] = MEMBERS as [string, string, string];
const r1 = roster();
const adA = seal(T.advert, { ...pooledAdvert(proof(r1, keyOf(A))), workloads: ['infer.llm'], issuedAt: NOW - 1000 }, keyOf(A)) as Opened<Advert>;
const job = seal(T.job, { ...records.job(), order: {} }, buyer) as Opened<Job>;
/** The coordinator A's claim, citing its pooled advert: what the buyer took. */
const claimA = seal(T.claim, { job: job.address, advert: adA.address, price: job.record.maxPrice, issuedAt: NOW - 500 }, keyOf(A)) as Opened<Claim>;
const selection = signFirstClaimSelection(job, { job: job.address, winner: { seq: 1, receivedAt: NOW - 400, claim: claimA }, answers: [], considered: [{ seq: 1, provider: A, claim: claimA.address }] }, () => NOW - 400, NOW - 300, buyer);
const LOST = { code: 'POOL_COORDINATOR_LOST', message: `the coordinator ${A} that dispatched this job is gone; the job is failed from the dispatch trail` };
const lostBy = (member: string) =>
  seal(
    T.receipt,
    { ...records.receipt(), job: job.address, offer: claimA.address, inputHash: job.record.input.hash, price: job.record.maxPrice, startedAt: NOW - 200, completedAt: NOW - 100, status: 'failed', outputHash: undefined, outputSize: undefined, failure: LOST, energy: { uj: 0, grade: 'Estimator' }, provider: POOL, pool: proof(r1, keyOf(member)) },
    keyOf(member),
  ) as Opened<Receipt>;

test('a pooled open order: the lost receipt another member signed for the claim the buyer took is taken directly; a stranger’s is not', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-late-order-'));
  const db = await openDb(join(dir, 'db'));
  try {
    const store = await RecordStore.open(db);
    for (const r of [job, claimA, selection]) await store.put(r);
    const l = ownReceiptLookups({ did: BUYER, book: () => undefined, records: store, advert: (a) => (a === adA.address ? adA : undefined) });
    assert.equal((await l.offer(claimA.address))?.address, claimA.address, 'the won claim is found where an offer would be');
    const code = async (r: Opened<Receipt>) => checkOwnReceipt(r, l, NOW).then(() => 'ok', (e: C0Error) => e.code);
    assert.equal(await code(lostBy(B)), 'ok', 'another member’s lost receipt for the claim');
    assert.equal(await code(lostBy(A)), 'ok', 'the coordinator’s own');
    // a member's completion, not the coordinator's: still not taken
    const done = seal(T.receipt, { ...lostBy(B).record, status: 'completed', failure: undefined, outputHash: 'sha256:' + 'c'.repeat(64), outputSize: 3 }, keyOf(B)) as Opened<Receipt>;
    assert.equal(await code(done), LATE_RECEIPT_ERR.NOT_SELECTED);
    // a key outside the pool failing the claim as lost, for itself: not taken
    const stranger = seal(T.receipt, { ...lostBy(B).record, provider: didFromPublicKey(outsider.publicKey), pool: undefined }, outsider) as Opened<Receipt>;
    assert.equal(await code(stranger), LATE_RECEIPT_ERR.NOT_SELECTED);
  } finally {
    await closeDb(db);
    rmSync(dir, { recursive: true, force: true });
  }
});
