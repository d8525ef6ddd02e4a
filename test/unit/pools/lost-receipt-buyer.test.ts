/**
 * The coordinator of a pooled job dies after its dispatch is durable and sent (the reviewer's kill -9 mid-dispatch):
 * a surviving member fails the job from the dispatch trail with a POOL_COORDINATOR_LOST receipt it signs. That
 * receipt now reaches the job's buyer directly (provider-wiring.ts poolReceiptPublisher → the provider's receipt
 * delivery → outcome/1), and the buyer's check of a receipt sent directly (src/node/late-receipts.ts) takes it: the
 * buyer selected the dead coordinator's offer on the pool's advert, and the receipt's chain proves its signer a
 * member of that pool. Before, the receipt was only gossiped, and a buyer with the default `network.outcomes: auto`
 * (no receipt topic joined) never held it: `c0mpute jobs` showed the job with no outcome.
 *
 * Three members in one process (member-rig.ts); the buyer's side is checkOwnReceipt over its own records.
 */
import '../../../src/pools/chain.js';
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import { seal, type Opened } from '../../../src/records/envelope.js';
import { T, type Advert, type Job, type Offer, type Receipt, type Selection } from '../../../src/records/kinds.js';
import { didFromPublicKey } from '../../../src/records/did.js';
import { silentLogger } from '../../../src/util/log.js';
import { ReceiptDelivery } from '../../../src/roles/provider/receipt-delivery.js';
import { poolReceiptPublisher } from '../../../src/node/provider-wiring.js';
import { checkOwnReceipt, type OwnReceiptLookups } from '../../../src/node/late-receipts.js';
import { jobChosen, Rig, MEMBERS, buyer, clock, ctx, keyOf, r } from './member-rig.js';
import { pooledAdvert, proof } from './helpers.js';

const rig = new Rig();
const BUYER = didFromPublicKey(buyer.publicKey);

/** Wait until `f` holds (polling), giving up after `ms` with `what`. */
async function until(what: string, f: () => boolean, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!f()) {
    if (Date.now() > end) throw new Error(`gave up waiting for ${what}`);
    await new Promise((res) => setTimeout(res, 10));
  }
}

describe('a lost receipt reaches the buyer', () => {
  after(() => rig.close());

  test('the POOL_COORDINATOR_LOST receipt a surviving member signs is sent to the buyer directly, and the buyer keeps it', async () => {
    const [A, B, C] = MEMBERS as [string, string, string];
    // B is the coordinator the buyer selected: its pooled advert, its offer on it, the buyer's selection
    const adB = seal(T.advert, { ...pooledAdvert(proof(r, keyOf(B))), workloads: ['builtin.sha256'], issuedAt: clock() - 1000 }, keyOf(B)) as Opened<Advert>;
    const { job: j, input } = jobChosen((m) => m !== B);
    const now = clock();
    const ob = seal(T.offer, { job: j.address, advert: adB.address, price: { amount: '0.009', currency: 'USD' }, durationMs: 1000, issuedAt: now, startBy: now + 10_000, expiresAt: now + 10_000 }, keyOf(B)) as Opened<Offer>;
    const sel = seal(T.selection, { job: j.address, buyer: BUYER, policy: 'cheapest', winner: ob.address, considered: [{ provider: B, offer: ob.address }], decidedAt: now }, buyer) as Opened<Selection>;
    const held = new Map<string, Opened>([j, ob, adB].map((x) => [x.address, x]));
    const lookups: OwnReceiptLookups = {
      did: BUYER,
      job: async (a) => held.get(a) as Opened<Job> | undefined,
      selections: async (job) => (job === j.address ? [sel] : []),
      offer: async (a) => held.get(a) as Opened<Offer> | undefined,
      advert: (a) => held.get(a) as Opened<Advert> | undefined,
    };
    // The buyer's side of outcome/1: what its check takes it keeps (and answers accepted), else it ignores it.
    const buyerKept: Array<Opened<Receipt>> = [];
    const buyerIgnored: string[] = [];
    const gossiped: Array<Opened<Receipt>> = [];
    const deliveries = new Map<string, ReceiptDelivery>();
    const w = await rig.world('lost-to-buyer', {
      intercept: async (from, _to, frame) => {
        if (from === B && frame.op === 'run') throw new C0Error('TEST_CRASH', 'B dies after its dispatch is durable and sent');
        return undefined;
      },
      extra: (did) => {
        const delivery = new ReceiptDelivery({
          clock,
          log: silentLogger(),
          self: did,
          send: async (to, rec) => {
            assert.equal(to, BUYER);
            try {
              await checkOwnReceipt(rec, lookups, clock());
              buyerKept.push(rec);
              return 'accepted';
            } catch (e) {
              buyerIgnored.push((e as C0Error).code);
              return 'ignored';
            }
          },
        });
        deliveries.set(did, delivery);
        return { publishReceipt: poolReceiptPublisher({ addEvidence: async () => undefined, publish: async (rec) => gossiped.push(rec), deliver: (rec) => void delivery.deliver(rec) }) };
      },
    });
    try {
      await w.members.get(B)!.run(j, ob, ctx(input)).catch(() => undefined);
      w.down.add(B);
      clock.advance(10_000);
      for (const m of [A, C]) await w.members.get(m)!.recover();
      assert.equal(gossiped.length, 1, 'one lost receipt signed (and gossiped, as before)');
      const lost = gossiped[0]!;
      assert.equal(lost.record.failure?.code, 'POOL_COORDINATOR_LOST');
      assert.notEqual(lost.signer, B, 'signed by a surviving member, not the coordinator the buyer selected');
      await until('the buyer to get the lost receipt', () => buyerKept.length + buyerIgnored.length > 0);
      assert.deepEqual(buyerIgnored, [], 'not ignored RECEIPT_NOT_SELECTED');
      assert.deepEqual(buyerKept.map((x) => x.address), [lost.address]);
      assert.equal(deliveries.get(lost.signer)!.size, 0, 'answered: no longer waiting');
    } finally {
      for (const d of deliveries.values()) d.stop();
    }
  });
});
