/**
 * What a coordinator says when its `run` stream to a member broke after the member was reached (docs/pools.md "A stream
 * that breaks after the work"; QA qaPnet F5): a member that went away (the new dial fails: killed, stopped, cut off)
 * is told from one that, asked again, holds no answer; both keep the code POOL_MEMBER_UNREACHABLE. Before, both read
 * "was reached, but the stream to it failed".
 */
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import type { PoolReply } from '../../../src/roles/pool-member/member.js';
import { Rig, MEMBERS, ctx, jobChosen, offer } from './member-rig.js';

const rig = new Rig();
const [A, B] = MEMBERS as [string, string, string];

async function failure(name: string, again: () => PoolReply | never): Promise<C0Error> {
  const w = await rig.world(name, {
    intercept: async (from, _to, frame): Promise<PoolReply | undefined> => {
      if (from === A && frame.op === 'run') throw new C0Error('NET_STREAM_FAILED', 'the stream was reset');
      if (from === A && frame.op === 'result') return again();
      return undefined;
    },
  });
  const { job: j, input } = jobChosen((m) => m === B);
  const e = await w.members.get(A)!.run(j, offer(j, A), ctx(input)).then(
    () => assert.fail('the run completed'),
    (x: unknown) => x as C0Error,
  );
  return e;
}

describe('a broken run stream, asked again', () => {
  after(() => rig.close());

  test('the member cannot be dialled again: it went away', async () => {
    const e = await failure('gone', () => {
      throw new C0Error('NET_DIAL_FAILED', 'connection refused');
    });
    assert.equal(e.code, 'POOL_MEMBER_UNREACHABLE');
    assert.match(e.message, /went away: the stream to it broke \(NET_STREAM_FAILED\) and it could not be reached again \(NET_DIAL_FAILED\)/);
  });

  test('the member answers, but holds no result of the dispatch', async () => {
    const e = await failure('none', () => ({ code: 'POOL_RESULT_UNKNOWN', message: 'nothing held' }));
    assert.equal(e.code, 'POOL_MEMBER_UNREACHABLE');
    assert.match(e.message, /asked again it holds no result of this dispatch \(POOL_RESULT_UNKNOWN/);
  });
});
