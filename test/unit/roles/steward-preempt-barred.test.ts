/**
 * Preempting a claim whose provider is not running it (src/roles/steward-reclaim.ts, docs/overlays.md
 * "Preemption"): its attempt there failed and the buyer has not failed over yet, or the buyer has not sent its exec
 * yet, or it died after admission. The provider answers `stop` with `{stopped: 'no', barred: 'yes'}` (it refuses the
 * job's exec EXEC_PREEMPTED from now on), so the steward releases the victim with the receipts so far and admits
 * the higher-priority claim; a provider that only says `stopped: 'no'` (before `barred`) frees nothing, as before.
 * A selection the victim's buyer signs afterwards has its provider asked to stop too. A real Ledger, accounts and
 * Reclaimer over a one-device overlay; the network is a fake that answers as the test says.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { admittedEvent } from '../../../src/pool/admission.js';
import { appendAdmitted, Reclaimer } from '../../../src/roles/steward-reclaim.js';
import type { StewardConfig, StewardPorts } from '../../../src/roles/steward-ports.js';
import { tempDir } from '../ledger/helpers.js';
import { stewardRig } from './steward-rig.js';
import { until } from './steward-stub.js';
import { NOW, P, advert, job, offer, receipt } from '../market/fixtures.js';
import { TREE, claimOf, selection, type Frame } from './preempt-fixtures.js';

const [lowBuyer, highBuyer, provA, provB] = [P(1), P(2), P(3), P(4)];

/** Let background work (a reclaimed claim's slot) run a little. */
const settle = async () => {
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
};

async function rig(dir: string, answerStop: (to: string, f: Frame) => unknown) {
  const r = await stewardRig(dir, TREE);
  const asked: Array<{ to: string; f: Frame }> = [];
  const request = async (to: string, _p: string, frames: Frame[]) => {
    asked.push({ to, f: frames[0]! });
    return [frames[0]!.op === 'usage' ? { running: 'no' } : answerStop(to, frames[0]!)];
  };
  // one live advert without GPUs: one device
  const latest = new Map([['advert', { record: { expiresAt: NOW + 3_600_000, hardware: { cpuCores: 4, memoryMiB: 1024 } }, signer: provA.did }]]);
  // provA is connected to the steward: its advert counts towards the capacity
  const ports = { ...r.ports, net: { request, peers: () => [{ peerId: '', did: provA.did, addrs: [] }] }, market: { adverts: { latest } } } as unknown as StewardPorts;
  const reclaim = new Reclaimer({ ports, ledger: r.ledger, tree: r.pool.tree, pool: r.pool, cfg: { preempt: true } as StewardConfig, did: 'did:key:steward', accounts: r.accounts, stopped: () => false });

  // The low claim: admitted, selected at provA, whose attempt failed (700 µJ) — the buyer has not failed over yet.
  const low = job(lowBuyer, { nonce: new Uint8Array([1]) });
  const v = r.pool.decide(claimOf(low.address, 'lo'));
  assert.equal(v.verdict, 'Admit');
  if (v.verdict === 'Admit') await r.append(admittedEvent(claimOf(low.address, 'lo'), v));
  r.accounts.track(low.address, 'lo', lowBuyer.did, low.record.deadline);
  const offerA = offer(provA, low, advert(provA));
  r.offers.set(offerA.address, offerA);
  await r.accounts.onSelection(selection(lowBuyer, offerA, provA));
  await r.accounts.onReceipt(receipt(provA, lowBuyer, offerA, { status: 'failed', energy: { uj: 700, grade: 'Estimator' } }));
  assert.ok(r.accounts.get(low.address), 'a failed attempt alone does not release the claim');

  const high = job(highBuyer, { nonce: new Uint8Array([2]) });
  const admitHigh = async () => appendAdmitted({ reclaim, append: r.append }, claimOf(high.address, 'hi'), reclaim.decideNow(claimOf(high.address, 'hi')));
  const events = async () => (await r.ledger.records(0)).map((e) => ({ event: e.event, claim: e.claim, ...(e.event === 'Released' ? { actual: (e as { actual: unknown }).actual } : {}) }));
  return { ...r, reclaim, asked, low, high, admitHigh, events };
}

describe('preempting a claim its provider is not running', () => {
  it('the provider bars it: the victim is released with its receipts so far, then the higher-priority claim is admitted', async () => {
    const t = tempDir('c0-preempt-barred-');
    try {
      const s = await rig(t.dir, () => ({ stopped: 'no', barred: 'yes' }));
      assert.deepEqual(s.reclaim.decideNow(claimOf(s.high.address, 'hi')).victims, [s.low.address]);
      const o = await s.admitHigh();
      assert.ok('admit' in o, `admitted: ${JSON.stringify(o)}`);
      const stop = s.asked.find((a) => a.f.op === 'stop')!;
      assert.equal(stop.to, provA.did);
      assert.deepEqual([stop.f.job, stop.f.deadline], [s.low.address, s.low.record.deadline], 'the stop names the job and its deadline (how long the provider bars it)');
      assert.deepEqual(await s.events(), [
        { event: 'Admitted', claim: s.low.address },
        // charged what its providers signed (the failed attempt), no more
        { event: 'Released', claim: s.low.address, actual: { uj: 700, grade: 'Estimator' } },
        { event: 'Admitted', claim: s.high.address },
      ]);
      assert.equal(s.accounts.get(s.low.address), undefined, 'the victim’s claim is over');
      await s.close();
    } finally {
      t.cleanup();
    }
  });

  it('a provider that only says it did not stop (no `barred`, an older one): nothing is released, the claim is queued DEVICES_HELD', async () => {
    const t = tempDir('c0-preempt-barred-');
    try {
      const s = await rig(t.dir, () => ({ stopped: 'no' }));
      const o = await s.admitHigh();
      assert.ok('v' in o);
      assert.deepEqual([o.v.verdict, o.v.verdict === 'Queue' ? o.v.reason : ''], ['Queue', 'DEVICES_HELD']);
      assert.deepEqual((await s.events()).map((e) => e.event), ['Admitted']);
      assert.ok(s.accounts.get(s.low.address), 'the victim is still open');
      await s.close();
    } finally {
      t.cleanup();
    }
  });

  it('a selection the victim’s buyer signs afterwards (a failover) has its provider asked to stop too, once', async () => {
    const t = tempDir('c0-preempt-barred-');
    try {
      const s = await rig(t.dir, () => ({ stopped: 'no', barred: 'yes' }));
      assert.ok('admit' in (await s.admitHigh()));
      const offerB = offer(provB, s.low, advert(provB));
      s.offers.set(offerB.address, offerB);
      // the provider asked is the winning offer's signer, as the steward resolves it
      // someone else's selection of the job names nobody the steward stops
      await s.reclaim.onSelection(selection(highBuyer, offerB, provB));
      assert.equal(s.asked.filter((a) => a.to === provB.did).length, 0);
      await s.reclaim.onSelection(selection(lowBuyer, offerB, provB));
      // the stop goes out in the claim's background slot (one request at a time per claim and per buyer)
      await until(() => s.asked.some((a) => a.to === provB.did), 'provB asked to stop');
      await s.reclaim.onSelection(selection(lowBuyer, offerB, provB));
      await settle();
      const toB = s.asked.filter((a) => a.to === provB.did);
      assert.equal(toB.length, 1);
      assert.deepEqual([toB[0]!.f.op, toB[0]!.f.job, toB[0]!.f.deadline], ['stop', s.low.address, s.low.record.deadline]);
      // the provider asked before is not asked again
      const again = offer(provA, s.low, advert(provA), { amount: '0.4' });
      s.offers.set(again.address, again);
      await s.reclaim.onSelection(selection(lowBuyer, again, provA));
      await settle();
      assert.equal(s.asked.filter((a) => a.to === provA.did && a.f.op === 'stop').length, 1);
      await s.close();
    } finally {
      t.cleanup();
    }
  });
});
