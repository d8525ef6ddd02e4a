/**
 * A small stewarded overlay for end-to-end tests: a swarm key, a tree, a
 * steward, providers and buyers, each a real node process on 127.0.0.1
 * (through the devnet harness), all bootstrapping through the steward.
 */
import '../../src/polyfill.js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Devnet, freePort, waitFor } from '../../src/devnet/devnet.js';
import { createIdentity } from '../../src/node/identity.js';
import { apiCall } from '../../src/node/api.js';
import { peerIdFromDid } from '../../src/node/peer-id.js';
import { generateSwarmKey } from '../../src/net/node.js';

const BIN = join(fileURLToPath(new URL('.', import.meta.url)), '..', '..', '..', 'bin', 'c0mpute.js');

export interface OverlayPlan {
  tree: string;
  steward?: Record<string, unknown>;
  /** name → the `provider` config section */
  providers: Record<string, Record<string, unknown>>;
  buyers: string[];
  /** A managed overlay: the steward signs selections for the buyers. */
  managed?: boolean;
  /** Settings over the buyers' `buyer` section (default: a 15 s offer window that ends at the first offer). */
  buyer?: Record<string, unknown>;
}

export interface TestOverlay {
  dir: string;
  net: Devnet;
  dids: Record<string, string>;
  api: Record<string, { api: string; token: string }>;
  ledgerDir: string;
  close(): Promise<void>;
}

export async function startStewardedOverlay(prefix: string, plan: OverlayPlan): Promise<TestOverlay> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const net = new Devnet({ providers: 0, policy: 'balanced', jobs: 0, keep: false, dir, bin: BIN, print: () => {} });
  const close = async () => {
    await net.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const key = join(dir, 'o.key');
    writeFileSync(key, generateSwarmKey(), { mode: 0o600 });
    writeFileSync(join(dir, 'tree.yaml'), plan.tree);
    const names = ['steward', ...Object.keys(plan.providers), ...plan.buyers];
    const ports: Record<string, number> = {};
    const dids: Record<string, string> = {};
    for (const n of names) {
      ports[n] = await freePort();
      dids[n] = createIdentity(join(dir, n)).did;
    }
    const boot = `/ip4/127.0.0.1/tcp/${ports.steward}/p2p/${peerIdFromDid(dids.steward!).toString()}`;
    const base = (n: string) => ({
      log: { level: 'info', format: 'json' },
      api: { listen: '127.0.0.1:0' },
      network: { overlay: 'lab', swarmKeyFile: key, listen: [`/ip4/127.0.0.1/tcp/${ports[n]}`], loopback: true, steward: dids.steward, resyncMs: 3000, managed: !!plan.managed, ...(n === 'steward' ? {} : { bootstrap: [boot] }) },
    });
    const steward = net.spawn('steward', 'steward', { ...base('steward'), roles: ['steward'], steward: { treeFile: join(dir, 'tree.yaml'), ...plan.steward } }, ports.steward!);
    await net.apiOf(steward);
    for (const [p, provider] of Object.entries(plan.providers)) net.spawn(p, 'provider', { ...base(p), roles: ['provider'], provider }, ports[p]!);
    // A generous offer window that ends at the first offer: every node reaches the
    // others through the steward, and on a loaded machine its gossip forward (or the
    // provider's anti-entropy resync) can take a few seconds.
    for (const b of plan.buyers) net.spawn(b, 'buyer', { ...base(b), roles: ['buyer'], buyer: { collectWindowMs: 15_000, enoughOffers: 1, ...plan.buyer } }, ports[b]!);
    const api: Record<string, { api: string; token: string }> = {};
    for (const n of net.nodes) api[n.name] = await net.apiOf(n);
    const want = Object.keys(plan.providers).length;
    for (const n of ['steward', ...plan.buyers]) {
      await waitFor(`${n} to see the providers`, 40_000, async () => ((await apiCall(api[n]!.api, api[n]!.token, 'GET', '/v1/status')) as { providersKnown: number }).providersKnown >= want || undefined);
    }
    return { dir, net, dids, api, ledgerDir: join(dir, 'steward', 'steward', 'lab', 'ledger'), close };
  } catch (e) {
    await close();
    throw e;
  }
}

/** A provider section running builtin.sleep (and sha256) on a CPU-only machine. */
export function sleepProvider(meter: Record<string, unknown>): Record<string, unknown> {
  return {
    detectGpus: false,
    hardware: { cpuCores: 4, memoryMiB: 8192, gpus: [] },
    meter,
    workloads: {
      'builtin.sleep': { executor: { type: 'builtin', name: 'builtin.sleep' }, price: { amount: '0.001', currency: 'EUR' }, duration: { baseMs: 30_000 } },
    },
  };
}

/** A job spec (the API's JSON form) for builtin.sleep under an entitlement. */
export function sleepJob(entitlement: string, ms: number, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    workload: 'builtin.sleep',
    params: String(ms),
    maxPrice: '0.01 EUR',
    deadlineMs: 60_000,
    entitlement,
    energy: { uj: 100_000_000, grade: 'Estimator' },
    input: Buffer.from(`${entitlement} ${Date.now()} ${Math.random()}`).toString('base64'),
    ...extra,
  };
}

export { waitFor };
