/**
 * Energy meters: the estimator with an injected clock, RAPL on a fake
 * /sys/class/powercap tree in a temp dir, NVML through a fake nvidia-smi script,
 * and createMeter's fallback. A figure split between overlapping jobs is never
 * HwShunt (pool/1 §2.5).
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fakeClock } from '../../../src/util/clock.js';
import { EstimatorMeter, NvmlMeter, RaplMeter, createMeter } from '../../../src/roles/provider/meters.js';
import { StallWatch } from '../../../src/util/stall-watch.js';

let root: string;
before(() => {
  root = mkdtempSync(join(tmpdir(), 'c0-meters-'));
});
after(() => rmSync(root, { recursive: true, force: true }));

let n = 0;
/** A fake powercap tree: packages with energy_uj and max_energy_range_uj, each with a sub-zone that must not be counted. */
function powercap(pkgs: Array<{ uj: number; range?: number }>): { dir: string; set(i: number, uj: number): void; setSub(i: number, uj: number): void } {
  const dir = join(root, `powercap-${n++}`);
  mkdirSync(dir);
  mkdirSync(join(dir, 'intel-rapl')); // the control type directory, not a zone
  pkgs.forEach((p, i) => {
    const z = join(dir, `intel-rapl:${i}`);
    mkdirSync(z);
    writeFileSync(join(z, 'name'), `package-${i}\n`);
    writeFileSync(join(z, 'energy_uj'), `${p.uj}\n`);
    if (p.range !== undefined) writeFileSync(join(z, 'max_energy_range_uj'), `${p.range}\n`);
    // Sub-zones (core, uncore) appear nested and, on real systems, also at the top level.
    for (const sub of [join(z, `intel-rapl:${i}:0`), join(dir, `intel-rapl:${i}:0`)]) {
      mkdirSync(sub);
      writeFileSync(join(sub, 'name'), 'core\n');
      writeFileSync(join(sub, 'energy_uj'), '0\n');
      writeFileSync(join(sub, 'max_energy_range_uj'), '262143328850\n');
    }
  });
  return {
    dir,
    set: (i, uj) => writeFileSync(join(dir, `intel-rapl:${i}`, 'energy_uj'), `${uj}\n`),
    setSub: (i, uj) => {
      writeFileSync(join(dir, `intel-rapl:${i}`, `intel-rapl:${i}:0`, 'energy_uj'), `${uj}\n`);
      writeFileSync(join(dir, `intel-rapl:${i}:0`, 'energy_uj'), `${uj}\n`);
    },
  };
}

describe('EstimatorMeter', () => {
  test('watts × ms × 1000 µJ, graded Estimator', () => {
    const clock = fakeClock(1000);
    const m = new EstimatorMeter(250, clock);
    const span = m.start();
    clock.advance(1500);
    assert.deepEqual(span.stop(), { uj: 250 * 1500 * 1000, grade: 'Estimator' });
    const zero = m.start();
    assert.deepEqual(zero.stop(), { uj: 0, grade: 'Estimator' });
    const frac = new EstimatorMeter(0.5, clock).start();
    clock.advance(3);
    assert.deepEqual(frac.stop(), { uj: 1500, grade: 'Estimator' });
  });

  test('the time this process was frozen is left out (a SIGSTOP during a sleep claims the sleep, not the stop), jitter is not a freeze, and the figure is fixed at stop', () => {
    const clock = fakeClock(0);
    const timer: { tick?: () => void } = {};
    const stalls = new StallWatch({ everyMs: 1_000, now: clock, every: (fn) => ((timer.tick = fn), () => (timer.tick = undefined)) });
    const tick = (ms: number) => {
      clock.advance(ms);
      assert.ok(timer.tick, 'the watch ticks while a span runs');
      timer.tick();
    };
    const m = new EstimatorMeter(100, clock, stalls);
    const span = m.start();
    for (let i = 0; i < 3; i++) tick(1_000);
    assert.deepEqual(span.sample(), { uj: 100 * 3_000 * 1000, grade: 'Estimator' });
    // stopped 30 s, and the work's end is seen before the watch's first tick after SIGCONT: of the 30 s, all but the
    // tick's period is left out (a freeze shows once a tick is a period late)
    clock.advance(30_000);
    const e = span.stop();
    assert.deepEqual(e, { uj: 100 * 4_000 * 1000, grade: 'Estimator' });
    assert.equal(timer.tick, undefined, 'no span, no timer');
    clock.advance(10_000);
    assert.deepEqual([span.stop(), span.sample()], [e, e], 'stopped: the figure stays');

    // ticks a little late are jitter; a freeze the watch's tick saw is left out too
    const other = m.start();
    for (let i = 0; i < 10; i++) tick(1_300);
    assert.deepEqual(other.sample(), { uj: 100 * 13_000 * 1000, grade: 'Estimator' });
    tick(20_000);
    tick(1_000);
    tick(1_000);
    assert.deepEqual(other.stop(), { uj: 100 * 16_000 * 1000, grade: 'Estimator' });
  });
});

describe('RaplMeter (fake powercap tree)', () => {
  test('counts only package zones; a job that ran alone is HwShunt', () => {
    const pc = powercap([{ uj: 1_000_000, range: 262_143_328_850 }]);
    assert.equal(RaplMeter.available(pc.dir), true);
    const m = new RaplMeter(pc.dir, fakeClock());
    assert.equal(m.kind, 'rapl');
    const span = m.start();
    pc.set(0, 1_750_000);
    pc.setSub(0, 999_999_999); // a sub-zone is part of its package: never counted on top
    assert.deepEqual(span.stop(), { uj: 750_000, grade: 'HwShunt' });
  });

  test('sums several packages', () => {
    const pc = powercap([
      { uj: 100, range: 1_000_000 },
      { uj: 5_000, range: 1_000_000 },
    ]);
    const span = new RaplMeter(pc.dir, fakeClock()).start();
    pc.set(0, 400);
    pc.set(1, 5_600);
    assert.deepEqual(span.stop(), { uj: 900, grade: 'HwShunt' });
  });

  test('a counter wrap is handled with max_energy_range_uj', () => {
    const pc = powercap([{ uj: 999_000, range: 1_000_000 }]);
    const span = new RaplMeter(pc.dir, fakeClock()).start();
    pc.set(0, 500); // wrapped: 1_000 to the top, then 500
    assert.deepEqual(span.stop(), { uj: 1_500, grade: 'HwShunt' });
  });

  test('a wrap is handled per package, not against the sum of the ranges', () => {
    const pc = powercap([
      { uj: 999_000, range: 1_000_000 },
      { uj: 10_000, range: 1_000_000 },
    ]);
    const span = new RaplMeter(pc.dir, fakeClock()).start();
    pc.set(0, 500); // package 0 wrapped: +1_500
    pc.set(1, 10_200); // package 1 did not: +200
    assert.deepEqual(span.stop(), { uj: 1_700, grade: 'HwShunt' });
  });

  test('two overlapping spans are ModelBased (a divided figure is never HwShunt)', () => {
    const pc = powercap([{ uj: 0, range: 1_000_000_000 }]);
    const m = new RaplMeter(pc.dir, fakeClock());
    // B starts and stops entirely inside A.
    const a = m.start();
    pc.set(0, 100);
    const b = m.start();
    pc.set(0, 300);
    assert.equal(b.stop().grade, 'ModelBased');
    pc.set(0, 400);
    assert.equal(a.stop().grade, 'ModelBased');

    // C starts while D runs; D stops first; C is still ModelBased, and a later lone span is HwShunt again.
    const d = m.start();
    const c = m.start();
    assert.equal(d.stop().grade, 'ModelBased');
    assert.equal(c.stop().grade, 'ModelBased');
    const alone = m.start();
    pc.set(0, 1_400);
    assert.deepEqual(alone.stop(), { uj: 1_000, grade: 'HwShunt' });
  });

  test('no package zone: not available', () => {
    const empty = join(root, 'empty-powercap');
    mkdirSync(empty);
    assert.equal(RaplMeter.available(empty), false);
    assert.equal(RaplMeter.available(join(root, 'does-not-exist')), false);
  });
});

describe('createMeter', () => {
  test('auto falls back to the estimator when neither NVML nor RAPL is available', () => {
    const empty = join(root, 'no-rapl');
    mkdirSync(empty);
    const m = createMeter({ powercapRoot: empty, nvidiaSmi: join(root, 'no-nvidia-smi'), estimatorWatts: 42, now: fakeClock() });
    assert.equal(m.kind, 'estimator');
  });

  test('auto picks RAPL when the powercap tree is readable', () => {
    const pc = powercap([{ uj: 0, range: 1000 }]);
    const m = createMeter({ powercapRoot: pc.dir, nvidiaSmi: join(root, 'no-nvidia-smi') });
    assert.equal(m.kind, 'rapl');
  });

  test('estimator when asked, even with RAPL present', () => {
    const pc = powercap([{ uj: 0, range: 1000 }]);
    const clock = fakeClock();
    const m = createMeter({ type: 'estimator', powercapRoot: pc.dir, estimatorWatts: 10, now: clock });
    const s = m.start();
    clock.advance(2);
    assert.deepEqual(s.stop(), { uj: 20_000, grade: 'Estimator' });
  });

  test('auto picks NVML when a GPU reports energy (mJ summed over GPUs, reported in µJ)', () => {
    const counter = join(root, 'gpu-energy.txt');
    writeFileSync(counter, '1000\n2000\n');
    const smi = join(root, 'fake-nvidia-smi');
    writeFileSync(smi, `#!/bin/sh\ncat '${counter}'\n`);
    chmodSync(smi, 0o755);
    assert.equal(NvmlMeter.available(smi), true);
    const m = createMeter({ nvidiaSmi: smi, powercapRoot: join(root, 'does-not-exist') });
    assert.equal(m.kind, 'nvml');
    const span = m.start();
    writeFileSync(counter, '1500\n2250\n');
    assert.deepEqual(span.stop(), { uj: 750_000, grade: 'HwShunt' });
  });
});
