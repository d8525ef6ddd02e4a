/**
 * The test runner itself (scripts/run-tests.mjs, scripts/test-batch.mjs, scripts/file-times.mjs), on a tree of its own:
 * unit files share a process in batches, a unit file marked @own-process and every e2e file run alone (the slowest of
 * those named with their tests' time), the totals add up across both,
 * and a batch that fails, or ends before its tests have run, fails the run and is named after the totals. A path
 * filter runs each file alone.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const scripts = fileURLToPath(new URL('../../../../scripts/', import.meta.url));
let root = '';

/** A compiled test file in the scratch tree (its path under dist/test). */
function file(path: string, body: string): void {
  const p = join(root, 'dist', 'test', path);
  mkdirSync(join(p, '..'), { recursive: true });
  writeFileSync(p, `import { test } from 'node:test';\nimport assert from 'node:assert/strict';\n${body}\n`);
}

function runner(...args: string[]): { code: number; out: string } {
  // without NODE_TEST_CONTEXT, which `node --test` sets for this file: under it the runner's own runs would report to
  // this process's runner rather than print their output
  const { NODE_TEST_CONTEXT: _, ...env } = process.env;
  const r = spawnSync(process.execPath, [join(root, 'scripts', 'run-tests.mjs'), ...args], { encoding: 'utf8', env: { ...env, C0MPUTE_TEST_BATCH: '2' } });
  return { code: r.status ?? -1, out: r.stdout + r.stderr };
}

const count = (out: string, what: string) => Number(new RegExp(`^ℹ ${what} (\\d+)$`, 'm').exec(out)?.[1]);

describe('scripts/run-tests.mjs', () => {
  before(() => {
    root = mkdtempSync(join(tmpdir(), 'c0-runner-'));
    mkdirSync(join(root, 'scripts'));
    for (const f of ['run-tests.mjs', 'test-batch.mjs', 'file-times.mjs']) copyFileSync(join(scripts, f), join(root, 'scripts', f));
    // a and b share a batch (b sees what a left in the process); c asks for a process of its own, as e2e files get
    file('unit/d/a.test.js', `test('a', () => { globalThis.leftByA = true; });`);
    file('unit/d/b.test.js', `test('b sees a', () => assert.equal(globalThis.leftByA, true));`);
    file('unit/d/c.test.js', `/** @own-process: checks it is alone */\ntest('c alone', () => assert.equal(globalThis.leftByA, undefined));`);
    file('e2e/x.test.js', `test('x alone', () => assert.equal(globalThis.leftByA, undefined));`);
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  it('runs unit files together in batches and the rest alone; the totals add up', () => {
    const r = runner();
    assert.equal(r.code, 0, r.out);
    assert.match(r.out, /^▷ unit batch 1\/1 \([\d.]+ s\): unit\/d\/a\.test\.ts, unit\/d\/b\.test\.ts$/m);
    assert.match(r.out, /ℹ 4 files: 2 unit files in 1 process, 2 in a process of their own/);
    assert.deepEqual([count(r.out, 'tests'), count(r.out, 'pass'), count(r.out, 'fail')], [4, 4, 0]);
    // the files run alone, slowest first, with their tests' time (scripts/file-times.mjs)
    const slowest = /^ℹ slowest files run alone \(their tests' time\): ([\d.]+) s \S*(unit\/d\/c|e2e\/x)\.test\.ts, ([\d.]+) s \S*(unit\/d\/c|e2e\/x)\.test\.ts$/m.exec(r.out);
    assert.ok(slowest, r.out);
    assert.notEqual(slowest[2], slowest[4], 'each file once');
    assert.ok(Number(slowest[1]) >= Number(slowest[3]), 'slowest first');
    // --unit leaves the e2e file out
    const unit = runner('--unit');
    assert.equal(unit.code, 0, unit.out);
    assert.equal(count(unit.out, 'tests'), 3);
  });

  it('a path filter runs each file alone (what tells a leak from a failure)', () => {
    const r = runner('unit/d');
    assert.equal(r.code, 1, r.out);
    assert.doesNotMatch(r.out, /unit batch/);
    assert.deepEqual([count(r.out, 'tests'), count(r.out, 'fail')], [3, 1], 'b, alone, does not see what a left');
  });

  it('a failing test, or a batch that ends before its tests ran, fails the run and is named after the totals', () => {
    // batches of two in path order: [d/a, d/b], [e/g, e/h], [f/fails]; g ends its process while its batch runs
    file('unit/e/g.test.js', `test('g', () => {});\nsetTimeout(() => process.exit(0), 20);\ntest('g later', () => new Promise((r) => setTimeout(r, 500)));`);
    file('unit/e/h.test.js', `test('h never runs', () => {});`);
    file('unit/f/fails.test.js', `test('fails', () => assert.equal(1, 2));`);
    try {
      const r = runner('--unit');
      assert.equal(r.code, 1, r.out);
      assert.equal(count(r.out, 'fail'), 1);
      assert.match(r.out, /the process ended before the batch's tests had run \(exit 0\)/);
      assert.doesNotMatch(r.out, /✔ h never runs/);
      const tail = r.out.slice(r.out.lastIndexOf('ℹ duration_ms'));
      assert.match(tail, /✖ failed in unit batch 2\/3 \([\d.]+ s\): unit\/e\/g\.test\.ts, unit\/e\/h\.test\.ts/);
      assert.match(tail, /✖ failed in unit batch 3\/3 \([\d.]+ s\): unit\/f\/fails\.test\.ts/);
      assert.doesNotMatch(tail, /batch 1\/3/);
    } finally {
      for (const d of ['e', 'f']) rmSync(join(root, 'dist', 'test', 'unit', d), { recursive: true, force: true });
    }
  });
});
