/**
 * Re-gossip after a heal (src/net/heal.ts, docs/network.md "Sync after a
 * partition"): an advert a sync brought is forwarded only when it was issued
 * after this node joined and its signer had an advert accepted here before;
 * a key new to the node (a Sybil flood's material), presence and other kinds
 * never are.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { regossipAfterSync } from '../../../src/net/heal.js';
import { T } from '../../../src/records/kinds.js';

test('regossipAfterSync: a known advertiser’s advert issued after joining → forward; before joining, a new key, presence → not', () => {
  const joinedAt = 1_800_000_000_000;
  const advert = (issuedAt: number, knownAdvertiser?: boolean) => ({ rec: { type: T.advert, record: { issuedAt, expiresAt: issuedAt + 600_000 } }, ...(knownAdvertiser === undefined ? {} : { knownAdvertiser }) });
  assert.equal(regossipAfterSync(advert(joinedAt + 1, true), joinedAt), true);
  assert.equal(regossipAfterSync(advert(joinedAt, true), joinedAt), true);
  assert.equal(regossipAfterSync(advert(joinedAt - 1, true), joinedAt), false, 'what a joining node syncs');
  assert.equal(regossipAfterSync(advert(joinedAt + 1, false), joinedAt), false, 'a key new to this node');
  assert.equal(regossipAfterSync(advert(joinedAt + 1), joinedAt), false);
  assert.equal(regossipAfterSync({ rec: { type: T.presence, record: { issuedAt: joinedAt + 5, windowMs: 15_000 } }, knownAdvertiser: true }, joinedAt), false);
  assert.equal(regossipAfterSync({ rec: { type: T.job, record: { announcedAt: joinedAt + 5, deadline: joinedAt + 60_000 } }, knownAdvertiser: true }, joinedAt), false);
  assert.equal(regossipAfterSync(advert(joinedAt + 1, true), Infinity), false, 'not started: nothing forwarded');
});
