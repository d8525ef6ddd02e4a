/**
 * Anti-entropy within the member's loop (second-round review; docs/pools.md "Catching up on the trail"): a long pull
 * at the start does not leave the member counting only itself live (it pings again before electing); the step's time
 * bound holds within a page, between its fetches; and the ping loop does not wait for a step. The rig's fake clock
 * stands for elapsed time (member-rig.ts), so "a long pull" is the clock moved on inside a call.
 */
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { seal } from '../../../src/records/envelope.js';
import { T } from '../../../src/records/kinds.js';
import { pino } from 'pino';
import { coordinatorRanking, epochOf, selectMember } from '../../../src/pools/choice.js';
import { SYNC_FETCH_KEYS, SYNC_PERIOD_MS, SYNC_START_LIVENESS } from '../../../src/roles/pool-member/sync.js';
import type { PoolReply } from '../../../src/roles/pool-member/member.js';
import { Rig, MEMBERS, clock, job, keyOf, offer, pooledReceipt, r } from './member-rig.js';

const rig = new Rig();
const [A, B] = MEMBERS as [string, string, string];
const LIVENESS = 1000;

async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 300 && !cond(); i++) await new Promise((res) => setTimeout(res, 50));
  assert.ok(cond(), what);
}

describe('anti-entropy within the member loop', () => {
  after(() => rig.close());

  test('a start whose pull outlasts liveness pings again: the member does not count only itself live, nor elect itself', async () => {
    // An epoch whose coordinator, with every member live, is not A (A alone live elects itself).
    while (coordinatorRanking(r.signer, epochOf(clock() + 4 * LIVENESS, r.record.epochMs), MEMBERS)[0] === A) clock.advance(r.record.epochMs);
    let moved = false;
    const changes: Array<{ coordinator?: string }> = [];
    const log = pino({ level: 'info' }, { write: (line: string) => void (JSON.parse(line).msg === 'pool: epoch or coordinator changed' && changes.push(JSON.parse(line))) });
    const w = await rig.world('sync-long-start');
    const a = await rig.addMember(w, 'sync-long-start-A', A, {
      intercept: async (from, _to, frame) => {
        if (from === A && frame.op === 'sync' && !moved) {
          moved = true;
          clock.advance(4 * LIVENESS);
        }
        return undefined;
      },
      extra: (did) => (did === A ? { log } : {}),
    });
    await a.start();
    a.stop();
    assert.ok(moved);
    assert.deepEqual(a.live().sort(), [...MEMBERS].sort(), 'every member live after the start');
    assert.equal(changes[0]?.coordinator, coordinatorRanking(r.signer, a.epoch(), MEMBERS)[0], 'its first election counts every member live');
  });

  test('the step’s time bound holds between the fetches of one page', async () => {
    const w0 = await rig.world('sync-bound');
    const b = w0.members.get(B)!;
    const tb = b.historyStores()[0]!;
    for (let i = 0; i < SYNC_FETCH_KEYS + 8; i++) {
      const jj = job();
      const o = offer(jj.job, B);
      const d = seal(T.poolDispatch, { pool: r.signer, roster: r.address, job: jj.job.address, offer: o.address, member: selectMember(jj.job.address, MEMBERS), coordinator: B, epoch: 0, issuedAt: clock() }, keyOf(B));
      await tb.record(jj.job.address, B, { dispatch: d.bytes, job: jj.job.bytes, offer: o.bytes }, jj.job.record.deadline);
      await tb.close(jj.job.address, B, 'failed', pooledReceipt(b, jj.job, o, B, { failure: { code: 'X', message: 'x' } }).bytes);
    }
    const ops: string[] = [];
    const a2 = await rig.addMember(w0, 'sync-bound-A', A, {
      intercept: async (from, to, frame) => {
        if (from !== A || to !== B || (frame.op !== 'sync' && frame.op !== 'fetch')) return undefined;
        ops.push(frame.op);
        // The first fetch takes the whole of the start's time.
        if (frame.op === 'fetch' && ops.filter((x) => x === 'fetch').length === 1) clock.advance(SYNC_START_LIVENESS * LIVENESS + 1);
        return undefined;
      },
    });
    await a2.start();
    a2.stop();
    assert.deepEqual(ops.slice(0, 3), ['sync', 'fetch', 'sync'], 'no second fetch in the start step: the next step lists the page again');
    assert.equal((await a2.historyStores()[0]!.all()).length, SYNC_FETCH_KEYS + 8, 'the rest came at the next step');
  });

  test('the ping loop goes on while a sync step waits on a member', async () => {
    let hang = false;
    let release: (() => void) | undefined;
    const held = new Promise<void>((res) => (release = res));
    let pings = 0;
    let waiting = false;
    const w = await rig.world('sync-loop-held');
    // A member not started before (the world's are started and stopped): its loop runs.
    const a = await rig.addMember(w, 'sync-loop-held-A', A, {
      intercept: async (from, _to, frame): Promise<PoolReply | undefined> => {
        if (from !== A) return undefined;
        if (frame.op === 'ping') pings++;
        if (frame.op === 'sync' && hang) {
          waiting = true;
          await held;
        }
        return undefined;
      },
    });
    await a.start();
    try {
      hang = true;
      // Every live member is due again at the next round: its step waits on the first one's `sync`.
      clock.advance(SYNC_PERIOD_MS);
      await until(() => waiting, 'a step waits on a member');
      const at = pings;
      await until(() => pings >= at + 4, 'two more rounds of pings while the step waits');
    } finally {
      a.stop();
      release!();
    }
  });
});
