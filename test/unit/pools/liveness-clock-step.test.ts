/**
 * A member's liveness of the others (answered a ping within 3 × livenessMs) is a duration it measures for itself, on
 * the monotonic clock (docs/node.md "Clocks: wall and monotonic"); the election's epoch stays on the wall clock, which
 * every member shares. On the wall clock, after NTP stepped member A's fast clock back 10 min, a member that went down
 * right after still counted as live at A for 10 min, and A kept electing it while the others elected someone else.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { Rig, MEMBERS, clock } from './member-rig.js';

const rig = new Rig();
after(() => rig.close());

describe('pool liveness across a wall-clock step', () => {
  it('a member that goes down is not live at a member whose clock stepped back 10 min, 3 × livenessMs later', async () => {
    const [A] = MEMBERS as [string, string, string];
    let offA = 10 * 60_000; // A's wall clock is 10 min fast; its monotonic clock is the rig's (true elapsed time)
    const w = await rig.world('step', { extra: (did) => (did === A ? { clock: () => clock() + offA } : {}) });
    const a = w.members.get(A)!;
    for (const m of w.members.values()) {
      await m.start(); // one ping round each
      m.stop();
    }
    assert.equal(a.live().length, 3);
    offA = 0; // NTP corrects A's clock: it is right now
    const dead = MEMBERS.find((m) => m !== A)!;
    const b = w.members.get(MEMBERS.find((m) => m !== A && m !== dead)!)!;
    w.down.add(dead);
    clock.advance(5000); // livenessMs = 1000: gone after 3 s
    for (const m of [a, b]) {
      await m.start();
      m.stop();
    }
    assert.equal(b.live().includes(dead), false, 'gone at the member that never stepped');
    assert.equal(a.live().includes(dead), false, 'and gone at A too, step or not');
    assert.deepEqual(a.elected(), b.elected(), 'A and B elect the same coordinator');
  });
});
