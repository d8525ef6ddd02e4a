/**
 * Whom an order takes (docs/matching.md "Whom an order takes"; QA qaOrd F2): a policy that ranks offers named for an
 * order is refused before anything is signed (POLICY_NOT_FOR_ORDERS), not dropped without a word; `trusted` and
 * `private` keep a meaning; the reputation floor defaults to a stranger's score for an open bid and to none for a
 * designated order.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Buyer, ORDER_DEFAULT_FLOOR, orderFloor, type JobSpec } from '../../../src/roles/buyer.js';
import { NOW, P } from '../market/fixtures.js';
import { fakeSpec } from './buyer-fakes.js';

const CHECK = { defaultPolicy: 'balanced' as const, orders: true, steward: false, overlay: 'public', stewarded: [] };

test('a ranking policy named for an order is refused POLICY_NOT_FOR_ORDERS; trusted and the node’s default are not', () => {
  for (const policy of ['cheapest', 'fastest', 'balanced'] as const) {
    for (const order of [{}, { designated: P(2).did }]) {
      assert.throws(() => Buyer.checkSpec(fakeSpec({ policy, order }), CHECK, NOW), { code: 'POLICY_NOT_FOR_ORDERS', field: 'policy' });
    }
    // an auction takes it as before
    assert.doesNotThrow(() => Buyer.checkSpec(fakeSpec({ policy }), CHECK, NOW));
  }
  assert.doesNotThrow(() => Buyer.checkSpec(fakeSpec({ policy: 'trusted', order: {} }), CHECK, NOW));
  // the node's own default policy (buyer.policy, here balanced) is not the caller's word: no refusal
  assert.doesNotThrow(() => Buyer.checkSpec(fakeSpec({ order: {}, policy: undefined }), CHECK, NOW));
  for (const bad of [-0.1, 1.5, Number.NaN]) assert.throws(() => Buyer.checkSpec(fakeSpec({ order: { minReputation: bad } }), CHECK, NOW), { code: 'ORDER_MIN_REPUTATION_INVALID' });
});

test('the floor: a stranger’s score for an open bid, none for a designated order, the order’s own when it names one; trusted wants a record', () => {
  const spec = (order: JobSpec['order']): JobSpec => fakeSpec({ order }) as JobSpec;
  assert.equal(ORDER_DEFAULT_FLOOR, 0.5);
  assert.deepEqual(orderFloor(spec({}), 'balanced'), { min: 0.5, recorded: false });
  assert.deepEqual(orderFloor(spec({ designated: P(2).did }), 'balanced'), { min: 0, recorded: false });
  assert.deepEqual(orderFloor(spec({ minReputation: 0 }), 'balanced'), { min: 0, recorded: false });
  assert.deepEqual(orderFloor(spec({ designated: P(2).did, minReputation: 0.7 }), 'balanced'), { min: 0.7, recorded: false });
  assert.deepEqual(orderFloor(spec({}), 'trusted'), { min: 0.5, recorded: true });
});
