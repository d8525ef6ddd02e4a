/**
 * No connection of the winner's key serves exec/1 (NET_PROTOCOL_UNSUPPORTED: the net layer tried each connection of
 * the key and each address where a process of it served exec/1; docs/node.md "A provider whose key two processes
 * hold"): the attempt says so, not "unreachable or gone", and still signs an `unreachable` non-delivery. The key
 * quoted, and its holder answers for every process that holds it; were it free, a key could win on price and never
 * serve.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import { P } from '../market/fixtures.js';
import { attemptRig } from './buyer-attempt-rig.js';

test('an exec stream no process of the key speaks: its own outcome, and the key’s `unreachable` non-delivery', async () => {
  // eslint-disable-next-line require-yield
  const { mk, attempt } = attemptRig(P(761), async function* () {
    throw new C0Error('NET_PROTOCOL_UNSUPPORTED', 'cannot open /c0mpute/exec/1 to 12D3KooW…: the peer does not speak it');
  });
  const r = await attempt(mk(P(762), 1));
  assert.equal(r.outcome, "no connection of the provider's key serves exec/1: NET_PROTOCOL_UNSUPPORTED");
  assert.equal(r.nondelivery, 'unreachable');
});
