/**
 * Offers go to the buyer only (issue #16; src/net/offer-route.ts): over
 * /c0mpute/offer/1 an offer reaches the buyer's node — dialled by the PeerId
 * its DID derives, through a relay it is not connected to — with its advert,
 * through the same validation as gossip; the relay in between never sees it;
 * an offer signed by someone else is refused, and an unreachable buyer is
 * counted and does not throw.
 */
import '../../src/polyfill.js';
import { test, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import type { Network } from '../../src/net/node.js';
import { randomBytes } from 'node:crypto';
import type { C0Error } from '../../src/errors.js';
import { encodeMessage } from '../../src/net/framing.js';
import { OFFER_PROTOCOL, OUTCOME_PROTOCOL } from '../../src/net/offer-route.js';
import { Ed25519Signer, seal, T } from '../../src/records/index.js';
import { advert, job, link, offer, sleep, startNode, stopAll, waitFor } from './net-helpers.js';

const nets: Network[] = [];
afterEach(async () => {
  await stopAll(nets.splice(0));
});

test('an offer reaches the buyer only, over a direct stream, with its advert; the relay never sees it', async () => {
  const provider = await startNode({ syncOnConnect: [] });
  const relay = await startNode({ syncOnConnect: [] });
  const buyer = await startNode({ syncOnConnect: [] });
  nets.push(provider, relay, buyer);
  await link(provider, relay, ['advert']);
  await link(relay, buyer, ['advert']);
  const got: Record<string, Array<{ offer: string; att: string[]; source: string }>> = { relay: [], buyer: [] };
  const advertsAtBuyer: string[] = [];
  for (const [name, n] of [['relay', relay], ['buyer', buyer]] as const) n.subscribe('offer', (r, meta) => void got[name]!.push({ offer: r.address, att: meta.attachments.map((a) => a.address), source: meta.source }));
  buyer.subscribe('advert', (r) => void advertsAtBuyer.push(r.address));

  const ad = advert(provider.signer);
  const o = offer(provider.signer, ad.address);
  // The provider is not connected to the buyer: libp2p finds it (peer store or DHT through the relay).
  await waitFor(async () => {
    try {
      return (await provider.findPeer(buyer.did)).length > 0;
    } catch {
      return false;
    }
  }, 20_000, 'the buyer to be findable');
  const r = await provider.sendOffer([buyer.did], o.bytes, [ad.bytes]);
  assert.deepEqual(r.outcomes, { [buyer.did]: 'accepted' });
  await waitFor(() => got.buyer!.length === 1, 10_000, 'the offer at the buyer');
  assert.deepEqual(got.buyer, [{ offer: o.address, att: [ad.address], source: 'direct' }]);
  assert.deepEqual(advertsAtBuyer, [ad.address], 'the attached advert is delivered too');
  assert.deepEqual(got.relay, [], 'the relay never sees the offer');
  assert.doesNotMatch(await relay.metrics.registry.getSingleMetricAsString('c0mpute_net_records_total'), /kind="offer"/);

  // The same offer again: the buyer has it (ignored, not an error).
  assert.deepEqual((await provider.sendOffer([buyer.did], o.bytes, [ad.bytes])).outcomes, { [buyer.did]: 'ignored' });

  // An offer signed by someone else may not be sent (no relaying of others' offers).
  const other = Ed25519Signer.generate();
  const ad2 = advert(other);
  const foreign = offer(other, ad2.address);
  assert.deepEqual((await relay.sendOffer([buyer.did], foreign.bytes, [ad2.bytes])).outcomes, { [buyer.did]: 'rejected' });
  assert.equal(got.buyer!.length, 1);

  // A buyer nobody can reach: dropped and counted, never thrown.
  const nobody = Ed25519Signer.generate();
  const { didFromPublicKey } = await import('../../src/records/did.js');
  const gone = await provider.sendOffer([didFromPublicKey(nobody.publicKey)], offer(provider.signer, ad.address, { durationMs: 2000 }).bytes, [ad.bytes]);
  assert.deepEqual(Object.values(gone.outcomes), ['unreachable']);
  assert.match(await provider.metrics.registry.getSingleMetricAsString('c0mpute_offers_direct_total'), /outcome="unreachable"\} 1/);
  assert.match(await provider.metrics.registry.getSingleMetricAsString('c0mpute_offers_direct_total'), /outcome="accepted"\} 1/);
});

test('a peer sending invalid offers and outcomes directly pays for them: past disconnectAt it is hung up on and refused; resent and expired offers cost an honest peer nothing', async () => {
  const buyer = await startNode({ syncOnConnect: [], abuse: { disconnectAt: 30, banMs: 60_000 } });
  const honest = await startNode({ syncOnConnect: [] });
  const mallory = await startNode({ syncOnConnect: [] });
  nets.push(buyer, honest, mallory);
  await honest.dial(buyer.addrs()[0]!);
  await mallory.dial(buyer.addrs()[0]!);
  const connected = (n: Network): boolean => buyer.peers().some((p) => p.peerId === n.peerId.toString());

  // Honest: an offer, the same offer 40 times more (DUPLICATE), an offer past its expiry (RECORD_EXPIRED): ignored, never charged.
  const ad = advert(honest.signer);
  const o = offer(honest.signer, ad.address);
  assert.deepEqual((await honest.sendOffer([buyer.did], o.bytes, [ad.bytes])).outcomes, { [buyer.did]: 'accepted' });
  for (let i = 0; i < 40; i++) assert.deepEqual((await honest.sendOffer([buyer.did], o.bytes, [ad.bytes])).outcomes, { [buyer.did]: 'ignored' });
  const drop = (job: string) => buyer.clockDropped!(job).get(honest.did);
  assert.equal(drop(o.record.job), undefined, 'an offer taken, or ignored as a duplicate, is no drop for its dates');
  const t = Date.now();
  // the buyer's own jobs (its buyer announced them: Network.expectOffers)
  const mine = (): string => {
    const j = job(buyer.signer).address;
    buyer.expectOffers!(j);
    return j;
  };
  const [job1, job2, job3] = [mine(), mine(), mine()];
  // an offer for a job this node never published is no buyer's here: not noted, however dated (a peer with made-up
  // jobs would push the notes of the buyer's own out)
  const notMine = offer(honest.signer, ad.address, { issuedAt: t - 120_000, startBy: t - 30_000, expiresAt: t - 60_000 });
  assert.deepEqual(await honest.request(buyer.peerId, OFFER_PROTOCOL, [encodeMessage(notMine.bytes, [ad.bytes])]), [{ verdict: 'ignore', reason: 'RECORD_EXPIRED' }]);
  assert.equal(drop(notMine.record.job), undefined, 'not a job of this node');
  const late = offer(honest.signer, ad.address, { job: job1, issuedAt: t - 120_000, startBy: t - 30_000, expiresAt: t - 60_000 });
  for (let i = 0; i < 10; i++) assert.deepEqual(await honest.request(buyer.peerId, OFFER_PROTOCOL, [encodeMessage(late.bytes, [ad.bytes])]), [{ verdict: 'ignore', reason: 'RECORD_EXPIRED' }]);
  // ignored for its dates, and kept for the buyer's word on this provider (clock-drops.ts): the latest, by the job
  assert.equal(drop(late.record.job)?.code, 'RECORD_EXPIRED');
  assert.ok(Math.abs(drop(late.record.job)!.byMs - 60_000) < 5_000, `expired about 60 s before it came (${drop(late.record.job)!.byMs})`);
  const ahead = offer(honest.signer, ad.address, { job: job2, issuedAt: t + 120_000, startBy: t + 180_000, expiresAt: t + 150_000 });
  assert.deepEqual(await honest.request(buyer.peerId, OFFER_PROTOCOL, [encodeMessage(ahead.bytes, [ad.bytes])]), [{ verdict: 'ignore', reason: 'RECORD_FROM_FUTURE' }]);
  assert.equal(drop(job2)?.code, 'RECORD_FROM_FUTURE');
  assert.ok(Math.abs(drop(job2)!.byMs - 120_000) < 5_000, `dated about 120 s ahead (${drop(job2)!.byMs})`);
  // an offer in date whose attached advert expired (a republish race): ignored with the advert's code, and no note
  const staleAd = advert(honest.signer, { issuedAt: t - 120_000, expiresAt: t - 60_000 });
  const inDate = offer(honest.signer, staleAd.address, { job: job3 });
  assert.deepEqual(await honest.request(buyer.peerId, OFFER_PROTOCOL, [encodeMessage(inDate.bytes, [staleAd.bytes])]), [{ verdict: 'ignore', reason: 'RECORD_EXPIRED' }]);
  assert.equal(drop(job3), undefined, 'the offer itself was in date');
  // another key's offer, dated ahead, is refused before any judgement (NOT_FROM_PEER): no drop is ever put on a provider by another peer
  const other = Ed25519Signer.generate();
  const framed = offer(other, advert(other).address, { job: job2, issuedAt: t + 120_000, startBy: t + 180_000, expiresAt: t + 150_000 });
  await assert.rejects(honest.request(buyer.peerId, OFFER_PROTOCOL, [encodeMessage(framed.bytes, [])]), (e: C0Error) => /NOT_FROM_PEER/.test(e.code));
  assert.deepEqual([...buyer.clockDropped!(job2).keys()], [honest.did]);

  // Mallory: offers with a broken signature, bytes that are no message, another key's offer, a selection with a broken signature.
  const flip = (bytes: Uint8Array): Uint8Array => {
    const b = Uint8Array.from(bytes);
    b[b.length - 1]! ^= 0x01;
    return b;
  };
  const mad = advert(mallory.signer);
  const stranger = Ed25519Signer.generate();
  const invalid = (i: number): [string, Uint8Array] => {
    switch (i % 4) {
      case 0:
        return [OFFER_PROTOCOL, encodeMessage(flip(offer(mallory.signer, mad.address, { durationMs: 1000 + i }).bytes), [mad.bytes])];
      case 1:
        return [i % 8 === 1 ? OFFER_PROTOCOL : OUTCOME_PROTOCOL, Uint8Array.from(randomBytes(64))];
      case 2:
        return [OFFER_PROTOCOL, encodeMessage(offer(stranger, advert(stranger).address, { durationMs: 1000 + i }).bytes, [])];
      default: {
        const winner = 'sha256:' + (i + 1).toString(16).padStart(64, '0');
        const sel = seal(T.selection, { job: 'sha256:' + 'ab'.repeat(32), buyer: mallory.did, policy: 'cheapest', winner, considered: [{ offer: winner, provider: mallory.did }], decidedAt: Date.now() }, mallory.signer);
        return [OUTCOME_PROTOCOL, encodeMessage(flip(sel.bytes), [])];
      }
    }
  };
  let sent = 0;
  for (; sent < 200 && connected(mallory); sent++) {
    const [protocol, data] = invalid(sent);
    const answer = await mallory.request(buyer.peerId, protocol, [data]).then(
      (frames) => `answered ${JSON.stringify(frames)}`,
      (e: C0Error) => e.code,
    );
    assert.ok(answer !== undefined && !answer.startsWith('answered'), `message ${sent} is refused (${answer})`);
  }
  await waitFor(() => !connected(mallory), 5_000, `the buyer to hang up on the sender of invalid messages (${sent} sent)`);
  assert.ok(sent < 40, `a few invalid messages are enough (${sent})`);
  assert.match(await buyer.metrics.registry.getSingleMetricAsString('c0mpute_net_abuse_disconnects_total'), /c0mpute_net_abuse_disconnects_total\S* 1/);
  await mallory.dial(buyer.addrs()[0]!, { timeoutMs: 3_000 }).catch(() => undefined);
  await sleep(500);
  assert.ok(!connected(mallory), 'the gater refuses it for banMs');
  assert.ok(connected(honest), 'the honest peer is still connected');
  assert.deepEqual((await honest.sendOffer([buyer.did], offer(honest.signer, ad.address, { durationMs: 3000 }).bytes, [ad.bytes])).outcomes, { [buyer.did]: 'accepted' });
});
