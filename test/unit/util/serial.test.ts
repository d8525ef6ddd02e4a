/**
 * The serialiser (src/util/serial.ts): sections run one at a time in the
 * order asked, and a section that throws releases the next one.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Serial } from '../../../src/util/serial.js';

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
