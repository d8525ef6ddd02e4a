/**
 * Re-gossip after a heal (src/net/heal.ts, docs/network.md "Sync after a
 * partition"): a record a sync brought is forwarded only when it was issued
 * after this node joined; a kind without a validity window never is.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { regossipAfterSync } from '../../../src/net/heal.js';
import { T } from '../../../src/records/kinds.js';

test('regossipAfterSync: issued after joining → forward; before (what a joining node syncs) → not; no window → not', () => {
  const joinedAt = 1_800_000_000_000;
  const advert = (issuedAt: number) => ({ type: T.advert, record: { issuedAt, expiresAt: issuedAt + 600_000 } });
  assert.equal(regossipAfterSync(advert(joinedAt + 1), joinedAt), true);
  assert.equal(regossipAfterSync(advert(joinedAt), joinedAt), true);
  assert.equal(regossipAfterSync(advert(joinedAt - 1), joinedAt), false);
  assert.equal(regossipAfterSync({ type: T.presence, record: { issuedAt: joinedAt + 5, windowMs: 15_000 } }, joinedAt), true);
  assert.equal(regossipAfterSync({ type: T.job, record: { announcedAt: joinedAt - 5, deadline: joinedAt + 60_000 } }, joinedAt), false);
  assert.equal(regossipAfterSync({ type: 'pool/1', record: {} }, joinedAt), false);
  assert.equal(regossipAfterSync(advert(joinedAt + 1), Infinity), false, 'not started: nothing forwarded');
});
