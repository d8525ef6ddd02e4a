/**
 * A pooled job whose coordinator went down mid-dispatch is failed by another member of the pool from the dispatch
 * trail: a POOL_COORDINATOR_LOST receipt that member signs for the coordinator's offer (docs/pools.md "A coordinator
 * that crashes"). Sent to the buyer directly (outcome/1), the buyer's check (src/node/late-receipts.ts) takes it as its
 * own evidence: the buyer selected the coordinator's offer, whose advert is the pool's, and the receipt's chain proves
 * its signer a member of that pool. Before, it was ignored RECEIPT_NOT_SELECTED (signed by another member than the one
 * selected), so a default buyer (no outcome topics joined) never held it. Anything else from a member, a member of
 * another pool, or any other key is still not taken.
 */
import '../../../src/polyfill.js';
import '../../../src/pools/chain.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import type { C0Error } from '../../../src/errors.js';
import { seal, T, type Advert, type Job, type Offer, type Opened, type Receipt, type Selection } from '../../../src/records/index.js';
import type { Ed25519Signer } from '../../../src/records/ed25519.js';
import { fakeClock } from '../../../src/util/clock.js';
import { silentLogger } from '../../../src/util/log.js';
import { createNetMetrics } from '../../../src/net/metrics.js';
import { RecordPipeline } from '../../../src/net/gossip-validation.js';
import { recordHooks } from '../../../src/node/record-hooks.js';
import { checkOwnReceipt, LATE_RECEIPT_ERR, receiptHook, type OwnReceiptLookups } from '../../../src/node/late-receipts.js';
import { didFromPublicKey } from '../../../src/records/did.js';
import { records, buyer, NOW, BUYER, signerFrom } from '../records/fixtures.js';
import { MEMBERS, POOL, keyOf, outsider, pooledAdvert, proof, roster } from '../pools/helpers.js';

const clock = fakeClock(NOW + 5_000);
const [A, B] = MEMBERS as [string, string, string];
const r1 = roster();
const advertOf = (key: Ed25519Signer, p = proof(r1, key)) => seal(T.advert, { ...pooledAdvert(p), workloads: ['infer.llm'], issuedAt: NOW - 1000 }, key) as Opened<Advert>;
const adA = advertOf(keyOf(A));
const job = seal(T.job, records.job(), buyer) as Opened<Job>;
/** The coordinator A's offer, citing its pooled advert: the one the buyer selected. */
const offerA = seal(T.offer, { ...records.offer(), job: job.address, advert: adA.address }, keyOf(A)) as Opened<Offer>;
const selection = seal(T.selection, { ...records.selection(), job: job.address, winner: offerA.address, considered: [{ provider: A, offer: offerA.address }] }, buyer) as Opened<Selection>;
const LOST = { code: 'POOL_COORDINATOR_LOST', message: `the coordinator ${A} that dispatched this job is gone; the job is failed from the dispatch trail` };
const failed = (failure = LOST) => ({ status: 'failed', outputHash: undefined, outputSize: undefined, failure, energy: { uj: 0, grade: 'Estimator' } }) as Partial<Receipt>;
/** A receipt for A's offer signed by `key` for the pool its `pool` proof names (default: `key` a member of POOL, lost). */
const withPool = (key: Ed25519Signer, over: Partial<Receipt> = failed(), p = proof(r1, key), provider = POOL) =>
  seal(T.receipt, { ...records.receipt(), job: job.address, offer: offerA.address, inputHash: job.record.input.hash, ...over, provider, pool: p }, key) as Opened<Receipt>;

function lookups(adverts: Array<Opened<Advert>> = [adA]): OwnReceiptLookups {
  const held = new Map<string, Opened>([job, offerA].map((r) => [r.address, r]));
  return {
    did: BUYER,
    job: async (a) => held.get(a) as Opened<Job> | undefined,
    selections: async (j) => [selection].filter((s) => s.record.job === j),
    offer: async (a) => held.get(a) as Opened<Offer> | undefined,
    advert: (a) => adverts.find((x) => x.address === a),
  };
}

function pipeline(l = lookups()) {
  const held = new Map<string, Opened>([job, offerA, adA].map((r) => [r.address, r]));
  const base = recordHooks({ advert: (a) => held.get(a) as never, offer: (a) => held.get(a) as never, job: (a) => held.get(a) as never, receipt: () => undefined }, { pendingMs: 0 });
  return new RecordPipeline({ clock, metrics: createNetMetrics(new Registry()), log: silentLogger(), hooks: { ...base, receipt: receiptHook(base.receipt, () => l) }, floodLimits: { signer: {} } });
}
const verdict = async (r: Opened<Receipt>, p = pipeline()) => {
  const o = await p.validate('receipt', r.bytes, 'peer', 'direct');
  return `${o.verdict}:${o.reason}`;
};
/** checkOwnReceipt alone (what the base hook would reject first is judged here too): its code, or 'ok'. */
const own = async (r: Opened<Receipt>, l = lookups()) => {
  try {
    await checkOwnReceipt(r, l, clock());
    return 'ok';
  } catch (e) {
    return (e as C0Error).code;
  }
};

test('a POOL_COORDINATOR_LOST receipt another member of the selected pool signed for the coordinator’s offer is taken directly', async () => {
  const lost = withPool(keyOf(B));
  assert.equal(lost.signer, B);
  assert.equal(await verdict(lost), 'accept:ok');
  // the coordinator's own receipt is taken as before
  assert.equal(await verdict(withPool(keyOf(A), { status: 'completed' })), 'accept:ok');
});

test('from another member of the pool, nothing but a lost failure is taken: its completion, or another failure, is RECEIPT_NOT_SELECTED', async () => {
  assert.equal(await verdict(withPool(keyOf(B), { status: 'completed' })), `ignore:${LATE_RECEIPT_ERR.NOT_SELECTED}`, 'a completion signed by a member that did not coordinate');
  assert.equal(await verdict(withPool(keyOf(B), failed({ code: 'EXEC_FAILED', message: 'x' }))), `ignore:${LATE_RECEIPT_ERR.NOT_SELECTED}`, 'another failure code');
});

test('a lost receipt is not taken when the buyer cannot tell the selected offer was the pool’s: its advert not held', async () => {
  assert.equal(await own(withPool(keyOf(B)), lookups([])), LATE_RECEIPT_ERR.NOT_SELECTED);
});

test('a key outside the pool is not taken: its own pool, a roster it is not on, a plain key', async () => {
  // a pool of its own (its key signs the roster and a membership of it): a member of another pool
  const otherPoolKey = signerFrom(45);
  const OTHER_POOL = didFromPublicKey(otherPoolKey.publicKey);
  const r2 = roster({ signer: otherPoolKey, members: [{ did: didFromPublicKey(outsider.publicKey) }] });
  const foreign = withPool(outsider, failed(), proof(r2, outsider), OTHER_POOL);
  assert.equal(await own(foreign), LATE_RECEIPT_ERR.NOT_SELECTED, 'a member of another pool naming its pool');
  // naming POOL with the other pool's chain, or POOL's roster with its own countersignature: no such record can be
  // made (the kind's rule on seal and open: RECEIPT_POOL_NOT_PROVIDER, POOL_NOT_MEMBER)
  assert.throws(() => withPool(outsider, failed(), proof(r2, outsider), POOL), { code: 'RECEIPT_POOL_NOT_PROVIDER' });
  assert.throws(() => withPool(outsider, failed(), proof(r1, outsider)), { code: 'POOL_NOT_MEMBER' });
  // a plain key naming itself: not the selected provider, and not pooled
  const plain = seal(T.receipt, { ...records.receipt(), job: job.address, offer: offerA.address, inputHash: job.record.input.hash, ...failed(), provider: didFromPublicKey(outsider.publicKey) }, outsider) as Opened<Receipt>;
  assert.equal(await own(plain), LATE_RECEIPT_ERR.NOT_SELECTED);
  assert.notEqual(await verdict(plain), 'accept:ok');
});

test('a lost receipt from a member is not taken for an offer on a plain advert (no pool selected)', async () => {
  const { pool: _p, ...plain } = pooledAdvert(proof(r1, keyOf(A)));
  const plainAd = seal(T.advert, { ...plain, workloads: ['infer.llm'], issuedAt: NOW - 1000 }, keyOf(A)) as Opened<Advert>;
  const l = lookups([{ ...plainAd, address: adA.address } as Opened<Advert>]);
  assert.equal(await own(withPool(keyOf(B)), l), LATE_RECEIPT_ERR.NOT_SELECTED);
});
