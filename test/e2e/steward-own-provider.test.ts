/**
 * A steward that is also a provider on its overlay charges its own provider's
 * work (QA qaWit F1): gossip never brings a node its own messages, so the
 * steward heard none of the receipts its own provider signed, released every
 * claim at its deadline charging 0 µJ, and held the device until then (the
 * team's next job waited DEVICES_HELD). Its own receipts now reach it through
 * the same handler as a peer's (Network.subscribe `own`), once.
 *
 * Two real `c0mpute start` processes on a private overlay: S (steward and
 * provider) and a buyer. One job under team-a: once it ends, the release
 * charges exactly the receipt's energy, the device is free at once (long
 * before the job's 60 s deadline), and the next job is admitted without
 * waiting.
 */
import '../../src/polyfill.js';
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generateSwarmKey } from '../../src/net/node.js';
import { Cluster, bootstrapAddr, buyerConfig, get, providerConfig, waitFor, withLogs, type NodeProc } from './node-helpers.js';
import { OVERLAY, TREE_YAML, claimSpec, runClaim, showLedger, stewardStatus } from './steward-helpers.js';

const c = new Cluster('steward-own');
let steward: NodeProc;
let buyer: NodeProc;

before(async () => {
  const keyFile = join(c.root, `${OVERLAY}.key`);
  writeFileSync(keyFile, generateSwarmKey(), { mode: 0o600 });
  const treeFile = join(c.root, 'tree.yaml');
  writeFileSync(treeFile, TREE_YAML);
  const did = c.dataDir('steward').did;
  const net = (boot: NodeProc[]) => ({ overlay: OVERLAY, swarmKeyFile: keyFile, listen: ['/ip4/127.0.0.1/tcp/0'], loopback: true, bootstrap: boot.map(bootstrapAddr), steward: did });
  const p = providerConfig({ tier: 'private', baseMs: 500 });
  steward = await c.start('steward', { ...p, roles: ['steward', 'provider'], network: net([]), steward: { treeFile } });
  buyer = await c.start('buyer', { ...buyerConfig({ collectWindowMs: 3000, enoughOffers: 1 }), network: net([steward]) });
  await waitFor('the buyer to see the steward’s provider', async () => (await get<{ providersKnown: number }>(buyer, '/v1/status')).providersKnown >= 1, 30_000);
});

after(async () => {
  await c.destroy();
});

test('a steward that is also a provider charges its own provider’s receipts and frees the device at once', async () => {
  await withLogs(c, async () => {
    const a1 = await runClaim(buyer, claimSpec('A1', 'team-a', 100_000_000, 1000));
    assert.equal(a1.result.status, 'completed', JSON.stringify(a1.result));
    assert.ok(a1.energy && a1.energy.uj > 0, 'the receipt carries an energy figure');
    // released on the receipt, not at the 60 s deadline: within a few seconds
    const team = await waitFor('team-a’s claim released with the receipt’s energy', async () => {
      const t = (await stewardStatus(steward)).teams.find((x) => x.id === 'team-a')!;
      return t.open_claims === 0 ? t : undefined;
    }, 8_000);
    assert.equal(team.held_devices, 0);
    assert.equal(team.spent_uj, a1.energy.uj, 'the release charges the receipt the steward’s own provider signed');
    // the next job is admitted at once, not queued DEVICES_HELD behind the first
    const a2 = await runClaim(buyer, claimSpec('A2', 'team-a', 100_000_000, 1000));
    assert.equal(a2.result.status, 'completed');
    assert.deepEqual(a2.queued, []);
    assert.equal(a2.admission?.verdict, 'Admit');
    await waitFor('A2 released', async () => (await stewardStatus(steward)).teams.find((x) => x.id === 'team-a')!.open_claims === 0, 8_000);
    // the ledger: each claim released once, with its receipt's energy (the gossiped copy is not charged again)
    await c.stop(steward);
    const rows = await showLedger(c, join(steward.dir, 'steward', OVERLAY, 'ledger'));
    const released = rows.map((r) => r.entry).filter((e) => e.event === 'Released');
    assert.equal(released.length, 2, JSON.stringify(rows.map((r) => r.entry)));
    const a1Release = released.find((e) => e.claim === a1.job);
    assert.ok(a1Release?.event === 'Released' && a1Release.actual?.uj === a1.energy.uj, JSON.stringify(a1Release));
  });
});
