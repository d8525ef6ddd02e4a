/**
 * The buyer's side of a pooled offer's non-delivery (docs/pools.md
 * "Reputation"): when the winner's offer cites a pooled advert the buyer holds,
 * it signs a c0mpute.nondelivery/2 carrying that advert (it counts against the
 * pool) and publishes it on the `nondelivery2` topic kind, never on
 * `nondelivery` (whose previous-version subscribers would refuse it). Any other
 * offer gets a /1 on `nondelivery`, exactly as before.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import '../../../src/pools/chain.js';
import { nonDeliveryProvider } from '../../../src/reputation/nondelivery.js';
import { seal, T, type Advert, type NonDelivery, type Opened } from '../../../src/records/index.js';
import { NOW, P, advert, offer } from '../market/fixtures.js';
import { buyerOnFakes, fakeSpec } from './buyer-fakes.js';
import { MEMBERS, POOL, keyOf, pooledAdvert, proof, roster } from '../pools/helpers.js';

const ME = P(750);
const member = MEMBERS[0]!;
const mk = keyOf(member);
const POOLED = seal(T.advert, { ...pooledAdvert(proof(roster(), mk)), workloads: ['infer.llm'], issuedAt: NOW - 1000 }, mk) as Opened<Advert>;
const PLAIN = seal(T.advert, { ...advert(P(751)).record }, mk) as Opened<Advert>;

/** Run one job whose only candidate, the member's offer citing `cited`, is unreachable; what the buyer published. */
async function failedRun(cited: Opened<Advert>, held: { byAddress: boolean; byDid: boolean }) {
  const MEMBER = { did: member, signer: mk } as never;
  const f = buyerOnFakes(ME, {
    providers: [MEMBER],
    offerFor: (p, job) => offer(p, job, cited),
    exec: async function* () {
      throw new C0Error('NET_STREAM_FAILED', 'gone');
      yield new Uint8Array(); // unreachable: makes this a generator
    },
    deps: {
      adverts: (did: string) => (held.byDid && did === member ? cited : undefined),
      advertAt: (address: string) => (held.byAddress && address === cited.address ? cited : undefined),
    },
  });
  const result = await f.buyer.run(fakeSpec());
  const nds = f.nondeliveries();
  assert.equal(nds.length, 1, 'one non-delivery published');
  const nd = nds[0]!.rec as Opened<NonDelivery>;
  assert.equal(result.attempts[0]!.nondelivery, nd.address);
  assert.ok(f.stored.some((r) => r.address === nd.address), 'kept as evidence');
  return { kind: nds[0]!.kind, nd };
}

test('an unreachable pool member: a /2 with the pooled advert the offer cites, on the nondelivery2 topic kind, counting against the pool', async () => {
  for (const held of [{ byAddress: true, byDid: false }, { byAddress: false, byDid: true }]) {
    const { kind, nd } = await failedRun(POOLED, held);
    assert.equal(kind, 'nondelivery2', 'never on the /1 topic kind');
    assert.equal(nd.type, T.nondelivery2);
    assert.equal(nd.record.provider, member);
    assert.ok(nd.record.proof.advert && Buffer.from(nd.record.proof.advert).equals(Buffer.from(POOLED.bytes)));
    assert.equal(nonDeliveryProvider(nd), POOL);
  }
});

test('a plain advert, or a pooled one the buyer does not hold: a /1 on the nondelivery topic kind, as before', async () => {
  for (const [cited, held] of [
    [PLAIN, { byAddress: true, byDid: true }],
    [POOLED, { byAddress: false, byDid: false }],
  ] as const) {
    const { kind, nd } = await failedRun(cited, held);
    assert.equal(kind, 'nondelivery');
    assert.equal(nd.type, T.nondelivery);
    assert.equal(nd.record.proof.advert, undefined);
    assert.equal(nonDeliveryProvider(nd), member);
  }
});
