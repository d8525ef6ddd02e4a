/**
 * A pipeline stage server's compute queue (review s40 A F3; src/training/pipeline.ts
 * StageQueue, used by src/training/pipeline-net.ts `serveStage`). Before, a
 * stage queued every request behind the others without bound, in arrival
 * order only, and computed queued work after its caller had left. Now: at
 * most STAGE_QUEUE per caller and in all (PIPELINE_BUSY, detail.scope),
 * callers take turns, and work whose caller's signal aborted while it waited
 * is skipped (PIPELINE_CALLER_LEFT). Work is held by promises the test
 * releases: no timing.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { countedStage } from './stage-rig.js';
import { StageQueue } from '../../../src/training/pipeline.js';
import { P } from '../market/fixtures.js';

function gate(): { wait: Promise<void>; open: () => void } {
  let open!: () => void;
  const wait = new Promise<void>((r) => (open = r));
  return { wait, open };
}

describe('a stage’s compute queue', () => {
  it('bounds each caller and all callers (PIPELINE_BUSY), and serves callers in turn', async () => {
    const q = new StageQueue({ perCaller: 3, total: 5 });
    const first = gate();
    const order: string[] = [];
    const job = (name: string, hold?: Promise<void>) => async () => {
      if (hold) await hold;
      order.push(name);
      return name;
    };
    const done: Array<Promise<string>> = [q.run('a', undefined, job('a0', first.wait)), q.run('a', undefined, job('a1')), q.run('a', undefined, job('a2'))];
    await assert.rejects(q.run('a', undefined, job('a3')), (e: { code?: string; detail?: { scope?: string } }) => e.code === 'PIPELINE_BUSY' && e.detail?.scope === 'caller');
    done.push(q.run('b', undefined, job('b0')), q.run('c', undefined, job('c0')));
    await assert.rejects(q.run('d', undefined, job('d0')), (e: { code?: string; detail?: { scope?: string } }) => e.code === 'PIPELINE_BUSY' && e.detail?.scope === 'total');
    assert.equal(q.size, 5);
    first.open();
    await Promise.all(done);
    // a's backlog does not hold up b and c: they take turns with it
    assert.deepEqual(order, ['a0', 'a1', 'b0', 'c0', 'a2']);
    assert.equal(q.size, 0);
    assert.equal(await q.run('a', undefined, job('a4')), 'a4', 'room again once done');
  });

  it('skips work whose caller left while it waited (PIPELINE_CALLER_LEFT)', async () => {
    const q = new StageQueue();
    const first = gate();
    let ran = 0;
    const a = q.run('a', undefined, async () => {
      await first.wait;
      ran++;
    });
    const ac = new AbortController();
    const b = q.run('b', ac.signal, () => void ran++);
    ac.abort();
    first.open();
    await a;
    await assert.rejects(b, { code: 'PIPELINE_CALLER_LEFT' });
    assert.equal(ran, 1);
  });

  it('a stage server does not compute a request whose caller left while it waited', async () => {
    const shape = { layers: [4, 64, 3] };
    const stage = await countedStage(shape, [0, 1]);
    const call = async (from: string, signal: AbortSignal): Promise<void> => void (await stage.call(from, 1, signal));
    const left = new AbortController();
    // two requests at once: the first is computed, the second waits its turn; its caller leaves meanwhile
    const one = call(P(620).did, new AbortController().signal);
    const two = call(P(621).did, left.signal);
    left.abort();
    await one;
    const afterOne = stage.reads();
    assert.ok(afterOne > 0);
    await assert.rejects(two, { code: 'PIPELINE_CALLER_LEFT' });
    assert.equal(stage.reads(), afterOne, 'the second request was not computed');
  });
});
