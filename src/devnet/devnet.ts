/**
 * The devnet: a small network of separate node processes on 127.0.0.1 (several
 * providers with different hardware, prices and regions, and one buyer). It
 * waits until the buyer sees the market, runs real jobs through the walk, and
 * narrates each step; then it stops every process it started.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, readdirSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { stringify as toYaml } from 'yaml';
import { Decimal } from 'decimal.js';
import { C0Error } from '../errors.js';
import { makeDirs } from '../util/make-dirs.js';
import { apiCall, apiStream, TOKEN_FILE } from '../node/api.js';
import { DAEMON_FILE, processStart, readDaemonInfo, type DaemonInfo } from '../node/daemon-info.js';
import { createIdentity, hasKeyFile, loadIdentity, readKeyFileDid, type Identity } from '../node/identity.js';
import type { WireEvent } from '../node/events.js';
import { shortDid } from '../util/did-text.js';

export interface ProviderProfile {
  name: string;
  tier: string;
  region?: string;
  cpuCores: number;
  memoryMiB: number;
  gpus?: Array<{ model: string; vramMiB: number; count: number; features?: string[] }>;
  price: string;
  baseMs: number;
}

/** Default profiles: different hardware, prices and regions, so eligibility has something to say. */
export const PROFILES: ProviderProfile[] = [
  { name: 'atlas', tier: 'verified', region: 'eu-west', cpuCores: 16, memoryMiB: 65536, gpus: [{ model: 'RTX 4090', vramMiB: 24576, count: 1, features: ['cuda', 'sm89'] }], price: '0.004', baseMs: 1500 },
  { name: 'bantam', tier: 'community', region: 'us-east', cpuCores: 4, memoryMiB: 8192, price: '0.001', baseMs: 5000 },
  { name: 'corvid', tier: 'standard', cpuCores: 8, memoryMiB: 32768, gpus: [{ model: 'RTX 3060', vramMiB: 12288, count: 2, features: ['cuda', 'sm86'] }], price: '0.002', baseMs: 2500 },
  { name: 'dynamo', tier: 'standard', region: 'us-east', cpuCores: 12, memoryMiB: 32768, price: '0.003', baseMs: 2500 },
];

export function profileFor(i: number): ProviderProfile {
  const base = PROFILES[i % PROFILES.length]!;
  if (i < PROFILES.length) return base;
  // More providers: variations of the four, with their own names and prices.
  return { ...base, name: `${base.name}${Math.floor(i / PROFILES.length) + 1}`, price: new Decimal(base.price).plus(new Decimal('0.0005').times(Math.floor(i / PROFILES.length))).toFixed() };
}

export interface DevnetOptions {
  providers: number;
  policy: string;
  jobs: number;
  keep: boolean;
  dir?: string;
  /** Print lines (default: stdout). */
  print?: (s: string) => void;
  /** Path of bin/c0mpute.js. */
  bin: string;
  /** Top-level config sections set on every node, replacing the devnet's own (e.g. `history`, `reputation`; the soak's bounds). */
  configOverrides?: Record<string, unknown>;
  /** How long a node may take to start, and a buyer to see the market, ms (default DEVNET_START_TIMEOUT_MS; `--start-timeout`). */
  startTimeoutMs?: number;
}

/**
 * The default start-up wait, ms: for each node's API, and for a buyer to see the
 * market. On a loaded 2-core machine a node took 27–35 s to start; a node that
 * exits fails the devnet at once (DEVNET_NODE_EXITED), so a long wait costs a
 * healthy start nothing.
 */
export const DEVNET_START_TIMEOUT_MS = 120_000;

export interface NodeProc {
  name: string;
  role: 'provider' | 'buyer' | 'steward' | 'witness';
  dir: string;
  port: number;
  child: ChildProcess;
  did: string;
  log: string;
}

/**
 * Ports handed out below Linux's default ephemeral range (32768–60999). A port
 * from `listen(0)` is an ephemeral one: between our check and the daemon's
 * listen, an outgoing connection of any process may be given the same local
 * port, and the daemon then fails with EADDRINUSE (seen in CI, with many
 * libp2p connections opening). Outgoing connections never take a port below
 * the range, so a port checked free here stays free unless another caller
 * picks it too: each process walks the range from its own random start.
 */
const PORT_LO = 20_000;
const PORT_HI = 32_000;
let nextPort = PORT_LO + Math.floor(Math.random() * (PORT_HI - PORT_LO));

function bindable(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(port, '127.0.0.1', () => {
      const a = s.address();
      const got = typeof a === 'object' && a ? a.port : 0;
      s.close(() => resolve(got));
    });
  });
}

/** A TCP port free on 127.0.0.1 (for a devnet's or a test's daemon to listen on). */
export async function freePort(): Promise<number> {
  for (let tries = 0; tries < 100; tries++) {
    const port = nextPort;
    nextPort = port + 1 >= PORT_HI ? PORT_LO : port + 1;
    try {
      return await bindable(port);
    } catch {
      // taken: the next one
    }
  }
  return bindable(0); // a crowded range: any free port, as before
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Errors `waitFor` does not retry: what it waits for can no longer happen (a node process exited). */
const FINAL = new WeakSet<object>();

/** Mark an error as final: thrown inside `waitFor`, it ends the wait at once instead of being retried. */
export function finalError<E extends Error>(e: E): E {
  FINAL.add(e);
  return e;
}

export async function waitFor<T>(what: string, ms: number, fn: () => Promise<T | undefined> | T | undefined): Promise<T> {
  const end = Date.now() + ms;
  let last: unknown;
  while (Date.now() < end) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (e) {
      if (typeof e === 'object' && e !== null && FINAL.has(e)) throw e;
      last = e;
    }
    await sleep(150);
  }
  throw new C0Error('DEVNET_TIMEOUT', `timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
}

/**
 * `C0MPUTE_*` variables a devnet node is still given from the devnet's own
 * environment: stack traces, and the log level of its node.log (README "Set
 * up", docs/node.md). Every other one (C0MPUTE_API, _LISTEN, _ROLES,
 * _OVERLAY, _BOOTSTRAP, _HOME, _FAILPOINT, …) would override the config the
 * devnet writes for the node, or its data directory, and is not passed on.
 */
export const DEVNET_NODE_ENV_KEPT = ['C0MPUTE_DEBUG', 'C0MPUTE_LOG_LEVEL'] as const;

/** The environment of a devnet node: `env` without the `C0MPUTE_*` variables it does not keep, no key passphrase, then `extra`. */
export function devnetNodeEnv(env: NodeJS.ProcessEnv, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const kept: readonly string[] = DEVNET_NODE_ENV_KEPT;
  const out: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(env)) if (!k.startsWith('C0MPUTE_') || kept.includes(k)) out[k] = v;
  return { ...out, C0MPUTE_PASSPHRASE: '', ...extra };
}

/** The `C0MPUTE_*` variables in `env` a devnet node is not given (devnetNodeEnv), sorted. */
export function devnetIgnoredEnv(env: NodeJS.ProcessEnv): string[] {
  const kept: readonly string[] = DEVNET_NODE_ENV_KEPT;
  return Object.keys(env).filter((k) => k.startsWith('C0MPUTE_') && !kept.includes(k) && k !== 'C0MPUTE_API_TIMEOUT').sort();
}

/** A buyer's `/v1/status` and `/v1/market` answers, as far as readiness reads them. */
export interface BuyerView {
  status: { peers: number; providersKnown: number };
  market: { total?: number; adverts: Array<{ provider: string; live: boolean; record: { issuedAt: number }; pool?: { members: number } }> };
}

/**
 * Whether a buyer sees `want` providers live in this run: it has a peer now, and
 * holds a live advert signed since `since` (the devnet's start) from each of
 * `want` providers. Every provider signs a fresh advert as it starts, so such an
 * advert was heard from a process of this run. Not `status.providersKnown`: that
 * counts every unexpired advert in the buyer's store, and a devnet restarted on
 * the same `--dir` keeps the last run's for their lifetime (10 min): it is met
 * at once, with no peer, and a job sent then gets no offers.
 */
export function buyerSeesMarket(v: BuyerView, want: number, since: number): boolean {
  if (v.status.peers < 1) return false;
  const heard = new Set(v.market.adverts.filter((a) => a.live && a.record.issuedAt >= since).map((a) => a.provider));
  return heard.size >= want;
}

/** What `jobsReachProviders` reads: each node's `/v1/status` gossip counts, and the buyer's `/v1/peers`. */
export interface JobMeshView {
  buyer: { status: { gossip?: Record<string, { peers: number; mesh: number }> }; peers: Array<{ did?: string; topics: string[] }> };
  providers: Array<{ did: string; status: { gossip?: Record<string, { peers: number; mesh: number }> } }>;
}

/**
 * Whether a job the buyer publishes now reaches every provider by gossip: the buyer knows a subscriber of the job
 * topic to publish to, and each provider either has a mesh peer on it (a copy is forwarded to it) or is a subscriber
 * the buyer itself knows (it publishes to it). A provider with neither hears the job only from a later gossip round.
 */
export function jobsReachProviders(v: JobMeshView): boolean {
  if ((v.buyer.status.gossip?.job?.peers ?? 0) < 1) return false;
  const direct = new Set(v.buyer.peers.filter((p) => p.did !== undefined && p.topics.includes('job')).map((p) => p.did!));
  return v.providers.every((p) => (p.status.gossip?.job?.mesh ?? 0) >= 1 || direct.has(p.did));
}

/** How long the devnet waits for the job topic's mesh before it posts the first job anyway (the buyer's asks cover a straggler). */
export const JOB_MESH_WAIT_MS = 10_000;

/** The devnet's line for that wait, after `lead` (its indent, and whose wait it was). */
export function jobMeshLine(reached: boolean, ms: number, lead = '  '): string {
  return reached ? `${lead}job topic meshed after ${ms} ms` : `${lead}job topic not meshed at every provider after ${JOB_MESH_WAIT_MS} ms: going on (a provider left out is asked for its offer)`;
}

/**
 * Make a devnet directory (`--dir`, a node's under it) and its parents: one that cannot be made (a file in its path, a
 * file system that takes no new directories such as /proc) is DEVNET_DIR_UNUSABLE (exit 3), not a bare EEXIST, and
 * never mkdirSync's recursive form, which does not return under /proc (src/util/make-dirs.ts).
 */
export function devnetDir(dir: string): void {
  makeDirs(dir, { code: 'DEVNET_DIR_UNUSABLE', field: 'dir', what: `cannot use ${dir} as a devnet directory` });
}

/**
 * The key in `dir`: the one stored there (a devnet run again on the same `--dir` keeps its nodes' and its pool's
 * keys, and so whatever they signed and stored), else a new one. Devnet keys are not encrypted.
 */
export function devnetIdentity(dir: string): Identity {
  return hasKeyFile(dir) ? loadIdentity(dir) : createIdentity(dir);
}

/**
 * The control API of the daemon process `pid` running in `dir`, once its daemon.json says so; undefined before. A
 * daemon.json written by another process is not this node's: a node of an earlier run on the same `--dir` that was
 * killed (the pool scenario kills its coordinator) leaves its own behind, naming a port nobody listens on now.
 */
export function daemonApiOf(dir: string, pid: number | undefined): { api: string; token: string } | undefined {
  const f = join(dir, DAEMON_FILE);
  if (!existsSync(f)) return undefined;
  const info = JSON.parse(readFileSync(f, 'utf8')) as DaemonInfo;
  if (pid === undefined || info.pid !== pid || !info.api) return undefined;
  return { api: info.api, token: readFileSync(join(dir, TOKEN_FILE), 'utf8').trim() };
}

/**
 * A node an earlier devnet on the same `--dir` started still runs there: that devnet was killed before it could stop
 * its nodes (SIGKILL, a crash, an out-of-memory kill), and they live on without it. DEVNET_NODE_RUNNING names it and
 * its pid, before its config is rewritten or a second node is started on it. Before, the new node failed with
 * DAEMON_RUNNING, reported as DEVNET_NODE_EXITED with the end of the leftover node's log, and the leftovers ran on.
 */
export function refuseLeftoverNode(name: string, dir: string): void {
  const left = readDaemonInfo(dir);
  if (!left) return;
  // `kill` only where the kernel's start time shows the pid is still that node's (review s57): without /proc (or its
  // start time not recorded) the pid may have been given to another process since
  const sure = left.procStart !== undefined && processStart(left.pid) === left.procStart;
  const stop = sure ? `stop it (kill ${left.pid}, and any other node of that run)` : `stop it (pid ${left.pid} was that node's: check it is still a c0mpute node before stopping it; and any other node of that run)`;
  throw new C0Error('DEVNET_NODE_RUNNING', `${name} of an earlier devnet run on this --dir still runs (pid ${left.pid}, on ${dir}): the devnet that started it was killed before it could stop it; ${stop} and run again, or use another --dir`, { field: 'dir', detail: { node: name, pid: left.pid } });
}

export class Devnet {
  readonly nodes: NodeProc[] = [];
  readonly dir: string;
  /** When this devnet began (ms): an advert signed since was heard from one of its processes (buyerSeesMarket). */
  readonly startedAt = Date.now();
  /** The start-up wait, ms (DevnetOptions.startTimeoutMs). */
  readonly startTimeoutMs: number;
  #ownsDir: boolean;
  #envNoted = false;
  /** Whether `start` found nodes' keys (and stores) an earlier run on this `--dir` left. */
  reused = false;

  constructor(private o: DevnetOptions) {
    this.#ownsDir = !o.dir;
    this.startTimeoutMs = o.startTimeoutMs ?? DEVNET_START_TIMEOUT_MS;
    // absolute: the nodes' configs name files under it (the overlay's swarm key and tree, the pool's roster), and a
    // node reads a relative path in its config against the config's own directory, not the devnet's working directory
    this.dir = o.dir !== undefined ? resolve(o.dir) : mkdtempSync(join(tmpdir(), 'c0mpute-devnet-'));
    devnetDir(this.dir);
  }

  get print(): (s: string) => void {
    return this.o.print ?? ((s) => process.stdout.write(s + '\n'));
  }

  /**
   * A node's name from its DID: one started in this run, or one whose key an earlier run on the same `--dir` left
   * and which is not started now (`<name> (not started)`: the buyer may still hold its advert, QA qaDev F8); any
   * other DID as a fragment.
   */
  names(): (did: string) => string {
    const m = new Map([...[...this.#absent].map(([did, name]) => [did, `${name} (not started)`] as const), ...this.nodes.map((n) => [n.did, n.name] as const)]);
    return (did) => m.get(did) ?? `${did.slice(8, 16)}…`;
  }

  /** Nodes whose key is in this directory from an earlier run but which this run does not start: DID → name. */
  readonly #absent = new Map<string, string>();

  /**
   * `text` with every DID of a node it knows (names) written as that node's name: the whole DID, and the fragments
   * the market and the CLI show of one (shortDid's `z6Mk…` middle and the names() fallback), so that a line built
   * elsewhere (the selection's "why:", a broken-off run's message) names the providers as the rest of the narration.
   */
  named(text: string): string {
    if (!text.includes('…') && !text.includes('did:key:')) return text;
    const name = this.names();
    let t = text;
    for (const did of [...this.nodes.map((n) => n.did), ...this.#absent.keys()]) {
      if (!t.includes(did.slice(12, 20)) && !t.includes(did.slice(8, 16))) continue;
      t = t.split(did).join(name(did)).split(shortDid(did)).join(name(did)).split(`${did.slice(8, 16)}…`).join(name(did));
    }
    return t;
  }

  /**
   * What an earlier run on this `--dir` left for the nodes named (their keys, hence their stores), and the nodes
   * whose keys are there but which are not among them; noted in #absent (names).
   */
  earlierRun(names: readonly string[]): { kept: string[]; absent: string[] } {
    const kept = names.filter((n) => hasKeyFile(join(this.dir, n)));
    const absent: string[] = [];
    let entries: string[] = [];
    try {
      entries = readdirSync(this.dir).sort();
    } catch {
      // nothing there yet
    }
    for (const n of entries) {
      if (names.includes(n) || !hasKeyFile(join(this.dir, n))) continue;
      try {
        this.#absent.set(readKeyFileDid(join(this.dir, n)), n);
        absent.push(n);
      } catch {
        // not a node's key we can read: not named
      }
    }
    return { kept, absent };
  }

  /** Start a node process with this config in `<dir>/<name>`. */
  spawn(name: string, role: NodeProc['role'], config: Record<string, unknown>, port: number): NodeProc {
    const dir = join(this.dir, name);
    devnetDir(dir);
    refuseLeftoverNode(name, dir);
    const did = hasKeyFile(dir) ? readKeyFileDid(dir) : createIdentity(dir).did;
    const cfgPath = join(dir, 'config.yaml');
    writeFileSync(cfgPath, toYaml({ ...config, ...this.o.configOverrides }));
    const log = join(dir, 'node.log');
    const out = openSync(log, 'a');
    if (!this.#envNoted) {
      this.#envNoted = true;
      const ignored = devnetIgnoredEnv(process.env);
      if (ignored.length) this.print(`  (not passed to the devnet's nodes, which run on the config it writes: ${ignored.join(', ')})`);
    }
    const child = spawn(process.execPath, [this.o.bin, '--data-dir', dir, 'start', '--config', cfgPath], {
      stdio: ['ignore', out, out],
      env: devnetNodeEnv(process.env),
    });
    closeSync(out); // the child holds its own copy
    const n: NodeProc = { name, role, dir, port, child, did, log };
    this.nodes.push(n);
    return n;
  }

  /** DEVNET_NODE_EXITED (final: `waitFor` ends at once) if `n`'s process has ended; a node stopped by `stop` too. */
  assertRunning(n: NodeProc, when = 'while starting'): void {
    const { exitCode, signalCode } = n.child;
    if (exitCode === null && signalCode === null) return;
    const how = exitCode !== null ? `with ${exitCode}` : `on ${signalCode}`;
    throw finalError(new C0Error('DEVNET_NODE_EXITED', `${n.name} exited ${how} ${when}; the end of its log (${n.log}):\n${tail(n.log) || '(nothing logged yet)'}`, { detail: { node: n.name, log: n.log } }));
  }

  /** "120 s (--start-timeout)": the start-up wait, as messages name it. */
  #waitText(): string {
    return `${this.startTimeoutMs / 1000} s (--start-timeout)`;
  }

  /**
   * Wait for a node's control API (daemon.json) and return it: fails at once if
   * the node's process ends (DEVNET_NODE_EXITED), else after the start-up wait
   * (DEVNET_TIMEOUT); either names the node's log and quotes its end.
   */
  async apiOf(n: NodeProc): Promise<{ api: string; token: string }> {
    try {
      return await this.#apiOf(n);
    } catch (e) {
      if (e instanceof C0Error && e.code === 'DEVNET_TIMEOUT') throw new C0Error(e.code, `${e.message}; the end of its log (${n.log}):\n${tail(n.log) || '(nothing logged yet)'}`, { detail: { node: n.name, log: n.log } });
      throw e;
    }
  }

  async #apiOf(n: NodeProc): Promise<{ api: string; token: string }> {
    return waitFor(`${n.name} to start within ${this.#waitText()}`, this.startTimeoutMs, () => {
      this.assertRunning(n);
      return daemonApiOf(n.dir, n.child.pid);
    });
  }

  async start(): Promise<{ buyer: NodeProc; api: { api: string; token: string } }> {
    const p = this.print;
    p(`c0mpute devnet: ${this.o.providers} providers and 1 buyer on 127.0.0.1, in ${this.dir}`);
    // a second day on the same --dir: said, not silent (QA qaDev F9)
    const profiles = Array.from({ length: this.o.providers }, (_, i) => profileFor(i).name);
    const earlier = this.earlierRun([...profiles, 'buyer']);
    this.reused = earlier.kept.length > 0;
    if (earlier.kept.length) {
      p(`  kept from an earlier run on this --dir: the keys and stores of ${earlier.kept.join(', ')}${earlier.kept.includes('buyer') ? " (the buyer's jobs, receipts and reputation view carry on)" : ''}`);
    }
    if (earlier.absent.length) {
      p(`  ${earlier.absent.join(', ')}: ${earlier.absent.length > 1 ? 'their keys are' : 'its key is'} here from an earlier run, but ${earlier.absent.length > 1 ? 'they are' : 'it is'} not started now; the buyer may still hold ${earlier.absent.length > 1 ? 'their adverts' : 'its advert'} until ${earlier.absent.length > 1 ? 'they expire' : 'it expires'}, and names ${earlier.absent.length > 1 ? 'them' : 'it'} "(not started)"`);
    }
    const ports: number[] = [];
    for (let i = 0; i <= this.o.providers; i++) ports.push(await freePort());
    let bootstrap: string | undefined;
    for (let i = 0; i < this.o.providers; i++) {
      const prof = profileFor(i);
      const cfg = {
        roles: ['provider'],
        log: { level: 'info', format: 'json' },
        network: { listen: [`/ip4/127.0.0.1/tcp/${ports[i]}`], loopback: true, ...(bootstrap ? { bootstrap: [bootstrap] } : {}) },
        api: { listen: '127.0.0.1:0' },
        provider: {
          tier: prof.tier,
          ...(prof.region ? { region: prof.region } : {}),
          detectGpus: false,
          hardware: { cpuCores: prof.cpuCores, memoryMiB: prof.memoryMiB, ...(prof.gpus ? { gpus: prof.gpus } : { gpus: [] }) },
          meter: { type: 'estimator', estimatorWatts: 65 },
          workloads: {
            'builtin.sha256': { executor: { type: 'builtin', name: 'builtin.sha256' }, price: { amount: prof.price, currency: 'USD' }, duration: { baseMs: prof.baseMs } },
            'builtin.primes': { executor: { type: 'builtin', name: 'builtin.primes' }, price: { amount: prof.price, currency: 'USD' }, duration: { baseMs: prof.baseMs * 2 } },
          },
        },
      };
      const n = this.spawn(prof.name, 'provider', cfg, ports[i]!);
      // Every node starts at once: the first one's address is known before it listens (its key is made by spawn),
      // and a node whose bootstrap is not up yet dials it again with backoff (connectivity.ts).
      if (!bootstrap) {
        const { peerIdFromDid } = await import('../node/peer-id.js');
        bootstrap = `/ip4/127.0.0.1/tcp/${ports[i]}/p2p/${peerIdFromDid(n.did).toString()}`;
      }
      const gpus = prof.gpus?.map((g) => `${g.count}× ${g.model} ${g.vramMiB / 1024} GiB`).join(', ') ?? 'no GPU';
      // its DID as `market` and `reputation` show one (shortDid), so their lines can be matched to these names
      p(`  provider ${prof.name.padEnd(8)} ${shortDid(n.did)}  tier ${prof.tier.padEnd(9)} region ${(prof.region ?? '(undisclosed)').padEnd(13)} ${prof.cpuCores} cores ${prof.memoryMiB / 1024} GiB, ${gpus}; ${prof.price} USD/job`);
    }
    const buyer = this.spawn('buyer', 'buyer', {
      roles: ['buyer'],
      log: { level: 'info', format: 'json' },
      network: { listen: [`/ip4/127.0.0.1/tcp/${ports[this.o.providers]}`], loopback: true, bootstrap: [bootstrap!] },
      api: { listen: '127.0.0.1:0' },
      buyer: { policy: this.o.policy, collectWindowMs: 2500, enoughOffers: this.o.providers },
    }, ports[this.o.providers]!);
    p(`  buyer    ${buyer.did}`);
    const apis = await Promise.all(this.nodes.map((n) => this.apiOf(n)));
    const api = apis[apis.length - 1]!;
    p('▸ waiting for the buyer to see the market…');
    const t0 = Date.now();
    await this.waitForMarket('the buyer', api, this.o.providers);
    p(`  market visible after ${Date.now() - t0} ms: ${this.o.providers} live adverts`);
    // Providers must also hear the buyer's jobs: the job topic's mesh formed (it takes a heartbeat or two after the
    // adverts arrive). Waited for, not slept on; past JOB_MESH_WAIT_MS the run goes on, as a buyer's node would.
    const t1 = Date.now();
    const reach = await this.waitForJobMesh(this.nodes.slice(0, -1).map((n, i) => ({ did: n.did, api: apis[i]! })), api);
    p(jobMeshLine(reach, Date.now() - t1));
    return { buyer, api };
  }

  /**
   * Wait until a buyer sees `want` providers live in this run (buyerSeesMarket),
   * and `also` holds of what it sees (a scenario's own condition).
   */
  async waitForMarket(who: string, api: { api: string; token: string }, want: number, also: (v: BuyerView) => boolean = () => true): Promise<BuyerView> {
    return waitFor(`${who} to see ${want} provider(s) live (a peer, and each one's advert of this run) within ${this.#waitText()}`, this.startTimeoutMs, async () => {
      for (const n of this.nodes) this.assertRunning(n, 'before the market was visible');
      const v: BuyerView = {
        status: (await apiCall(api.api, api.token, 'GET', '/v1/status')) as BuyerView['status'],
        market: (await apiCall(api.api, api.token, 'GET', '/v1/market')) as BuyerView['market'],
      };
      return buyerSeesMarket(v, want, this.startedAt) && also(v) ? v : undefined;
    });
  }

  /** Wait, at most JOB_MESH_WAIT_MS, until a job the buyer publishes reaches every provider (`jobsReachProviders`). */
  async waitForJobMesh(providers: Array<{ did: string; api: { api: string; token: string } }>, buyer: { api: string; token: string }): Promise<boolean> {
    const view = async (): Promise<JobMeshView> => ({
      buyer: {
        status: (await apiCall(buyer.api, buyer.token, 'GET', '/v1/status')) as JobMeshView['buyer']['status'],
        peers: ((await apiCall(buyer.api, buyer.token, 'GET', '/v1/peers')) as { peers: JobMeshView['buyer']['peers'] }).peers,
      },
      providers: await Promise.all(providers.map(async ({ did, api: a }) => ({ did, status: (await apiCall(a.api, a.token, 'GET', '/v1/status')) as JobMeshView['providers'][number]['status'] }))),
    });
    try {
      await waitFor('the job topic to mesh', JOB_MESH_WAIT_MS, async () => {
        for (const n of this.nodes) this.assertRunning(n, 'before the job topic meshed');
        return jobsReachProviders(await view()) ? true : undefined;
      });
      return true;
    } catch (e) {
      if (e instanceof C0Error && e.code === 'DEVNET_TIMEOUT') return false;
      throw e;
    }
  }

  async runJob(api: { api: string; token: string }, spec: Record<string, unknown>, render: (ev: WireEvent) => void): Promise<Record<string, unknown>> {
    let result: Record<string, unknown> | undefined;
    for await (const ev of apiStream(api.api, api.token, '/v1/run', spec)) {
      if (ev.e === 'result') result = ev.result as Record<string, unknown>;
      else if (ev.e === 'error') {
        const err = ev.error as { code: string; message: string };
        throw new C0Error(err.code, err.message);
      } else render(ev as WireEvent);
    }
    if (!result) throw new C0Error('RUN_NO_RESULT', 'the buyer ended the run without a result');
    return result;
  }

  /**
   * Stop every node, then decide the directory's fate, once: the first call decides and every later or concurrent
   * call gets the same promise and the same answer (a signal's stop and a scenario's own `finally` used to race: one
   * said "kept" while the other had already removed it). The directory is removed if the devnet made it and was not
   * asked to keep it (`keep`), except after a failure (`failed`): then it stays, with every node's log. What became
   * of it is returned, for the caller to say (dirFateLine).
   */
  stop(opts: { failed?: boolean } = {}): Promise<DirFate> {
    return (this.#stopped ??= this.#stop(!!opts.failed));
  }

  #stopped: Promise<DirFate> | undefined;

  async #stop(failed: boolean): Promise<DirFate> {
    await Promise.all(
      this.nodes.map(
        (n) =>
          new Promise<void>((resolve) => {
            if (n.child.exitCode !== null || n.child.signalCode !== null) return resolve();
            const t = setTimeout(() => n.child.kill('SIGKILL'), 10_000);
            n.child.once('exit', () => {
              clearTimeout(t);
              resolve();
            });
            n.child.kill('SIGTERM');
          }),
      ),
    );
    if (!this.#ownsDir) return 'given';
    if (this.o.keep) return 'kept';
    if (failed) return 'kept-failed';
    rmSync(this.dir, { recursive: true, force: true });
    return 'removed';
  }
}

/**
 * What `Devnet.stop` did with the directory: `removed` (a temporary one, the run over), `kept` (a temporary one, with
 * `--keep`), `kept-failed` (a temporary one, the run failed: the nodes' logs are in it), `given` (`--dir`: never removed).
 */
export type DirFate = 'removed' | 'kept' | 'kept-failed' | 'given';

/** The line that says what became of a devnet's directory (`logs`: where in it a node's log is). */
export function dirFateLine(fate: DirFate, dir: string, logs = '<name>/node.log'): string {
  switch (fate) {
    case 'removed':
      return `removed ${dir}`;
    case 'kept':
      return `${dir} stays (--keep); remove it when done`;
    case 'kept-failed':
      return `kept ${dir} for its nodes' logs (${logs}); remove it when done`;
    case 'given':
      return `its data stays in ${dir} (--dir)`;
  }
}

function tail(path: string, lines = 15): string {
  try {
    return readFileSync(path, 'utf8').trim().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}
