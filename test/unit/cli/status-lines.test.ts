/**
 * Status lines of a private overlay's roles (QA pass, session 48). `c0mpute steward status` names the buyer's side of
 * each queued claim (docs/overlays.md "the queue after a restart"): a claim restored after a restart whose buyer has
 * not asked again printed "DEVICES_HELD, waiting 7 s" while the JSON said `buyer: away`, and it left the line silently
 * when its grace ended. `c0mpute witness status` gives its last cosign or refusal an age.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { queuedLine, teamLines, type TeamRow } from '../../../src/cli/commands/steward.js';

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

test('the team table is in tree order, indented by depth, and a parent is followed by the totals of all below it', () => {
  const T = (id: string, parent: string | undefined, spent: number, reserved = 0, held = 0, open = 0): TeamRow => ({ id, ...(parent ? { parent } : {}), priority: 1, guarantee_uj: 100e6, guarantee_devices: 2, spent_uj: spent, reserved_uj: reserved, borrowed_uj: 0, held_devices: held, open_claims: open });
  // alphabetical order interleaved the two roots' teams, and the root read 0.0 J spent beside teams that spent
  const lines = teamLines([T('acme', undefined, 0), T('team-b', 'acme', 50e6, 10e6, 1, 1), T('other', undefined, 0), T('team-a', 'acme', 150e6), T('nightly', 'team-a', 20e6), T('x', 'other', 5e6)]);
  const names = lines.slice(1).map((l) => l.slice(0, 16).trimEnd());
  assert.deepEqual(names, ['acme', '  (all below)', '  team-a', '    (all below)', '    nightly', '  team-b', 'other', '  (all below)', '  x']);
  const cols = (l: string) => l.slice(45).trim().split(/\s{2,}/);
  // acme's own claims: none; all below it: team-a 150 + nightly 20 + team-b 50 spent, team-b's open claim
  assert.deepEqual(cols(lines[1]!), ['0.0 J', '0.0 J', '0.0 J', '0', '0']);
  assert.deepEqual(cols(lines[2]!), ['220.0 J', '10.0 J', '0.0 J', '1', '1']);
  assert.deepEqual(cols(lines[4]!), ['20.0 J', '0.0 J', '0.0 J', '0', '0']);
  assert.deepEqual(cols(lines[8]!), ['5.0 J', '0.0 J', '0.0 J', '0', '0']);
  // a leaf has no totals line; a parent missing from the list leaves its children as roots, not lost
  assert.deepEqual(teamLines([T('orphan', 'gone', 1e6)]).slice(1).map((l) => l.slice(0, 16).trimEnd()), ['orphan']);
});
