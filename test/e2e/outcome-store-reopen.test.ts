/**
 * Gossiped outcomes accepted while the node's database takes no writes (a full disk; docs/node.md "When a write
 * fails") are not lost for good (review s43 R2 F1): each one whose write fails is forgotten as seen (and left out of
 * the record cache a catch-up's digest lists), and when the database is reopened the node asks its connected peers for
 * the outcomes they took since the first failed write (docs/network.md §5 "Catching up on outcomes"). Before, they
 * stayed "seen" in the process, nothing asked for them again, and a restart's catch-up started after the failure.
 * A real daemon in process (real LevelDB) and a real libp2p peer; the failed write is injected (store/db.ts
 * injectWriteFault) and the disk probe held failing until the test lets the reopen happen.
 */
import '../../src/polyfill.js';
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { openSync } from 'node:fs';
import { join } from 'node:path';
import { Daemon } from '../../src/node/daemon.js';
import { parseConfig } from '../../src/node/config.js';
import { loadIdentity } from '../../src/node/identity.js';
import { createLogger } from '../../src/util/log.js';
import { closeDb, injectWriteFault, openDb, setRecovery, storeHealth, sub } from '../../src/store/db.js';
import { OUTCOME_GAP } from '../../src/node/overlay.js';
import { EvidenceStore } from '../../src/reputation/store.js';
import { Ed25519Signer, didFromPublicKey, seal, T, type Opened } from '../../src/records/index.js';
import { Cluster, buyerConfig } from './node-helpers.js';
import { startNode, waitFor } from './net-helpers.js';

const c = new Cluster('outcome-reopen');
after(async () => {
  await c.destroy();
});

const buyer = didFromPublicKey(Ed25519Signer.generate().publicKey);
const hex = (n: number) => 'sha256:' + n.toString(16).padStart(64, '0');
/** A gossip receipt from a fresh provider key, dated now. */
function receiptOf(i: number): Opened {
  const p = Ed25519Signer.generate();
  const now = Date.now();
  return seal(T.receipt, {
    job: hex(1e9 + i), offer: hex(2e9 + i), buyer, provider: didFromPublicKey(p.publicKey), workload: 'builtin.sha256', status: 'completed',
    startedAt: now - 2000, completedAt: now - 1000, inputHash: hex(3), outputHash: hex(4), price: { amount: '0.01', currency: 'USD' }, energy: { uj: 1000, grade: 'Estimator' },
  }, p);
}

test('outcomes gossiped while the database takes no writes are on disk once it is reopened: forgotten as seen, then caught up from the peers', async () => {
  const { dir } = c.dataDir('v');
  const log = createLogger({ level: 'info', format: 'json', fd: openSync(join(dir, 'node.log'), 'a') });
  const d = await Daemon.start({ dataDir: dir, config: parseConfig(buyerConfig({ outcomes: 'all' })), identity: loadIdentity(dir), log });
  const peer = await startNode({ syncOnConnect: [] });
  let stopped = false;
  try {
    const o = [...d.overlays.values()][0]!;
    await peer.dial(o.net.addrs()[0]!);
    await waitFor(() => peer.topicPeers('receipt').includes(o.net.peerId.toString()), 10_000, 'the daemon on the receipt topic');
    const before = receiptOf(0);
    await peer.publish('receipt', before.bytes, [], { workload: 'builtin.sha256' });
    await waitFor(() => o.market.evidence.receipts.has(before.address), 10_000, 'a receipt stored while the disk takes writes');

    // the disk fills: the next write fails, and the probe says no until the test lets it
    let diskBack = false;
    const faultAt = Date.now();
    setRecovery(d.db, { probe: async () => diskBack, firstDelayMs: 20, maxDelayMs: 50 });
    injectWriteFault(d.db, Object.assign(new Error('IO error: /data/db/000003.log: No space left on device'), { code: 'LEVEL_IO_ERROR' }));
    const during = Array.from({ length: 20 }, (_, i) => receiptOf(i + 1));
    for (const r of during) await peer.publish('receipt', r.bytes, [], { workload: 'builtin.sha256' });
    const accepted = () => o.net.metrics.registry.getSingleMetric('c0mpute_net_records_total')!.get();
    const acceptedOf = async () => (await accepted()).values.filter((v) => v.labels.kind === 'receipt' && v.labels.verdict === 'accept' && v.labels.source === 'gossip').reduce((n, v) => n + v.value, 0);
    await waitFor(async () => (await acceptedOf()) >= 21, 10_000, 'the 20 receipts accepted from gossip');
    await waitFor(() => o.market.evidence.pending === 0, 10_000, 'their writes settled');
    assert.equal(storeHealth(d.db).ok, false, 'the database takes no writes');
    assert.equal(during.filter((r) => o.market.evidence.receipts.has(r.address)).length, 0, 'none of them stored');

    // space is back: the database is reopened, and the peer is asked for what it took since the failed write
    diskBack = true;
    await waitFor(() => storeHealth(d.db).ok, 10_000, 'the reopen');
    const reopenedAt = Date.now();
    await waitFor(() => during.every((r) => o.market.evidence.receipts.has(r.address)), 15_000, 'the receipts gossiped while the disk was full, stored after the reopen');

    await d.stop();
    stopped = true;
    const db = await openDb(join(dir, 'db'));
    try {
      const es = await EvidenceStore.open(db);
      for (const r of [before, ...during]) assert.ok(es.receipts.has(r.address), `receipt ${r.address} on disk`);
      // for a restart before the catch-up is done: when the first write failed (the next start's catch-up reaches back to it)
      const mark = Number(new TextDecoder().decode(await sub(db, OUTCOME_GAP.sublevel).get(OUTCOME_GAP.key)));
      assert.ok(mark >= faultAt && mark <= reopenedAt, `the failed write's time written down at the reopen: ${mark}`);
    } finally {
      await closeDb(db);
    }
  } finally {
    await peer.stop();
    if (!stopped) await d.stop();
  }
});
