/**
 * `npm run bench -- idle` (issue #16; docs/scale.md "Idle cost"): what an idle
 * node costs in CPU, against what bare libp2p costs in the same run.
 *
 * Each variant runs N nodes in one child process of its own (fresh heap, one
 * after another), on TCP over 127.0.0.1, each bootstrapping to the node started
 * before it and up to two earlier ones (a seeded ring-plus-random topology, like
 * the sim's). When every node has a peer the process warms up, then its CPU
 * (process.cpuUsage) over a fixed window is divided by N:
 *
 *   bare        libp2p alone: the same transports (TCP, noise, yamux), identify,
 *               ping, gossipsub with our options and score parameters, kad-dht
 *               with our options, subscribed to our topics — nothing of ours.
 *   net         + our network layer as the sim builds it (createNetwork: the
 *               validation pipeline, record cache and sync, connectivity,
 *               gossip self-check, metrics).
 *   node        + what the daemon builds per overlay (OverlayNode: LevelDB,
 *               market, presence view, open orders and claimer, anti-entropy):
 *               3 of 4 nodes providers (advert at start, presence every 5 s,
 *               the default), the rest buyers. No jobs.
 *   node-quiet  as `node` with the presence republish pushed out of the window
 *               (presenceEveryMs 599 s): what our timers alone cost.
 *   daemon      as `node-quiet`, each node a whole Daemon (Daemon.start, control
 *               API and console hub on): adds what a daemon process runs once
 *               (prom-client's default metrics, the console's health sampler and
 *               event-loop monitors), here once per node.
 *
 * Options (as --name=value): --nodes (20) --warmMs (10000) --windowMs (30000)
 * --rounds (1: the variants run that many times, interleaved) --variants=a,b
 * --prof=DIR (a CPU profile of each child's measurement window, written to DIR).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createLibp2p, type Libp2p } from 'libp2p';
import { tcp } from '@libp2p/tcp';
import { noise } from '@libp2p/noise';
import { yamux } from '@libp2p/yamux';
import { identify } from '@libp2p/identify';
import { ping } from '@libp2p/ping';
import { bootstrap } from '@libp2p/bootstrap';
import { gossipsub } from '@libp2p/gossipsub';
import { createPeerScoreParams } from '@libp2p/gossipsub/score';
import { kadDHT, passthroughMapper } from '@libp2p/kad-dht';
import '../../src/polyfill.js';
import { Ed25519Signer } from '../../src/records/ed25519.js';
import { createNetwork, DHT_PROTOCOL, GOSSIP_BASE, LIVENESS, topicScoreParams, type Network } from '../../src/net/node.js';
import { TOPIC_KINDS, topicsFor } from '../../src/net/topics.js';
import { libp2pKey } from '../../src/node/peer-id.js';
import { silentLogger } from '../../src/util/log.js';
import { seededRandom } from '../../src/net/faults.js';
import type { BenchResult } from './lib.js';
import { table } from './lib.js';

export const VARIANTS = ['bare', 'net', 'node', 'node-quiet', 'daemon'] as const;
export type Variant = (typeof VARIANTS)[number];

export interface IdleOptions {
  nodes: number;
  warmMs: number;
  windowMs: number;
  /** Write a CPU profile of the measurement window (only) here. */
  profDir?: string;
}

export interface IdleFigure {
  variant: Variant;
  nodes: number;
  windowMs: number;
  /** process CPU over the window / nodes / window, as % of one core */
  cpuPctPerNode: number;
  /** mean connected peers per node at the end of the window */
  peers: number;
  /** libuv timer handles alive per node (process.getActiveResourcesInfo) at the end */
  timersPerNode: number;
  rssMiB: number;
}

interface Handle {
  addrs(): string[];
  peers(): number;
  stop(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Bootstrap list of node i: the node before it and up to two random earlier ones (seeded). */
function bootstrapOf(i: number, addrs: string[][], rnd: () => number): string[] {
  if (i === 0) return [];
  const pick = new Set([i - 1]);
  for (let k = 0; k < 2 && i > 1; k++) pick.add(Math.floor(rnd() * (i - 1)));
  return [...pick].flatMap((j) => addrs[j]!.slice(0, 1));
}

async function startBare(signer: Ed25519Signer, boot: string[]): Promise<Handle> {
  const topics: Record<string, ReturnType<typeof topicScoreParams>> = {};
  // every topic of every kind, on every market shard: what createNetwork joins by default (the `net` variant)
  for (const k of TOPIC_KINDS) for (const t of topicsFor(k)) topics[t] = topicScoreParams();
  const node: Libp2p = await createLibp2p({
    privateKey: await libp2pKey(signer),
    addresses: { listen: ['/ip4/127.0.0.1/tcp/0'] },
    transports: [tcp()],
    connectionEncrypters: [noise()],
    streamMuxers: [yamux()],
    connectionManager: { maxConnections: 200 },
    // the same liveness pings as createNetwork (every 30 s, not libp2p's 10 s): like against like
    connectionMonitor: { pingInterval: LIVENESS.pingIntervalMs, pingTimeout: { minTimeout: LIVENESS.pingMinTimeoutMs } },
    peerDiscovery: boot.length ? [bootstrap({ list: boot })] : [],
    services: {
      identify: identify(),
      ping: ping({ maxInboundStreams: LIVENESS.pingStreams, maxOutboundStreams: LIVENESS.pingStreams }),
      pubsub: gossipsub({
        ...GOSSIP_BASE,
        scoreParams: createPeerScoreParams({ topics, IPColocationFactorWeight: 0 }),
      }),
      dht: kadDHT({ protocol: DHT_PROTOCOL, peerInfoMapper: passthroughMapper, clientMode: false, initialQuerySelfInterval: 50, allowQueryWithZeroPeers: true }),
    },
  });
  const ps = (node.services as { pubsub: { subscribe(t: string): void } }).pubsub;
  for (const k of TOPIC_KINDS) for (const t of topicsFor(k)) ps.subscribe(t);
  for (const a of boot) void node.dial((await import('@multiformats/multiaddr')).multiaddr(a)).catch(() => undefined);
  return { addrs: () => node.getMultiaddrs().map((m) => m.toString()), peers: () => node.getPeers().length, stop: async () => node.stop() };
}

async function startNet(signer: Ed25519Signer, boot: string[]): Promise<Handle> {
  const net: Network = await createNetwork({ signer, listen: ['/ip4/127.0.0.1/tcp/0'], loopback: true, bootstrap: boot });
  await net.start();
  for (const a of boot) void net.dial(a).catch(() => undefined);
  return { addrs: () => net.addrs(), peers: () => net.peers().length, stop: () => net.stop() };
}

async function startNode(i: number, seed: Uint8Array, boot: string[], quiet: boolean, root: string, daemon = false): Promise<Handle> {
  const { OverlayNode } = await import('../../src/node/overlay.js');
  const { parseConfig } = await import('../../src/node/config.js');
  const { createIdentity } = await import('../../src/node/identity.js');
  const { openDb, closeDb } = await import('../../src/store/db.js');
  const dataDir = join(root, `n${i}`);
  const identity = createIdentity(dataDir, undefined, seed);
  const provider = i % 4 !== 3;
  const price = { amount: '0.002', currency: 'USD' };
  const config = parseConfig({
    ...(daemon ? { api: { listen: '127.0.0.1:0' } } : {}),
    roles: [provider ? 'provider' : 'buyer'],
    network: { listen: ['/ip4/127.0.0.1/tcp/0'], loopback: true, bootstrap: boot },
    ...(provider
      ? {
          provider: {
            slots: 1,
            detectGpus: false,
            hardware: { cpuCores: 8, memoryMiB: 16_384, gpus: [] },
            meter: { type: 'estimator', estimatorWatts: 65 },
            ...(quiet ? { presenceWindowMs: 600_000, presenceEveryMs: 599_000 } : {}),
            workloads: { 'builtin.sha256': { executor: { type: 'builtin', name: 'builtin.sha256' }, price, duration: { baseMs: 1000 } } },
          },
        }
      : { buyer: { policy: 'balanced', collectWindowMs: 3000, enoughOffers: 0 } }),
  });
  if (daemon) {
    const { Daemon } = await import('../../src/node/daemon.js');
    const d = await Daemon.start({ dataDir, config, identity, log: silentLogger(), advertise: false, api: true });
    for (const a of boot) void d.net.dial(a).catch(() => undefined);
    return { addrs: () => d.net.addrs(), peers: () => d.net.peers().length, stop: () => d.stop() };
  }
  const db = await openDb(join(dataDir, 'db'));
  const o = await OverlayNode.start({ dataDir, db, identity, config, network: config.network, roles: config.roles, clock: () => Date.now(), log: silentLogger() });
  for (const a of boot) void o.net.dial(a).catch(() => undefined);
  return {
    addrs: () => o.net.addrs(),
    peers: () => o.net.peers().length,
    stop: async () => {
      await o.stop();
      await closeDb(db);
    },
  };
}

/** One variant, in this process: start, warm up, measure, stop. */
export async function runVariant(variant: Variant, o: IdleOptions): Promise<IdleFigure> {
  const rnd = seededRandom(16);
  const root = mkdtempSync(join(tmpdir(), 'c0-idle-'));
  const handles: Handle[] = [];
  const addrs: string[][] = [];
  try {
    for (let i = 0; i < o.nodes; i++) {
      const seed = new Uint8Array(32);
      seed[0] = i + 1;
      seed[1] = 16;
      const signer = new Ed25519Signer(seed);
      const boot = bootstrapOf(i, addrs, rnd);
      const h =
        variant === 'bare' ? await startBare(signer, boot) : variant === 'net' ? await startNet(signer, boot) : await startNode(i, seed, boot, variant !== 'node', root, variant === 'daemon');
      handles.push(h);
      addrs.push(h.addrs());
    }
    const until = Date.now() + 60_000;
    while (handles.some((h) => h.peers() === 0) && Date.now() < until) await sleep(200);
    await sleep(o.warmMs);
    const session = o.profDir ? new Session() : undefined;
    if (session) {
      session.connect();
      await session.post('Profiler.enable');
      await session.post('Profiler.start');
    }
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    await sleep(o.windowMs);
    const cpu = process.cpuUsage(cpu0);
    const ms = performance.now() - t0;
    if (session) {
      const { profile } = await session.post('Profiler.stop');
      writeFileSync(join(o.profDir!, `idle-${variant}-${Date.now()}.cpuprofile`), JSON.stringify(profile));
      session.disconnect();
    }
    const timers = process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    return {
      variant,
      nodes: o.nodes,
      windowMs: Math.round(ms),
      cpuPctPerNode: ((cpu.user + cpu.system) / 1000 / ms / o.nodes) * 100,
      peers: handles.reduce((s, h) => s + h.peers(), 0) / handles.length,
      timersPerNode: timers / o.nodes,
      rssMiB: process.memoryUsage().rss / 2 ** 20,
    };
  } finally {
    for (const h of handles.reverse()) await h.stop().catch(() => undefined);
    rmSync(root, { recursive: true, force: true });
  }
}

/** `--name=value` (the bench runner takes every bare word for a suite name). */
function argStr(name: string): string | undefined {
  const a = process.argv.find((x) => x.startsWith(`--${name}=`));
  return a?.slice(name.length + 3);
}
function arg(name: string, def: number): number {
  const v = argStr(name);
  return v === undefined ? def : Number(v);
}

/** Run one variant in a child process (this file with --child); its figure is the last stdout line. */
function inChild(variant: Variant, o: IdleOptions, prof?: string): Promise<IdleFigure> {
  const args = [fileURLToPath(import.meta.url), ...(prof ? [`--prof=${prof}`] : []), `--child=${variant}`, `--nodes=${o.nodes}`, `--warmMs=${o.warmMs}`, `--windowMs=${o.windowMs}`];
  return new Promise((resolve, reject) => {
    const c = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    c.stdout.on('data', (d: Buffer) => (out += d.toString()));
    c.on('exit', (code) => {
      const line = out.trim().split('\n').pop() ?? '';
      try {
        resolve(JSON.parse(line) as IdleFigure);
      } catch {
        reject(new Error(`idle bench child ${variant} exited ${code}: ${out.slice(-500)}`));
      }
    });
  });
}

export async function run(): Promise<BenchResult> {
  const o: IdleOptions = { nodes: arg('nodes', 20), warmMs: arg('warmMs', 10_000), windowMs: arg('windowMs', 30_000) };
  const rounds = arg('rounds', 1);
  const wanted = (argStr('variants')?.split(',') ?? [...VARIANTS]) as Variant[];
  const prof = argStr('prof');
  const figs: IdleFigure[] = [];
  for (let r = 0; r < rounds; r++) for (const v of wanted) figs.push(await inChild(v, o, prof));
  const mean = (v: Variant) => {
    const xs = figs.filter((f) => f.variant === v).map((f) => f.cpuPctPerNode);
    return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN;
  };
  const rows = figs.map((f) => ({
    variant: f.variant,
    nodes: f.nodes,
    'CPU % of a core per node': f.cpuPctPerNode.toFixed(3),
    'peers/node': f.peers.toFixed(1),
    'timers/node': f.timersPerNode.toFixed(1),
    'RSS MiB': f.rssMiB.toFixed(0),
  }));
  const bare = mean('bare');
  const targets: BenchResult['targets'] = [];
  // Targets (docs/scale.md "Idle cost"): what we add while idle — our network layer (net) and the overlay's roles with no traffic
  // (node-quiet) — at most a quarter of libp2p's own idle cost; a whole daemon, whose per-process collectors are counted here
  // once per node, at most half. `node` (presence every 5 s) has no target: presence is traffic, and its cost per node grows
  // with the number of providers (every node validates and relays every provider's presence), so the ratio depends on N.
  for (const v of ['node-quiet', 'daemon', 'net'] as const) {
    if (!Number.isFinite(mean(v)) || !Number.isFinite(bare)) continue;
    const ratio = mean(v) / bare;
    const target = v === 'daemon' ? 1.5 : 1.25;
    targets.push({ name: `idle CPU per node, ${v} / bare libp2p`, ratio, target, met: ratio <= target });
  }
  const report = [
    `idle nodes: ${o.nodes} per variant, one process each, warm-up ${o.warmMs} ms, window ${o.windowMs} ms, ${rounds} round(s); load average ${(await import('node:os')).loadavg().map((x) => x.toFixed(1)).join(' ')}`,
    table(rows),
    `mean CPU per node (% of a core): ${wanted.map((v) => `${v} ${mean(v).toFixed(3)}`).join(', ')}`,
    ...(Number.isFinite(mean('node')) && Number.isFinite(bare) ? [`node (presence every 5 s) / bare libp2p: ${(mean('node') / bare).toFixed(2)} (no target: presence is traffic that grows with the providers)`] : []),
  ].join('\n');
  return { report, targets };
}

if (argStr('child')) {
  const variant = argStr('child') as Variant;
  const profDir = argStr('prof');
  const f = await runVariant(variant, { nodes: arg('nodes', 20), warmMs: arg('warmMs', 10_000), windowMs: arg('windowMs', 30_000), ...(profDir ? { profDir } : {}) });
  process.stdout.write(JSON.stringify(f) + '\n');
  process.exit(0);
}
