/**
 * A local training run of real worker processes (`npm start -- --training`,
 * and the training end-to-end tests; docs/training.md "Devnet"): keys for N
 * workers and an owner, a signed run bundle with free loopback ports, one
 * `c0mpute train join` process per worker, and a flooding peer (a node that
 * is not a member) sending step commitments for steps it never did.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createIdentity } from '../node/identity.js';
import { Ed25519Signer } from '../records/ed25519.js';
import { seal } from '../records/envelope.js';
import { createNetwork } from '../net/node.js';
import { peerIdFromDid } from '../node/peer-id.js';
import { buildRun, type RunBundle } from '../roles/trainer/run-file.js';
import { TRAIN_T, type TrainStep } from '../training/record-kinds.js';
import { TRAIN_PROTOCOL } from '../training/transport.js';
import { freePort } from './devnet.js';

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
  mkdirSync(dir, { recursive: true });
  const workers: TrainingSetup['workers'] = [];
  for (let i = 0; i < n; i++) {
    const wdir = join(dir, `worker${i + 1}`);
    const id = createIdentity(wdir);
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

export function spawnWorker(bin: string, s: TrainingSetup, i: number): { child: ChildProcess; out: () => string } {
  const w = s.workers[i]!;
  const child = spawn(process.execPath, [bin, '--data-dir', w.dir, 'train', 'join', s.bundlePath, '--json'], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, C0MPUTE_LOG_LEVEL: 'error' } });
  let buf = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (buf += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (buf += d));
  return { child, out: () => buf };
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
 * Returns how many the target took without a transport error.
 */
export async function flood(s: TrainingSetup, target: number, count: number): Promise<{ did: string; sent: number }> {
  const key = Ed25519Signer.generate();
  const net = await createNetwork({ signer: key, listen: ['/ip4/127.0.0.1/tcp/0'], loopback: true, syncOnConnect: [], topics: [] });
  await net.start();
  let sent = 0;
  try {
    const t = s.workers[target]!;
    await net.dial(`${s.bundle.addrs[t.did]}/p2p/${peerIdFromDid(t.did).toString()}`);
    for (let step = 0; step < count; step++) {
      const rec: TrainStep = { run: s.bundle.run.address, view: 0, step, grad: 'sha256:' + '11'.repeat(32), weights: 'sha256:' + '22'.repeat(32), lossMicro: 1, signedAt: Date.now() };
      const env = seal(TRAIN_T.step, rec as never, key).bytes;
      try {
        await net.request(t.did, TRAIN_PROTOCOL, [{ k: 'commit' }, env]);
        sent++;
      } catch {
        /* counted as not sent */
      }
    }
  } finally {
    await net.stop();
  }
  return { did: net.did, sent };
}
