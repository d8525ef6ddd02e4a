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
import { Ed25519Signer } from '../../src/records/index.js';
import { advert, link, offer, startNode, stopAll, waitFor } from './net-helpers.js';

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
