/**
 * The node's stop during an open order's wait for claims (src/roles/buyer-orders.ts runOrder, fed by the real claim
 * desk): Buyer.interrupt ends the wait at once, the run `interrupted` (JOB_INTERRUPTED), and every claim still waiting
 * in the inbox is answered NODE_CLOSING on its stream. Before, runOrder did not hear the stop: the run waited on to the
 * order's deadline, past the node's stop, and the claims waiting got no answer until their streams' 15 s deadline.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ClaimDesk } from '../../../src/roles/claim-protocol.js';
import type { BuyerEvent } from '../../../src/roles/buyer.js';
import { seal, T, type Claim, type Opened } from '../../../src/records/index.js';
import { peerIdFromDid } from '../../../src/node/peer-id.js';
import { NOW, P, advert } from '../market/fixtures.js';
import { buyerOnFakes, fakeSpec } from './buyer-fakes.js';

const BUYER = P(200);

/** A claim sent to the desk by P(n): resolves with its stream's error code (or the frame it got). */
function claim(desk: ClaimDesk, n: number, job: string): Promise<string> {
  const c: Opened<Claim> = seal(T.claim, { job, advert: advert(P(n)).address, price: { amount: '1', currency: 'USD' }, issuedAt: NOW }, P(n).signer);
  return Promise.resolve(desk.handler()([{ t: 'claim', claim: c.bytes }], { peer: peerIdFromDid(P(n).did), signal: new AbortController().signal, send: async () => {} })).then(
    () => 'answered',
    (e: unknown) => (e as { code: string }).code,
  );
}

const within = <T>(p: Promise<T>, ms = 1_000): Promise<T | 'hung'> => Promise.race([p, new Promise<'hung'>((r) => setTimeout(() => r('hung'), ms))]);

test('the node’s stop while an open order waits for claims: the run ends interrupted at once, and the claims waiting get NODE_CLOSING', async () => {
  const desk = new ClaimDesk(() => NOW);
  const r = buyerOnFakes(BUYER, { providers: [], exec: async function* () {}, deps: { orders: desk } });
  const events: BuyerEvent[] = [];
  const claims: Array<Promise<string>> = [];
  const run = r.buyer.run(fakeSpec({ order: {} }), (e) => {
    events.push(e);
    if (e.e === 'order') {
      // two claims arrive before the buyer reads its inbox, and the node stops
      claims.push(claim(desk, 201, e.job), claim(desk, 202, e.job));
      void r.buyer.interrupt();
    }
  });
  const result = await within(run);
  assert.notEqual(result, 'hung', 'the run ends with the stop, not at the order’s deadline (60 s)');
  if (result === 'hung') return;
  assert.equal(result.status, 'interrupted');
  assert.equal(result.error?.code, 'JOB_INTERRUPTED');
  assert.equal(events.at(-1)?.e, 'interrupted');
  assert.deepEqual(await within(Promise.all(claims)), ['NODE_CLOSING', 'NODE_CLOSING'], 'no claim waits out its stream');
  assert.deepEqual(r.published.map((p) => p.kind), ['job'], 'nothing was selected');
  desk.close();
});
