/**
 * A roster past its `expiresAt` (docs/pools.md "Roster expiry"): a running member neither adopts one (`pool-provider
 * join` → POOL_ROSTER_EXPIRED) nor stops quoting for one heard from another member; the roster in use expiring is
 * logged (a warning before, an error once past it, at start too), the member quotes nothing and `status` says why.
 * Before, adopt()/heard() checked seq and chain only: one join with an expired roster stopped the whole pool, silently.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { C0Error } from '../../../src/errors.js';
import { RosterState } from '../../../src/roles/pool-member/roster-state.js';
import { NOW } from '../records/fixtures.js';
import { MEMBERS, keyOf, membership, roster } from './helpers.js';
import { Rig, clock, job } from './member-rig.js';

const DAY = 24 * 3600_000;
const [a] = MEMBERS as [string];
const code = (c: string) => (e: unknown) => e instanceof C0Error && e.code === c;
/** A roster of the three MEMBERS (30 days' lifetime) that expires `inMs` after `now`. */
const expiring = (seq: number, now: number, inMs: number) => roster({ seq, issuedAt: now - 30 * DAY + inMs });

test('RosterState: an expired roster is refused at adopt (POOL_ROSTER_EXPIRED, nothing changes) and ignored when heard', () => {
  const r1 = roster();
  const s = new RosterState(a, r1, membership(r1, keyOf(a)));
  const old = expiring(2, NOW, -1000);
  assert.throws(() => s.adopt(old, membership(old, keyOf(a)), NOW), code('POOL_ROSTER_EXPIRED'));
  assert.equal(s.seq, 1);
  assert.equal(s.heard(old, NOW), false);
  assert.equal(s.behind, false, 'an expired roster heard does not stop this member quoting');
  assert.equal(s.newest.record.seq, 1);
});

test('a member on a roster that expires: warned before, an error once past it, no quotes, status says why; an expired roster is not adopted, a renewed one is', async () => {
  const rig = new Rig();
  const start = clock();
  const lines: Array<{ level: number; msg: string }> = [];
  const log = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s) as { level: number; msg: string }) });
  try {
    const r1 = expiring(1, start, 10_000);
    const w = await rig.world('expiry', { roster: r1, extra: () => ({ log }) });
    const m = w.members.get(a)!;
    await m.tick();
    let st = await m.status();
    assert.equal(st.quoting, true);
    assert.equal((st.roster as { expiresAt: number }).expiresAt, r1.record.expiresAt);
    assert.ok(lines.some((l) => l.level === 40 && /roster seq 1 in use expires at/.test(l.msg)), 'a warning within a day of the expiry');
    const { job: j } = job();
    assert.equal(w.members.get(m.elected().coordinator!)!.mayQuote(j), true);

    clock.advance(11_000);
    for (const x of w.members.values()) await x.tick();
    for (const x of w.members.values()) await x.tick();
    st = await m.status();
    assert.equal(st.quoting, false);
    assert.equal(st.notQuoting, 'expired');
    assert.equal(lines.filter((l) => l.level === 50 && /roster seq 1 in use expired at/.test(l.msg)).length, 3, 'one error per member, each once');
    for (const x of w.members.values()) assert.equal(x.mayQuote(job().job), false);

    // a `pool-provider join` with an expired roster is refused, and changes nothing
    const expired = expiring(2, clock(), -1000);
    await assert.rejects(m.adopt(expired.bytes, membership(expired, keyOf(a)).bytes), code('POOL_ROSTER_EXPIRED'));
    assert.equal(((await m.status()).roster as { seq: number }).seq, 1);
    // a renewed one is adopted, sent to the others, and the member quotes again once they join it too
    const renewed = expiring(3, clock(), 30 * DAY);
    for (const [did, x] of w.members) await x.adopt(renewed.bytes, membership(renewed, keyOf(did)).bytes);
    st = await m.status();
    assert.equal(st.quoting, true);
    assert.equal(st.notQuoting, undefined);
  } finally {
    clock.set(start);
    await rig.close();
  }
});
