/**
 * Who the steward asked to stop a claim survives a steward restart (docs/overlays.md "A reclaim is the steward's
 * word"; src/roles/steward-accounts.ts ClaimStore `s/`). Before, the stop marks were memory only: the steward preempted
 * a claim, the provider stopped and its EXEC_PREEMPTED receipt was kept in the claims store, the steward died before the
 * `Released` append; at the start that receipt counted as a failure, so the claim held its reservation and devices
 * until its deadline (the higher-priority work it was preempted for waited on nothing), and the buyer asking
 * `reclaimed` was told `no` (a refusal like any other: a non-delivery against the honest provider, a failover). A
 * real Ledger, LevelDB, accounts and Reclaimer over a one-device overlay, closed and opened again on the same dir; the
 * network is a fake that answers as the test says.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { CborValue } from '../../../src/records/cbor.js';
import { admittedEvent } from '../../../src/pool/admission.js';
import { appendAdmitted, Reclaimer } from '../../../src/roles/steward-reclaim.js';
import { ClaimStore } from '../../../src/roles/steward-accounts.js';
import { reclaimed } from '../../../src/roles/steward-handlers.js';
import type { StewardConfig, StewardPorts } from '../../../src/roles/steward-ports.js';
import { peerIdFromDid } from '../../../src/node/peer-id.js';
import { sub } from '../../../src/store/db.js';
import { tempDir } from '../ledger/helpers.js';
import { stewardRig } from './steward-rig.js';
import { until } from './steward-stub.js';
import { NOW, P, advert, job, offer, receipt } from '../market/fixtures.js';
import { TREE, claimOf, selection, type Frame } from './preempt-fixtures.js';

const [lowBuyer, highBuyer, provA, provB] = [P(1), P(2), P(3), P(4)];
const low = job(lowBuyer, { nonce: new Uint8Array([7]) });
const high = job(highBuyer, { nonce: new Uint8Array([8]) });
const offerA = offer(provA, low, advert(provA));
const preempted = receipt(provA, lowBuyer, offerA, { status: 'failed', failure: { code: 'EXEC_PREEMPTED', message: 'preempted' }, energy: { uj: 400, grade: 'Estimator' } });

/**
 * The steward's parts on `dir` (opened again on the same dir after a restart), with a real Reclaimer and claims store;
 * the low claim is tracked again when the ledger has it open (as the steward does at the start). `onStop` is provA's
 * answer to a `stop`.
 */
async function open(dir: string, onStop: (f: Frame, to: string) => Promise<unknown> = async () => ({ stopped: 'no' })) {
  const r = await stewardRig(dir, TREE, { claimStore: true });
  const request = async (to: string, _p: string, frames: Frame[]) => [frames[0]!.op === 'usage' ? { running: 'yes', uj: 100, elapsedMs: 10 } : await onStop(frames[0]!, to)];
  const latest = new Map([['advert', { record: { expiresAt: NOW + 3_600_000, hardware: { cpuCores: 4, memoryMiB: 1024 } }, signer: provA.did }]]);
  const ports = { ...r.ports, net: { request, peers: () => [{ peerId: '', did: provA.did, addrs: [] }] }, market: { adverts: { latest } } } as unknown as StewardPorts;
  const reclaim = new Reclaimer({ ports, ledger: r.ledger, tree: r.pool.tree, pool: r.pool, cfg: { preempt: true } as StewardConfig, did: 'did:key:steward', accounts: r.accounts, stopped: () => false });
  r.useReclaimer(reclaim);
  if (r.ledger.book.open.has(low.address)) r.accounts.track(low.address, 'lo', lowBuyer.did, low.record.deadline);
  const store = new ClaimStore(sub(r.db, 'steward-claims'));
  const events = async () => (await r.ledger.records(0)).map((e) => `${e.event} ${e.claim === low.address ? 'low' : 'high'}`);
  const admitHigh = async () => appendAdmitted({ reclaim, append: r.append }, claimOf(high.address, 'hi'), reclaim.decideNow(claimOf(high.address, 'hi')));
  /** What the steward answers the low job's buyer asking op `reclaimed` (naming `provider`, the one whose refusal it checks). */
  const ask = async (provider?: string): Promise<unknown> => {
    const sent: CborValue[] = [];
    const req = { op: 'reclaimed', job: low.address, ...(provider ? { provider } : {}) };
    await reclaimed({ accounts: r.accounts, reclaim, claimOf: (j) => j, jobSigner: async (j) => (j === low.address ? lowBuyer.did : undefined) }, req, { peer: peerIdFromDid(lowBuyer.did), send: async (f) => void sent.push(f) });
    return (sent[0] as { reclaimed?: string } | undefined)?.reclaimed;
  };
  /** The stop marks kept on disk, as `<claim>/<provider>`. */
  const marks = async () => {
    const out: string[] = [];
    for await (const k of sub(r.db, 'steward-claims').keys({ gt: 's/', lt: 's/~' })) out.push(k.slice(2));
    return out;
  };
  /** The reclaimed notes kept on disk (claims released as reclaimed, until their deadline). */
  const notes = async () => {
    const out: string[] = [];
    for await (const k of sub(r.db, 'steward-claims').keys({ gt: 'x/', lt: 'x/~' })) out.push(k.slice(2));
    return out;
  };
  /** The providers a claim's reclaimed note on disk says were asked to stop it. */
  const noteAsked = async (claim: string): Promise<string[] | undefined> => {
    const v = await sub(r.db, 'steward-claims').get(`x/${claim}`).catch(() => undefined);
    return v === undefined ? undefined : (JSON.parse(new TextDecoder().decode(v as Uint8Array)) as { asked: string[] }).asked;
  };
  return { ...r, reclaim, store, events, admitHigh, ask, marks, notes, noteAsked };
}

/** First run: the low claim admitted and selected at provA. */
async function admitLow(dir: string, onStop: (f: Frame, s: Awaited<ReturnType<typeof open>>, to: string) => Promise<unknown>) {
  const ref: { s?: Awaited<ReturnType<typeof open>> } = {};
  const s = (ref.s = await open(dir, (f, to) => onStop(f, ref.s!, to)));
  const v = s.pool.decide(claimOf(low.address, 'lo'));
  assert.equal(v.verdict, 'Admit');
  if (v.verdict === 'Admit') await s.append(admittedEvent(claimOf(low.address, 'lo'), v));
  s.accounts.track(low.address, 'lo', lowBuyer.did, low.record.deadline);
  s.offers.set(offerA.address, offerA);
  await s.accounts.onSelection(selection(lowBuyer, offerA, provA));
  return s;
}

describe('who the steward asked to stop a claim survives a restart', () => {
  it('a reclaimed receipt kept before a crash (its Released not appended) releases the claim as reclaimed at the start, and the buyer is told so', async () => {
    const t = tempDir('c0-preempt-restart-');
    try {
      let atStop: string[] = [];
      const s = await admitLow(t.dir, async (_f, s) => {
        atStop = await s.marks();
        // provA stops: its receipt is gossiped and kept (ClaimAccounts #charge: putReceipt), then the steward dies
        // before the release's append; the answer never arrives
        await s.store.putReceipt(low.address, preempted);
        throw new Error('the steward was killed');
      });
      await s.admitHigh();
      assert.deepEqual(atStop, [`${low.address}/${provA.did}`], 'the stop mark is on disk before the stop goes out');
      assert.deepEqual(await s.events(), ['Admitted low'], 'nothing released before the crash');
      await s.close();

      const after = await open(t.dir);
      await after.accounts.restore();
      const rel = (await after.ledger.records(0)).filter((e) => e.event === 'Released');
      assert.deepEqual(await after.events(), ['Admitted low', 'Released low'], 'released at the start, not held until its deadline');
      assert.deepEqual(rel[0]!.actual, { uj: 400, grade: 'Estimator' }, 'charged what the stopped work spent');
      assert.equal(await after.ask(), 'priority', 'the buyer asking after the restart is told its claim was reclaimed');
      assert.deepEqual(await after.marks(), [], 'the marks went with the claim’s Released');
      // the higher claim it was preempted for is admitted now
      const o = await after.admitHigh();
      assert.ok('admit' in o, `admitted: ${JSON.stringify(o)}`);
      await after.close();
    } finally {
      t.cleanup();
    }
  });

  it('asked to stop, no answer before a restart: the buyer is told `priority`, and the provider’s receipt heard after it releases the claim', async () => {
    const t = tempDir('c0-preempt-restart-');
    try {
      const s = await admitLow(t.dir, async () => {
        throw new Error('the steward was killed');
      });
      await s.admitHigh();
      await s.close();

      const after = await open(t.dir);
      await after.accounts.restore();
      assert.deepEqual(await after.events(), ['Admitted low'], 'no receipt yet: still open');
      assert.equal(await after.ask(), 'priority', 'not `no`: the steward did ask a provider to stop it');
      after.offers.set(offerA.address, offerA);
      await after.accounts.onReceipt(preempted);
      assert.deepEqual(await after.events(), ['Admitted low', 'Released low'], 'the asked provider’s receipt releases it as reclaimed');
      assert.equal(await after.ask(), 'priority');
      await after.close();
    } finally {
      t.cleanup();
    }
  });

  it('a provider that answered it did not stop and did not bar leaves no mark on disk: after a restart its EXEC_PREEMPTED is a failure', async () => {
    const t = tempDir('c0-preempt-restart-');
    try {
      const s = await admitLow(t.dir, async () => ({ stopped: 'no' }));
      const o = await s.admitHigh();
      assert.ok('v' in o && o.v.verdict === 'Queue');
      assert.deepEqual(await s.marks(), [], 'the mark went with the answer');
      await s.store.putReceipt(low.address, preempted);
      await s.close();

      const after = await open(t.dir);
      await after.accounts.restore();
      assert.deepEqual(await after.events(), ['Admitted low'], 'not released: nobody asked that provider to stop');
      assert.ok(after.accounts.get(low.address)?.receipts.has(preempted.address), 'charged as the failure it is');
      assert.equal(await after.ask(), 'no');
      await after.close();
    } finally {
      t.cleanup();
    }
  });

  it('a provider that answered `barred` before a crash (the release not appended): released at the start', async () => {
    const t = tempDir('c0-preempt-restart-');
    try {
      const s = await admitLow(t.dir, async () => ({ stopped: 'no' }));
      await s.close();
      // what #stop keeps before the release it then appends: the mark, freed by the provider's `barred`
      const mid = await open(t.dir);
      await mid.store.putStopMark(low.address, { provider: provA.did, reason: 'idle', freed: true });
      await mid.close();

      const after = await open(t.dir);
      await after.accounts.restore();
      assert.deepEqual(await after.events(), ['Admitted low', 'Released low']);
      assert.equal(await after.ask(), 'idle');
      assert.deepEqual(await after.marks(), []);
      await after.close();
    } finally {
      t.cleanup();
    }
  });

  it('a claim released as reclaimed before a restart: its marks go, a reclaimed note stays until its deadline, and the buyer asking after the restart is told `priority`', async () => {
    const t = tempDir('c0-preempt-restart-');
    try {
      const s = await admitLow(t.dir, async () => ({ stopped: 'yes', receipt: preempted.bytes }));
      const o = await s.admitHigh();
      assert.ok('admit' in o);
      assert.deepEqual(await s.events(), ['Admitted low', 'Released low', 'Admitted high']);
      assert.equal(await s.ask(), 'priority');
      assert.deepEqual(await s.marks(), [], 'no stop mark left on disk once released');
      assert.deepEqual(await s.notes(), [low.address], 'the reclaimed note, kept until the deadline');
      await s.close();

      const after = await open(t.dir);
      await after.accounts.restore();
      assert.equal(await after.ask(), 'priority', 'still reclaimed after the restart: never `closed`, which the buyer does not take as a reclaim');
      assert.deepEqual(await after.notes(), [low.address]);
      await after.close();

      // past its deadline the note goes at the next start
      const late = await open(t.dir);
      late.clock.set(low.record.deadline + 1);
      await late.accounts.restore();
      assert.deepEqual(await late.notes(), []);
      await late.close();
    } finally {
      t.cleanup();
    }
  });

  it('a failover the steward stopped after the claim’s release is in the reclaimed note before its stop goes out: after a restart that provider is still confirmed, another is not', async () => {
    const t = tempDir('c0-preempt-restart-');
    try {
      let noteAtStopB: string[] | undefined;
      const s = await admitLow(t.dir, async (_f, s, to) => {
        if (to === provB.did) noteAtStopB = await s.noteAsked(low.address);
        return to === provA.did ? { stopped: 'yes', receipt: preempted.bytes } : { stopped: 'no', barred: 'yes' };
      });
      assert.ok('admit' in (await s.admitHigh()));
      assert.deepEqual(await s.events(), ['Admitted low', 'Released low', 'Admitted high']);
      // the buyer's failover to provB, heard after the release: the steward asks provB to stop too
      const offerB = offer(provB, low, advert(provB));
      s.offers.set(offerB.address, offerB);
      await s.reclaim.onSelection(selection(lowBuyer, offerB, provB));
      await until(() => noteAtStopB !== undefined, 'provB asked to stop');
      assert.deepEqual(noteAtStopB?.sort(), [provA.did, provB.did].sort(), 'the note names provB before its stop goes out');
      assert.equal(await s.ask(provB.did), 'priority');
      await s.close();

      const after = await open(t.dir);
      await after.accounts.restore();
      assert.equal(await after.ask(provB.did), 'priority', 'provB, asked to stop by this steward, is still confirmed after a restart');
      assert.equal(await after.ask(provA.did), 'priority');
      assert.equal(await after.ask(P(5).did), 'no', 'a provider nobody asked is not');
      await after.close();
    } finally {
      t.cleanup();
    }
  });

  it('a steward killed after a reclaimed claim’s `Released` append but before its other entries are dropped: the note written with the stop mark still says reclaimed', async () => {
    const t = tempDir('c0-preempt-restart-');
    const remove = ClaimStore.prototype.remove;
    try {
      // the kill lands after the synced `Released` append, before the claims store's batch
      ClaimStore.prototype.remove = async () => {
        throw new Error('killed before the claims-store batch');
      };
      const s = await admitLow(t.dir, async () => ({ stopped: 'yes', receipt: preempted.bytes }));
      assert.ok('admit' in (await s.admitHigh()));
      assert.deepEqual(await s.events(), ['Admitted low', 'Released low', 'Admitted high']);
      await s.close();
      ClaimStore.prototype.remove = remove;

      const after = await open(t.dir);
      await after.accounts.restore();
      assert.equal(await after.ask(), 'priority', 'still reclaimed: the buyer ends its job preempted, no non-delivery against the provider');
      assert.deepEqual(await after.marks(), [], 'the stop marks of the closed claim go at the start');
      assert.deepEqual(await after.notes(), [low.address], 'the note stays until the deadline');
      await after.close();
    } finally {
      ClaimStore.prototype.remove = remove;
      t.cleanup();
    }
  });

  it('a claim released for another reason (its provider gossiped a completed receipt): `closed`, before and after a restart, and no note is kept', async () => {
    const t = tempDir('c0-preempt-restart-');
    try {
      const s = await admitLow(t.dir, async () => ({ stopped: 'no' }));
      await s.accounts.onReceipt(receipt(provA, lowBuyer, offerA, { status: 'completed', energy: { uj: 400, grade: 'Estimator' } }));
      assert.deepEqual(await s.events(), ['Admitted low', 'Released low']);
      assert.equal(await s.ask(), 'closed');
      assert.deepEqual(await s.notes(), []);
      await s.close();
      const after = await open(t.dir);
      await after.accounts.restore();
      assert.equal(await after.ask(), 'closed');
      await after.close();
    } finally {
      t.cleanup();
    }
  });
});
