/**
 * Who an exec/1 input lapse is charged to, and what counts as one (review s40, second round):
 * - F1: only the job's buyer (its signer's PeerId) may open its exec: a third party replaying the public job, offer and
 *   selection is refused EXEC_NOT_BUYER before it takes the slot (and struck), so the honest buyer is neither refused
 *   EXEC_ALREADY_RUN nor paused for the stranger's stall.
 * - F2: a hold after `ready` that the caller ends without its input (reset, short end) past INPUT_HOLD_GRACE_MS is a
 *   lapse as the deadline is; a quick reset is not.
 * - F3: an input delivered whole forgives a quarter of a lapse, not all of them: a tiny job between stalls no longer
 *   resets the doubling.
 * - F4: the claimer claims no order of a paused buyer.
 * Fakes only: an ExecIO the test ends, fake clocks.
 */
import { describe, test, after } from 'node:test';
import { MiB, NOW, buyerDid, buyerPeer, heldIO, lapseProvider, selected } from './lapse-rig.js';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import { Ed25519Signer } from '../../../src/records/ed25519.js';
import { didFromPublicKey } from '../../../src/records/did.js';
import { fakeClock } from '../../../src/util/clock.js';
import { peerIdFromDid } from '../../../src/node/peer-id.js';
import type { Provider } from '../../../src/roles/provider/provider.js';
import { QuoteBudget } from '../../../src/roles/provider/quote-budget.js';
import { OpenOrders } from '../../../src/matching/open-orders.js';
import { seal as sealRecord, T as Kinds } from '../../../src/records/index.js';
import { claimerFor } from '../matching/claimer-rig.js';
import { NOW as FIXTURE_NOW, P, advert, job as fixtureJob } from '../market/fixtures.js';


describe('Provider: who opens an exec and what a hold costs', () => {
  const live: Provider[] = [];
  after(async () => {
    for (const p of live) await p.stop();
  });

  const setup = () => lapseProvider(live);

  test('a third party replaying the public records is refused EXEC_NOT_BUYER before the slot; the buyer then gets ready and is not paused', async () => {
    const s = setup();
    await s.provider.start();
    const { header } = await selected(s.provider, 1 * MiB);
    const strangerPeer = peerIdFromDid(didFromPublicKey(Ed25519Signer.generate().publicKey)).toString();
    const stranger = heldIO([header], strangerPeer);
    await s.provider.handleExec(stranger.io);
    assert.deepEqual(
      stranger.out.map((f) => [f.t, (f as { code?: string }).code]),
      [['refused', 'EXEC_NOT_BUYER']],
    );
    assert.equal(s.provider.running, 0, 'the stranger took no slot');
    assert.deepEqual(s.struck, [strangerPeer], 'an exec for another key’s job is a strike');
    // the buyer's own exec: ready, and its lapse is its own
    const own = heldIO([header], buyerPeer);
    const served = s.provider.handleExec(own.io);
    await own.waiting;
    assert.deepEqual(own.out.map((f) => f.t), ['ready']);
    assert.equal(s.provider.budget.check(buyerDid, NOW), undefined, 'the buyer is not paused for the stranger');
    own.end(new C0Error('NET_DEADLINE', 'stream passed its input deadline'));
    await assert.rejects(served, (e: unknown) => (e as C0Error).code === 'NET_DEADLINE');
    assert.equal(s.provider.budget.check(buyerDid, NOW), 'buyer-lapsed');
    assert.equal(s.lines.find((l) => l.code === 'EXEC_INPUT_LAPSED')?.peer, buyerPeer);
  });

  test('a reset after holding the slot past the grace is a lapse; a quick one is not', async () => {
    const s = setup();
    await s.provider.start();
    // quick: the buyer failed over at once
    let h = heldIO([(await selected(s.provider, 16 * MiB)).header], buyerPeer);
    let served = s.provider.handleExec(h.io);
    await h.waiting;
    s.mono.advance(500);
    h.end(new C0Error('NET_STREAM_FAILED', 'the caller reset the stream'));
    await assert.rejects(served, (e: unknown) => (e as C0Error).code === 'NET_STREAM_FAILED');
    assert.equal(s.provider.budget.check(buyerDid, NOW), undefined, 'a quick reset is no lapse');
    // held 31 s (just short of the 32 s deadline), then reset
    h = heldIO([(await selected(s.provider, 16 * MiB)).header], buyerPeer);
    served = s.provider.handleExec(h.io);
    await h.waiting;
    s.mono.advance(31_000);
    h.end(new C0Error('NET_STREAM_FAILED', 'the caller reset the stream'));
    await assert.rejects(served, (e: unknown) => (e as C0Error).code === 'NET_STREAM_FAILED');
    assert.equal(s.provider.running, 0);
    assert.equal(s.provider.budget.check(buyerDid, NOW), 'buyer-lapsed');
    const line = s.lines.find((l) => l.code === 'EXEC_INPUT_LAPSED');
    assert.equal(line?.ended, 'caller');
    assert.equal(line?.pauseMs, 30_000);
  });

  test('an input ended short after a hold past the grace is a lapse too (and refused EXEC_INPUT_MISMATCH)', async () => {
    const s = setup();
    await s.provider.start();
    const h = heldIO([(await selected(s.provider, 16 * MiB)).header], buyerPeer);
    const served = s.provider.handleExec(h.io);
    await h.waiting;
    s.mono.advance(20_000);
    h.end();
    await served;
    assert.deepEqual(h.out.map((f) => [f.t, (f as { code?: string }).code]), [['ready', undefined], ['refused', 'EXEC_INPUT_MISMATCH']]);
    assert.equal(s.provider.budget.check(buyerDid, NOW), 'buyer-lapsed');
  });
});

describe('QuoteBudget: work run here forgives a lapse, four times its hold', () => {
  test('work short of four times the hold between stalls does not reset the doubling; four times the hold forgives one lapse', () => {
    const mono = fakeClock(0);
    const b = new QuoteBudget({ windowMs: 30_000, monoClock: mono });
    const pauses: number[] = [];
    for (let i = 0; i < 4; i++) {
      pauses.push(b.lapsed('did:h', 32_000));
      mono.advance(pauses.at(-1)!);
      b.delivered('did:h', 1_000);
    }
    assert.deepEqual(pauses, [30_000, 60_000, 120_000, 240_000]);
    // an honest buyer that lapsed once (a 32 s hold) and then ran 128 s of work lapses afresh, in parts or at once
    b.lapsed('did:s', 32_000);
    mono.advance(30_000);
    for (let i = 0; i < 1280; i++) b.delivered('did:s', 100);
    assert.equal(b.check('did:s', NOW), undefined);
    assert.equal(b.lapsed('did:s', 32_000), 30_000);
    mono.advance(30_000);
    b.delivered('did:s', 128_000);
    assert.equal(b.lapsed('did:s', 32_000), 30_000);
  });

  test('an input delivered during a pause does not end it', () => {
    const mono = fakeClock(0);
    const b = new QuoteBudget({ windowMs: 30_000, monoClock: mono });
    b.lapsed('did:h');
    b.delivered('did:h', 1_000_000);
    assert.equal(b.check('did:h', NOW), 'buyer-lapsed');
  });
});

describe('Claimer: a buyer paused for a lapsed input', () => {
  test('has neither its open nor its designated orders claimed; they are claimed once its pause is over', () => {
    const W = 'infer.llm';
    const me = P(1);
    const hostile = P(900);
    const ad = advert(me, { prices: [{ workload: W, unit: 'job', price: { amount: '0.1', currency: 'USD' } }] });
    let mono = 0;
    const budget = new QuoteBudget({ clock: () => FIXTURE_NOW, monoClock: () => mono });
    const pauseMs = budget.lapsed(hostile.did);
    const orders = new OpenOrders();
    const designated = fixtureJob(hostile, { nonce: new Uint8Array([1]), order: { designated: me.did }, announcedAt: FIXTURE_NOW - 1000 });
    const open = fixtureJob(hostile, { nonce: new Uint8Array([2]), order: {}, announcedAt: FIXTURE_NOW - 1000 });
    orders.add(designated, FIXTURE_NOW);
    orders.add(open, FIXTURE_NOW);
    const presence = sealRecord(Kinds.presence, { workloads: [W], freeSlots: 2, issuedAt: FIXTURE_NOW, windowMs: 15000 }, me.signer);
    const over = {
      clock: () => FIXTURE_NOW + 1000,
      monoClock: () => mono,
      mode: 'any' as const,
      live: (t: number) => [{ did: me.did, presence, advert: ad, workloads: [W], freeSlots: 2, liveUntil: t + 14000 }],
      paused: (did: string) => budget.paused(did),
    };
    const claimer = claimerFor(me, ad, orders, over);
    assert.deepEqual(claimer.targets(FIXTURE_NOW + 1000), [], 'no order of a paused buyer is claimed');
    mono += pauseMs;
    assert.deepEqual(claimer.targets(FIXTURE_NOW + 1000).map((t) => t.job.address).sort(), [designated.address, open.address].sort());
  });
});
