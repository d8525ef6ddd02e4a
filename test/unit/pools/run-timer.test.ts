/**
 * A member's `op: run` bounds the run with a timer of min(timeoutMs, deadline − now, memberTimeoutMs). memberTimeoutMs
 * has no upper bound and a deadline may be 90 days out: past Node's longest timer (24.8 days) timeoutSignal was a chain
 * of timers kept, with the run's AbortController, until the whole budget passed. It is cleared when the run ends now
 * (as the provider's exec is, 46545c6).
 */
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { seal } from '../../../src/records/envelope.js';
import { T } from '../../../src/records/kinds.js';
import { hashHex } from '../../../src/records/address.js';
import type { Job, Opened } from '../../../src/records/index.js';
import { Rig, MEMBERS, keyOf, clock, buyer, offer, r } from './member-rig.js';
import { watchTimers } from '../util/timer-watch.js';

const DAY = 86_400_000;

const rig = new Rig();

describe('a member’s run timer', () => {
  after(() => rig.close());

  test('op run leaves no timer behind once the run has ended', async () => {
    const w = await rig.world('run-timer', { options: { memberTimeoutMs: 60 * DAY } });
    const A = MEMBERS[0]!;
    const H = MEMBERS[1]!;
    const a = w.members.get(A)!;
    const input = new Uint8Array([1, 2, 3]);
    const now = clock();
    const j = seal(T.job, { workload: 'builtin.sha256', requirements: {}, maxPrice: { amount: '0.01', currency: 'USD' }, announcedAt: now, deadline: now + 80 * DAY, timeoutMs: 2 ** 53 - 1, input: { hash: hashHex(input), size: input.length }, inputSealed: 'no', nonce: new Uint8Array([9, 9]) }, buyer) as Opened<Job>;
    const o = offer(j, H);
    const d = seal(T.poolDispatch, { pool: a.pool, roster: r.address, job: j.address, offer: o.address, member: A, coordinator: H, epoch: 0, issuedAt: clock() }, keyOf(H));
    assert.equal((await a.serve({ op: 'trail', dispatch: d.bytes, job: j.bytes, offer: o.bytes }, H)).ok, 'yes');
    const { pending, restore } = watchTimers(3_600_000);
    try {
      const ans = await a.serve({ op: 'run', dispatch: d.bytes, job: j.bytes, offer: o.bytes, input }, H);
      assert.equal(ans.ok, 'yes', JSON.stringify(ans));
      assert.equal(pending.size, 0, 'the run’s timeout timer ended with the run');
    } finally {
      restore();
    }
  });
});
