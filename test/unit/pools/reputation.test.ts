/**
 * A pool's reputation counts quote accuracy like any provider's (docs/pools.md
 * "Reputation"): a pooled receipt (provider = the pool, signed by the member
 * that coordinated) counts for the pool (before, receiptCounts dropped every
 * pooled receipt) and pairs with that member's offer; an offer by another
 * member does not pair.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import '../../../src/pools/chain.js';
import { deriveReputation, receiptCounts, type Evidence } from '../../../src/reputation/index.js';
import { seal, T, type Opened, type Receipt } from '../../../src/records/index.js';
import { NOW, P, acceptance, advert, job, offer } from '../market/fixtures.js';
import { MEMBERS, POOL, keyOf, proof, roster } from './helpers.js';

const BUYER = P(100);
const r1 = roster();
const [a, b] = MEMBERS as [string, string];
const party = (did: string) => ({ did, signer: keyOf(did) });

function pooled(by: string, quotedBy: string, quoted: number, actual: number) {
  const j = job(BUYER);
  const ad = advert(party(quotedBy) as never);
  const o = offer(party(quotedBy) as never, j, ad, { durationMs: quoted });
  const r: Receipt = {
    job: j.address, offer: o.address, buyer: BUYER.did, provider: POOL, workload: 'infer.llm', status: 'completed', startedAt: NOW, completedAt: NOW + actual,
    inputHash: 'sha256:' + '11'.repeat(32), outputHash: 'sha256:' + '22'.repeat(32), price: o.record.price, energy: { uj: 1000, grade: 'Estimator' }, pool: proof(r1, keyOf(by)),
  };
  const env = seal(T.receipt, r, keyOf(by)) as Opened<Receipt>;
  return { o, r: env, ok: acceptance(BUYER, env, 'accepted') };
}

test('a pooled receipt pairs with its coordinator’s offer for quote accuracy; another member’s offer does not pair', () => {
  const under = pooled(a, a, 10_000, 40_000);
  const f = deriveReputation({ receipts: [under.r], acceptances: [under.ok], offers: [under.o] } as unknown as Evidence, { self: BUYER.did }).get(POOL);
  assert.equal(f.successes, 1);
  assert.equal(f.quotePairs, 1);
  assert.equal(f.underQuoted, 1);
  assert.equal(f.accuracy, (1 + 0.25) / 2);
  const mismatched = pooled(a, b, 10_000, 40_000);
  const g = deriveReputation({ receipts: [mismatched.r], acceptances: [mismatched.ok], offers: [mismatched.o] } as unknown as Evidence, { self: BUYER.did }).get(POOL);
  assert.equal(g.quotePairs, 0);
  // An opened receipt whose signer the pool proof does not cover does not count at all.
  const forged = { ...under.r, signer: b } as Opened<Receipt>;
  assert.equal(receiptCounts(forged), false);
  assert.equal(receiptCounts(under.r), true);
});
