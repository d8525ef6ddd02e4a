/**
 * An open order whose winning claimant does not deliver gets a `c0mpute.nondelivery/3` (src/roles/buyer-orders.ts
 * orderNonDelivery; docs/matching.md "No winner by the deadline"), signed by the buyer when the attempt names a
 * reason an auction signs a /1 for (timeout, unreachable, refused, no-receipt, bad-receipt), kept and published on
 * its own topic kind `nondelivery3`. Never for this node's own stop or freeze, nor for a failure the provider signed.
 * Before, runOrder signed nothing: a claimant that vanished was charged nowhere.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runOrder, type OrderPorts, type WinnerAttempt } from '../../../src/roles/buyer-orders.js';
import type { BuyerDeps, BuyerEvent, JobSpec } from '../../../src/roles/buyer.js';
import { linkNonDelivery, nonDeliveryProvider } from '../../../src/reputation/index.js';
import { seal, T, type ClaimNonDelivery, type Claim, type Opened } from '../../../src/records/index.js';
import { silentLogger } from '../../../src/util/log.js';
import { NOW, P, acceptance, advert, job, receipt } from '../market/fixtures.js';

const BUYER = P(210);
const CLAIMANT = P(211);
const AD = advert(CLAIMANT);
const J = job(BUYER, { order: {} });
const spec = { workload: 'infer.llm', order: {} } as unknown as JobSpec;
const win: Opened<Claim> = seal(T.claim, { job: J.address, advert: AD.address, price: { amount: '1', currency: 'USD' }, issuedAt: NOW }, CLAIMANT.signer);

/** Run the order to an attempt ending `a`: what was stored, published (by kind) and said. */
async function orderEndingWith(a: WinnerAttempt) {
  const stored: Opened[] = [];
  const published: Array<[string, Opened]> = [];
  const events: BuyerEvent[] = [];
  const deps = { signer: BUYER.signer, did: BUYER.did, clock: () => NOW + 10, log: silentLogger(), adverts: (did: string) => (did === CLAIMANT.did ? AD : undefined), store: async (r: Opened) => void stored.push(r), publish: async (kind: string, r: Opened) => void published.push([kind, r]) } as unknown as BuyerDeps;
  const queue = [{ seq: 1, receivedAt: NOW, claim: win.bytes, from: '', answer: () => {} }];
  const ports: OrderPorts = { inbox: () => ({ next: async () => queue.shift(), close: () => {} }) };
  const result = await runOrder(deps, ports, J, spec, (e) => void events.push(e), async () => a);
  const nds = stored.filter((r) => r.type === T.nondelivery3) as Array<Opened<ClaimNonDelivery>>;
  return { result, nds, published, events };
}

test('a winner that did not deliver, for each reason an auction signs a /1 for: a /3 against the claimant, stored, on nondelivery3', async () => {
  const reasons: WinnerAttempt[] = [
    { outcome: 'provider unreachable or gone: the connection closed', nondelivery: 'unreachable' },
    { outcome: 'provider unreachable or gone: EXEC_PROVIDER_SILENT', nondelivery: 'unreachable' },
    { outcome: 'provider did not take the request in time: EXEC_PROVIDER_NOT_READY', nondelivery: 'timeout' },
    { outcome: 'refused: EXEC_BUSY', nondelivery: 'refused' },
    { outcome: 'stream ended without a receipt', nondelivery: 'no-receipt' },
    { outcome: 'receipt does not link', nondelivery: 'bad-receipt' },
  ];
  for (const a of reasons) {
    const { result, nds, published, events } = await orderEndingWith(a);
    assert.equal(result.status, 'failed', a.outcome);
    assert.equal(nds.length, 1, `${a.outcome}: one /3`);
    const nd = nds[0]!;
    linkNonDelivery(nd);
    assert.deepEqual([nd.record.reason, nd.record.provider, nd.record.claim, nd.record.selection, nd.record.job], [a.nondelivery, CLAIMANT.did, win.address, result.selection!.address, J.address]);
    assert.equal(nd.record.detail, a.outcome);
    assert.equal(nonDeliveryProvider(nd), CLAIMANT.did);
    assert.ok(nd.record.signedAt >= result.selection!.record.decidedAt);
    assert.deepEqual(published.filter(([, r]) => r.type === T.nondelivery3).map(([k]) => k), ['nondelivery3'], 'on its own topic kind, never nondelivery');
    assert.equal(result.attempts[0]!.nondelivery, nd.address, 'the run names it');
    assert.deepEqual(events.filter((e) => e.e === 'nondelivery'), [{ e: 'nondelivery', provider: CLAIMANT.did, reason: a.nondelivery, address: nd.address }]);
  }
});

test('no /3 for this node’s own stop or freeze, for a failure the provider signed, or for a delivered job', async () => {
  const failed = receipt(CLAIMANT, BUYER, win as never, { status: 'failed', failure: { code: 'EXEC_TIMEOUT', message: 'ran past its timeout' } });
  const completed = receipt(CLAIMANT, BUYER, win as never);
  const cases: WinnerAttempt[] = [
    { outcome: 'interrupted: this node did not run for 25 s during the attempt (BUYER_STALLED); no non-delivery signed', interrupted: 'stalled' },
    { outcome: 'interrupted: this node is stopping (JOB_INTERRUPTED)', interrupted: 'stopping' },
    // a reason with this node's own freeze: the freeze wins, nothing is signed
    { outcome: 'interrupted: this node did not run', interrupted: 'stalled', nondelivery: 'unreachable' },
    { outcome: 'provider busy with another of our jobs: refused: EXEC_BUSY' },
    { outcome: 'failed: EXEC_TIMEOUT', receipt: failed, acceptance: acceptance(BUYER, failed, 'accepted') },
    { outcome: 'completed', output: new Uint8Array([1]), receipt: completed, acceptance: acceptance(BUYER, completed, 'accepted') },
  ];
  for (const a of cases) {
    const { nds, published, result } = await orderEndingWith(a);
    assert.equal(nds.length, 0, a.outcome);
    assert.equal(published.filter(([k]) => k.startsWith('nondelivery')).length, 0, a.outcome);
    assert.equal(result.attempts[0]!.nondelivery, undefined, a.outcome);
  }
});

test('an attempt that ended with no receipt and no /3 keeps its note, as an auction’s does: the history says BUYER_STALLED, not a crash', async () => {
  const cases: Array<[WinnerAttempt, string]> = [
    [{ outcome: 'interrupted: this node did not run for 53 s during the attempt (BUYER_STALLED); no non-delivery signed', interrupted: 'stalled' }, 'BUYER_STALLED'],
    [{ outcome: 'provider busy with another of our jobs: refused: EXEC_BUSY' }, 'EXEC_BUSY'],
    [{ outcome: 'interrupted: this node is stopping (JOB_INTERRUPTED)', interrupted: 'stopping' }, 'JOB_INTERRUPTED'],
  ];
  for (const [a, code] of cases) {
    const notes: Array<[string, { code?: string; message: string }]> = [];
    const deps = { signer: BUYER.signer, did: BUYER.did, clock: () => NOW + 10, log: silentLogger(), adverts: (did: string) => (did === CLAIMANT.did ? AD : undefined), store: async () => {}, publish: async () => {}, noteAttempt: async (sel: Opened, note: { code?: string; message: string }) => void notes.push([sel.address, note]) } as unknown as BuyerDeps;
    const queue = [{ seq: 1, receivedAt: NOW, claim: win.bytes, from: '', answer: () => {} }];
    const ports: OrderPorts = { inbox: () => ({ next: async () => queue.shift(), close: () => {} }) };
    const result = await runOrder(deps, ports, J, spec, () => {}, async () => a);
    assert.deepEqual(notes, [[result.selection!.address, { code, message: a.outcome }]], a.outcome);
  }
  // a /3 or a receipt says how it ended: no note
  const notes: unknown[] = [];
  const deps = { signer: BUYER.signer, did: BUYER.did, clock: () => NOW + 10, log: silentLogger(), adverts: (did: string) => (did === CLAIMANT.did ? AD : undefined), store: async () => {}, publish: async () => {}, noteAttempt: async (...x: unknown[]) => void notes.push(x) } as unknown as BuyerDeps;
  const queue = [{ seq: 1, receivedAt: NOW, claim: win.bytes, from: '', answer: () => {} }];
  await runOrder(deps, { inbox: () => ({ next: async () => queue.shift(), close: () => {} }) }, J, spec, () => {}, async () => ({ outcome: 'provider unreachable or gone: EXEC_PROVIDER_SILENT', nondelivery: 'unreachable' }));
  assert.deepEqual(notes, []);
});
