/**
 * A local training run of real worker processes (`npm start -- --training`,
 * and the training end-to-end tests; docs/training.md "Devnet"): keys for N
 * workers and an owner, a signed run bundle with free loopback ports, one
 * `c0mpute train join` process per worker, and a flooding peer (a node that
 * is not a member) sending step commitments for steps it never did: refused
 * TRAIN_NOT_MEMBER before they are read.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { C0Error } from '../errors.js';
import { Ed25519Signer } from '../records/ed25519.js';
import { open, seal } from '../records/envelope.js';
import { createNetwork } from '../net/node.js';
import { peerIdFromDid } from '../node/peer-id.js';
import { buildRun, type RunBundle } from '../roles/trainer/run-file.js';
import { TRAIN_T, type TrainEpoch, type TrainStep } from '../training/record-kinds.js';
import { TRAIN_PROTOCOL } from '../training/transport.js';
import { devnetDir, devnetIdentity, devnetNodeEnv, freePort } from './devnet.js';

export interface TrainingSetup {
  dir: string;
  bundlePath: string;
  bundle: RunBundle;
  workers: Array<{ dir: string; did: string }>;
}

export interface RunOptions {
  workers?: number;
  epochs?: number;
  stepsPerEpoch?: number;
  layers?: number[];
  timeoutMs?: number;
  onFailure?: 'continue' | 'stop';
  lr?: string;
  batch?: number;
}

export async function setupTraining(dir: string, o: RunOptions = {}): Promise<TrainingSetup> {
  const n = o.workers ?? 3;
  devnetDir(dir);
  const workers: TrainingSetup['workers'] = [];
  for (let i = 0; i < n; i++) {
    const wdir = join(dir, `worker${i + 1}`);
    // the key stored there by an earlier run on the same --dir, else a new one (README "--dir"): each run is a new
    // training run (its own bundle, owner and ports), signed for by the same workers
    const id = devnetIdentity(wdir);
    workers.push({ dir: wdir, did: id.did });
  }
  const members = await Promise.all(workers.map(async (w) => ({ did: w.did, addr: `/ip4/127.0.0.1/tcp/${await freePort()}` })));
  const yaml = [
    'name: iris-devnet',
    `model: { layers: [${(o.layers ?? [4, 16, 3]).join(', ')}] }`,
    'seed: 7',
    'members:',
    ...members.flatMap((m) => [`  - did: ${m.did}`, `    addr: ${m.addr}`]),
    `batch: ${o.batch ?? 8}`,
    `stepsPerEpoch: ${o.stepsPerEpoch ?? 10}`,
    `epochs: ${o.epochs ?? 3}`,
    `lr: "${o.lr ?? '0.3'}"`,
    `timeoutMs: ${o.timeoutMs ?? 5000}`,
    `onFailure: ${o.onFailure ?? 'continue'}`,
  ].join('\n');
  writeFileSync(join(dir, 'run.yaml'), yaml + '\n');
  const owner = Ed25519Signer.generate();
  const { bundle, json } = buildRun(yaml, owner, Date.now());
  const bundlePath = join(dir, 'run.run.json');
  writeFileSync(bundlePath, json);
  return { dir, bundlePath, bundle, workers };
}

/** A worker's output (its `--json` events and any error), as it came, in `<worker dir>/worker.log` too. */
export const WORKER_LOG = 'worker.log';

export function spawnWorker(bin: string, s: TrainingSetup, i: number): { child: ChildProcess; out: () => string; log: string } {
  const w = s.workers[i]!;
  const child = spawn(process.execPath, [bin, '--data-dir', w.dir, 'train', 'join', s.bundlePath, '--json'], { stdio: ['ignore', 'pipe', 'pipe'], env: devnetNodeEnv(process.env, { C0MPUTE_LOG_LEVEL: 'error' }) });
  const log = join(w.dir, WORKER_LOG);
  const file = createWriteStream(log, { flags: 'a' });
  let buf = '';
  const take = (d: string) => {
    buf += d;
    file.write(d);
  };
  child.stdout!.setEncoding('utf8').on('data', take);
  child.stderr!.setEncoding('utf8').on('data', take);
  child.once('close', () => file.end());
  return { child, out: () => buf, log };
}

/** How a process ended, as a person reads it: "exited 0", "exited 3", "killed by SIGKILL" (not a made-up 128). */
export function endText(code: number | null, signal: NodeJS.Signals | null): string {
  return signal ? `killed by ${signal}` : `exited ${code}`;
}

export function workerStatus(s: TrainingSetup, i: number): Record<string, unknown> | undefined {
  const p = join(s.workers[i]!.dir, 'train', s.bundle.run.address.slice(7, 23), 'status.json');
  if (!existsSync(p)) return undefined;
  try {
    return JSON.parse(readFileSync(p, 'utf8')) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

export function workerRunDir(s: TrainingSetup, i: number): string {
  return join(s.workers[i]!.dir, 'train', s.bundle.run.address.slice(7, 23));
}

/**
 * A flooding peer: not a member, it dials `target` and sends `count` step
 * commitments for steps it never did (signed with its own key, weights made up).
 * Returns how many the target took without an error, and the codes of the
 * refusals (TRAIN_NOT_MEMBER: train/1 admits only the run's members).
 */
export async function flood(s: TrainingSetup, target: number, count: number): Promise<{ did: string; sent: number; refused: Record<string, number> }> {
  const key = Ed25519Signer.generate();
  const net = await createNetwork({ signer: key, listen: ['/ip4/127.0.0.1/tcp/0'], loopback: true, syncOnConnect: [], topics: [] });
  await net.start();
  let sent = 0;
  const refused: Record<string, number> = {};
  try {
    const t = s.workers[target]!;
    await net.dial(`${s.bundle.addrs[t.did]}/p2p/${peerIdFromDid(t.did).toString()}`);
    for (let step = 0; step < count; step++) {
      const rec: TrainStep = { run: s.bundle.run.address, view: 0, step, grad: 'sha256:' + '11'.repeat(32), weights: 'sha256:' + '22'.repeat(32), lossMicro: 1, signedAt: Date.now() };
      const env = seal(TRAIN_T.step, rec as never, key).bytes;
      try {
        await net.request(t.did, TRAIN_PROTOCOL, [{ k: 'commit' }, env]);
        sent++;
      } catch (e) {
        const code = e instanceof C0Error ? e.code : 'ERROR';
        refused[code] = (refused[code] ?? 0) + 1;
      }
    }
  } finally {
    await net.stop();
  }
  return { did: net.did, sent, refused };
}

// ---------------------------------------------------------------------------
// The narrated scenario (`npm start -- --training`)
// ---------------------------------------------------------------------------

const short = (s: string) => (s.startsWith('did:') ? `${s.slice(0, 14)}…${s.slice(-6)}` : s);

interface WorkerEvent {
  e: string;
  step?: number;
  epoch?: number;
  loss?: number;
  root?: string;
  coordinator?: string;
  witnesses?: string[];
  code?: string;
  from?: string;
}

/** Spawn a pipeline stage process; resolves with its DID and address once it serves. */
export function spawnStage(bin: string, dataDir: string, weights: string, layers: number[], k: number, of: number, listen: string, next?: string): Promise<{ child: ChildProcess; addr: string; did: string }> {
  const args = [bin, '--data-dir', dataDir, 'train', 'stage', weights, '--layers', layers.join(','), '--stage', String(k), '--of', String(of), '--listen', listen, ...(next ? ['--next', next] : [])];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], env: devnetNodeEnv(process.env, { C0MPUTE_LOG_LEVEL: 'error' }) });
  return new Promise((resolve, reject) => {
    let buf = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      buf += d;
      const m = /as (did:key:\S+) at (\S+)/.exec(buf);
      if (m) resolve({ child, did: m[1]!, addr: m[2]! });
    });
    child.once('exit', (code) => reject(new Error(`stage ${k} exited (${code}): ${buf}`)));
  });
}

/**
 * The `devnet --training` walk. Aborting `signal` stops it at its next poll
 * (every 100 ms while the workers train) with an error; either way every
 * process it started is stopped before it returns.
 */
export async function runTrainingScenario(bin: string, dir: string, say: (s: string) => void, signal?: AbortSignal): Promise<boolean> {
  const { referenceFor } = await import('../roles/trainer/run-file.js');
  const { iris } = await import('../training/data.js');
  const { argmaxRows, forward, weightsFromBytes, weightsBytes } = await import('../training/model.js');
  const { gpipeForward } = await import('../training/pipeline.js');
  const { remotePipeline } = await import('../training/pipeline-net.js');
  const layers = [4, 16, 3];
  const s = await setupTraining(dir, { epochs: 3, stepsPerEpoch: 10, layers, timeoutMs: 10_000 });
  say(`run ${s.bundle.run.address}: MLP ${layers.join('-')} on Iris (120 training rows, 30 held out), 3 workers, 3 epochs × 10 steps, int8 gradients with error feedback`);
  s.workers.forEach((w, i) => say(`  worker ${i + 1}: ${w.did} at ${s.bundle.addrs[w.did]}`));
  const procs = s.workers.map((_, i) => spawnWorker(bin, s, i));
  const children = procs.map((p) => p.child);
  const stages: ChildProcess[] = [];
  try {
    // Narrate worker 1's events as they arrive.
    let seen = 0;
    let flooded = false;
    let floodDid = '';
    const narrate = () => {
      const lines = procs[0]!.out().split('\n');
      for (; seen < lines.length - 1; seen++) {
        let ev: WorkerEvent;
        try {
          ev = JSON.parse(lines[seen]!) as WorkerEvent;
        } catch {
          continue;
        }
        if (ev.e === 'step') say(`  step ${String(ev.step).padStart(2)} (epoch ${ev.epoch}) loss ${ev.loss!.toFixed(4)}`);
        if (ev.e === 'epoch') say(`  epoch ${ev.epoch} root ${ev.root} signed by the elected coordinator ${short(ev.coordinator!)}, witnessed by ${ev.witnesses!.map(short).join(', ')}`);
        if (ev.e === 'ignored' && ev.from === floodDid) say(`  worker 1 ignored a step commitment from the flooding peer for step ${ev.step}: ${ev.code}`);
        if (ev.e === 'joined') say('  all three members countersigned their membership; training');
      }
    };
    const exits = children.map((c) => new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => c.once('exit', (code, sig) => r({ code, signal: sig }))));
    let done = false;
    void Promise.all(exits).then(() => (done = true));
    while (!done) {
      await new Promise((r) => setTimeout(r, 100));
      signal?.throwIfAborted();
      if (!flooded && (workerStatus(s, 0)?.step as number | undefined) !== undefined && (workerStatus(s, 0)!.step as number) >= 3) {
        flooded = true;
        say('  a flooding peer (not a member) sends 5 step commitments for steps it never did…');
        const f = await flood(s, 0, 5);
        floodDid = f.did;
        say(`  worker 1 refused them before reading them: ${Object.entries(f.refused).map(([c, n]) => `${n} × ${c}`).join(', ') || 'none refused'}`);
      }
      narrate();
    }
    narrate();
    const ends = await Promise.all(exits);
    if (ends.some((e) => e.code !== 0)) {
      // each worker named, with how it ended; the end of a failed one's output, labelled, and where all of it is
      say(`a worker failed: ${ends.map((e, i) => `worker ${i + 1} ${endText(e.code, e.signal)}`).join(', ')}`);
      ends.forEach((e, i) => {
        if (e.code === 0) return;
        const last = procs[i]!.out().trim().split('\n').filter(Boolean).slice(-5);
        say(`  worker ${i + 1}'s output (${procs[i]!.log}) ${last.length ? `ends:\n${last.map((l) => `    ${l.length > 200 ? `${l.slice(0, 200)}…` : l}`).join('\n')}` : 'is empty'}`);
      });
      return false;
    }
    const st = s.workers.map((_, i) => workerStatus(s, i)!);
    const ref = referenceFor(s.bundle.run.record);
    const same = st.every((x) => x.weights === ref.weights);
    say(`\nfinal weights: ${st.map((x, i) => `worker ${i + 1} ${String(x.weights).slice(0, 23)}…`).join(', ')}`);
    say(`single-process run with the same quantisation: ${ref.weights.slice(0, 23)}… → ${same ? 'bit-identical on every worker' : 'DIFFERENT'}`);
    say(`held-out accuracy ${(Number(st[0]!.accuracy) * 100).toFixed(1)} % against the majority-class baseline ${(Number(st[0]!.baseline) * 100).toFixed(1)} %`);
    const ign = st[0]!.ignored as { count: number };
    // read back from the epoch commitments worker 1 holds, not asserted: each names only the run's members and commits
    // to members × steps leaves
    const runRec = s.bundle.run.record;
    const epochs = readdirSync(join(workerRunDir(s, 0), 'epochs'))
      .filter((f) => f.endsWith('.json'))
      .map((f) => open(Buffer.from((JSON.parse(readFileSync(join(workerRunDir(s, 0), 'epochs', f), 'utf8')) as { envelope: string }).envelope, 'hex'), TRAIN_T.epoch).record as TrainEpoch);
    const members = new Set(runRec.members);
    const clean = epochs.length > 0 && epochs.every((e) => !e.members.includes(floodDid) && e.members.every((d) => members.has(d)) && e.leaves === e.members.length * runRec.stepsPerEpoch);
    say(
      `flooding peer ${short(floodDid)}: refused as not a member; worker 1 ignored ${ign.count} step commitments; ` +
        (clean ? `each of the ${epochs.length} epoch roots commits to members × ${runRec.stepsPerEpoch} steps, the flooding peer not among them` : `an epoch root names someone else or another count of steps: ${JSON.stringify(epochs.map((e) => [e.members.length, e.leaves]))}`),
    );
    // Two-stage pipeline on the trained weights, two processes.
    const wfile = join(workerRunDir(s, 0), 'weights.bin');
    const st1 = await spawnStage(bin, join(dir, 'worker2'), wfile, layers, 1, 2, `/ip4/127.0.0.1/tcp/${await freePort()}`);
    stages.push(st1.child);
    const st0 = await spawnStage(bin, join(dir, 'worker1'), wfile, layers, 0, 2, `/ip4/127.0.0.1/tcp/${await freePort()}`, st1.addr);
    stages.push(st0.child);
    say(`\npipeline: stage 0 (layer 1) on ${short(st0.did)}, stage 1 (layer 2) on ${short(st1.did)}`);
    const key = Ed25519Signer.generate();
    const driver = await createNetwork({ signer: key, listen: ['/ip4/127.0.0.1/tcp/0'], loopback: true, syncOnConnect: [], topics: [] });
    await driver.start();
    try {
      await driver.dial(st0.addr);
      await driver.dial(st1.addr);
      const d = iris().test;
      const w = weightsFromBytes(readFileSync(wfile));
      const shape = { layers };
      const out = await gpipeForward([remotePipeline(driver, [st0.did, st1.did])], d.x, d.n, 4, 3, 5, { serialise: false });
      const local = forward(shape, w, d.x, d.n);
      const eq = Buffer.from(weightsBytes(out)).equals(Buffer.from(weightsBytes(local)));
      // counted from what came back through the two stages, not from the local forward
      const preds = argmaxRows(out, d.n, layers[layers.length - 1]!);
      let ok = 0;
      for (let i = 0; i < d.n; i++) if (preds[i] === d.y[i]) ok++;
      say(`30 held-out rows in 5 micro-batches through the 2 stages: output ${eq ? 'bit-identical to' : 'DIFFERENT from'} the single-process forward; ${ok}/30 correct`);
      return same && eq && clean;
    } finally {
      await driver.stop();
    }
  } finally {
    await stopAll([...children, ...stages]);
  }
}

/** SIGTERM each process still running and wait for it to exit: SIGKILL after 5 s. */
async function stopAll(procs: ChildProcess[]): Promise<void> {
  await Promise.all(
    procs.map(async (c) => {
      if (c.exitCode !== null || c.signalCode !== null) return;
      const exited = new Promise<void>((r) => c.once('exit', () => r()));
      c.kill('SIGTERM');
      const t = setTimeout(() => c.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(t);
    }),
  );
}
