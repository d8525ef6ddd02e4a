/**
 * `c0mpute train infer` drives stages set up by hand with `c0mpute train stage` (docs/training.md "Pipeline"; QA qaPnet
 * F7: no command could send anything through them). Two stage processes of a 4-8-3 model; the CLI's output is the
 * single-process forward bit for bit; stage 0 allowing another caller refuses it PIPELINE_NOT_ALLOWED, stage 1 killed
 * is PIPELINE_NEXT_STAGE_FAILED naming it, bad input and a stage address without its key are refused with their codes;
 * a --layers that is not the stages' model and the stages reversed are refused naming the stage (QA qaTrn F7, F8).
 */
import '../../src/polyfill.js';
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { forward, paramCount, weightsBytes, weightsFromBytes } from '../../src/training/model.js';
import { BIN, Cluster, c0mpute, track, waitExit } from './node-helpers.js';

const c = new Cluster('train-infer');
const layers = [4, 8, 3];
let weights = '';
let rowsFile = '';
const rows = [
  [5.1, 3.5, 1.4, 0.2],
  [6.2, 2.9, 4.3, 1.3],
  [7.7, 3.0, 6.1, 2.3],
  [0, -1.5, 2.25, 1e-3],
  [4.4, 2.9, 1.4, 0.2],
];
const children: ChildProcess[] = [];

/** `c0mpute train stage` as a process; resolves with its printed address once it serves. */
function stage(name: string, k: number, of: number, extra: string[] = []): Promise<{ child: ChildProcess; addr: string; did: string }> {
  const { dir } = c.dataDir(name);
  const { NODE_TEST_CONTEXT: _, ...env } = process.env;
  const child = spawn(process.execPath, [BIN, '--data-dir', dir, 'train', 'stage', weights, '--layers', layers.join(','), '--stage', String(k), '--of', String(of), ...extra], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...env, C0MPUTE_PASSPHRASE: '', C0MPUTE_LOG_LEVEL: 'error' } });
  track(child);
  children.push(child);
  return new Promise((resolve, reject) => {
    let buf = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      buf += d;
      const m = /as (did:key:\S+) at (\S+)/.exec(buf);
      if (m) resolve({ child, did: m[1]!, addr: m[2]! });
    });
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (buf += d));
    child.once('exit', (code) => reject(new Error(`stage ${k} exited (${code}): ${buf}`)));
  });
}

before(() => {
  const n = paramCount({ layers });
  const w = new Float64Array(n).map((_, i) => Math.sin(i * 1.7) * 0.5);
  weights = join(c.root, 'weights.bin');
  writeFileSync(weights, weightsBytes(w));
  rowsFile = join(c.root, 'rows.json');
  writeFileSync(rowsFile, JSON.stringify(rows));
});

after(async () => {
  for (const ch of children) if (ch.exitCode === null && ch.signalCode === null) ch.kill('SIGKILL');
  await Promise.all(children.map((ch) => waitExit(ch)));
  await c.destroy();
});

test('train infer sends the rows through two stage processes: the output is the single-process forward; a stage killed and a caller not allowed are refused with their codes', async () => {
  const driver = c.dataDir('driver');
  const s1 = await stage('s1', 1, 2);
  const s0 = await stage('s0', 0, 2, ['--next', s1.addr, '--allow', driver.did]);
  const stages = `${s0.addr},${s1.addr}`;
  const r = await c0mpute(driver.dir, ['train', 'infer', '--stages', stages, '--layers', layers.join(','), '--input', rowsFile, '--micro', '2', '--json']);
  assert.equal(r.code, 0, r.err);
  const got = JSON.parse(r.out) as { rows: number; outputs: number[][]; predictions: number[] };
  const local = forward({ layers }, weightsFromBytes(readFileSync(weights)), Float64Array.from(rows.flat()), rows.length);
  assert.equal(got.rows, rows.length);
  assert.deepEqual(got.outputs.flat(), Array.from(local), 'bit-identical to the single-process forward');
  const human = await c0mpute(driver.dir, ['train', 'infer', '--stages', stages, '--layers', layers.join(','), '--input', rowsFile]);
  assert.equal(human.code, 0, human.err);
  assert.match(human.out, /^row 0: class \d {2}\S+ \S+ \S+$/m);
  assert.match(human.out, /^5 rows through 2 stages in 4 micro-batches$/m);
  // 200 micro-batches: at most 32 out at once (before, QA qaTrn F1: all at once, NET_STREAM_FAILED past the stage's 64)
  const many = Array.from({ length: 200 }, (_, i) => [i / 10, -i / 7, Math.sin(i), 1]);
  const manyFile = join(c.root, 'many.json');
  writeFileSync(manyFile, JSON.stringify(many));
  const wide = await c0mpute(driver.dir, ['train', 'infer', '--stages', stages, '--layers', layers.join(','), '--input', manyFile, '--micro', '200', '--json']);
  assert.equal(wide.code, 0, wide.err);
  const wideLocal = forward({ layers }, weightsFromBytes(readFileSync(weights)), Float64Array.from(many.flat()), many.length);
  assert.deepEqual((JSON.parse(wide.out) as { outputs: number[][] }).outputs.flat(), Array.from(wideLocal));

  // an input that overflows float64: refused naming the stage and layer, not printed as null with exit 0 (QA qaTrn F5)
  const huge = join(c.root, 'huge.json');
  writeFileSync(huge, JSON.stringify([[1.7e308, -1.7e308, -1.7e308, -1.7e308]]));
  const over = await c0mpute(driver.dir, ['train', 'infer', '--stages', stages, '--layers', layers.join(','), '--input', huge, '--json']);
  assert.equal(over.code, 3, over.out + over.err);
  assert.match(over.err, /PIPELINE_OUTPUT_NOT_FINITE: stage 0 \(did:key:\S+ at \S+\) answered: (stage 1 \(did:key:\S+ at \S+\) answered: )?layer \d /);

  // --layers not the stages' model, and the stages reversed: refused before any row is sent, naming the stage (QA qaTrn F7, F8)
  const [shape, order, twice] = await Promise.all([
    c0mpute(driver.dir, ['train', 'infer', '--stages', stages, '--layers', '4,16,3', '--input', rowsFile]),
    c0mpute(driver.dir, ['train', 'infer', '--stages', `${s1.addr},${s0.addr}`, '--layers', layers.join(','), '--input', rowsFile]),
    // one stage named twice: said as such, not as the stage failing to dial itself (review s54)
    c0mpute(driver.dir, ['train', 'infer', '--stages', `${s0.addr},${s0.addr}`, '--layers', layers.join(','), '--input', rowsFile]),
  ]);
  assert.match(twice.err, /PIPELINE_ROUTE_MISMATCH: --stages: stage 1 \(\S+\) is stage 0 again: give each stage once, in order/, twice.out + twice.err);
  assert.equal(shape.code, 3, shape.out + shape.err);
  assert.match(shape.err, /PIPELINE_LAYERS_MISMATCH: stage 0 \(did:key:\S+ at \S+\) serves layer 0 of 2 \(4→8\) of a 4,8,3 model; --layers says 4,16,3/);
  assert.equal(order.code, 3, order.out + order.err);
  assert.match(order.err, /PIPELINE_ROUTE_MISMATCH: stage 0 \(did:key:\S+ at \S+\) serves layer 1 of 2 \(8→3\), but the first stage must serve layer 0: give the stages in order/);

  // another node's key is not on stage 0's --allow
  const other = c.dataDir('other');
  const refused = await c0mpute(other.dir, ['train', 'infer', '--stages', stages, '--layers', layers.join(','), '--input', rowsFile]);
  assert.equal(refused.code, 3, refused.out + refused.err);
  assert.match(refused.err, /PIPELINE_NOT_ALLOWED/);

  // bad input and a stage address without its key: refused with their codes, nothing sent
  const bad = join(c.root, 'bad.json');
  writeFileSync(bad, JSON.stringify([[1, 2, 3]]));
  const badIn = await c0mpute(driver.dir, ['train', 'infer', '--stages', stages, '--layers', layers.join(','), '--input', bad]);
  assert.equal(badIn.code, 3);
  assert.match(badIn.err, /PIPELINE_INPUT_INVALID.*row 0 is not an array of 4 finite numbers/);
  const noKey = await c0mpute(driver.dir, ['train', 'infer', '--stages', '/ip4/127.0.0.1/tcp/1', '--layers', layers.join(','), '--input', rowsFile]);
  assert.equal(noKey.code, 2);
  assert.match(noKey.err, /TRAIN_BAD_OPTION/);

  // stage 1 killed: stage 0 answers PIPELINE_NEXT_STAGE_FAILED naming it
  s1.child.kill('SIGKILL');
  await waitExit(s1.child);
  const gone = await c0mpute(driver.dir, ['train', 'infer', '--stages', stages, '--layers', layers.join(','), '--input', rowsFile]);
  assert.equal(gone.code, 3, gone.out + gone.err);
  assert.match(gone.err, /PIPELINE_NEXT_STAGE_FAILED/);
  assert.ok(gone.err.includes(s1.did), gone.err);
});
