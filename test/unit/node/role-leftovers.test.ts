/**
 * A role taken off at a restart (docs/node.md "Changing roles"): what the node still does for work of that role,
 * on two in-process overlays (real LevelDB, real libp2p on 127.0.0.1, the real exec group records).
 *
 * - A provider killed mid-job and restarted with `roles: [buyer]` still does the crash recovery the provider role
 *   does at its start (src/roles/provider/crash-recovery.ts): the process group the crash left is ended, each run a
 *   crash left gets its failed receipt (EXEC_PROVIDER_CRASHED), signed, kept and sent to its buyer, a receipt kept
 *   untried is sent too, and the runs store goes with the job history. It advertises nothing.
 * - A buyer restarted with `roles: [provider]` still takes its own job's receipt sent directly (late-receipts.ts:
 *   its records say whose job it is, not its roles).
 * - A pool member's trail and run log left on an overlay without a `pool` section go with the history too.
 */
import '../../../src/polyfill.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Ed25519Signer } from '../../../src/records/ed25519.js';
import { didFromPublicKey } from '../../../src/records/did.js';
import { seal, type Opened } from '../../../src/records/envelope.js';
import { hashHex } from '../../../src/records/address.js';
import { T, type Job, type Offer, type Receipt, type Selection } from '../../../src/records/kinds.js';
import { closeDb, openDb, sub, type Db } from '../../../src/store/db.js';
import { ProviderRuns } from '../../../src/store/provider-runs.js';
import { ProcessRegistry, groupMembers, procStartTime } from '../../../src/roles/provider/orphans.js';
import { receiptFor } from '../../../src/roles/provider/provider.js';
import { RunLog } from '../../../src/pools/trail.js';
import { networksOf, parseConfig } from '../../../src/node/config.js';
import { OverlayNode } from '../../../src/node/overlay.js';
import { silentLogger } from '../../../src/util/log.js';
import { systemClock } from '../../../src/util/clock.js';

const DAY = 24 * 3600_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitFor<R>(what: string, f: () => Promise<R | undefined | false> | R | undefined | false, ms = 15_000): Promise<R> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/** A node's data dir, LevelDB and key; `start` runs its overlay with `raw` (a config) and `roles`. */
class Node {
  readonly dir = mkdtempSync(join(tmpdir(), 'c0-leftovers-'));
  readonly signer = Ed25519Signer.generate();
  readonly did = didFromPublicKey(this.signer.publicKey);
  db!: Db;
  o: OverlayNode | undefined;

  async open(): Promise<this> {
    this.db = await openDb(join(this.dir, 'db'));
    return this;
  }

  async start(raw: Record<string, unknown>): Promise<OverlayNode> {
    const config = parseConfig({ ...raw, network: { listen: ['/ip4/127.0.0.1/tcp/0'], loopback: true, resyncMs: 0 } });
    const { roles, ...network } = networksOf(config)[0]!;
    this.o = await OverlayNode.start({ dataDir: this.dir, db: this.db, identity: { did: this.did, signer: this.signer, keyFile: join(this.dir, 'identity.key') }, config, network, roles, clock: systemClock, log: silentLogger() });
    return this.o;
  }

  async destroy(): Promise<void> {
    await this.o?.stop();
    await closeDb(this.db);
    rmSync(this.dir, { recursive: true, force: true });
  }
}

const PROVIDER_SECTION = { detectGpus: false, workloads: { 'builtin.sha256': { executor: { type: 'builtin', name: 'builtin.sha256' }, price: { amount: '0.001', currency: 'USD' } } } };

/** A job of `buyer`'s, `provider`'s offer on it, and `buyer`'s selection of that offer. */
function deal(buyer: Node, provider: Node): { job: Opened<Job>; offer: Opened<Offer>; selection: Opened<Selection> } {
  const now = Date.now();
  const input = new Uint8Array(randomBytes(8));
  const job = seal(T.job, { workload: 'builtin.sha256', requirements: {}, maxPrice: { amount: '0.01', currency: 'USD' }, announcedAt: now - 10_000, deadline: now + 600_000, timeoutMs: 300_000, input: { hash: hashHex(input), size: input.length }, inputSealed: 'no' }, buyer.signer) as Opened<Job>;
  const offer = seal(T.offer, { job: job.address, advert: 'sha256:' + 'a'.repeat(64), price: { amount: '0.001', currency: 'USD' }, durationMs: 1000, issuedAt: now - 9_000, startBy: now + 60_000, expiresAt: now + 60_000 }, provider.signer) as Opened<Offer>;
  const selection = seal(T.selection, { job: job.address, buyer: buyer.did, policy: 'cheapest', winner: offer.address, considered: [{ provider: provider.did, offer: offer.address }], decidedAt: now - 8_000 }, buyer.signer) as Opened<Selection>;
  return { job, offer, selection };
}

/** A completed receipt of `d`, kept in `runs` untried (its buyer never acknowledged it: the provider was killed first). */
async function untriedReceipt(runs: ProviderRuns, provider: Node, d: ReturnType<typeof deal>): Promise<Opened<Receipt>> {
  const now = Date.now();
  const r = seal(T.receipt, receiptFor(d.job, d.offer, { startedAt: now - 5_000, completedAt: now - 4_000, energy: { uj: 1, grade: 'Estimator' }, output: new Uint8Array([1, 2, 3]) }), provider.signer) as Opened<Receipt>;
  await runs.record(d.job.address, r.address, d.job.record.deadline, { address: r.address, bytes: r.bytes, until: now + 3_600_000, untried: true });
  return r;
}

/** The buyer holds its jobs and selections, and connects to the provider (which then sends what waits for it). */
async function buyerHolds(b: OverlayNode, p: OverlayNode, deals: Array<ReturnType<typeof deal>>): Promise<void> {
  for (const d of deals) {
    await b.records.put(d.job);
    await b.records.put(d.selection);
  }
  await b.net.dial(p.net.addrs()[0]!.includes('/p2p/') ? p.net.addrs()[0]! : `${p.net.addrs()[0]}/p2p/${p.net.libp2p.peerId.toString()}`);
}

test('a provider restarted with roles [buyer] still ends its crashed exec group, signs EXEC_PROVIDER_CRASHED for the runs a crash left, delivers waiting receipts, and prunes its runs with the history', async () => {
  const p = await new Node().open();
  const b = await new Node().open();
  let child: ChildProcess | undefined;
  try {
    const runs = await ProviderRuns.open(p.db, sub(p.db, 'provider-runs'), Date.now());
    // a builtin's run the crash took (a note only), an exec's (its group record and its note), a receipt never acknowledged
    const [noted, execd, waiting] = [deal(b, p), deal(b, p), deal(b, p)];
    const startedAt = Date.now() - 5_000;
    for (const d of [noted, execd]) await runs.note({ job: d.job.address, jobEnvelope: d.job.bytes, offerEnvelope: d.offer.bytes, startedAt }, d.job.record.deadline);
    child = spawn('sleep', ['60'], { detached: true, stdio: 'ignore' });
    const pid = child.pid!;
    const exited = new Promise((r) => child!.once('exit', r));
    new ProcessRegistry(join(p.dir, 'exec-groups', 'public')).add({ pid, pgid: pid, job: execd.job.address, startedAt, procStart: procStartTime(pid)!, jobEnvelope: Buffer.from(execd.job.bytes).toString('base64'), offerEnvelope: Buffer.from(execd.offer.bytes).toString('base64') });
    const unacked = await untriedReceipt(runs, p, waiting);
    // and a run long past the history (history.keepDays 1)
    const old = 'sha256:' + '0'.repeat(64);
    await runs.record(old, 'sha256:' + '1'.repeat(64), Date.now() - 3 * DAY);

    const po = await p.start({ roles: ['buyer'], history: { keepDays: 1 } });
    assert.equal(po.provider, undefined, 'no provider role: nothing quoted or run');
    await waitFor('the exec group a crash left to be ended', () => groupMembers(pid).length === 0, 5_000);
    await exited;
    for (const d of [noted, execd]) {
      assert.ok(await runs.has(d.job.address), 'the crashed run has its receipt recorded');
      const r = po.market.evidence.receiptsOf(d.job.address).find((x) => x.signer === p.did);
      assert.equal(r?.record.failure?.code, 'EXEC_PROVIDER_CRASHED');
    }
    assert.deepEqual(await runs.notes(), [], 'no run note is left to sign again');

    const bo = await b.start({ roles: ['buyer'] });
    await buyerHolds(bo, po, [noted, execd, waiting]);
    for (const d of [noted, execd]) {
      const r = await waitFor('the crashed run’s receipt at its buyer', () => bo.market.evidence.receiptsOf(d.job.address).find((x) => x.signer === p.did));
      assert.equal(r.record.failure?.code, 'EXEC_PROVIDER_CRASHED');
    }
    await waitFor('the receipt kept untried at its buyer', () => bo.market.evidence.receiptsOf(waiting.job.address).some((x) => x.address === unacked.address));
    await waitFor('the delivered receipts to leave the provider’s store', async () => (await runs.waitingReceipts()).length === 0);
    await waitFor('the runs store pruned with the history', async () => !(await runs.has(old)), 10_000);
    assert.equal([...po.market.adverts.latest.keys()].includes(p.did), false, 'no advert signed');
  } finally {
    if (child?.pid) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        /* ended */
      }
    }
    await p.destroy();
    await b.destroy();
  }
});

test('a buyer restarted with roles [provider] takes its own job’s receipt sent directly, and keeps it', async () => {
  const p = await new Node().open();
  const b = await new Node().open();
  try {
    const runs = await ProviderRuns.open(p.db, sub(p.db, 'provider-runs'), Date.now());
    const d = deal(b, p);
    const unacked = await untriedReceipt(runs, p, d);
    const po = await p.start({ roles: ['provider'], provider: PROVIDER_SECTION });
    const bo = await b.start({ roles: ['provider'], provider: PROVIDER_SECTION });
    assert.equal(bo.buyer, undefined);
    await buyerHolds(bo, po, [d]);
    await waitFor('the provider to have sent the receipt', async () => (await runs.waitingReceipts()).length === 0);
    // the buyer answers the direct send before it has finished storing what it took: wait for it there
    await waitFor('the receipt kept as its own job’s outcome', () => bo.market.evidence.receiptsOf(d.job.address).length > 0);
    assert.deepEqual(bo.market.evidence.receiptsOf(d.job.address).map((r) => r.address), [unacked.address], 'kept as its own job’s outcome');
  } finally {
    await p.destroy();
    await b.destroy();
  }
});

test('a pool member’s trail and run log left on an overlay without a `pool` section go with the job history', async () => {
  const n = await new Node().open();
  try {
    // entries dated three days back (history.keepDays 1): a run log note, as a member's claim writes it
    const log = await RunLog.open(sub(n.db, 'pool-runs'));
    await log.claim('sha256:' + '2'.repeat(64), 'did:key:zcoordinator', Date.now() - 4 * DAY, Date.now() - 3 * DAY);
    const before = await (async () => {
      let k = 0;
      for await (const _ of sub(n.db, 'pool-runs').keys()) k++;
      return k;
    })();
    assert.ok(before > 1);
    await n.start({ roles: ['provider'], provider: PROVIDER_SECTION, history: { keepDays: 1 } });
    await waitFor('the run log pruned with the history', async () => {
      for await (const k of sub(n.db, 'pool-runs').keys()) if (k !== '~indexed') return false;
      return true;
    }, 10_000);
  } finally {
    await n.destroy();
  }
});
