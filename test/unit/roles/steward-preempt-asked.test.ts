/**
 * A reclaimed-coded receipt (EXEC_PREEMPTED, EXEC_IDLE_RECLAIMED) releases a claim as reclaimed only when the steward
 * asked its provider to stop (docs/overlays.md "Preemption"): before, any such receipt from the chosen provider
 * released the claim at once, so a provider could end a buyer's claim by faking a preemption nobody asked for. One the
 * steward did not ask for is an ordinary failed receipt (charged; the claim stays open for the buyer's failover). The
 * steward marks the claim before it sends the `stop` (the provider's receipt can reach it by gossip before the
 * answer), and answers the claim's buyer, and only it, whether it reclaimed the claim (`/c0mpute/steward/1` op
 * `reclaimed`: the buyer believes a refusal or receipt coded so only then). The question names the provider whose
 * refusal the buyer checks, and only a provider the steward asked is confirmed: before, the answer was the claim's, so
 * once the steward asked provider A to stop, a provider B the buyer failed over to could refuse EXEC_PREEMPTED and be
 * believed. A real Ledger, accounts and Reclaimer over a one-device overlay; the network is a fake that answers as the
 * test says.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { type Receipt } from '../../../src/records/kinds.js';
import type { Opened } from '../../../src/records/envelope.js';
import type { CborValue } from '../../../src/records/cbor.js';
import { admittedEvent } from '../../../src/pool/admission.js';
import { appendAdmitted, Reclaimer } from '../../../src/roles/steward-reclaim.js';
import { reclaimed } from '../../../src/roles/steward-handlers.js';
import type { StewardConfig, StewardPorts } from '../../../src/roles/steward-ports.js';
import { peerIdFromDid } from '../../../src/node/peer-id.js';
import { tempDir } from '../ledger/helpers.js';
import { stewardRig } from './steward-rig.js';
import { until } from './steward-stub.js';
import { NOW, P, advert, job, offer, receipt, type Party } from '../market/fixtures.js';
import { TREE, claimOf, selection, type Frame } from './preempt-fixtures.js';

const [lowBuyer, highBuyer, provA, stranger, provB, provC] = [P(1), P(2), P(3), P(9), P(4), P(5)];

/** The low claim admitted and selected at provA; `onStop` is provA's answer to a `stop` (it may deliver gossip first). */
async function rig(dir: string, onStop: (f: Frame, s: { preempted: Opened<Receipt> }) => Promise<unknown>) {
  const r = await stewardRig(dir, TREE);
  const asked: Array<{ to: string; f: Frame }> = [];
  const ctx: { preempted?: Opened<Receipt> } = {};
  const request = async (to: string, _p: string, frames: Frame[]) => {
    asked.push({ to, f: frames[0]! });
    return [frames[0]!.op === 'usage' ? { running: 'yes', uj: 100, elapsedMs: 10 } : await onStop(frames[0]!, { preempted: ctx.preempted! })];
  };
  const latest = new Map([['advert', { record: { expiresAt: NOW + 3_600_000, hardware: { cpuCores: 4, memoryMiB: 1024 } }, signer: provA.did }]]);
  const ports = { ...r.ports, net: { request, peers: () => [{ peerId: '', did: provA.did, addrs: [] }] }, market: { adverts: { latest } } } as unknown as StewardPorts;
  const reclaim = new Reclaimer({ ports, ledger: r.ledger, tree: r.pool.tree, pool: r.pool, cfg: { preempt: true } as StewardConfig, did: 'did:key:steward', accounts: r.accounts, stopped: () => false });
  r.useReclaimer(reclaim);

  const low = job(lowBuyer, { nonce: new Uint8Array([7]) });
  const v = r.pool.decide(claimOf(low.address, 'lo'));
  assert.equal(v.verdict, 'Admit');
  if (v.verdict === 'Admit') await r.append(admittedEvent(claimOf(low.address, 'lo'), v));
  r.accounts.track(low.address, 'lo', lowBuyer.did, low.record.deadline);
  const offerA = offer(provA, low, advert(provA));
  r.offers.set(offerA.address, offerA);
  await r.accounts.onSelection(selection(lowBuyer, offerA, provA));
  const preempted = (ctx.preempted = receipt(provA, lowBuyer, offerA, { status: 'failed', failure: { code: 'EXEC_PREEMPTED', message: 'preempted' }, energy: { uj: 400, grade: 'Estimator' } }));

  const high = job(highBuyer, { nonce: new Uint8Array([8]) });
  const admitHigh = async () => appendAdmitted({ reclaim, append: r.append }, claimOf(high.address, 'hi'), reclaim.decideNow(claimOf(high.address, 'hi')));
  const events = async () => (await r.ledger.records(0)).map((e) => `${e.event} ${e.claim === low.address ? 'low' : 'high'}`);
  /**
   * What the steward answers `who` asking op `reclaimed` for the low job (or the error code it refuses with), naming
   * the provider whose refusal it checks (`provider`; absent: an older buyer's question).
   */
  const ask = async (who: Party, provider?: unknown): Promise<unknown> => {
    const sent: CborValue[] = [];
    try {
      const req = { op: 'reclaimed', job: low.address, ...(provider === undefined ? {} : { provider }) };
      await reclaimed({ accounts: r.accounts, reclaim, claimOf: (j) => j, jobSigner: async (j) => (j === low.address ? lowBuyer.did : undefined) }, req, { peer: peerIdFromDid(who.did), send: async (f) => void sent.push(f) });
    } catch (e) {
      return (e as { code?: string }).code;
    }
    return (sent[0] as { reclaimed?: string } | undefined)?.reclaimed;
  };
  return { ...r, reclaim, asked, low, high, preempted, admitHigh, events, ask };
}

describe('a reclaimed-coded receipt releases a claim as reclaimed only when the steward asked', () => {
  it('EXEC_PREEMPTED from the chosen provider with no stop asked: charged as a failure, the claim stays open', async () => {
    const t = tempDir('c0-preempt-asked-');
    try {
      const s = await rig(t.dir, async () => ({ stopped: 'no' }));
      assert.equal(await s.ask(lowBuyer), 'no', 'the steward has not reclaimed it');
      await s.accounts.onReceipt(s.preempted);
      assert.deepEqual(await s.events(), ['Admitted low'], 'not released as reclaimed');
      const oj = s.accounts.get(s.low.address);
      assert.ok(oj, 'the claim stays open: the buyer fails over');
      assert.ok(oj.receipts.has(s.preempted.address), 'the receipt is charged as the failure it is');
      assert.equal(s.asked.filter((a) => a.f.op === 'stop').length, 0);
      assert.equal(await s.ask(lowBuyer), 'no');
      // the same for an idle code
      const idle = receipt(provA, lowBuyer, s.offers.values().next().value!, { status: 'failed', failure: { code: 'EXEC_IDLE_RECLAIMED', message: 'idle' }, energy: { uj: 5, grade: 'Estimator' } });
      await s.accounts.onReceipt(idle);
      assert.deepEqual(await s.events(), ['Admitted low']);
      await s.close();
    } finally {
      t.cleanup();
    }
  });

  it('after a stop asked: the receipt releases the claim, even when it comes by gossip before the answer', async () => {
    const t = tempDir('c0-preempt-asked-');
    try {
      let during: unknown;
      const s = await rig(t.dir, async (f, c) => {
        // the provider stops the work: its receipt is gossiped (reaching the steward) and the buyer asks, before the answer
        during = await s.ask(lowBuyer);
        await s.accounts.onReceipt(c.preempted);
        return { stopped: 'yes', receipt: c.preempted.bytes };
      });
      const o = await s.admitHigh();
      assert.ok('admit' in o, `admitted: ${JSON.stringify(o)}`);
      assert.equal(during, 'priority', 'asked while the stop is in flight, the steward confirms it');
      assert.deepEqual(await s.events(), ['Admitted low', 'Released low', 'Admitted high']);
      assert.equal(await s.ask(lowBuyer), 'priority', 'remembered after the release');
      assert.equal(await s.ask(stranger), 'STEWARD_NOT_BUYER', 'only the claim’s buyer is answered');
      await s.close();
    } finally {
      t.cleanup();
    }
  });

  it('a provider that answers the stop with no stop and no bar leaves no mark: a later EXEC_PREEMPTED of its own is a failure', async () => {
    const t = tempDir('c0-preempt-asked-');
    try {
      const s = await rig(t.dir, async () => ({ stopped: 'no' }));
      const o = await s.admitHigh();
      assert.ok('v' in o && o.v.verdict === 'Queue');
      assert.equal(await s.ask(lowBuyer), 'no');
      await s.accounts.onReceipt(s.preempted);
      assert.deepEqual(await s.events(), ['Admitted low']);
      await s.close();
    } finally {
      t.cleanup();
    }
  });
});

describe('the `reclaimed` answer says whether the steward asked the provider named', () => {
  it('a failover provider nobody asked to stop is not confirmed, though the steward asked the claim’s first provider', async () => {
    const t = tempDir('c0-preempt-asked-');
    try {
      // provA bars the job: the claim is released as reclaimed; meanwhile the buyer had failed over to provB (a
      // selection the steward never heard), which refuses the exec EXEC_PREEMPTED although nobody asked it to stop
      const s = await rig(t.dir, async () => ({ stopped: 'no', barred: 'yes' }));
      assert.ok('admit' in (await s.admitHigh()));
      assert.deepEqual(await s.events(), ['Admitted low', 'Released low', 'Admitted high']);
      assert.deepEqual(
        s.asked.filter((a) => a.f.op === 'stop').map((a) => a.to),
        [provA.did],
      );
      assert.equal(await s.ask(lowBuyer, provB.did), 'no', 'provB was not asked to stop: its refusal is a refusal like any other');
      assert.equal(await s.ask(lowBuyer, provA.did), 'priority', 'provA was');
      assert.equal(await s.ask(lowBuyer), 'priority', 'a buyer that names no provider (before the field) is answered for the claim, as before');
      assert.equal(await s.ask(stranger, provA.did), 'STEWARD_NOT_BUYER');
      await s.close();
    } finally {
      t.cleanup();
    }
  });

  it('while the stop to the first provider is in flight, another provider is not confirmed', async () => {
    const t = tempDir('c0-preempt-asked-');
    try {
      const during: unknown[] = [];
      const s = await rig(t.dir, async () => {
        during.push(await s.ask(lowBuyer, provA.did), await s.ask(lowBuyer, provB.did));
        throw new Error('no answer');
      });
      await s.admitHigh();
      assert.deepEqual(during, ['priority', 'no']);
      // asked, not answered: provA keeps its mark (it may have stopped), provB still has none
      assert.equal(await s.ask(lowBuyer, provA.did), 'priority');
      assert.equal(await s.ask(lowBuyer, provB.did), 'no');
      await s.close();
    } finally {
      t.cleanup();
    }
  });

  it('a failover the steward stopped itself (its selection heard after the reclaim) is confirmed for that provider', async () => {
    const t = tempDir('c0-preempt-asked-');
    try {
      const s = await rig(t.dir, async () => ({ stopped: 'no', barred: 'yes' }));
      assert.ok('admit' in (await s.admitHigh()));
      const offerB = offer(provB, s.low, advert(provB));
      s.offers.set(offerB.address, offerB);
      await s.reclaim.onSelection(selection(lowBuyer, offerB, provB));
      await until(() => s.asked.some((a) => a.to === provB.did && a.f.op === 'stop'), 'provB asked to stop');
      assert.equal(await s.ask(lowBuyer, provB.did), 'priority', 'the steward asked provB to stop: its refusal is the reclaim');
      assert.equal(await s.ask(lowBuyer, provC.did), 'no', 'provC was never asked');
      await s.close();
    } finally {
      t.cleanup();
    }
  });

  it('a `provider` that is not a DID string is refused STEWARD_BAD_REQUEST', async () => {
    const t = tempDir('c0-preempt-asked-');
    try {
      const s = await rig(t.dir, async () => ({ stopped: 'no' }));
      for (const bad of [5, '', 'did:key:znot-a-key', 'x'.repeat(1025), ['did:key:z']]) assert.equal(await s.ask(lowBuyer, bad), 'STEWARD_BAD_REQUEST', JSON.stringify(bad));
      await s.close();
    } finally {
      t.cleanup();
    }
  });
});
