/**
 * Preemption on a private overlay (pool/1 §5, docs/overlays.md): one provider
 * without GPUs (capacity: one device), a low-priority team running a long job
 * on it, then a high-priority team's claim, admissible within its own
 * guarantees, that needs the device. The steward reclaims it: the provider
 * stops the low team's work with a signed `failed` receipt EXEC_PREEMPTED
 * (which releases that claim), then the high team's job is admitted and runs.
 * Real node processes on 127.0.0.1, real LevelDB.
 */
import '../../src/polyfill.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Devnet, freePort, waitFor } from '../../src/devnet/devnet.js';
import { createIdentity } from '../../src/node/identity.js';
import { apiCall } from '../../src/node/api.js';
import { peerIdFromDid } from '../../src/node/peer-id.js';
import { generateSwarmKey } from '../../src/net/node.js';
import { readLedgerDir } from '../../src/ledger/store.js';
import { open } from '../../src/records/envelope.js';
import type { LedgerEntry } from '../../src/ledger/entry.js';
import type { WireEvent } from '../../src/node/events.js';

const BIN = join(fileURLToPath(new URL('.', import.meta.url)), '..', '..', '..', 'bin', 'c0mpute.js');

const TREE = `entitlements:
  - { id: org, guarantee_uj: 10000000000, guarantee_devices: 2, over_quota_weight: 0, priority: 0 }
  - { id: low, parent: org, guarantee_uj: 1000000000, guarantee_devices: 1, over_quota_weight: 0, priority: 1 }
  - { id: high, parent: org, guarantee_uj: 1000000000, guarantee_devices: 1, over_quota_weight: 0, priority: 5 }
`;

test('a higher-priority admission reclaims the device from lower-priority work', { timeout: 150_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-preempt-'));
  const net = new Devnet({ providers: 0, policy: 'balanced', jobs: 0, keep: false, dir, bin: BIN, print: () => {} });
  try {
    const key = join(dir, 'o.key');
    writeFileSync(key, generateSwarmKey(), { mode: 0o600 });
    writeFileSync(join(dir, 'tree.yaml'), TREE);
    const names = ['steward', 'worker', 'lowbuyer', 'highbuyer'];
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
      network: { overlay: 'lab', swarmKeyFile: key, listen: [`/ip4/127.0.0.1/tcp/${ports[n]}`], loopback: true, steward: dids.steward, resyncMs: 3000, ...(n === 'steward' ? {} : { bootstrap: [boot] }) },
    });
    const steward = net.spawn('steward', 'steward', { ...base('steward'), roles: ['steward'], steward: { treeFile: join(dir, 'tree.yaml') } }, ports.steward!);
    await net.apiOf(steward);
    net.spawn('worker', 'provider', {
      ...base('worker'),
      roles: ['provider'],
      provider: {
        detectGpus: false,
        hardware: { cpuCores: 4, memoryMiB: 8192, gpus: [] },
        meter: { type: 'estimator', estimatorWatts: 50 },
        workloads: {
          'builtin.sleep': { executor: { type: 'builtin', name: 'builtin.sleep' }, price: { amount: '0.001', currency: 'EUR' }, duration: { baseMs: 30_000 } },
        },
      },
    }, ports.worker!);
    for (const b of ['lowbuyer', 'highbuyer']) net.spawn(b, 'buyer', { ...base(b), roles: ['buyer'], buyer: { collectWindowMs: 3000, enoughOffers: 1 } }, ports[b]!);
    const api: Record<string, { api: string; token: string }> = {};
    for (const n of net.nodes) api[n.name] = await net.apiOf(n);
    for (const n of ['steward', 'lowbuyer', 'highbuyer']) {
      await waitFor(`${n} to see the provider`, 40_000, async () => ((await apiCall(api[n]!.api, api[n]!.token, 'GET', '/v1/status')) as { providersKnown: number }).providersKnown >= 1 || undefined);
    }

    const spec = (ent: string, ms: number) => ({
      workload: 'builtin.sleep',
      params: String(ms),
      maxPrice: '0.01 EUR',
      deadlineMs: 60_000,
      entitlement: ent,
      energy: { uj: 100_000_000, grade: 'Estimator' },
      input: Buffer.from(`${ent} ${Date.now()}`).toString('base64'),
    });
    const lowEvents: WireEvent[] = [];
    const low = net.runJob(api.lowbuyer!, spec('low', 40_000), (e) => lowEvents.push(e));
    // The low team's work is running on the only device.
    await waitFor('the low job to run', 40_000, () => (lowEvents.some((e) => e.e === 'accepted') ? true : undefined));
    const highEvents: WireEvent[] = [];
    const high = await net.runJob(api.highbuyer!, spec('high', 300), (e) => highEvents.push(e));
    const lowResult = await low;

    assert.equal(high.status, 'completed', `high: ${JSON.stringify(high.attempts)}`);
    assert.equal(lowResult.status, 'preempted');
    const lowReceipt = lowEvents.find((e) => e.e === 'receipt')!.receipt as { record: { status: string; failure?: { code: string }; energy: { uj: number } } };
    assert.equal(lowReceipt.record.status, 'failed');
    assert.equal(lowReceipt.record.failure?.code, 'EXEC_PREEMPTED');
    // The high claim was admitted, never denied.
    assert.equal((highEvents.find((e) => e.e === 'admission')!.admission as { verdict: string }).verdict, 'Admit');

    // The ledger: low admitted, low released with what the stopped work spent, high admitted, high released.
    await waitFor('both releases', 20_000, async () => {
      const s = (await apiCall(api.steward!.api, api.steward!.token, 'GET', '/v1/steward')) as { ledger: { length: number } };
      return s.ledger.length >= 4 ? s : undefined;
    });
    await net.stop();
    const raw = await readLedgerDir(join(dir, 'steward', 'steward', 'lab', 'ledger'));
    const events = raw.entries.map((b) => (open(b, 'pool/1').record as LedgerEntry));
    const kinds = events.map((e) => `${e.event}`);
    assert.deepEqual(kinds, ['Admitted', 'Released', 'Admitted', 'Released']);
    const lowRelease = events[1] as unknown as { actual: { uj: number; grade: string } };
    assert.equal(lowRelease.actual.uj, lowReceipt.record.energy.uj, 'the preempted claim is charged what its stopped work spent');
  } finally {
    await net.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
