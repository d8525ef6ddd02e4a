/**
 * RosterState (src/roles/pool-member/roster-state.ts; docs/pools.md "A new
 * roster reaches running members"): a running member adopts only its own
 * countersignature of a newer roster of its pool; a newer roster heard from
 * another member stops it quoting (behind), and one without it removes it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import { RosterState } from '../../../src/roles/pool-member/roster-state.js';
import { NOW, signerFrom } from '../records/fixtures.js';
import { MEMBERS, keyOf, membership, roster } from './helpers.js';

const [a, b, c] = MEMBERS as [string, string, string];
const code = (c: string) => (e: unknown) => e instanceof C0Error && e.code === c;

test('adopt: own countersignature of a newer roster only; the stale, foreign, unsigned and left are refused and change nothing', () => {
  const r1 = roster();
  const s = new RosterState(a, r1, membership(r1, keyOf(a)));
  const r2 = roster({ seq: 2, members: [{ did: a }, { did: b }] });
  assert.throws(() => s.adopt(r1, membership(r1, keyOf(a)), NOW), code('POOL_ROSTER_STALE'));
  assert.throws(() => s.adopt(roster({ seq: 2, signer: signerFrom(77) }), membership(r2, keyOf(a)), NOW), code('POOL_WRONG_POOL'));
  assert.throws(() => s.adopt(r2, membership(r2, keyOf(b)), NOW), code('POOL_MEMBERSHIP_NOT_SIGNER'));
  assert.throws(() => s.adopt(r2, membership(r1, keyOf(a)), NOW), code('POOL_MEMBERSHIP_WRONG_ROSTER'));
  assert.throws(() => s.adopt(r2, membership(r2, keyOf(a), 'left'), NOW), code('POOL_MEMBER_LEFT'));
  assert.equal(s.seq, 1);
  const old = s.adopt(r2, membership(r2, keyOf(a)), NOW);
  assert.equal(old.record.seq, 1);
  assert.equal(s.seq, 2);
  assert.equal(s.behind, false);
  assert.equal(s.removed, false);
});

test('heard: a newer roster still listing the member makes it behind; one without it removes it; joining it clears behind', () => {
  const r1 = roster();
  const s = new RosterState(c, r1, membership(r1, keyOf(c)));
  assert.equal(s.heard(r1, NOW), false);
  const r2 = roster({ seq: 2 });
  assert.equal(s.heard(r2, NOW), true);
  assert.equal(s.behind, true);
  assert.equal(s.removed, false);
  s.adopt(r2, membership(r2, keyOf(c)), NOW);
  assert.equal(s.behind, false);
  assert.equal(s.heard(roster({ seq: 3, members: [{ did: a }, { did: b }] }), NOW), true);
  assert.equal(s.behind, true);
  assert.equal(s.removed, true);
  assert.equal(s.heard(roster({ seq: 2, members: [{ did: c }] }), NOW), false, 'an older one is ignored');
  assert.equal(s.heard(roster({ seq: 9, signer: signerFrom(78) }), NOW), false, 'another pool’s is ignored');
});

test('leave: only this member’s own `left` record of the roster in use or a newer one; the others are refused and change nothing', () => {
  const r1 = roster();
  const r2 = roster({ seq: 2 });
  const s = new RosterState(a, r2, membership(r2, keyOf(a)));
  assert.throws(() => s.leave(r1, membership(r1, keyOf(a), 'left')), code('POOL_ROSTER_STALE'));
  assert.throws(() => s.leave(roster({ seq: 2, signer: signerFrom(77) }), membership(r2, keyOf(a), 'left')), code('POOL_WRONG_POOL'));
  assert.throws(() => s.leave(r2, membership(r2, keyOf(b), 'left')), code('POOL_MEMBERSHIP_NOT_SIGNER'));
  assert.throws(() => s.leave(r2, membership(r1, keyOf(a), 'left')), code('POOL_MEMBERSHIP_WRONG_ROSTER'));
  assert.throws(() => s.leave(r2, membership(r2, keyOf(a))), code('POOL_MEMBERSHIP_NOT_LEFT'));
  const r3 = roster({ seq: 3, members: [{ did: b }, { did: c }] });
  assert.throws(() => s.leave(r3, membership(r3, keyOf(a), 'left')), code('POOL_NOT_MEMBER'));
  assert.equal(s.left, undefined);
  assert.equal(s.hasLeft(a), false);
  const left = membership(r2, keyOf(a), 'left');
  assert.equal(s.leave(r2, left).membership.address, left.address);
  assert.equal(s.hasLeft(a), true);
  assert.equal(s.leave(r2, membership(r2, keyOf(a), 'left')).membership.address, left.address, 'leaving again keeps the first record');
  // Joining a newer roster later makes it a member again.
  const r4 = roster({ seq: 4 });
  s.adopt(r4, membership(r4, keyOf(a)), NOW);
  assert.equal(s.left, undefined);
  // A member whose kept membership is the `left` one starts left (restart after leaving).
  const restarted = new RosterState(a, r2, left);
  assert.equal(restarted.left?.membership.address, left.address);
});

test('memberLeft: another member’s own `left` record drops it while the roster in use is no newer; forged ones are refused', () => {
  const r1 = roster();
  const s = new RosterState(a, r1, membership(r1, keyOf(a)));
  assert.throws(() => s.memberLeft(b, r1, membership(r1, keyOf(c), 'left')), code('POOL_MEMBERSHIP_NOT_SIGNER'));
  assert.throws(() => s.memberLeft(b, r1, membership(r1, keyOf(b))), code('POOL_MEMBERSHIP_NOT_LEFT'));
  assert.throws(() => s.memberLeft(b, roster({ signer: signerFrom(77) }), membership(r1, keyOf(b), 'left')), code('POOL_WRONG_POOL'));
  assert.equal(s.hasLeft(b), false);
  assert.equal(s.memberLeft(b, r1, membership(r1, keyOf(b), 'left')), true);
  assert.equal(s.memberLeft(b, r1, membership(r1, keyOf(b), 'left')), false, 'already out');
  assert.equal(s.hasLeft(b), true);
  assert.equal(s.hasLeft(c), false);
  // A newer roster this member joins counts b again (b may have joined it).
  const r2 = roster({ seq: 2 });
  s.adopt(r2, membership(r2, keyOf(a)), NOW);
  assert.equal(s.hasLeft(b), false);
});
