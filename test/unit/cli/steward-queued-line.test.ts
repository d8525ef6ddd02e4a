/**
 * `c0mpute steward status` names the buyer's side of each queued claim (docs/overlays.md "the queue after a restart"):
 * a claim restored after a restart whose buyer has not asked again printed "DEVICES_HELD, waiting 7 s" while the JSON
 * said `buyer: away`, and it left the line silently when its grace ended (QA pass, session 48).
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
