/**
 * Status lines of a private overlay's roles (QA pass, session 48). `c0mpute steward status` names the buyer's side of
 * each queued claim (docs/overlays.md "the queue after a restart"): a claim restored after a restart whose buyer has
 * not asked again printed "DEVICES_HELD, waiting 7 s" while the JSON said `buyer: away`, and it left the line silently
 * when its grace ended. `c0mpute witness status` gives its last cosign or refusal an age.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { queuedLine } from '../../../src/cli/commands/steward.js';

test('a queued claim says how long it has been in line and whether its buyer is there', () => {
  const q = { claim: 'sha256:3c6c0ecc82131abcdef', entitlement: 'team-b', reason: 'DEVICES_HELD', waitingMs: 7_200 };
  assert.equal(queuedLine({ ...q, buyer: 'away' }), 'queued sha256:3c6c0ecc82131… (team-b): DEVICES_HELD, in line 7 s; buyer: away (restored after a restart; it leaves the line unless its buyer asks again within steward.reaskGraceMs)');
  assert.equal(queuedLine({ ...q, buyer: 'waiting' }), 'queued sha256:3c6c0ecc82131… (team-b): DEVICES_HELD, in line 7 s; buyer: waiting');
  // a steward before the field: as before, without the buyer's side
  assert.equal(queuedLine(q), 'queued sha256:3c6c0ecc82131… (team-b): DEVICES_HELD, in line 7 s');
});

test('`witness status` gives the last cosign or refusal its age: a refusal stays the last word until the next head, and read as a problem now after the steward was put right', async () => {
  const { agoText } = await import('../../../src/cli/commands/witness.js');
  assert.equal(agoText(12_400), '(12 s ago)');
  assert.equal(agoText(4 * 60_000), '(4 min ago)');
  assert.equal(agoText(3 * 3_600_000), '(3 h ago)');
  assert.equal(agoText(-500), '(0 s ago)', 'a clock a little behind the daemon’s is now, not the future');
});
