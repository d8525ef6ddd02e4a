/**
 * A job spec written for an overlay with a steward (it names `entitlement`, `class` or `energy`) on an overlay
 * without one is refused before anything is signed or sent (JOB_ENTITLEMENT_WITHOUT_STEWARD), naming the overlay and
 * this node's overlays that do have a steward. Before, the fields were dropped without a word and the job (and its
 * input) went to the overlay's market, the public one for a node whose primary overlay is public.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Buyer } from '../../../src/roles/buyer.js';
import type { C0Error } from '../../../src/errors.js';
import { NOW, P } from '../market/fixtures.js';
import { buyerOnFakes, fakeSpec } from './buyer-fakes.js';

const ME = P(760);
const PROV = P(761);
const never = () => (async function* () {})();

for (const [name, extra] of [
  ['entitlement', { entitlement: 'team-a' }],
  ['class', { class: 'sha256-batch' }],
  ['energy', { energy: { uj: 100_000_000, grade: 'Estimator' } }],
] as const) {
  test(`a spec naming ${name} on an overlay without a steward is refused before anything is signed or sent`, async () => {
    const f = buyerOnFakes(ME, { providers: [PROV], exec: never, deps: { overlay: 'public', stewardedOverlays: ['acme'] } });
    for (const attempt of [() => f.buyer.run(fakeSpec(extra)), async () => f.buyer.check(fakeSpec(extra))]) {
      await assert.rejects(attempt(), (e: C0Error) => {
        assert.equal(e.code, 'JOB_ENTITLEMENT_WITHOUT_STEWARD');
        assert.equal(e.field, name);
        assert.match(e.message, /overlay public has no steward/);
        assert.match(e.message, /--overlay acme/);
        return true;
      });
    }
    assert.deepEqual([f.published.length, f.stored.length, f.execs.length], [0, 0, 0]);
  });
}

test('with no overlay of this node stewarded, the refusal says so; without a daemon (checkSpec) the same', () => {
  const spec = fakeSpec({ entitlement: 'team-a' });
  assert.throws(() => Buyer.checkSpec(spec, { defaultPolicy: 'trusted', orders: true, steward: false, overlay: 'public', stewarded: [] }, NOW), (e: C0Error) => {
    assert.equal(e.code, 'JOB_ENTITLEMENT_WITHOUT_STEWARD');
    assert.match(e.message, /none of this node's overlays has a steward/);
    return true;
  });
  assert.throws(() => Buyer.checkSpec(spec, { defaultPolicy: 'trusted', orders: true, steward: false, overlay: 'public', stewarded: ['acme', 'lab'] }, NOW), /--overlay acme/);
  // on the overlay with the steward it is what admission needs
  assert.doesNotThrow(() => Buyer.checkSpec(spec, { defaultPolicy: 'trusted', orders: false, steward: true, overlay: 'acme', stewarded: ['acme'] }, NOW));
  // and a spec without them on an overlay with a steward is refused early too (it could never be admitted)
  assert.throws(() => Buyer.checkSpec(fakeSpec(), { defaultPolicy: 'trusted', orders: false, steward: true, overlay: 'acme', stewarded: ['acme'] }, NOW), { code: 'JOB_NEEDS_ENTITLEMENT' });
});

test('a plain spec on an overlay without a steward runs as before', async () => {
  const f = buyerOnFakes(ME, { providers: [PROV], exec: never, deps: { overlay: 'public', stewardedOverlays: ['acme'] } });
  assert.doesNotThrow(() => f.buyer.check(fakeSpec()));
});
