/**
 * A failed open order's result carries an `error` (src/roles/buyer-orders.ts failedOrderError), as the run's other end
 * states (unclaimed, interrupted) do: the failure code of the provider's receipt, RECEIPT_DISPUTED, BUYER_STALLED when
 * this node did not run during the attempt, or the code the attempt's outcome names (EXEC_PROVIDER_SILENT…). Before,
 * runOrder set `failed` and no `error`: the reason was only free text in attempts[].outcome.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runOrder, type OrderPorts, type WinnerAttempt } from '../../../src/roles/buyer-orders.js';
import type { BuyerDeps, JobSpec } from '../../../src/roles/buyer.js';
import { seal, T, type Claim, type Opened } from '../../../src/records/index.js';
import { silentLogger } from '../../../src/util/log.js';
import { NOW, P, acceptance, advert, job, receipt } from '../market/fixtures.js';

const BUYER = P(200);
const J = job(BUYER, { order: {} });
const spec = { workload: 'infer.llm', order: {} } as unknown as JobSpec;
const win: Opened<Claim> = seal(T.claim, { job: J.address, advert: advert(P(201)).address, price: { amount: '1', currency: 'USD' }, issuedAt: NOW }, P(201).signer);
const deps = { signer: BUYER.signer, did: BUYER.did, clock: () => NOW, log: silentLogger(), adverts: (did: string) => (did === P(201).did ? advert(P(201)) : undefined), store: async () => {}, publish: async () => {} } as unknown as BuyerDeps;

/** The order's result when the winner's attempt comes to `a`. */
async function orderEndingWith(a: WinnerAttempt) {
  const queue = [{ seq: 1, receivedAt: NOW, claim: win.bytes, from: '', answer: () => {} }];
  const ports: OrderPorts = { inbox: () => ({ next: async () => queue.shift(), close: () => {} }) };
  return runOrder(deps, ports, J, spec, () => {}, async () => a);
}

// the claim stands where the offer stands in the receipt (buyer-orders.ts)
const asOffer = win as unknown as Parameters<typeof receipt>[2];

test('a failed order says why in error.code, whichever way its attempt ended', async () => {
  const failed = receipt(P(201), BUYER, asOffer, { status: 'failed', failure: { code: 'EXEC_TIMEOUT', message: 'ran past its timeout' } });
  const completed = receipt(P(201), BUYER, asOffer);
  const cases: Array<[WinnerAttempt, string]> = [
    [{ outcome: 'interrupted: this node did not run for 25 s during the attempt (BUYER_STALLED); no non-delivery signed', interrupted: 'stalled' }, 'BUYER_STALLED'],
    [{ outcome: 'provider unreachable or gone: EXEC_PROVIDER_SILENT', nondelivery: 'unreachable' }, 'EXEC_PROVIDER_SILENT'],
    [{ outcome: 'provider unreachable or gone: the connection closed', nondelivery: 'unreachable' }, 'EXEC_PROVIDER_GONE'],
    [{ outcome: 'stream ended without a receipt', nondelivery: 'no-receipt' }, 'EXEC_NO_RECEIPT'],
    [{ outcome: 'refused: EXEC_BUSY', nondelivery: 'refused' }, 'EXEC_BUSY'],
    [{ outcome: 'failed: EXEC_TIMEOUT', receipt: failed, acceptance: acceptance(BUYER, failed, 'accepted') }, 'EXEC_TIMEOUT'],
    [{ outcome: 'disputed', receipt: completed, acceptance: acceptance(BUYER, completed, 'disputed') }, 'RECEIPT_DISPUTED'],
  ];
  for (const [a, code] of cases) {
    const r = await orderEndingWith(a);
    assert.equal(r.status, 'failed', a.outcome);
    assert.equal(r.error?.code, code, a.outcome);
    assert.ok(r.error?.message.length, 'with a message');
    assert.equal(r.attempts[0]?.outcome, a.outcome, 'the attempt’s own outcome is kept');
  }
});

test('a completed order has no error', async () => {
  const completed = receipt(P(201), BUYER, asOffer);
  const r = await orderEndingWith({ outcome: 'completed', output: new Uint8Array([1]), receipt: completed, acceptance: acceptance(BUYER, completed, 'accepted') });
  assert.equal(r.status, 'completed');
  assert.equal(r.error, undefined);
});
