/**
 * Shared helpers for the node end-to-end tests: real `c0mpute start` processes
 * on 127.0.0.1, each with its own data directory (LevelDB on disk) in a temp
 * dir, driven through their control API and the `c0mpute` command.
 *
 *   const c = new Cluster('walk');
 *   const p = await c.start('p1', providerConfig({ price: '0.002' }));
 *   const b = await c.start('b', buyerConfig({ bootstrap: [bootstrapAddr(p)] }));
 *   const { result, events } = await runJob(b, spec);
 *   await c.destroy();   // in an after hook: every process, every temp dir
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, openSync, closeSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify as toYaml } from 'yaml';
import { C0Error } from '../../src/errors.js';
import { freePort } from '../../src/devnet/devnet.js';
export { freePort };
import { apiCall, apiStream, TOKEN_FILE } from '../../src/node/api.js';
import { DAEMON_FILE, type DaemonInfo } from '../../src/node/daemon-info.js';
import { createIdentity, readKeyFileDid } from '../../src/node/identity.js';
import { hashHex } from '../../src/records/address.js';
import { seal, T, type Ed25519Signer, type Job, type Opened } from '../../src/records/index.js';
import { runNode } from '../unit/cli/cli-run.js';

export const BIN = fileURLToPath(new URL('../../../bin/c0mpute.js', import.meta.url));

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Thrown from a `waitFor` condition to stop waiting at once (e.g. the process being waited for exited). */
export class GiveUp extends Error {}

/** Poll `fn` until it returns something other than undefined/false; generous timeouts, never a timed assertion. */
export async function waitFor<T>(what: string, fn: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 30_000, everyMs = 150): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined && v !== false) return v;
    } catch (e) {
      if (e instanceof GiveUp) throw e;
      last = e;
    }
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? ` (last error: ${(last as Error).message})` : ''}`);
    await sleep(everyMs);
  }
}


/** A valid builtin.sha256 job (any provider, max 0.01 USD) over a fresh random input, as an attacker or a test buyer signs it. */
export function sha256Job(signer: Ed25519Signer, params: string, opts: { deadlineMs?: number; inputBytes?: number } = {}): Opened<Job> {
  const now = Date.now();
  const input = randomBytes(opts.inputBytes ?? 16);
  return seal(
    T.job,
    {
      workload: 'builtin.sha256',
      requirements: {},
      maxPrice: { amount: '0.01', currency: 'USD' },
      announcedAt: now,
      deadline: now + (opts.deadlineMs ?? 120_000),
      timeoutMs: 60_000,
      input: { hash: hashHex(input), size: input.length },
      inputSealed: 'no',
      params,
      nonce: new Uint8Array(randomBytes(8)),
    },
    signer,
  ) as Opened<Job>;
}

/** builtin.sha256's output computed locally: `rounds` iterations of SHA-256 over the input, hex. */
export function sha256Rounds(input: Uint8Array, rounds: number): string {
  let h = createHash('sha256').update(input).digest();
  for (let i = 1; i < rounds; i++) h = createHash('sha256').update(h).digest();
  return h.toString('hex');
}

// ---------------------------------------------------------------------------
// Configs
// ---------------------------------------------------------------------------

export interface ProviderOpts {
  listen?: string;
  bootstrap?: string[];
  allowlist?: string[];
  /** network.outcomes (default: the daemon's, auto) */
  outcomes?: 'auto' | 'all' | 'own';
  tier?: string;
  region?: string;
  cpuCores?: number;
  memoryMiB?: number;
  gpus?: Array<{ model: string; vramMiB: number; count: number; features?: string[] }>;
  /** Flat price per job, USD. */
  price?: string;
  /** Quoted duration of builtin.sha256. */
  baseMs?: number;
  /** Quoted duration of builtin.sleep (kept short so a job's timeout gate passes). */
  sleepBaseMs?: number;
  slots?: number;
  offerLifetimeMs?: number;
}

/** A provider's config: builtin.sha256 and builtin.sleep, estimator meter, hardware as given (no detection). */
export function providerConfig(o: ProviderOpts = {}): Record<string, unknown> {
  const price = { amount: o.price ?? '0.002', currency: 'USD' };
  return {
    roles: ['provider'],
    log: { level: 'info', format: 'json' },
    network: { listen: [o.listen ?? '/ip4/127.0.0.1/tcp/0'], loopback: true, bootstrap: o.bootstrap ?? [], ...(o.allowlist ? { allowlist: o.allowlist } : {}), ...(o.outcomes ? { outcomes: o.outcomes } : {}) },
    api: { listen: '127.0.0.1:0' },
    provider: {
      tier: o.tier ?? 'standard',
      ...(o.region ? { region: o.region } : {}),
      slots: o.slots ?? 1,
      detectGpus: false,
      ...(o.offerLifetimeMs ? { offerLifetimeMs: o.offerLifetimeMs } : {}),
      hardware: { cpuCores: o.cpuCores ?? 8, memoryMiB: o.memoryMiB ?? 16_384, gpus: o.gpus ?? [] },
      meter: { type: 'estimator', estimatorWatts: 65 },
      workloads: {
        'builtin.sha256': { executor: { type: 'builtin', name: 'builtin.sha256' }, price, duration: { baseMs: o.baseMs ?? 1000 } },
        'builtin.sleep': { executor: { type: 'builtin', name: 'builtin.sleep' }, price, duration: { baseMs: o.sleepBaseMs ?? 200 } },
      },
    },
  };
}

export interface BuyerOpts {
  listen?: string;
  bootstrap?: string[];
  allowlist?: string[];
  /** network.outcomes (default: the daemon's, auto) */
  outcomes?: 'auto' | 'all' | 'own';
  policy?: string;
  collectWindowMs?: number;
  enoughOffers?: number;
  /** buyer.endWhenAllQuoted (default: the daemon's, true) */
  endWhenAllQuoted?: boolean;
}

export function buyerConfig(o: BuyerOpts = {}): Record<string, unknown> {
  return {
    roles: ['buyer'],
    log: { level: 'info', format: 'json' },
    network: { listen: [o.listen ?? '/ip4/127.0.0.1/tcp/0'], loopback: true, bootstrap: o.bootstrap ?? [], ...(o.allowlist ? { allowlist: o.allowlist } : {}), ...(o.outcomes ? { outcomes: o.outcomes } : {}) },
    api: { listen: '127.0.0.1:0' },
    buyer: { policy: o.policy ?? 'balanced', collectWindowMs: o.collectWindowMs ?? 4000, enoughOffers: o.enoughOffers ?? 0, ...(o.endWhenAllQuoted === undefined ? {} : { endWhenAllQuoted: o.endWhenAllQuoted }) },
  };
}

// ---------------------------------------------------------------------------
// Processes
// ---------------------------------------------------------------------------

export interface Api {
  api: string;
  token: string;
}

export interface NodeProc {
  name: string;
  dir: string;
  did: string;
  config: Record<string, unknown>;
  configPath: string;
  log: string;
  child: ChildProcess;
  api: Api;
  /** Listen multiaddrs with /p2p/<peer id>, from /v1/status. */
  addrs: string[];
}

/** Every child any cluster started in this process: SIGKILLed if the test process exits with them still running. */
const live = new Set<ChildProcess>();
/** Every cluster's temp dir not yet removed: removed on the way out too. */
const roots = new Set<string>();
let exitHook = false;
export function track(child: ChildProcess): void {
  live.add(child);
  child.once('exit', () => live.delete(child));
  if (!exitHook) {
    exitHook = true;
    const killAll = () => {
      for (const c of live) c.kill('SIGKILL');
      if (!process.env.C0MPUTE_KEEP_TEST_DIRS) for (const r of roots) rmSync(r, { recursive: true, force: true });
    };
    process.once('exit', killAll);
    // A test process stopped by a signal (a cancelled run, a timeout) does not run 'exit' handlers:
    // take the daemons down, then die of the same signal as before.
    for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
      process.once(sig, () => {
        killAll();
        process.kill(process.pid, sig);
      });
    }
  }
}

export function tail(path: string, lines = 20): string {
  try {
    return readFileSync(path, 'utf8').trim().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

function exited(c: ChildProcess): boolean {
  return c.exitCode !== null || c.signalCode !== null;
}

export function waitExit(c: ChildProcess): Promise<void> {
  if (exited(c)) return Promise.resolve();
  return new Promise((resolve) => c.once('exit', () => resolve()));
}

/** A multiaddr of `n` to bootstrap from (TCP on 127.0.0.1, with /p2p/). */
export function bootstrapAddr(n: { addrs: string[] }): string {
  const a = n.addrs.find((x) => x.startsWith('/ip4/127.0.0.1/tcp/') && x.includes('/p2p/'));
  if (!a) throw new Error(`no 127.0.0.1 address among ${n.addrs.join(' ')}`);
  return a;
}

export class Cluster {
  readonly root: string;
  readonly nodes: NodeProc[] = [];
  #cleanups: Array<() => Promise<void>> = [];

  constructor(label: string) {
    this.root = mkdtempSync(join(tmpdir(), `c0-node-${label}-`));
    roots.add(this.root);
  }

  /** Run at destroy, before the processes stop (in-process nodes). */
  onDestroy(fn: () => Promise<void>): void {
    this.#cleanups.push(fn);
  }

  /** A data directory with a fresh key (no passphrase). */
  dataDir(name: string): { dir: string; did: string } {
    const dir = join(this.root, name);
    mkdirSync(dir, { recursive: true });
    if (!existsSync(join(dir, 'identity.key'))) createIdentity(dir);
    return { dir, did: readKeyFileDid(dir) };
  }

  /** `c0mpute --data-dir <root>/<name> start --config <dir>/config.yaml`, waiting until its API answers. */
  async start(name: string, config: Record<string, unknown>, env: NodeJS.ProcessEnv = {}): Promise<NodeProc> {
    const { dir, did } = this.dataDir(name);
    const configPath = join(dir, 'config.yaml');
    writeFileSync(configPath, toYaml(config));
    const log = join(dir, 'node.log');
    const fd = openSync(log, 'a');
    const child = spawn(process.execPath, [BIN, '--data-dir', dir, 'start', '--config', configPath], {
      stdio: ['ignore', fd, fd],
      env: { ...process.env, C0MPUTE_PASSPHRASE: '', ...env },
    });
    closeSync(fd);
    track(child);
    const prev = this.nodes.findIndex((n) => n.name === name);
    const partial = { name, dir, did, config, configPath, log, child };
    const api = await waitFor(`${name} to start (log ${log})`, () => {
      if (exited(child)) throw new GiveUp(`${name} exited (${child.exitCode ?? child.signalCode})`);
      const f = join(dir, DAEMON_FILE);
      if (!existsSync(f)) return undefined;
      const info = JSON.parse(readFileSync(f, 'utf8')) as DaemonInfo;
      // A SIGKILLed predecessor leaves its daemon.json behind: only this child's counts.
      if (info.pid !== child.pid || !info.api) return undefined;
      return { api: info.api, token: readFileSync(join(dir, TOKEN_FILE), 'utf8').trim() };
    }, 45_000).catch(async (e: Error) => {
      // a daemon that did not start in time is not left running: it would hold its store's lock (the next start of
      // this node exits 3) and keep this test process alive after the file ends (it is in no cluster's nodes)
      if (!exited(child)) {
        child.kill('SIGKILL');
        await waitExit(child);
      }
      throw new Error(`${e.message}\n--- ${name} log ---\n${tail(log)}`);
    });
    const status = (await apiCall(api.api, api.token, 'GET', '/v1/status')) as { addrs: string[] };
    const n: NodeProc = { ...partial, api, addrs: status.addrs };
    if (prev >= 0) this.nodes[prev] = n;
    else this.nodes.push(n);
    return n;
  }

  /** Stop one node: SIGTERM (a clean shutdown) by default, SIGKILL after 15 s; SIGKILL (or SIGHUP, a closed terminal) on request. */
  async stop(n: NodeProc, signal: 'SIGTERM' | 'SIGHUP' | 'SIGKILL' = 'SIGTERM'): Promise<void> {
    if (exited(n.child)) return;
    const t = setTimeout(() => n.child.kill('SIGKILL'), 15_000);
    n.child.kill(signal);
    await waitExit(n.child);
    clearTimeout(t);
  }

  /** Stop and start again on the same data directory and config. */
  async restart(n: NodeProc, config: Record<string, unknown> = n.config): Promise<NodeProc> {
    await this.stop(n);
    return this.start(n.name, config);
  }

  byDid(did: string): NodeProc | undefined {
    return this.nodes.find((n) => n.did === did);
  }

  /** Print every node's log tail (call when a test failed). */
  dumpLogs(): void {
    for (const n of this.nodes) console.error(`--- ${n.name} (${n.did}) ---\n${tail(n.log, 30)}`);
  }

  async destroy(): Promise<void> {
    for (const c of this.#cleanups.splice(0).reverse()) await c().catch(() => undefined);
    await Promise.all(this.nodes.map((n) => this.stop(n)));
    if (!process.env.C0MPUTE_KEEP_TEST_DIRS) rmSync(this.root, { recursive: true, force: true });
    roots.delete(this.root);
  }
}

// ---------------------------------------------------------------------------
// The control API
// ---------------------------------------------------------------------------

export async function get<T = Record<string, unknown>>(n: { api: Api }, path: string): Promise<T> {
  return (await apiCall(n.api.api, n.api.token, 'GET', path)) as T;
}

/** A wire record as the API returns it. */
export interface Wire<R = Record<string, unknown>> {
  type: string;
  address: string;
  signer: string;
  record: R;
}

export interface RunOutcome {
  result: Record<string, unknown> & { status: string };
  events: Array<Record<string, unknown> & { e: string }>;
}

/** POST /v1/run and collect the event stream; `onEvent` sees each event as it arrives. */
export async function runJob(n: { api: Api }, spec: Record<string, unknown>, onEvent: (e: Record<string, unknown> & { e: string }) => void = () => {}): Promise<RunOutcome> {
  const events: RunOutcome['events'] = [];
  let result: RunOutcome['result'] | undefined;
  for await (const ev of apiStream(n.api.api, n.api.token, '/v1/run', spec)) {
    if (ev.e === 'result') result = ev.result as RunOutcome['result'];
    else if (ev.e === 'error') {
      const err = ev.error as { code: string; message: string };
      throw new C0Error(err.code, err.message);
    } else {
      const e = ev as Record<string, unknown> & { e: string };
      events.push(e);
      onEvent(e);
    }
  }
  if (!result) throw new C0Error('RUN_NO_RESULT', 'the run ended without a result');
  return { result, events };
}

export interface StatusView {
  did: string;
  peers: number;
  providersKnown: number;
  offersHeld: number;
  evidence: number;
  addrs: string[];
  provider?: { advert?: string; running: number };
  /** Per kind of the topics this node joined: peers heard subscribed, and those in its mesh (docs/node.md "Is the mesh formed?"). */
  gossip: Partial<Record<string, { peers: number; mesh: number }>>;
}

/** A connected peer as `/v1/peers` lists it: `topics` are the kinds of this node's topics it is subscribed to. */
export interface PeerView {
  peerId: string;
  did?: string;
  addrs: string[];
  topics: string[];
  /** The kinds of which it is in this node's gossip mesh (this node relays them to it). */
  mesh: string[];
  /** The gossip score this node gives it. */
  score: number;
  /** Whether this node holds its outbound gossip stream to the peer and the peer's inbound one (absent: not in gossip's router). */
  streams?: { out: boolean; in: boolean };
  /** The longest prune backoff left with the peer on one of this node's topics, ms. */
  backoffMs?: number;
}

export interface AdvertView extends Wire<{ seq: number; hardware: { cpuCores: number; memoryMiB: number }; expiresAt: number }> {
  live: boolean;
}

export type { Figures } from '../../src/reputation/derive.js';

/** A peer's gossip link as one node sees it: score, streams and prune backoff (what decides whether it is grafted). */
function linkText(v: PeerView): string {
  return `score ${v.score.toFixed(2)}, streams ${v.streams ? `out ${v.streams.out} in ${v.streams.in}` : 'none'}, backoff ${v.backoffMs ?? 0} ms`;
}

/**
 * Wait until `n` knows at least `count` live adverts, has every peer in `peers` connected, and a job it publishes now
 * reaches them: each of `peers` has its gossip subscriptions heard by `n` (on `job` for one that signs an advert `n`
 * holds), and at least one peer takes jobs from `n` (docs/node.md "Is the mesh formed?": gossip publishes to every
 * subscriber at once, so no heartbeat needs to pass).
 *
 * A peer given as a node (not a bare DID) is also checked the other way, so what it gossips next (a receipt, an
 * acceptance) reaches `n`: it has `n` in its gossip mesh of some kind. Hearing `n`'s subscriptions is not enough: they
 * come over `n`'s stream, and until the peer's own stream to `n` is open (after it identified `n`) a publish skips `n`
 * silently; the mesh takes only peers it has a stream to. Gossipsub sends a node's subscriptions in one message when
 * its stream opens, so one kind heard means all of them.
 */
export async function waitForMarket(n: { api: Api; name?: string }, count: number, peers: Array<string | { did: string; api: Api; name?: string }> = []): Promise<void> {
  const dids = peers.map((x) => (typeof x === 'string' ? x : x.did));
  const nodes = peers.filter((x): x is { did: string; api: Api; name?: string } => typeof x !== 'string');
  // each unmet condition throws what it lacks, so a timeout names the last one (waitFor's "last error")
  const lacks = (what: string): never => {
    throw new Error(what);
  };
  await waitFor(`${n.name ?? 'node'} to see ${count} adverts and ${peers.length} peers, with their gossip subscriptions both ways`, async () => {
    const s = await get<StatusView>(n, '/v1/status');
    if (s.providersKnown < count) lacks(`${s.providersKnown} providers known`);
    if (count > 0 && !(s.gossip.job?.peers ?? 0)) lacks('no peer on the job topic');
    if (!peers.length) return true;
    const p = await get<{ peers: PeerView[] }>(n, '/v1/peers');
    const have = new Map(p.peers.map((x) => [x.did, x.topics]));
    for (const d of dids) if (!have.get(d)?.length) lacks(`${d} not a peer with topics`);
    const m = await get<{ adverts: Array<{ signer: string; live: boolean }> }>(n, '/v1/market');
    const signers = new Set(m.adverts.filter((a) => a.live).map((a) => a.signer));
    for (const d of dids) if (signers.has(d) && !have.get(d)!.includes('job')) lacks(`${d} not on the job topic`);
    for (const q of nodes) {
      const theirs = await get<{ peers: PeerView[] }>(q, '/v1/peers');
      const me = theirs.peers.find((x) => x.did === s.did);
      if (!me?.topics.length || !me.mesh.length) {
        // both sides' gossip view of the link: a mesh is refused by a backoff or a negative score, and needs a stream
        const back = p.peers.find((x) => x.did === q.did);
        lacks(`${q.name ?? q.did} sees ${n.name ?? 'it'} ${me ? `with topics [${me.topics.join(', ')}] and mesh [${me.mesh.join(', ')}]; ${linkText(me)}` : 'not at all'}; ${n.name ?? 'it'} sees ${q.name ?? 'it'} ${back ? `with mesh [${back.mesh.join(', ')}]; ${linkText(back)}` : 'not at all'}`);
      }
    }
    return true;
  }, 45_000);
}

// ---------------------------------------------------------------------------
// The command
// ---------------------------------------------------------------------------

export interface CliResult {
  code: number;
  out: string;
  err: string;
}

/** Run `c0mpute --data-dir <dataDir> …args` as a child process. */
/** What a CLI process printed and how it ended (`code` null when a signal ended it). */
export interface CliRun {
  code: number | null;
  out: string;
  err: string;
}

/**
 * Run the CLI as a user would from `cwd`, with none of this process's C0MPUTE_* settings (only `env`'s), so a
 * test's outcome does not depend on the shell that started it.
 */
export function runCli(args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): Promise<CliRun> {
  const clean: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('C0MPUTE_')) clean[k] = v;
  return spawnCli(args, { cwd, env: { ...clean, ...env } });
}

/**
 * `c0mpute …args` as a child process, without blocking this one (cases can run side by side): what it printed and
 * how it ended (runNode: stdin at its end at once, not a terminal, so nobody can be asked; SIGKILLed after `timeout`).
 */
export async function spawnCli(args: string[], o: { cwd?: string; env?: NodeJS.ProcessEnv; timeout?: number } = {}): Promise<CliRun> {
  const r = await runNode([BIN, ...args], { ...o, timeout: o.timeout ?? 600_000 });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

export function c0mpute(dataDir: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  // the CLI is a plain process, not a test runner's child: without NODE_TEST_CONTEXT (node:test would read its output as a subtest's)
  const { NODE_TEST_CONTEXT: _, ...base } = process.env;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, '--data-dir', dataDir, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...base, C0MPUTE_LOG_LEVEL: 'warn', ...env } });
    track(child);
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    const t = setTimeout(() => child.kill('SIGKILL'), 90_000);
    child.once('error', reject);
    child.once('close', (code, sig) => {
      clearTimeout(t);
      resolve({ code: code ?? (sig ? 128 : -1), out, err });
    });
  });
}

// ---------------------------------------------------------------------------
// Raw envelope surgery (for the hostile node)
// ---------------------------------------------------------------------------

function bstrHead(n: number): Uint8Array {
  if (n < 24) return Uint8Array.of(0x40 | n);
  if (n < 0x100) return Uint8Array.of(0x58, n);
  return Uint8Array.of(0x59, n >> 8, n & 0xff);
}

function readBstr(b: Uint8Array, pos: number): [number, number] {
  const ib = b[pos]!;
  const info = ib & 0x1f;
  if (info < 24) return [pos + 1, pos + 1 + info];
  if (info === 24) return [pos + 2, pos + 2 + b[pos + 1]!];
  if (info === 25) {
    const n = (b[pos + 1]! << 8) | b[pos + 2]!;
    return [pos + 3, pos + 3 + n];
  }
  throw new Error('envelope too large for this helper');
}

/** Split a COSE_Sign1 envelope `d2 84 <protected> a0 <payload> <signature>` into its parts. */
export function splitEnvelope(env: Uint8Array): { protectedBytes: Uint8Array; payload: Uint8Array; signature: Uint8Array } {
  const [ps, pe] = readBstr(env, 2);
  const [ys, ye] = readBstr(env, pe + 1);
  const [ss, se] = readBstr(env, ye);
  return { protectedBytes: env.slice(ps, pe), payload: env.slice(ys, ye), signature: env.slice(ss, se) };
}

/** Rebuild an envelope from parts (no signing: this is how a payload is tampered with after signing). */
export function joinEnvelope(p: { protectedBytes: Uint8Array; payload: Uint8Array; signature: Uint8Array }): Uint8Array {
  const parts = [Uint8Array.of(0xd2, 0x84), bstrHead(p.protectedBytes.length), p.protectedBytes, Uint8Array.of(0xa0), bstrHead(p.payload.length), p.payload, bstrHead(p.signature.length), p.signature];
  const out = new Uint8Array(parts.reduce((s, x) => s + x.length, 0));
  let o = 0;
  for (const x of parts) {
    out.set(x, o);
    o += x.length;
  }
  return out;
}

/** Run `fn`; on failure print every node's log tail before rethrowing (a failing e2e test should say why). */
export async function withLogs<T>(c: Cluster, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    c.dumpLogs();
    throw e;
  }
}

/** GET /metrics (no token needed). */
export async function metricsText(n: { api: Api }): Promise<string> {
  return (await fetch(`http://${n.api.api}/metrics`)).text();
}

/** Each sample of a labelled metric in /metrics text: its labels and value. */
function* samples(text: string, name: string): Generator<{ labels: Record<string, string>; value: number }> {
  for (const m of text.matchAll(new RegExp(`^${name}\\{([^}]*)\\} ([0-9.e+]+)$`, 'gm'))) {
    yield { labels: Object.fromEntries([...m[1]!.matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1]!, l[2]!])), value: Number(m[2]) };
  }
}

/** `kind/verdict/reason` triples with a non-zero count in c0mpute_net_records_total, whatever the label order. */
export function recordVerdicts(text: string): Set<string> {
  const out = new Set<string>();
  for (const { labels, value } of samples(text, 'c0mpute_net_records_total')) if (value > 0) out.add(`${labels.kind}/${labels.verdict}/${labels.reason}`);
  return out;
}

/** The sum of a counter's samples whose labels include every one of `want`. */
export function metricSum(text: string, name: string, want: Record<string, string>): number {
  let sum = 0;
  for (const { labels, value } of samples(text, name)) if (Object.entries(want).every(([k, v]) => labels[k] === v)) sum += value;
  return sum;
}

/**
 * `c0mpute devnet …args` as a newcomer runs it (`npm start`): waits for it to end (SIGINT after 3 minutes), asserts
 * exit 0 and that it removed its temporary directory, and returns what it printed.
 */
export async function runDevnet(args: string[]): Promise<string> {
  const child = spawn(process.execPath, [BIN, 'devnet', ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, C0MPUTE_LOG_LEVEL: 'warn' } });
  track(child);
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
  const t = setTimeout(() => child.kill('SIGINT'), 180_000);
  const code = await new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c)));
  clearTimeout(t);
  assert.equal(code, 0, `${out}\n${err}`);
  const dir = /in (\/\S+c0mpute-devnet-\S+?)[\s,]/.exec(out)?.[1];
  assert.ok(dir && !existsSync(dir), `the devnet removed its directory (${dir})`);
  return out;
}
