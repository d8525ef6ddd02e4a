/**
 * The provider claimer's resend list (docs/matching.md "On the network: posting, claiming, answering"): a claim the
 * buyer did not judge waits to be sent again only while its order is open; once the order is decided or past its
 * deadline the entry goes, and the claimer falls back to its idle pace.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { OpenOrders } from '../../../src/matching/open-orders.js';
import { type Advert, type Job, type Opened } from '../../../src/records/index.js';
import { C0Error } from '../../../src/errors.js';
import { claimerFor } from './claimer-rig.js';
import { NOW, P, advert, job } from '../market/fixtures.js';

const W = 'infer.llm';
const prices = [{ workload: W, unit: 'job', price: { amount: '0.5', currency: 'USD' } }];
const AD: Opened<Advert> = advert(P(1), { prices });
const order = (i: number, over: Partial<Job> = {}): Opened<Job> => job(P(100), { nonce: new Uint8Array([i]), order: { designated: P(1).did }, ...over });
const settle = () => new Promise((r) => setTimeout(r, 5));

describe('the claimer’s resend list', () => {
  it('a claim waiting to be sent again is dropped once its order is decided or past its deadline, so the claimer goes idle', async () => {
    const orders = new OpenOrders();
    const decided = order(61);
    const lapsing = order(62, { deadline: NOW + 60_000 });
    orders.add(decided, NOW);
    orders.add(lapsing, NOW);
    let t = NOW;
    const sent: string[] = [];
    const c = claimerFor(P(1), AD, orders, {
      clock: () => t,
      send: async (j) => {
        sent.push(j.address);
        throw new C0Error('NET_RATE_LIMITED', 'slow down');
      },
    });
    c.tick();
    await settle();
    assert.equal(sent.length, 2);
    assert.equal(c.idle, false, 'two claims wait to be sent again');
    orders.decided(decided.address, NOW); // the buyer's selection is seen before the resend
    t = NOW + 60_000; // and the other order's deadline passes
    c.tick();
    await settle();
    assert.equal(sent.length, 2, 'neither is sent again');
    assert.equal(orders.size, 0);
    assert.equal(c.idle, true, 'nothing open and nothing to resend: the idle pace');
    c.stop();
  });
});
