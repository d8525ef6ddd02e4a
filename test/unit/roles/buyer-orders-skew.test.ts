/**
 * The buyer judges claims on an open order with the node's clock-skew window (network.clockSkewMs, BuyerDeps.skewMs),
 * as the claimer and the audit (`c0mpute market audit`) do: before, runOrder called decideClaims without it, so a claim
 * signed up to 30 s after its arrival was taken whatever the operator had configured.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { runOrder, type ArrivedClaim, type OrderPorts } from '../../../src/roles/buyer-orders.js';
import type { BuyerDeps, JobSpec } from '../../../src/roles/buyer.js';
import { seal, T, type Claim, type Opened } from '../../../src/records/index.js';
import { silentLogger } from '../../../src/util/log.js';
import { NOW, P, advert, job } from '../market/fixtures.js';

const BUYER = P(200);
const J = job(BUYER, { order: {} });
const claimBy = (n: number, issuedAt: number): Opened<Claim> => seal(T.claim, { job: J.address, advert: advert(P(n)).address, price: { amount: '1', currency: 'USD' }, issuedAt }, P(n).signer);
const spec = { workload: 'infer.llm', order: {} } as unknown as JobSpec;

function deps(skewMs: number | undefined): BuyerDeps {
  return {
    signer: BUYER.signer,
    did: BUYER.did,
    clock: () => NOW,
    log: silentLogger(),
    adverts: (did: string) => [201, 202].map((n) => advert(P(n))).find((a) => a.signer === did),
    store: async () => {},
    publish: async () => {},
    ...(skewMs === undefined ? {} : { skewMs }),
  } as unknown as BuyerDeps;
}

async function decide(skewMs: number | undefined): Promise<{ winner: string | undefined; codes: Array<string | undefined> }> {
  const ahead = claimBy(201, NOW + 10_000); // signed 10 s after it arrives
  const honest = claimBy(202, NOW);
  const queue: ArrivedClaim[] = [ahead, honest].map((c, i) => ({ seq: i + 1, receivedAt: NOW, claim: c.bytes, from: '', answer: () => {} }));
  const ports: OrderPorts = { inbox: () => ({ next: async () => queue.shift(), close: () => {} }) };
  const r = await runOrder(deps(skewMs), ports, J, spec, () => {}, async () => ({ outcome: 'failed' }));
  return { winner: r.selection?.record.winner === ahead.address ? 'ahead' : r.selection?.record.winner === honest.address ? 'honest' : undefined, codes: r.claims!.map((c) => c.code) };
}

describe('claims are judged with the configured clock skew', () => {
  it('a 5 s window refuses a claim signed 10 s ahead (CLAIM_FROM_FUTURE)', async () => {
    assert.deepEqual(await decide(5_000), { winner: 'honest', codes: ['CLAIM_FROM_FUTURE', undefined] });
  });
  it('without one, the default (30 s) takes it', async () => {
    assert.deepEqual(await decide(undefined), { winner: 'ahead', codes: [undefined, 'ORDER_TAKEN'] });
  });
});
