/**
 * What starting the command costs (docs/build.md): `c0mpute start` through bin/c0mpute.js, which runs the esbuild
 * bundle in dist/bundle, against the same with C0MPUTE_BUNDLE=0, which runs the compiled modules in dist/src. Runs
 * alternate between the two so a change of the machine's load falls on both.
 *
 *   npm run bench -- startup [--runs=8]
 *
 * Per run: wall time from spawn to the daemon's "node started" log line, and the CPU (user + system, from
 * /proc/<pid>/stat) the process had used by then; then SIGTERM and the wait for its exit. And a command that starts
 * no daemon (`keys show`), wall time to exit. The target is ours (no issue names one): the bundle must take at most
 * 0.75 of dist/src's CPU to "node started", so a change that stops the bundle from building or from being chosen
 * shows here as a missed target rather than as a slower test suite.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleFresh } from '../../src/util/bundle-fresh.js';
import { statFields } from '../../src/node/daemon-info.js';
import { createIdentity } from '../../src/node/identity.js';
import { median, table, type BenchResult } from './lib.js';

const BIN = fileURLToPath(new URL('../../../bin/c0mpute.js', import.meta.url));
const TICK_MS = 10; // USER_HZ is 100 on Linux
const START_TIMEOUT_MS = 60_000;

type Entry = 'bundle' | 'dist/src';

function envFor(entry: Entry): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, C0MPUTE_LOG_LEVEL: 'info', C0MPUTE_LOG_FORMAT: 'json' };
  delete env.C0MPUTE_BUNDLE;
  if (entry === 'dist/src') env.C0MPUTE_BUNDLE = '0';
  return env;
}

/** utime + stime of a live process, in ms. */
function cpuMs(pid: number): number {
  const f = statFields(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  return (Number(f[11]) + Number(f[12])) * TICK_MS; // fields 14 and 15 (statFields starts at field 3)
}

async function startOnce(entry: Entry, dir: string): Promise<{ wallMs: number; cpuMs: number }> {
  const t0 = performance.now();
  const child = spawn(process.execPath, [BIN, '--data-dir', dir, 'start', '--listen', '/ip4/127.0.0.1/tcp/0', '--api', '127.0.0.1:0'], {
    env: envFor(entry),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  try {
    return await new Promise((resolve, reject) => {
      let seen = '';
      const timer = setTimeout(() => reject(new Error(`${entry}: no "node started" within ${START_TIMEOUT_MS} ms:\n${seen.slice(-2000)}`)), START_TIMEOUT_MS);
      const onData = (b: Buffer): void => {
        seen += b.toString('utf8');
        if (!seen.includes('"node started"')) return;
        const wallMs = performance.now() - t0;
        clearTimeout(timer);
        resolve({ wallMs, cpuMs: cpuMs(child.pid!) });
      };
      child.stdout.on('data', onData);
      child.stderr.on('data', onData);
      child.once('exit', (code) => reject(new Error(`${entry}: exited (${code}) before "node started":\n${seen.slice(-2000)}`)));
    });
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
}

function commandOnce(entry: Entry, dir: string): number {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, [BIN, '--data-dir', dir, 'keys', 'show'], { env: envFor(entry), encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${entry}: keys show exited ${r.status}: ${r.stderr}`);
  return performance.now() - t0;
}

export async function run(): Promise<BenchResult> {
  const knob = process.argv.find((a) => a.startsWith('--runs='));
  const runs = knob ? Number(knob.slice('--runs='.length)) : 8;
  if (!Number.isInteger(runs) || runs < 1) throw new Error(`--runs=${knob?.slice(7)}: want a whole number ≥ 1`);
  const chosen = bundleFresh(new URL('../../', import.meta.url)) ? 'the bundle' : 'dist/src (the bundle is missing or older than the last compile: run `npm run build`)';
  const root = mkdtempSync(join(tmpdir(), 'c0-bench-startup-'));
  try {
    const dir = join(root, 'node');
    createIdentity(dir);
    const start: Record<Entry, { wall: number[]; cpu: number[] }> = { bundle: { wall: [], cpu: [] }, 'dist/src': { wall: [], cpu: [] } };
    const cmd: Record<Entry, number[]> = { bundle: [], 'dist/src': [] };
    // one of each first, not counted: the page cache and the data directory's first open
    for (const e of ['bundle', 'dist/src'] as const) {
      await startOnce(e, dir);
      commandOnce(e, dir);
    }
    for (let i = 0; i < runs; i++) {
      const order: Entry[] = i % 2 ? ['dist/src', 'bundle'] : ['bundle', 'dist/src'];
      for (const e of order) {
        const s = await startOnce(e, dir);
        start[e].wall.push(s.wallMs);
        start[e].cpu.push(s.cpuMs);
        cmd[e].push(commandOnce(e, dir));
      }
    }
    const row = (e: Entry) => ({
      entry: e,
      'to "node started", ms (median)': median(start[e].wall).toFixed(0),
      'CPU by then, ms (median)': median(start[e].cpu).toFixed(0),
      '`keys show`, ms (median)': median(cmd[e]).toFixed(0),
    });
    const cpuRatio = median(start.bundle.cpu) / median(start['dist/src'].cpu);
    const wallRatio = median(start.bundle.wall) / median(start['dist/src'].wall);
    const report = [
      `startup: c0mpute start through bin/c0mpute.js, ${runs} runs each, alternating (the launcher chooses ${chosen})`,
      table([row('bundle'), row('dist/src')]),
      `bundle / dist/src: CPU to "node started" ${cpuRatio.toFixed(3)}, wall ${wallRatio.toFixed(3)}, keys show ${(median(cmd.bundle) / median(cmd['dist/src'])).toFixed(3)}`,
    ].join('\n');
    return { report, targets: [{ name: 'startup: bundle / dist/src CPU to "node started" (ours, ≤)', ratio: cpuRatio, target: 0.75, met: cpuRatio <= 0.75 }] };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
