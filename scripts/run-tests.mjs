#!/usr/bin/env node
// Runs the compiled test suite with Node's built-in runner.
// `npm test` compiles first (tsc is also the type check), so dist/ is fresh.
//   --unit   only test/unit (fast, no daemons)
//   --scenarios  only test/scenarios: the long end-to-end scenarios kept out of
//            `npm test` (CI must stay well inside 20 minutes on 2 cores); run by
//            `npm run sim -- --scenarios`
//   --isolated  every file in a process of its own, the unit files too
// At the end it names the slowest files run alone, with the time their tests took
// (scripts/file-times.mjs), so what makes CI slow shows in every run.
//   any other argument: a substring filter on the test file path (the files it
//            names each run in a process of their own)
//
// The unit files run together, about ten to a process, three processes at a
// time, each taking the next batch as one ends: starting a process and loading
// the modules a file imports cost about as much as the unit tests themselves
// (6.5 min one file to a process, 3.3 min in batches, on this 2-core machine).
// A unit file that changes the process for the files after it (it wraps a
// built-in module from its load to the end of the run, or needs modules no
// other file has patched) says `@own-process` in its leading comment and runs
// alone, as every e2e and scenario file does. A unit failure seen only in a
// full run and not when its file runs alone (`node scripts/run-tests.mjs
// <file>`) is another file of its batch leaking state: the batch's files are
// named above its output. C0MPUTE_TEST_PROCS (3) and C0MPUTE_TEST_BATCH (10)
// set the processes at a time and the unit files to a process; C0MPUTE_TEST_ALONE_PROCS (2)
// the files run alone at a time (3 was no faster here: the end-to-end files keep
// both cores busy, 1.6 cores on average).
import { openSync, readSync, closeSync, readdirSync, statSync, readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { join, relative } from 'node:path';
import { tmpdir } from 'node:os';
import { spawn } from 'node:child_process';

const root = new URL('..', import.meta.url).pathname;
const args = process.argv.slice(2);
const unitOnly = args.includes('--unit');
const scenarios = args.includes('--scenarios');
const isolated = args.includes('--isolated');
const filters = args.filter((a) => !a.startsWith('--'));
const env = { ...process.env, C0MPUTE_TEST: '1' };
const BATCH_FILES = Math.max(1, Number(process.env.C0MPUTE_TEST_BATCH ?? 10));
const PROCS = Math.max(1, Number(process.env.C0MPUTE_TEST_PROCS ?? 3));
const ALONE_PROCS = Math.max(1, Number(process.env.C0MPUTE_TEST_ALONE_PROCS ?? 2));
const BATCH_TIMEOUT_MS = 15 * 60_000;

function walk(dir) {
  let out = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out = out.concat(walk(p));
    else if (name.endsWith('.test.js')) out.push(p);
  }
  return out;
}

/** Does a compiled test file ask for a process of its own (`@own-process` in its leading comment)? */
function ownProcess(file) {
  const fd = openSync(file, 'r');
  try {
    const buf = Buffer.alloc(4096);
    const n = readSync(fd, buf, 0, buf.length, 0);
    return buf.subarray(0, n).toString('utf8').includes('@own-process');
  } finally {
    closeSync(fd);
  }
}

const testRoot = join(root, 'dist', 'test');
const base = join(testRoot, unitOnly ? 'unit' : scenarios ? 'scenarios' : '');
let files = walk(base).sort();
if (!scenarios) files = files.filter((f) => !relative(testRoot, f).startsWith('scenarios'));
if (filters.length) files = files.filter((f) => filters.some((x) => relative(root, f).includes(x)));
if (files.length === 0) {
  console.error('no test files found under', relative(root, base));
  process.exit(1);
}
const together = isolated || filters.length ? [] : files.filter((f) => relative(testRoot, f).startsWith('unit') && !ownProcess(f));
const alone = files.filter((f) => !together.includes(f));

/** The header of each unit batch that failed, named again after the totals. */
const failedBatches = [];
const COUNTS = ['tests', 'suites', 'pass', 'fail', 'cancelled', 'skipped', 'todo'];
const total = Object.fromEntries(COUNTS.map((k) => [k, 0]));
const SUMMARY = new RegExp(`^ℹ (${COUNTS.join('|')}) (\\d+)$`);
/** Adds a run's summary lines to the totals; returns its output without them (the totals are printed once, at the end). */
function tally(text) {
  const kept = [];
  for (const line of text.split('\n')) {
    const m = SUMMARY.exec(line);
    if (m) total[m[1]] += Number(m[2]);
    else if (!line.startsWith('ℹ duration_ms')) kept.push(line);
  }
  return kept.join('\n');
}

/** One batch of unit files in one process; its output is printed whole when it ends (batches run side by side). */
function runBatch(batch, n, of) {
  return new Promise((resolve) => {
    const started = Date.now();
    const child = spawn(process.execPath, ['--enable-source-maps', '--test-reporter=spec', join(root, 'scripts', 'test-batch.mjs'), ...batch], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const chunks = [];
    child.stdout.on('data', (c) => chunks.push(c));
    child.stderr.on('data', (c) => chunks.push(c));
    const timer = setTimeout(() => child.kill('SIGKILL'), BATCH_TIMEOUT_MS);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const names = batch.map((f) => relative(testRoot, f).replace(/\.js$/, '.ts'));
      const head = `▷ unit batch ${n}/${of} (${((Date.now() - started) / 1000).toFixed(1)} s): ${names.join(', ')}`;
      const failed = code !== 0;
      const body = tally(Buffer.concat(chunks).toString('utf8')).trimEnd();
      const why = signal ? `✖ the batch was ended by ${signal}${signal === 'SIGKILL' ? ` after ${BATCH_TIMEOUT_MS / 60_000} min` : ''}` : failed ? `✖ the batch exited ${code}` : '';
      process.stdout.write(`${head}\n${body}\n${why ? why + '\n' : ''}`);
      if (failed) failedBatches.push(`${head}${why ? ` (${why.slice(2)})` : ''}`);
      resolve(failed);
    });
  });
}

async function runTogether() {
  const batches = [];
  for (let i = 0; i < together.length; i += BATCH_FILES) batches.push(together.slice(i, i + BATCH_FILES));
  let next = 0;
  let failed = false;
  async function slot() {
    while (next < batches.length) {
      const i = next++;
      if (await runBatch(batches[i], i + 1, batches.length)) failed = true;
    }
  }
  await Promise.all(Array.from({ length: Math.min(PROCS, batches.length) }, slot));
  return failed;
}

/** How many of the slowest files run alone are named at the end, with the time their tests took. */
const SLOWEST_SHOWN = 10;
const timesDir = mkdtempSync(join(tmpdir(), 'c0-test-times-'));
const timesFile = join(timesDir, 'files.ndjson');

/** The slowest files run alone, from scripts/file-times.mjs's lines: "41.2 s test/e2e/pools.test.ts". */
function slowestFiles() {
  let text = '';
  try {
    text = readFileSync(timesFile, 'utf8');
  } catch {
    return [];
  }
  const rows = [];
  for (const line of text.split('\n')) {
    try {
      if (line) rows.push(JSON.parse(line));
    } catch {
      // a line cut short (the reporter killed): the others still count
    }
  }
  rows.sort((a, b) => b.ms - a.ms);
  return rows.slice(0, SLOWEST_SHOWN).map((r) => `${(r.ms / 1000).toFixed(1)} s ${relative(root, r.file).replace(/^dist\//, '').replace(/\.js$/, '.ts')}`);
}

/** The other files, each in a process of its own, two at a time; the output streams as it comes. */
function runAlone() {
  return new Promise((resolve) => {
    const reporters = ['--test-reporter=spec', '--test-reporter-destination=stdout', `--test-reporter=${join(root, 'scripts', 'file-times.mjs')}`, `--test-reporter-destination=${timesFile}`];
    const child = spawn(process.execPath, ['--enable-source-maps', '--test', `--test-concurrency=${ALONE_PROCS}`, ...reporters, ...alone], { cwd: root, env, stdio: ['ignore', 'pipe', 'inherit'] });
    let rest = '';
    child.stdout.on('data', (c) => {
      const lines = (rest + c.toString('utf8')).split('\n');
      rest = lines.pop();
      const kept = tally(lines.join('\n'));
      if (kept) process.stdout.write(kept + '\n');
    });
    child.on('close', (code) => {
      if (rest) process.stdout.write(tally(rest) + '\n');
      resolve(code !== 0);
    });
  });
}

const started = Date.now();
let failed = false;
if (together.length) failed = (await runTogether()) || failed;
if (alone.length) failed = (await runAlone()) || failed;
const processes = Math.ceil(together.length / BATCH_FILES);
console.log(`ℹ ${files.length} files: ${together.length ? `${together.length} unit files in ${processes} process${processes === 1 ? '' : 'es'}, ` : ''}${alone.length} in a process of their own`);
for (const k of COUNTS) console.log(`ℹ ${k} ${total[k]}`);
console.log(`ℹ duration_ms ${Date.now() - started}`);
const slowest = slowestFiles();
if (slowest.length) console.log(`ℹ slowest files run alone (their tests' time): ${slowest.join(', ')}`);
rmSync(timesDir, { recursive: true, force: true });
for (const b of failedBatches) console.log(`✖ failed in ${b.slice(2)}`);
if (failed && total.fail === 0) console.log('✖ a test process failed without a failing test: see its output above');
process.exit(failed ? 1 : 0);
