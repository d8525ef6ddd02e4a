/**
 * `npm run bench -- training` (docs/training.md "Figures"):
 *  (1) ring all-reduce of 1 MB and 16 MB of int32 across 3 and 5 processes over
 *      libp2p, beside the ring's lower bound 2(N−1)/N · S / B, where B is the raw
 *      throughput of one S-byte message on the same wire measured in the same
 *      processes (every link sends at once, so the bound assumes B per link);
 *  (2) training steps per second of three worker processes against the same
 *      steps in a single process (the reference run: same arithmetic, no wire);
 *  (3) a two-stage pipeline across two processes: rows per second with and
 *      without micro-batching (GPipe, 8 micro-batches vs 1).
 * Every process shares this machine's cores, so compare the columns.
 */
import '../../src/polyfill.js';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ed25519Signer } from '../../src/records/index.js';
import { createNetwork } from '../../src/net/node.js';
import { freePort } from '../../src/devnet/devnet.js';
import { setupTraining, spawnStage, spawnWorker, workerStatus } from '../../src/devnet/training-scenario.js';
import { referenceFor } from '../../src/roles/trainer/run-file.js';
import { createIdentity } from '../../src/node/identity.js';
import { initWeights, weightsBytes } from '../../src/training/model.js';
import { gpipeForward } from '../../src/training/pipeline.js';
import { remotePipeline } from '../../src/training/pipeline-net.js';
import { median, table, type BenchResult } from './lib.js';

const HERE = fileURLToPath(new URL('.', import.meta.url));
const BIN = join(HERE, '..', '..', '..', 'bin', 'c0mpute.js');
const REPS = Number(process.env.BENCH_TRAIN_REPS ?? 3);

async function allReduce(n: number, bytes: number): Promise<{ ms: number; rawMs: number; bound: number }> {
  const ports: number[] = [];
  for (let i = 0; i < n; i++) ports.push(await freePort());
  const procs = Array.from({ length: n }, (_, r) => spawn(process.execPath, [join(HERE, 'allreduce-worker.js'), String(r), String(n), ports.join(','), String(bytes), String(REPS)], { stdio: ['ignore', 'pipe', 'inherit'] }));
  const outs = await Promise.all(
    procs.map(
      (p) =>
        new Promise<{ rawMs: number; times: number[] }>((resolve, reject) => {
          let buf = '';
          p.stdout!.setEncoding('utf8').on('data', (d: string) => (buf += d));
          p.once('exit', (code) => {
            if (code === 0) return resolve(JSON.parse(buf.trim().split('\n').pop()!) as { rawMs: number; times: number[] });
            // One worker failed: stop the others (they would wait out their timeouts).
            for (const q of procs) if (q.exitCode === null) q.kill('SIGTERM');
            reject(new Error(`all-reduce worker exited ${code}`));
          });
        }),
    ),
  );
  const perRep = outs[0]!.times.map((_, r) => Math.max(...outs.map((o) => o.times[r]!)));
  const rawMs = median(outs.map((o) => o.rawMs));
  return { ms: median(perRep), rawMs, bound: ((2 * (n - 1)) / n) * rawMs };
}

async function steps(): Promise<{ multi: number; single: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'c0-bench-train-'));
  try {
    const s = await setupTraining(dir, { epochs: 2, stepsPerEpoch: 15, timeoutMs: 30_000 });
    const procs = s.workers.map((_, i) => spawnWorker(BIN, s, i));
    await Promise.all(procs.map((p) => new Promise((r) => p.child.once('exit', r))));
    const multi = Number(workerStatus(s, 0)!.stepsPerSec);
    const t0 = performance.now();
    const reps = 5;
    for (let i = 0; i < reps; i++) referenceFor(s.bundle.run.record);
    const single = (reps * 30) / ((performance.now() - t0) / 1000);
    return { multi, single };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function pipeline(): Promise<{ micro1: number; micro8: number; rows: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'c0-bench-pipe-'));
  const layers = [256, 1024, 1024, 1024, 10];
  const rows = 256;
  const w = initWeights({ layers }, 3);
  const wf = join(dir, 'w.bin');
  writeFileSync(wf, weightsBytes(w));
  for (const k of ['s0', 's1']) createIdentity(join(dir, k));
  const st1 = await spawnStage(BIN, join(dir, 's1'), wf, layers, 1, 2, `/ip4/127.0.0.1/tcp/${await freePort()}`);
  const st0 = await spawnStage(BIN, join(dir, 's0'), wf, layers, 0, 2, `/ip4/127.0.0.1/tcp/${await freePort()}`, st1.addr);
  const driver = await createNetwork({ signer: Ed25519Signer.generate(), listen: ['/ip4/127.0.0.1/tcp/0'], loopback: true, syncOnConnect: [], topics: [] });
  await driver.start();
  try {
    await driver.dial(st0.addr);
    const x = Float64Array.from({ length: rows * 256 }, (_, i) => Math.sin(i));
    const run = remotePipeline(driver, [st0.did, st1.did]);
    const time = async (m: number) => {
      const xs: number[] = [];
      for (let r = 0; r < REPS + 1; r++) {
        const t0 = performance.now();
        await gpipeForward([run], x, rows, 256, 10, m, { serialise: false });
        if (r > 0) xs.push(performance.now() - t0);
      }
      return median(xs);
    };
    const m1 = await time(1);
    const m8 = await time(8);
    return { micro1: rows / (m1 / 1000), micro8: rows / (m8 / 1000), rows };
  } finally {
    await driver.stop();
    st0.child.kill('SIGTERM');
    st1.child.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function run(): Promise<BenchResult> {
  const rows: Array<Record<string, string | number>> = [];
  const targets: BenchResult['targets'] = [];
  for (const n of [3, 5]) {
    for (const mb of [1, 16]) {
      let r: { ms: number; rawMs: number; bound: number };
      try {
        r = await allReduce(n, mb * 1024 * 1024);
      } catch (e) {
        rows.push({ processes: n, size: `${mb} MB`, 'all-reduce ms': `failed: ${(e as Error).message}`, 'raw 1-msg ms': '-', 'ring bound ms': '-', 'measured / bound': '-' });
        continue;
      }
      rows.push({ processes: n, size: `${mb} MB`, 'all-reduce ms': r.ms.toFixed(1), 'raw 1-msg ms': r.rawMs.toFixed(1), 'ring bound ms': r.bound.toFixed(1), 'measured / bound': (r.ms / r.bound).toFixed(2) });
      if (mb === 16) targets.push({ name: `allreduce-16MB-${n}p-within-4x-bound`, ratio: r.bound / r.ms, target: 0.25, met: r.bound / r.ms >= 0.25 });
    }
  }
  const lines = ['ring all-reduce over /c0mpute/train/1 (median of ' + REPS + ' runs, slowest rank):', table(rows), ''];
  console.log(lines.join('\n'));
  try {
    const s = await steps();
    lines.push(`training steps/s: 3 worker processes ${s.multi.toFixed(2)}, single process (same arithmetic, no wire) ${s.single.toFixed(1)}; ratio ${(s.multi / s.single).toFixed(3)}`);
  } catch (e) {
    lines.push(`training steps/s: failed (${(e as Error).message})`);
  }
  try {
    const p = await pipeline();
    lines.push(`pipeline 256-1024-1024-1024-10, ${p.rows} rows, 2 stage processes: ${p.micro1.toFixed(0)} rows/s whole batch, ${p.micro8.toFixed(0)} rows/s with 8 micro-batches (×${(p.micro8 / p.micro1).toFixed(2)})`);
    targets.push({ name: 'pipeline-microbatch-speedup', ratio: p.micro8 / p.micro1, target: 1, met: p.micro8 / p.micro1 >= 1 });
  } catch (e) {
    lines.push(`pipeline: failed (${(e as Error).message})`);
  }
  return { report: lines.join('\n'), targets };
}
