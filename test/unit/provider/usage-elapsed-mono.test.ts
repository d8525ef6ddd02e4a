/**
 * A running job's `usage` answer to the steward (src/roles/provider/provider.ts usage; docs/node.md "Clocks: wall and
 * monotonic"): `elapsedMs` is measured on the provider's monotonic clock, as the meter's energy is paced by real time,
 * while `startedAt` stays the attempt's wall-clock start (its id, as the receipt says). The steward divides the one by
 * the other for its idle verdict (pool/1 §2.7): before, `elapsedMs` was the wall clock's difference, so a provider
 * whose wall clock stepped forward by 25 s (inside the 30 s skew window) between two samples had a job drawing 20 W
 * reclaimed as idle (3.3 W over 30 s), and one stepped back reported 0 ms for as long as the step (a truly idle job
 * escaped its reclaim). Real LevelDB for the provider's runs; the wall and monotonic clocks are fakes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Opened } from '../../../src/records/envelope.js';
import type { Offer } from '../../../src/records/kinds.js';
import { fakeClock } from '../../../src/util/clock.js';
import { Provider } from '../../../src/roles/provider/provider.js';
import { EstimatorMeter } from '../../../src/roles/provider/meters.js';
import type { ExecFrame } from '../../../src/roles/exec-protocol.js';
import { NOW, runsConfig, runsDeps, runsJob, selectionOf, withStore } from './runs-rig.js';

const input = new TextEncoder().encode('measure me');

test('usage: elapsedMs counts on the monotonic clock, whichever way the wall clock steps; startedAt stays the wall-clock start', async () => {
  await withStore('usage-mono', async (runs) => {
    const wall = fakeClock(NOW);
    const mono = fakeClock(5_000);
    // the meter paced by real time, as the node's is (performance.now)
    const p = new Provider({ ...runsDeps(runs, wall), meter: new EstimatorMeter(50, mono), monoClock: mono, config: runsConfig(['builtin.sleep']), publish: async () => 1, onReceipt: async () => {} });
    await p.start();
    const j = runsJob('builtin.sleep', input, '60000');
    const offer = (await p.onJob(j)) as Opened<Offer>;
    const frames: ExecFrame[] = [];
    const queue: unknown[] = [{ t: 'exec', selection: selectionOf(j, offer).bytes, job: j.bytes, offer: offer.bytes, input }];
    const done = p.handleExec({ next: async () => queue.shift(), send: async (f) => void frames.push(f as ExecFrame), signal: new AbortController().signal, reserve: () => {}, setDeadline: () => {} });
    for (let i = 0; i < 500 && !frames.some((f) => f.t === 'accepted'); i++) await new Promise((r) => setTimeout(r, 10));
    assert.ok(frames.some((f) => f.t === 'accepted'), 'running');
    const startedAt = (frames.find((f) => f.t === 'accepted') as { startedAt: number }).startedAt;
    assert.equal(startedAt, NOW);

    mono.advance(5_000);
    wall.advance(5_000);
    assert.deepEqual([p.usage(j.address)?.elapsedMs, p.usage(j.address)?.startedAt], [5_000, NOW]);
    // the wall clock steps forward 25 s (NTP, an operator) while 5 s pass: 10 s have run, not 35
    mono.advance(5_000);
    wall.advance(30_000);
    assert.deepEqual([p.usage(j.address)?.elapsedMs, p.usage(j.address)?.startedAt], [10_000, NOW]);
    // and back 60 s while 5 s pass: 15 s have run, not 0 (the wall clock is now before the start)
    mono.advance(5_000);
    wall.advance(-55_000);
    assert.deepEqual([p.usage(j.address)?.elapsedMs, p.usage(j.address)?.startedAt], [15_000, NOW]);
    // a fraction of a millisecond (performance.now) is not sent: the steward takes whole milliseconds only
    mono.advance(0.75);
    assert.equal(p.usage(j.address)?.elapsedMs, 15_000);

    await p.stop();
    await done;
    assert.equal(p.usage(j.address), undefined, 'nothing once the run ended');
  });
});
