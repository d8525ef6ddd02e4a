/**
 * The serialiser (src/util/serial.ts): sections run one at a time in the
 * order asked, and a section that throws releases the next one.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Serial, Slots } from '../../../src/util/serial.js';

const tick = () => new Promise((r) => setTimeout(r, 1));

describe('Serial', () => {
  it('runs sections one at a time, in the order asked', async () => {
    const s = new Serial();
    const log: string[] = [];
    const section = (name: string) => async () => {
      log.push(`${name} in`);
      await tick();
      await tick();
      log.push(`${name} out`);
      return name;
    };
    const got = await Promise.all([s.run(section('a')), s.run(section('b')), s.run(section('c'))]);
    assert.deepEqual(got, ['a', 'b', 'c']);
    assert.deepEqual(log, ['a in', 'a out', 'b in', 'b out', 'c in', 'c out']);
  });

  it('a section that throws gives its caller the error and releases the next section', async () => {
    const s = new Serial();
    const failing = s.run(async () => {
      await tick();
      throw new Error('boom');
    });
    const syncThrow = s.run(() => {
      throw new Error('sync boom');
    });
    const next = s.run(async () => 'ran');
    await assert.rejects(failing, /boom/);
    await assert.rejects(syncThrow, /sync boom/);
    assert.equal(await next, 'ran');
  });
});

describe('Slots', () => {
  it('runs at most n sections at a time, started in the order asked; a throw frees its place', async () => {
    const s = new Slots(2);
    let running = 0;
    let most = 0;
    const started: number[] = [];
    const section = (i: number) => async () => {
      started.push(i);
      running++;
      most = Math.max(most, running);
      await tick();
      running--;
      if (i === 1) throw new Error('boom');
      return i;
    };
    const all = Array.from({ length: 7 }, (_, i) => s.run(section(i)));
    assert.equal(s.busy, 7);
    const got = await Promise.allSettled(all);
    assert.equal(most, 2);
    assert.deepEqual(started, [0, 1, 2, 3, 4, 5, 6]);
    assert.deepEqual(got.map((g) => (g.status === 'fulfilled' ? g.value : 'failed')), [0, 'failed', 2, 3, 4, 5, 6]);
    assert.equal(s.busy, 0);
  });

  it('a wait for a place ends on its signal: rejected with its reason, the place never taken, the others keep their order', async () => {
    const s = new Slots(1);
    let release!: () => void;
    const first = s.run(() => new Promise<void>((r) => (release = r)));
    const leave = new AbortController();
    const started: string[] = [];
    const waiting = s.run(() => void started.push('left'), leave.signal);
    const next = s.run(() => void started.push('next'));
    assert.equal(s.busy, 3);
    leave.abort(new Error('gave up'));
    await assert.rejects(waiting, /gave up/);
    assert.equal(s.busy, 2);
    release();
    await first;
    await next;
    assert.deepEqual(started, ['next']);
    assert.equal(s.busy, 0);
    // an already-aborted signal: refused at once
    await assert.rejects(s.run(() => 1, AbortSignal.abort(new Error('gone'))), /gone/);
    assert.equal(s.busy, 0);
  });
});
