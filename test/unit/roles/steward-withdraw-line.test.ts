/**
 * A `withdraw` of a claim the steward holds but has not admitted yet (s35a finding 1's steward-side gaps): the buyer's
 * admission client sends one when it gives up on an ask that may have landed (src/roles/admission-client.ts).
 *
 * - A claim waiting in line is taken out of it and out of the queue store, its waiting ask told `expired`
 *   `WITHDRAWN`, and the line decided again; the answer is `released: dequeued`. Before, the answer was `no` and the
 *   claim stayed in line, to be admitted later for a buyer that was gone.
 * - A claim being decided (a preemption waiting on a stop, its append on its way to disk, a pass deciding a queued
 *   claim) is not left admitted: not admitted at all, or, its `Admitted` entry sealed already, released at once with
 *   nothing spent; the answer is `released: noted`. Before, `no`, and the claim was held until its deadline.
 * - A queued buyer whose stream closes is away at once (the re-ask grace), so it is not admitted into a dead stream.
 *
 * The admission line and the withdraw handler over a real Ledger and LevelDB in a temp dir (steward-rig.ts), and the
 * whole Steward over a stub overlay for a gang (steward-stub.ts).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import type { CborValue } from '../../../src/records/cbor.js';
import type { Ledger } from '../../../src/ledger/store.js';
import { AdmissionLine } from '../../../src/roles/steward-admission.js';
import { withdraw } from '../../../src/roles/steward-handlers.js';
import { peerIdFromDid } from '../../../src/node/peer-id.js';
import { buildRun } from '../../../src/roles/trainer/run-file.js';
import { openDb, closeDb } from '../../../src/store/db.js';
import { tempDir } from '../ledger/helpers.js';
import { stewardRig, type RigOptions } from './steward-rig.js';
import { stewardOnStub, stubBuyer, until } from './steward-stub.js';
import { NOW, P, job } from '../market/fixtures.js';

const TREE = `entitlements:
  - { id: lab, guarantee_uj: 100000000, guarantee_devices: 4, over_quota_weight: 0, priority: 0 }
  - { id: one, parent: lab, guarantee_uj: 50000000, guarantee_devices: 1, over_quota_weight: 0, priority: 1 }
  - { id: ml, parent: lab, guarantee_uj: 50000000, guarantee_devices: 2, over_quota_weight: 0, priority: 1 }
`;

const buyer = P(1);
const other = P(2);
const est = { uj: 10_000_000, grade: 'Estimator' as const };
const jobN = (n: number) => job(buyer, { nonce: new Uint8Array([n, 35]) });
const admitReq = (j: ReturnType<typeof job>, entitlement = 'one') => ({ op: 'admit' as const, job: j.bytes, entitlement, estimate: est });
type Frame = Record<string, unknown>;
/** The `expired` frame's reason for a withdrawn claim, as clients read it off the wire (steward-admission.ts WITHDRAWN). */
const WITHDRAWN = 'WITHDRAWN';

async function lineAt(dir: string, o: RigOptions & { reaskGraceMs?: number } = {}) {
  const ref: { line?: AdmissionLine } = {};
  const r = await stewardRig(dir, TREE, { ...o, line: () => ref.line!.serve() });
  if (o.reaskGraceMs !== undefined) r.cfg.reaskGraceMs = o.reaskGraceMs;
  const { ledger, accounts } = r;
  const line = (ref.line = new AdmissionLine({ ports: r.ports, ledger, cfg: r.cfg, accounts, reclaim: r.reclaim, tree: r.tree, stopped: () => false, append: r.append, serial: r.serial, gangs: r.gangs }));
  /** A buyer's stream: the frames it was sent; `leave()` closes it (the buyer reset it, or its connection dropped). */
  const stream = () => {
    const frames: Frame[] = [];
    const gone = new AbortController();
    return { frames, leave: () => gone.abort(new Error('the caller reset the stream')), ctx: { peer: peerIdFromDid(buyer.did), signal: gone.signal, send: async (f: CborValue) => void frames.push(f as Frame) } };
  };
  /** `withdraw` of `claim` on /c0mpute/steward/1 from `from`: the `released` answered (a refusal rejects). */
  const withdrawOf = async (claim: string, from = buyer.did) => {
    const out: Frame[] = [];
    await withdraw(accounts, { op: 'withdraw', job: claim }, { peer: peerIdFromDid(from), send: async (f) => void out.push(f as Frame) }, undefined, line);
    return out[0]?.released;
  };
  const events = async () => (await ledger.records(0)).map((e) => [e.event, e.claim] as const);
  const close = async () => {
    line.stop();
    await r.close();
  };
  return { ...r, line, stream, withdrawOf, events, close };
}

/** Hold the `Admitted` append of `claim` until `open()`: `before` the ledger's own append (its precondition runs after the hold), or `after` it (sealed, not yet tracked). */
function holdAdmitted(ledger: Ledger, claim: string, when: 'before' | 'after') {
  let open!: () => void;
  const gate = new Promise<void>((r) => (open = r));
  let held = false;
  const append = ledger.append.bind(ledger);
  ledger.append = (async (...args: Parameters<Ledger['append']>) => {
    const hold = args[0].event === 'Admitted' && args[0].claim === claim;
    if (hold && when === 'before') {
      held = true;
      await gate;
    }
    const r = await append(...args);
    if (hold && when === 'after') {
      held = true;
      await gate;
    }
    return r;
  }) as Ledger['append'];
  return { open, held: () => held };
}

describe('withdraw of a queued claim', () => {
  it('its buyer’s withdraw takes it out of the line and the queue store, ends its waiting ask `expired` WITHDRAWN and answers `dequeued`; anyone else’s is refused', async () => {
    const t = tempDir('c0-withdraw-line-');
    try {
      const s = await lineAt(t.dir);
      const [a, b] = [s.stream(), s.stream()];
      const [ja, jb] = [jobN(1), jobN(2)];
      await s.line.admit(admitReq(ja), a.ctx);
      const waitB = s.line.admit(admitReq(jb), b.ctx);
      await until(() => b.frames.length > 0, 'B queued');
      assert.equal(b.frames[0]!.t, 'queued');
      await assert.rejects(s.withdrawOf(jb.address, other.did), /STEWARD_NOT_BUYER|only the job/);
      assert.equal(s.line.queued(NOW).length, 1, 'still in line after a stranger’s withdraw');
      assert.equal(await s.withdrawOf(jb.address), 'dequeued');
      await waitB;
      assert.deepEqual(b.frames.map((f) => [f.t, f.reason]), [['queued', 'DEVICES_HELD'], ['expired', WITHDRAWN]]);
      assert.deepEqual(s.line.queued(NOW), []);
      // A's device frees: nothing is admitted for the buyer that left
      await s.accounts.release(s.accounts.get(ja.address)!, 'test');
      await s.line.retry();
      await s.serial.run(() => {});
      assert.deepEqual(await s.events(), [
        ['Admitted', ja.address],
        ['Released', ja.address],
      ]);
      // a second withdraw finds nothing
      assert.equal(await s.withdrawOf(jb.address), 'no');
      await s.close();
      // gone from the queue store too: a restart brings nothing back
      const s2 = await lineAt(t.dir);
      await s2.line.restore();
      assert.deepEqual(s2.line.queued(NOW), []);
      await s2.close();
    } finally {
      t.cleanup();
    }
  });

  it('the line is decided again: a claim held for its away buyer, withdrawn, lets the claim behind it be admitted', async () => {
    const t = tempDir('c0-withdraw-line-');
    try {
      const s = await lineAt(t.dir);
      const [a, b] = [s.stream(), s.stream()];
      const [ja, jb, jc] = [jobN(3), jobN(4), jobN(5)];
      await s.line.admit(admitReq(ja), a.ctx);
      const waitB = s.line.admit(admitReq(jb), b.ctx);
      await until(() => b.frames.length > 0, 'B queued');
      await s.accounts.release(s.accounts.get(ja.address)!, 'test');
      await s.close();
      await waitB;
      // after a restart B is held for its away buyer: C waits LINE_AHEAD behind it
      const s2 = await lineAt(t.dir);
      await s2.line.restore();
      const c = s2.stream();
      const askC = s2.line.admit(admitReq(jc), c.ctx);
      await until(() => c.frames.length > 0, 'C queued');
      assert.deepEqual([c.frames[0]!.t, c.frames[0]!.reason], ['queued', 'LINE_AHEAD']);
      assert.equal(await s2.withdrawOf(jb.address), 'dequeued');
      await until(() => c.frames.length > 1, 'C admitted');
      assert.equal(c.frames[1]!.t, 'admitted');
      await askC;
      assert.deepEqual((await s2.events()).filter(([e]) => e === 'Admitted').map(([, claim]) => claim), [ja.address, jc.address]);
      await s2.close();
    } finally {
      t.cleanup();
    }
  });
});

describe('withdraw of a claim being decided', () => {
  it('during a preemption waiting on its stop: `noted`, and the claim is not admitted', async () => {
    const t = tempDir('c0-withdraw-deciding-');
    try {
      let preempting = true;
      let stopped!: () => void;
      const stop = new Promise<void>((r) => (stopped = r));
      let asked = false;
      const s = await lineAt(t.dir, {
        reclaimOver: (pool) => ({
          decideNow: (c: never) => ({ v: pool.decide(c), victims: preempting ? ['a-victim'] : [] }),
          preempt: async () => {
            asked = true;
            await stop;
            preempting = false;
          },
        }),
      });
      const a = s.stream();
      const j = jobN(6);
      const ask = s.line.admit(admitReq(j), a.ctx);
      await until(() => asked, 'the preemption waiting on its stop');
      assert.equal(await s.withdrawOf(j.address), 'noted', 'answered without waiting for the section');
      stopped();
      await ask;
      assert.deepEqual(a.frames.map((f) => [f.t, f.reason]), [['expired', WITHDRAWN]]);
      assert.deepEqual(await s.events(), [], 'nothing admitted');
      assert.equal(s.accounts.get(j.address), undefined);
      // nothing kept for it: a later ask is decided afresh
      const again = s.stream();
      await s.line.admit(admitReq(j), again.ctx);
      assert.equal(again.frames[0]!.t, 'admitted');
      await s.close();
    } finally {
      t.cleanup();
    }
  });

  it('once its `Admitted` entry is sealed but before the steward tracks it: `noted`, and the claim is released at once with nothing spent', async () => {
    const t = tempDir('c0-withdraw-deciding-');
    try {
      const s = await lineAt(t.dir);
      const j = jobN(7);
      const hold = holdAdmitted(s.ledger, j.address, 'after');
      const a = s.stream();
      const ask = s.line.admit(admitReq(j), a.ctx);
      await until(() => hold.held(), 'the Admitted entry sealed');
      assert.equal(await s.withdrawOf(j.address), 'noted');
      hold.open();
      await ask;
      assert.deepEqual(await s.events(), [
        ['Admitted', j.address],
        ['Released', j.address],
      ]);
      const released = (await s.ledger.records(0)).find((e) => e.event === 'Released') as unknown as { actual: { uj: number } };
      assert.equal(released.actual.uj, 0, 'nothing spent');
      assert.equal(s.ledger.book.open.size, 0);
      assert.deepEqual(a.frames.map((f) => [f.t, f.reason]), [['expired', WITHDRAWN]]);
      await s.close();
    } finally {
      t.cleanup();
    }
  });

  it('a queued claim a pass is deciding (out of line): `noted`, not admitted, and out of the queue store', async () => {
    const t = tempDir('c0-withdraw-deciding-');
    try {
      const s = await lineAt(t.dir);
      const [a, b] = [s.stream(), s.stream()];
      const [ja, jb] = [jobN(8), jobN(9)];
      await s.line.admit(admitReq(ja), a.ctx);
      const waitB = s.line.admit(admitReq(jb), b.ctx);
      await until(() => b.frames.length > 0, 'B queued');
      const hold = holdAdmitted(s.ledger, jb.address, 'before');
      await s.accounts.release(s.accounts.get(ja.address)!, 'test');
      void s.line.retry();
      await until(() => hold.held(), 'B at its append');
      assert.deepEqual(s.line.queued(NOW), [], 'out of line while decided');
      assert.equal(await s.withdrawOf(jb.address), 'noted');
      hold.open();
      await waitB;
      assert.deepEqual(b.frames.map((f) => [f.t, f.reason]), [['queued', 'DEVICES_HELD'], ['expired', WITHDRAWN]]);
      assert.deepEqual(await s.events(), [
        ['Admitted', ja.address],
        ['Released', ja.address],
      ]);
      await s.close();
      const s2 = await lineAt(t.dir);
      await s2.line.restore();
      assert.deepEqual(s2.line.queued(NOW), [], 'nothing left in the queue store');
      await s2.close();
    } finally {
      t.cleanup();
    }
  });

  it('a gang: `noted`, and the gang its decision admitted is released at once', async () => {
    const t = tempDir('c0-withdraw-gang-');
    writeFileSync(join(t.dir, 'tree.yaml'), TREE);
    const db = await openDb(join(t.dir, 'db'));
    const st = await stewardOnStub(t.dir, db, new Map());
    try {
      const runYaml = stringify({ name: 'gw', model: { layers: [4, 8, 3] }, seed: 1, stepsPerEpoch: 2, epochs: 1, members: [P(11), P(12)].map((m) => ({ did: m.did, addr: '/ip4/127.0.0.1/tcp/1' })) });
      const run = buildRun(runYaml, stubBuyer.signer, NOW).bundle.run;
      const hold = holdAdmitted(st.s.ledger, run.address, 'after');
      const frames: Frame[] = [];
      const asking = st.ask({ op: 'admit-gang', run: run.bytes, entitlement: 'ml', estimate: est, devices_per_member: 1, deadline: NOW + 4_000_000 }, stubBuyer.did, frames);
      await until(() => hold.held(), 'the gang’s Admitted entry sealed');
      const answer = await st.ask({ op: 'withdraw', job: run.address });
      assert.deepEqual(answer, [{ t: 'withdrawn', released: 'noted' }]);
      hold.open();
      await asking;
      assert.deepEqual((await st.s.ledger.records(0)).map((e) => [e.event, e.claim]), [
        ['Admitted', run.address],
        ['Released', run.address],
      ]);
      assert.equal(st.s.ledger.book.open.size, 0);
    } finally {
      await st.s.stop();
      await closeDb(db);
      t.cleanup();
    }
  });
});

describe('a queued buyer whose stream closes', () => {
  it('is away at once: held only for the re-ask grace, then dropped, and never admitted into the dead stream', async () => {
    const t = tempDir('c0-withdraw-left-');
    try {
      const s = await lineAt(t.dir, { reaskGraceMs: 300 });
      const [a, b] = [s.stream(), s.stream()];
      const [ja, jb] = [jobN(10), jobN(11)];
      await s.line.admit(admitReq(ja), a.ctx);
      const waitB = s.line.admit(admitReq(jb), b.ctx);
      await until(() => b.frames.length > 0, 'B queued');
      assert.equal(s.line.queued(NOW)[0]!.buyer, 'waiting');
      b.leave();
      await waitB;
      assert.equal(s.line.queued(NOW)[0]!.buyer, 'away', 'away as soon as its stream closed');
      // the device frees within the grace: B holds the line for its buyer, nothing is admitted into the dead stream
      await s.accounts.release(s.accounts.get(ja.address)!, 'test');
      await s.line.retry();
      await s.serial.run(() => {});
      assert.deepEqual(b.frames.map((f) => f.t), ['queued']);
      await until(() => s.line.queued(NOW).length === 0, 'B dropped after the grace');
      assert.deepEqual((await s.events()).map(([e]) => e), ['Admitted', 'Released']);
      await s.close();
    } finally {
      t.cleanup();
    }
  });

  it('a buyer that comes back within the grace keeps its place and is admitted', async () => {
    const t = tempDir('c0-withdraw-left-');
    try {
      const s = await lineAt(t.dir, { reaskGraceMs: 10_000 });
      const [a, b, b2] = [s.stream(), s.stream(), s.stream()];
      const [ja, jb] = [jobN(12), jobN(13)];
      await s.line.admit(admitReq(ja), a.ctx);
      const waitB = s.line.admit(admitReq(jb), b.ctx);
      await until(() => b.frames.length > 0, 'B queued');
      b.leave();
      await waitB;
      const again = s.line.admit(admitReq(jb), b2.ctx);
      await until(() => b2.frames.length > 0, 'B queued again');
      assert.deepEqual([b2.frames[0]!.t, b2.frames[0]!.place], ['queued', 1]);
      await s.accounts.release(s.accounts.get(ja.address)!, 'test');
      void s.line.retry();
      await again;
      assert.deepEqual(b2.frames.map((f) => f.t), ['queued', 'admitted']);
      await s.close();
    } finally {
      t.cleanup();
    }
  });

  it('a re-ask on a stream that closes at once buys no fresh grace: a buyer re-asking so cannot hold the line past one grace from when it left', async () => {
    const t = tempDir('c0-withdraw-left-');
    try {
      const GRACE = 300;
      const s = await lineAt(t.dir, { reaskGraceMs: GRACE });
      const [a, b] = [s.stream(), s.stream()];
      const [ja, jb] = [jobN(14), jobN(15)];
      const jh = job(other, { nonce: new Uint8Array([16, 35]) });
      await s.line.admit(admitReq(ja), a.ctx);
      const waitB = s.line.admit(admitReq(jb), b.ctx);
      // an honest claim of another buyer behind it, its stream open
      const honest: Frame[] = [];
      const waitH = s.line.admit(admitReq(jh), { peer: peerIdFromDid(other.did), signal: new AbortController().signal, send: async (f: CborValue) => void honest.push(f as Frame) });
      await until(() => b.frames.length > 0 && honest.length > 0, 'both queued');
      b.leave();
      await waitB;
      await s.accounts.release(s.accounts.get(ja.address)!, 'test');
      await s.line.retry();
      // B's buyer re-asks every 0.6 grace on a stream it resets at once: each re-ask made it away again with a whole new grace
      const started = Date.now();
      while (!honest.some((f) => f.t === 'admitted') && Date.now() - started < 10 * GRACE) {
        const again = s.stream();
        again.leave();
        await s.line.admit(admitReq(jb), again.ctx).catch(() => {});
        await s.serial.run(() => {});
        await new Promise((r) => setTimeout(r, GRACE * 0.6));
      }
      await waitH;
      assert.deepEqual(honest.map((f) => f.t), ['queued', 'admitted'], 'the honest claim that fits is admitted once B’s grace from when it left is over');
      await s.close();
    } finally {
      t.cleanup();
    }
  });

  it('a buyer back for a whole grace (its re-ask’s stream open) has a grace of its own when it leaves again', async () => {
    const t = tempDir('c0-withdraw-left-');
    try {
      const GRACE = 300;
      const s = await lineAt(t.dir, { reaskGraceMs: GRACE });
      const [a, b, b2, b3] = [s.stream(), s.stream(), s.stream(), s.stream()];
      const [ja, jb] = [jobN(17), jobN(18)];
      await s.line.admit(admitReq(ja), a.ctx);
      const waitB = s.line.admit(admitReq(jb), b.ctx);
      await until(() => b.frames.length > 0, 'B queued');
      b.leave();
      await waitB;
      // back at once, and stays a grace and a half: its first absence is forgotten
      const back = s.line.admit(admitReq(jb), b2.ctx);
      await until(() => b2.frames.length > 0, 'B queued again');
      await new Promise((r) => setTimeout(r, GRACE * 1.5));
      b2.leave();
      await back;
      // away again: kept for a whole grace from now, so a re-ask at 0.6 grace still finds its place
      await new Promise((r) => setTimeout(r, GRACE * 0.6));
      const last = s.line.admit(admitReq(jb), b3.ctx);
      await until(() => b3.frames.length > 0, 'B queued a third time');
      assert.deepEqual([b3.frames[0]!.t, b3.frames[0]!.place], ['queued', 1]);
      await s.accounts.release(s.accounts.get(ja.address)!, 'test');
      void s.line.retry();
      await last;
      assert.deepEqual(b3.frames.map((f) => f.t), ['queued', 'admitted']);
      await s.close();
    } finally {
      t.cleanup();
    }
  });

  it('a buyer on a flaky link (short drops, away far less than a grace in all) keeps its place however long it waits', async () => {
    const t = tempDir('c0-withdraw-left-');
    try {
      const GRACE = 300;
      const s = await lineAt(t.dir, { reaskGraceMs: GRACE });
      const a = s.stream();
      const [ja, jb] = [jobN(19), jobN(20)];
      await s.line.admit(admitReq(ja), a.ctx);
      // six drops of ~20 ms, 100 ms apart: 2 graces of waiting, a third of a grace away in all
      let last: Promise<void> | undefined;
      let frames: Frame[] = [];
      for (let i = 0; i < 6; i++) {
        const b = s.stream();
        last = s.line.admit(admitReq(jb), b.ctx);
        await until(() => b.frames.length > 0, 'B queued');
        assert.deepEqual([b.frames[0]!.t, b.frames[0]!.place], ['queued', 1], `drop ${i}: B keeps its place`);
        frames = b.frames;
        // another buyer's claim behind it, its stream open
        if (i === 0) void s.line.admit(admitReq(job(other, { nonce: new Uint8Array([21, 35]) })), { peer: peerIdFromDid(other.did), signal: new AbortController().signal, send: async () => {} });
        if (i === 5) break;
        await new Promise((r) => setTimeout(r, 100));
        b.leave();
        await last;
        await new Promise((r) => setTimeout(r, 20));
      }
      await s.accounts.release(s.accounts.get(ja.address)!, 'test');
      void s.line.retry();
      await last;
      assert.deepEqual(frames.map((f) => f.t), ['queued', 'admitted']);
      await s.close();
    } finally {
      t.cleanup();
    }
  });
});
