/**
 * A provider holds one large input per connection (docs/network.md "Direct streams"); a second from the same buyer
 * while the first is held is refused with NET_BUFFER_LIMIT. That refusal is the buyer's own doing: it signs no
 * non-delivery against the provider for it. The same refusal with none of our streams in flight is the provider's
 * (its total budget is full) and counts as before.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import { BUFFER_LIMIT } from '../../../src/net/byte-budget.js';
import { P } from '../market/fixtures.js';
import { attemptRig, firstHeld } from './buyer-attempt-rig.js';

const ME = P(741);
const PROV = P(742);

test('NET_BUFFER_LIMIT for a second of our inputs signs no non-delivery; alone it still does', async () => {
  // the first input is held by the provider while its job runs
  const { exec, release } = firstHeld(async function* () {
    throw new C0Error(BUFFER_LIMIT, "exec peer answered: this connection's streams may hold 25165824 bytes", { detail: { remote: true } });
    yield new Uint8Array(); // unreachable: makes this a generator
  });
  const { mk, attempt } = attemptRig(ME, exec);
  const p1 = attempt(mk(PROV, 1));
  const r2 = await attempt(mk(PROV, 2));
  assert.equal(r2.nondelivery, undefined, 'refused for our own other input: no non-delivery');
  assert.match(r2.outcome, /busy with another of our inputs/);
  release();
  const r1 = await p1;
  assert.equal(r1.nondelivery, 'unreachable');
  // nothing of ours in flight now: the provider's own limit, a non-delivery as before
  const r3 = await attempt(mk(PROV, 3));
  assert.equal(r3.nondelivery, 'unreachable');
});
