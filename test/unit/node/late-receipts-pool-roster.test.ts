/**
 * A POOL_COORDINATOR_LOST receipt sent to the buyer directly (outcome/1) is taken from another member of the selected
 * pool (src/node/late-receipts.ts; docs/pools.md "The lost receipt reaches the buyer"), but not from a member the pool
 * has removed. A removed member still holds the older roster naming it, and the chain it carries (that roster, signed
 * by the pool, and its own countersignature) verifies on its own. Before, that was all the buyer checked, so a former
 * member could fail the buyer's job as lost, blaming the pool's coordinator. Now the receipt's roster must not be older
 * (seq) than the one the selected offer's advert cites, or that advert's roster must name the signer too.
 *
 * The pool: roster seq 1 names A, B, C; seq 2 drops C; seq 3 adds D. The buyer selected coordinator A's offer on
 * its advert citing seq 2.
 */
import '../../../src/polyfill.js';
import '../../../src/pools/chain.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import type { C0Error } from '../../../src/errors.js';
import { seal, T, type Advert, type Job, type Offer, type Opened, type PoolRoster, type Receipt, type Selection } from '../../../src/records/index.js';
import type { Ed25519Signer } from '../../../src/records/ed25519.js';
import { fakeClock } from '../../../src/util/clock.js';
import { silentLogger } from '../../../src/util/log.js';
import { createNetMetrics } from '../../../src/net/metrics.js';
import { RecordPipeline } from '../../../src/net/gossip-validation.js';
import { recordHooks } from '../../../src/node/record-hooks.js';
import { checkOwnReceipt, LATE_RECEIPT_ERR, receiptHook, type OwnReceiptLookups } from '../../../src/node/late-receipts.js';
import { records, buyer, NOW, BUYER } from '../records/fixtures.js';
import { MEMBERS, POOL, didOf, keyOf, outsider, pooledAdvert, proof, roster } from '../pools/helpers.js';

const clock = fakeClock(NOW + 5_000);
const [A, B, C] = MEMBERS as [string, string, string];
const D = didOf(outsider);
const r1 = roster({ seq: 1, members: [{ did: A }, { did: B }, { did: C }] });
const r2 = roster({ seq: 2, members: [{ did: A }, { did: B }] });
const r3 = roster({ seq: 3, members: [{ did: A }, { did: B }, { did: D }] });
const advertOf = (key: Ed25519Signer, r: Opened<PoolRoster>) => seal(T.advert, { ...pooledAdvert(proof(r, key)), workloads: ['infer.llm'], issuedAt: NOW - 1000 }, key) as Opened<Advert>;
/** Coordinator A's advert, citing roster seq 2 (C removed). */
const adA = advertOf(keyOf(A), r2);
const job = seal(T.job, records.job(), buyer) as Opened<Job>;
const offerA = seal(T.offer, { ...records.offer(), job: job.address, advert: adA.address }, keyOf(A)) as Opened<Offer>;
const selection = seal(T.selection, { ...records.selection(), job: job.address, winner: offerA.address, considered: [{ provider: A, offer: offerA.address }] }, buyer) as Opened<Selection>;
const LOST = { code: 'POOL_COORDINATOR_LOST', message: `the coordinator ${A} that dispatched this job is gone; the job is failed from the dispatch trail` };
/** A lost receipt for A's offer signed by `key`, its pool proof citing roster `r`. */
const lostBy = (key: Ed25519Signer, r: Opened<PoolRoster>) =>
  seal(
    T.receipt,
    { ...records.receipt(), job: job.address, offer: offerA.address, inputHash: job.record.input.hash, status: 'failed', outputHash: undefined, outputSize: undefined, failure: LOST, energy: { uj: 0, grade: 'Estimator' }, provider: POOL, pool: proof(r, key) },
    key,
  ) as Opened<Receipt>;

function lookups(): OwnReceiptLookups {
  const held = new Map<string, Opened>([job, offerA, adA].map((r) => [r.address, r]));
  return {
    did: BUYER,
    job: async (a) => held.get(a) as Opened<Job> | undefined,
    selections: async (j) => [selection].filter((s) => s.record.job === j),
    offer: async (a) => held.get(a) as Opened<Offer> | undefined,
    advert: (a) => held.get(a) as Opened<Advert> | undefined,
  };
}
/** checkOwnReceipt alone: its code, or 'ok'. */
const own = async (r: Opened<Receipt>) => {
  try {
    await checkOwnReceipt(r, lookups(), clock());
    return 'ok';
  } catch (e) {
    return (e as C0Error).code;
  }
};
/** The whole direct route's validation (the base receipt hook, then checkOwnReceipt). */
const verdict = async (r: Opened<Receipt>) => {
  const held = new Map<string, Opened>([job, offerA, adA].map((x) => [x.address, x]));
  const base = recordHooks({ advert: (a) => held.get(a) as never, offer: (a) => held.get(a) as never, job: (a) => held.get(a) as never, receipt: () => undefined }, { pendingMs: 0 });
  const p = new RecordPipeline({ clock, metrics: createNetMetrics(new Registry()), log: silentLogger(), hooks: { ...base, receipt: receiptHook(base.receipt, lookups) }, floodLimits: { signer: {} } });
  const o = await p.validate('receipt', r.bytes, 'peer', 'direct');
  return `${o.verdict}:${o.reason}`;
};

test('a lost receipt from a member the pool removed (its chain citing the older roster that named it) is refused RECEIPT_NOT_SELECTED', async () => {
  const fromC = lostBy(keyOf(C), r1);
  assert.equal(fromC.signer, C);
  assert.equal(await own(fromC), LATE_RECEIPT_ERR.NOT_SELECTED);
  assert.equal(await verdict(fromC), `ignore:${LATE_RECEIPT_ERR.NOT_SELECTED}`);
});

test('a lost receipt from a member on the roster the selected advert cites is taken', async () => {
  const fromB = lostBy(keyOf(B), r2);
  assert.equal(await own(fromB), 'ok');
  assert.equal(await verdict(fromB), 'accept:ok');
});

test('a lost receipt under a roster newer than the advert’s (a member that joined later, still on it) is taken', async () => {
  const fromD = lostBy(outsider, r3);
  assert.equal(fromD.signer, D);
  assert.equal(await own(fromD), 'ok');
  assert.equal(await verdict(fromD), 'accept:ok');
});

test('a lost receipt under an older roster from a member the advert’s roster still names (not yet on the newer one) is taken', async () => {
  const fromB = lostBy(keyOf(B), r1);
  assert.equal(await own(fromB), 'ok');
  assert.equal(await verdict(fromB), 'accept:ok');
});
