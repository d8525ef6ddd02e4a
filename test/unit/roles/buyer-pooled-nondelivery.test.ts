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
import { Buyer, type BuyerDeps, type Decision, type JobSpec, type RankedCandidate } from '../../../src/roles/buyer.js';
import { C0Error } from '../../../src/errors.js';
import '../../../src/pools/chain.js';
import { nonDeliveryProvider } from '../../../src/reputation/nondelivery.js';
import { seal, T, type Advert, type Job, type NonDelivery, type Opened, type Selection } from '../../../src/records/index.js';
import { NOW, P, advert, offer } from '../market/fixtures.js';
import { MEMBERS, POOL, keyOf, pooledAdvert, proof, roster } from '../pools/helpers.js';

const ME = P(750);
const member = MEMBERS[0]!;
const mk = keyOf(member);
const POOLED = seal(T.advert, { ...pooledAdvert(proof(roster(), mk)), workloads: ['infer.llm'], issuedAt: NOW - 1000 }, mk) as Opened<Advert>;
const PLAIN = seal(T.advert, { ...advert(P(751)).record }, mk) as Opened<Advert>;

/** Run one job whose only candidate, the member's offer citing `cited`, is unreachable; what the buyer published. */
async function failedRun(cited: Opened<Advert>, held: { byAddress: boolean; byDid: boolean }) {
  const noop = () => {};
  const log = { info: noop, warn: noop, debug: noop, error: noop, child: () => log };
  const published: Array<{ kind: string; rec: Opened }> = [];
  const stored: Opened[] = [];
  let cand: RankedCandidate | undefined;
  const deps = {
    signer: ME.signer,
    did: ME.did,
    clock: () => NOW,
    log,
    collectWindowMs: 10,
    enoughOffers: 1,
    defaultPolicy: 'trusted',
    adverts: (did: string) => (held.byDid && did === member ? cited : undefined),
    advertAt: (address: string) => (held.byAddress && address === cited.address ? cited : undefined),
    publish: async (kind: string, rec: Opened) => void published.push({ kind, rec }),
    store: async (rec: Opened) => void stored.push(rec),
    waitForOffers: async () => 1,
    market: {
      decide: async (job: Opened<Job>, _p: unknown, _now: number, excluded?: ReadonlySet<string>) => {
        cand ??= { provider: member, offer: offer({ did: member, signer: mk } as never, job, cited), total: 1, scores: {} };
        return { ranked: excluded?.has(member) ? [] : [cand], result: {}, market: {} } as unknown as Decision;
      },
      offerCount: () => 1,
      signSelection: (job: Opened<Job>, _d: Decision, w: RankedCandidate, now: number) =>
        seal(T.selection, { job: job.address, buyer: ME.did, policy: 'trusted', winner: w.offer.address, considered: [{ provider: w.provider, offer: w.offer.address }], decidedAt: now }, ME.signer) as Opened<Selection>,
    },
    exec: async function* () {
      throw new C0Error('NET_STREAM_FAILED', 'gone');
      yield new Uint8Array(); // unreachable: makes this a generator
    },
  } as unknown as BuyerDeps;
  const spec = { workload: 'infer.llm', maxPrice: { amount: '1', currency: 'USD' }, deadlineMs: 60_000, input: new Uint8Array(4), policy: 'trusted' } as unknown as JobSpec;
  const result = await new Buyer(deps).run(spec);
  const nds = published.filter((p) => p.kind.startsWith('nondelivery'));
  assert.equal(nds.length, 1, 'one non-delivery published');
  const nd = nds[0]!.rec as Opened<NonDelivery>;
  assert.equal(result.attempts[0]!.nondelivery, nd.address);
  assert.ok(stored.some((r) => r.address === nd.address), 'kept as evidence');
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
