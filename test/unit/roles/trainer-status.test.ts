/**
 * The training worker's status.json (src/roles/trainer/worker.ts,
 * src/roles/trainer/status.ts; docs/training.md "Status"): written at most
 * every `statusEveryMs` while steps run, and always at join, epoch ends, view
 * changes and the finish; the per-member contributions are kept as step
 * commitments are counted, not rebuilt over every epoch at each write. A real
 * worker on a one-member run (no peers to reach: the ring of one sends
 * nothing), its network a stub; writes of status.json counted through
 * node:fs (syncBuiltinESMExports updates the binding worker.ts imports).
 *
 * @own-process: node:fs is wrapped from the module's load to the end of the run (scripts/run-tests.mjs).
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { join } from 'node:path';
import type * as NodeFs from 'node:fs';
import { stringify } from 'yaml';
import { TrainerWorker } from '../../../src/roles/trainer/worker.js';
import { Contributions, parseStatusFile, STATUS_EPOCHS } from '../../../src/roles/trainer/status.js';
import { statusLines } from '../../../src/cli/commands/train.js';
import { buildRun } from '../../../src/roles/trainer/run-file.js';
import { fakeClock } from '../../../src/util/clock.js';
import { tempDir } from '../ledger/helpers.js';
import { NOW, P } from '../market/fixtures.js';

const cjsFs = createRequire(import.meta.url)('node:fs') as typeof NodeFs;
const realWrite = cjsFs.writeFileSync;
/** status.json snapshots, in the order they were written. */
const writes: Array<{ status: string; step: number; epochs: number }> = [];
cjsFs.writeFileSync = ((...args: Parameters<typeof realWrite>) => {
  if (typeof args[0] === 'string' && args[0].endsWith('status.json')) {
    const s = JSON.parse(String(args[1])) as { status: string; step: number; epochs: unknown[] };
    writes.push({ status: s.status, step: s.step, epochs: s.epochs.length });
  }
  return realWrite(...args);
}) as typeof realWrite;
syncBuiltinESMExports();
after(() => {
  cjsFs.writeFileSync = realWrite;
  syncBuiltinESMExports();
});

const self = P(300);

/**
 * A one-member run whose steps are `everyStepMs` apart on both clocks (the wall `clock`, and the monotonic one the
 * status cadence reads); `onStep(n)` runs after the n-th step (from 1), to step the wall clock, say.
 */
async function runAlone(epochs: number, stepsPerEpoch: number, clock: ReturnType<typeof fakeClock>, everyStepMs: number, onStep?: (n: number) => void) {
  const mono = fakeClock(0);
  let steps = 0;
  const t = tempDir('c0-train-status-');
  const yaml = stringify({ name: 'alone', model: { layers: [4, 8, 3] }, seed: 1, stepsPerEpoch, epochs, members: [{ did: self.did, addr: '/ip4/127.0.0.1/tcp/1' }] });
  const run = buildRun(yaml, self.signer, NOW).bundle.run;
  const net = { did: self.did, handle: async () => {}, request: async () => [] };
  const w = new TrainerWorker({ signer: self.signer, did: self.did, run, addrs: {}, dir: t.dir, clock, monoClock: mono, net: net as never,
    onEvent: (e) => {
      if (e.e !== 'step') return;
      clock.advance(everyStepMs);
      mono.advance(everyStepMs);
      onStep?.(++steps);
    },
  });
  writes.length = 0;
  try {
    await w.start();
    await w.join();
    await w.run();
    await w.stop();
    const last = JSON.parse(readFileSync(join(t.dir, 'status.json'), 'utf8')) as Record<string, unknown>;
    return { writes: [...writes], last };
  } finally {
    t.cleanup();
  }
}

describe('the trainer’s status.json', () => {
  it('is not written at every step: steps 10 ms apart write it every 250 ms (the default) at most, plus join, each epoch end and the finish', async () => {
    const { writes: w, last } = await runAlone(3, 50, fakeClock(NOW), 10);
    // 150 steps over 1.5 s of the worker's clock: at most 1 + 1500/250 step-time writes, then join, 3 epoch ends and the finish.
    assert.ok(w.length <= 1 + 1500 / 250 + 1 + 3 + 1, `status.json written ${w.length} times for 150 steps`);
    assert.deepEqual(w[0], { status: 'training', step: -1, epochs: 0 });
    // Every epoch end is written, with the epoch in it, and the finish last.
    for (const n of [1, 2, 3]) assert.ok(w.some((x) => x.epochs === n && x.step === n * 50 - 1), `epoch ${n - 1}'s end written`);
    assert.deepEqual(w.at(-1), { status: 'done', step: 149, epochs: 3 });
    assert.equal(last.status, 'done');
    // The contributions: every step commitment counted (the one member's 150).
    assert.deepEqual(last.contributions, { [self.did]: 150 });
  });

  it('lists the last 50 committed epochs and counts them all: a run of many epochs does not grow it without bound (QA ffTrainDay2 F2)', async () => {
    // before, every epoch was listed and the file rewritten whole at each epoch's end: 618 KB at 1,500 epochs, 24 MB
    // (0.6 s a write) at 50,000, and a member job's output, which carries the list, past 16 MiB
    const { writes: w, last } = await runAlone(120, 1, fakeClock(NOW), 10);
    assert.deepEqual(w.at(-1), { status: 'done', step: 119, epochs: STATUS_EPOCHS });
    assert.equal(last.epochsCommitted, 120);
    const listed = last.epochs as Array<{ epoch: number }>;
    assert.deepEqual(listed.map((e) => e.epoch), Array.from({ length: STATUS_EPOCHS }, (_, i) => 70 + i), 'the last ones, in order');
    assert.ok(Math.max(...w.map((x) => x.epochs)) <= STATUS_EPOCHS);
    // train status says the others are there, and shows the ones listed
    const lines = statusLines(parseStatusFile(JSON.stringify(last), 'status.json'), undefined);
    assert.ok(lines.includes("  70 earlier epochs committed (each in epochs/<epoch>.json of the run's directory)"), lines.join('\n'));
    assert.equal(lines.filter((l) => /^ {2}epoch \d+: root /.test(l)).length, STATUS_EPOCHS);
  });

  it('while steps are slow, each step is written', async () => {
    const { writes: w } = await runAlone(1, 5, fakeClock(NOW), 2_000);
    assert.deepEqual(
      w.map((x) => x.step),
      [-1, 0, 1, 2, 3, 4, 4, 4],
    );
  });

  it('its cadence is on the monotonic clock: a wall clock stepped back or forward 10 min writes it as often as one that was not', async () => {
    // Before, the cadence read the wall clock: stepped back 10 min, status.json was not written again while steps ran
    // (not for 10 min, or until the epoch's end); stepped forward, it was written at once.
    const steady = (await runAlone(1, 100, fakeClock(NOW), 10)).writes.map((x) => x.step);
    const wall = fakeClock(NOW);
    const stepped = (
      await runAlone(1, 100, wall, 10, (n) => {
        if (n === 20) wall.advance(-10 * 60_000);
        if (n === 60) wall.advance(20 * 60_000);
      })
    ).writes.map((x) => x.step);
    assert.ok(steady.some((s) => s > 20 && s < 60), `written between the steps: ${steady.join(',')}`);
    assert.deepEqual(stepped, steady);
  });

  it('contributions are kept as commitments are counted: an ended view’s uncommitted epoch is taken back, committed epochs stay', () => {
    const c = new Contributions();
    for (const m of ['did:b', 'did:a']) for (let i = 0; i < 3; i++) c.counted('0:0', m);
    c.committed('0:0');
    for (const m of ['did:a', 'did:b', 'did:c']) c.counted('0:1', m);
    assert.deepEqual(Object.entries(c.view()), [['did:a', 4], ['did:b', 4], ['did:c', 1]]);
    // did:c drops out; epoch 1 of view 0 was never committed: it no longer counts.
    c.viewChanged(1);
    assert.deepEqual(c.view(), { 'did:a': 3, 'did:b': 3 });
    c.counted('1:1', 'did:a');
    c.committed('1:1');
    c.counted('1:2', 'did:b');
    c.viewChanged(2);
    assert.deepEqual(c.view(), { 'did:a': 4, 'did:b': 3 });
  });
});
