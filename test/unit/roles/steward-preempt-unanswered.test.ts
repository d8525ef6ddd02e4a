/**
 * A preemption whose `stop` got no answer (the victim's provider link was half-open and the connection monitor aborted
 * it) is tried again (docs/overlays.md "Preemption"). Before, the claim it was for was queued `DEVICES_HELD` and decided
 * again only on a release, a fresh ask or re-ask, or an advert: once the link healed nothing asked the provider again,
 * the victim ran to its end and the claim within its guarantee could expire in the line (s35a finding 2). Now the
 * steward decides the line again on a backoff (STOP_RETRY_FIRST_MS doubling to STOP_RETRY_MAX_MS, each try only once
 * the provider answers a `usage` question, so the admission section is not held by a stop that cannot get through)
 * and as soon as that provider connects again; the next pass asks the same victim again (not another one: the first
 * stop may have landed), charges its receipt once, and a provider that refused the stop keeps today's behaviour. A
 * provider that keeps reconnecting gets a bounded number of tries.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { C0Error } from '../../../src/errors.js';
import { seal, type Opened } from '../../../src/records/envelope.js';
import { T, type Advert, type Job, type Receipt, type Selection } from '../../../src/records/kinds.js';
import { openDb, closeDb } from '../../../src/store/db.js';
import { STOP_RETRY_FIRST_MS } from '../../../src/roles/steward-reclaim.js';
import { tempDir } from '../ledger/helpers.js';
import { stewardOnStub, until, type StubOptions } from './steward-stub.js';
import { NOW, P, advert, job, offer, receipt, type Party } from '../market/fixtures.js';

const TREE = `entitlements:
  - { id: org, guarantee_uj: 2000000000, guarantee_devices: 4, over_quota_weight: 0, priority: 0 }
  - { id: batch, parent: org, guarantee_uj: 600000000, guarantee_devices: 2, over_quota_weight: 0, priority: 1 }
  - { id: urgent, parent: org, guarantee_uj: 600000000, guarantee_devices: 2, over_quota_weight: 0, priority: 5 }
`;
const est = { uj: 10_000_000, grade: 'Estimator' };
const [batchBuyer, urgentBuyer, machineA, machineB] = [P(2), P(3), P(30), P(32)];
/** A CPU-only machine: one device. */
const machine = (p: Party) => advert(p, { hardware: { gpus: undefined, cpuCores: 8, memoryMiB: 16384 } });
type Frame = Record<string, unknown>;
type Asked = { to: string; op: string; job: string };
/** What a half-open link ends in once the connection monitor aborts it: no answer at all. */
const cut = () => new C0Error('NET_STREAM_FAILED', 'cannot open /c0mpute/preempt/1: the connection was aborted');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * An overlay whose machines each run one batch job (admitted, selected there); `answer` is every direct request's
 * answer (`n` counts the stops sent so far, this one included). `high()` asks the urgent claim without waiting for the
 * end of its stream; `frames` are what its buyer heard. `restart()` stops the steward and starts it again on the same
 * dir and LevelDB (the urgent buyer's stream dies with it: it asks again with `ask()`).
 */
async function overlay(dir: string, machines: Party[], answer: (a: Asked, n: number, low: Map<string, Opened<Job>>) => Promise<unknown>, syncJobs?: StubOptions['syncJobs']) {
  writeFileSync(join(dir, 'tree.yaml'), TREE);
  const records = new Map<string, Opened<Job>>();
  const db = await openDb(join(dir, 'db'));
  const asked: Asked[] = [];
  const low = new Map<string, Opened<Job>>();
  const adverts = new Map<string, Opened<Advert>>(machines.map((m) => [m.did, machine(m)]));
  const opts: StubOptions = {
    cfg: { preempt: true },
    adverts,
    peers: () => [...machines.map((m) => m.did), batchBuyer.did, urgentBuyer.did],
    ...(syncJobs ? { syncJobs } : {}),
    request: async (to, _p, frames) => {
      const f = frames[0] as unknown as { op: string; job: string };
      const a = { to, op: f.op, job: f.job };
      asked.push(a);
      return [await answer(a, asked.filter((x) => x.op === 'stop').length, low)];
    },
  };
  let st = await stewardOnStub(dir, db, records, opts);
  for (const [i, m] of machines.entries()) {
    const j = job(batchBuyer, { nonce: new Uint8Array([i + 1]) });
    assert.equal((await st.ask({ op: 'admit', job: j.bytes, entitlement: 'batch', estimate: est }, batchBuyer.did))[0]!.t, 'admitted');
    const o = offer(m, j, machine(m));
    records.set(o.address, o as never); // the steward resolves who runs the job from the winning offer
    const sel: Selection = { job: j.address, buyer: batchBuyer.did, policy: 'balanced', winner: o.address, considered: [{ provider: m.did, offer: o.address }], decidedAt: NOW };
    await st.hear('selection', seal(T.selection, sel, batchBuyer.signer));
    low.set(m.did, j);
  }
  const frames: Frame[] = [];
  const high = job(urgentBuyer, { nonce: new Uint8Array([9]) });
  let stream: Promise<unknown> | undefined;
  const ask = () => {
    stream = st.ask({ op: 'admit', job: high.bytes, entitlement: 'urgent', estimate: est }, urgentBuyer.did, frames).catch(() => {});
  };
  const stops = () => asked.filter((x) => x.op === 'stop');
  const events = async () => (await st.s.ledger.records(0)).map((e) => `${e.event} ${e.claim === high.address ? 'high' : [...low].find(([, j]) => j.address === e.claim)?.[0] === machineA.did ? 'lowA' : 'lowB'}`);
  const close = async () => {
    await st.s.stop();
    await stream;
    await closeDb(db);
  };
  const restart = async () => {
    await st.s.stop();
    await stream;
    frames.length = 0;
    st = await stewardOnStub(dir, db, records, opts);
  };
  /** What the steward tells the batch buyer asking whether it reclaimed `j`'s claim from `m`. */
  const reclaimed = async (m: Party) => (await st.ask({ op: 'reclaimed', job: low.get(m.did)!.address, provider: m.did }, batchBuyer.did))[0]!.reclaimed;
  return {
    get st() {
      return st;
    },
    asked,
    stops,
    low,
    high,
    frames,
    ask,
    events,
    close,
    restart,
    reclaimed,
    queued: () => frames.some((f) => f.t === 'queued' && f.reason === 'DEVICES_HELD'),
    admitted: () => frames.some((f) => f.t === 'admitted'),
  };
}

/** The stopped batch job's signed receipt at `m` (EXEC_PREEMPTED, 400 µJ spent). */
function preempted(m: Party, j: Opened<Job>) {
  return receipt(m, batchBuyer, offer(m, j, machine(m)), { status: 'failed', failure: { code: 'EXEC_PREEMPTED', message: 'preempted' }, energy: { uj: 400, grade: 'Estimator' } });
}

// Each case has its own steward, directory and LevelDB, and waits out real backoff steps (STOP_RETRY_FIRST_MS): the
// cases run side by side (all but the two that bound a span of time, below).
describe('a preemption whose stop got no answer is tried again', { concurrency: true }, () => {
  it('on a backoff: the first stop fails with no answer, the next pass stops the same victim, charged once', async () => {
    const t = tempDir('c0-preempt-unanswered-');
    try {
      const o = await overlay(t.dir, [machineA], async (a, n, low) => {
        if (a.op === 'usage') return { running: 'yes', uj: 100, elapsedMs: 10 };
        if (n === 1) throw cut();
        return { stopped: 'yes', receipt: preempted(machineA, low.get(machineA.did)!).bytes };
      });
      const started = Date.now();
      o.ask();
      await until(o.queued, 'the urgent claim queued DEVICES_HELD after the stop got no answer');
      await until(o.admitted, 'the urgent claim admitted once the stop went through', 1000);
      assert.ok(Date.now() - started >= STOP_RETRY_FIRST_MS - 100, 'tried again after the first backoff step');
      assert.deepEqual(
        o.stops().map((s) => [s.to, s.job]),
        [
          [machineA.did, o.low.get(machineA.did)!.address],
          [machineA.did, o.low.get(machineA.did)!.address],
        ],
        'the same victim asked again',
      );
      assert.deepEqual(await o.events(), ['Admitted lowA', 'Released lowA', 'Admitted high']);
      const [rel] = await o.st.released();
      assert.equal((rel as unknown as { actual: { uj: number } }).actual.uj, 400, 'the stopped work charged once, what its receipt says');
      await sleep(STOP_RETRY_FIRST_MS + 200);
      assert.equal(o.stops().length, 2, 'nothing more once it was admitted');
      await o.close();
    } finally {
      t.cleanup();
    }
  });

  it('a provider that stopped the work on the first stop (only its answer lost) bars the job on the second: its receipt is asked for, and charged, before the release', async () => {
    const t = tempDir('c0-preempt-unanswered-');
    try {
      const synced: string[][] = [];
      let stoppedWork: Opened<Receipt> | undefined;
      const o = await overlay(
        t.dir,
        [machineA],
        async (a, n, low) => {
          if (a.op === 'usage') return { running: 'no' };
          stoppedWork ??= preempted(machineA, low.get(machineA.did)!);
          if (n === 1) throw cut(); // it stopped the work, signed the receipt; the answer (and the gossip) were lost
          return { stopped: 'no', barred: 'yes' }; // not running any more: barred
        },
        async (peer, kinds, jobs, hear) => {
          synced.push([peer, ...kinds, ...jobs]);
          await hear('receipt', stoppedWork);
          return { accepted: 1, failed: {} };
        },
      );
      o.ask();
      await until(o.queued, 'queued DEVICES_HELD');
      o.st.connect(machineA.did);
      await until(o.admitted, 'admitted', 500);
      assert.deepEqual(synced, [[machineA.did, 'receipt', o.low.get(machineA.did)!.address]]);
      assert.deepEqual(await o.events(), ['Admitted lowA', 'Released lowA', 'Admitted high']);
      const [rel] = await o.st.released();
      assert.equal((rel as unknown as { actual: { uj: number } }).actual.uj, 400, 'what the stopped work spent, once');
      await o.close();
    } finally {
      t.cleanup();
    }
  });

  it('a provider that refused the stop (stopped: "no") is not asked again: the claim waits for a release or an advert', async () => {
    const t = tempDir('c0-preempt-unanswered-');
    try {
      const o = await overlay(t.dir, [machineA], async (a) => (a.op === 'usage' ? { running: 'yes', uj: 100, elapsedMs: 10 } : { stopped: 'no' }));
      o.ask();
      await until(o.queued, 'queued DEVICES_HELD');
      o.st.connect(machineA.did);
      await sleep(STOP_RETRY_FIRST_MS + 300);
      assert.equal(o.stops().length, 1);
      assert.ok(!o.admitted());
      await o.close();
    } finally {
      t.cleanup();
    }
  });

  it('the victim whose stop got no answer is asked again, not another one that ranks first now (it may be stopping already)', async () => {
    const t = tempDir('c0-preempt-unanswered-');
    try {
      let pass = 1;
      const o = await overlay(t.dir, [machineA, machineB], async (a, n, low) => {
        if (a.op === 'usage') {
          // first pass: only A has a figure (a defined cost: A ranks first); later, B's work is far more expensive
          if (a.to === machineA.did) return { running: 'yes', uj: 100, units: 1, elapsedMs: 10 };
          return pass === 1 ? { running: 'yes' } : { running: 'yes', uj: 1_000_000, units: 1, elapsedMs: 10 };
        }
        if (n === 1) {
          pass = 2;
          throw cut();
        }
        return { stopped: 'yes', receipt: preempted(a.to === machineA.did ? machineA : machineB, low.get(a.to)!).bytes };
      });
      o.ask();
      await until(o.queued, 'queued DEVICES_HELD');
      o.st.connect(machineA.did);
      await until(o.admitted, 'admitted', 500);
      assert.deepEqual(
        o.stops().map((s) => s.to),
        [machineA.did, machineA.did],
        'B was never stopped',
      );
      assert.deepEqual(await o.events(), ['Admitted lowA', 'Admitted lowB', 'Released lowA', 'Admitted high']);
      await o.close();
    } finally {
      t.cleanup();
    }
  });

  it('a steward restarted while a stop had no answer asks that victim again after the restart, not another one that ranks first now', async () => {
    // A stopped the work at the first stop, only its answer (and its receipt's gossip) lost; then the steward restarts.
    // Before, the restart forgot that A's stop went unanswered: the re-asked claim's pass stopped B (A, stopped, has no
    // figure any more; B's defined cost ranks it first), and A's receipt arriving afterwards released lowA as reclaimed
    // too: two claims stopped for the devices of one.
    const t = tempDir('c0-preempt-unanswered-');
    try {
      let healed = false;
      let stoppedWork: Opened<Receipt> | undefined;
      const o = await overlay(
        t.dir,
        [machineA, machineB],
        async (a, n, low) => {
          const isA = a.to === machineA.did;
          if (a.op === 'usage') {
            if (isA) return healed ? { running: 'no' } : { running: 'yes', uj: 100, units: 1, elapsedMs: 10 }; // A ranks first at first
            return healed ? { running: 'yes', uj: 100, units: 1, elapsedMs: 10 } : { running: 'yes' };
          }
          if (isA) {
            stoppedWork ??= preempted(machineA, low.get(machineA.did)!);
            if (!healed) throw cut();
            return { stopped: 'no', barred: 'yes' }; // not running any more: barred
          }
          return { stopped: 'yes', receipt: preempted(machineB, low.get(machineB.did)!).bytes };
        },
        async (peer, _kinds, _jobs, hear) => {
          if (peer !== machineA.did || !stoppedWork) return { accepted: 0, failed: {} };
          await hear('receipt', stoppedWork);
          return { accepted: 1, failed: {} };
        },
      );
      o.ask();
      await until(o.queued, 'queued DEVICES_HELD after the stop to A got no answer');
      await o.restart();
      healed = true;
      o.ask(); // the urgent buyer asks again: its stream ended with the steward
      await until(o.admitted, 'admitted after the restart');
      assert.deepEqual(
        o.stops().map((s) => [s.to, s.job]),
        [
          [machineA.did, o.low.get(machineA.did)!.address],
          [machineA.did, o.low.get(machineA.did)!.address],
        ],
        'A asked again; B never stopped',
      );
      await o.st.hear('receipt', stoppedWork); // its gossip, late: charged once
      assert.deepEqual(await o.events(), ['Admitted lowA', 'Admitted lowB', 'Released lowA', 'Admitted high']);
      const [rel] = await o.st.released();
      assert.equal((rel as unknown as { actual: { uj: number } }).actual.uj, 400);
      await o.close();
    } finally {
      t.cleanup();
    }
  });

  it('after a restart, a stop answered before it (a refusal that kept the mark) is not taken for one whose answer is unknown', async () => {
    // A's first stop got no answer, its retry a refusal (`stopped: "no"`): not asked again first, with or without a
    // restart in between. The mark stays (that first stop may have landed), so the restart must tell it from a stop
    // whose answer never came.
    const t = tempDir('c0-preempt-unanswered-');
    try {
      let pass = 1;
      let synced = 0;
      const o = await overlay(
        t.dir,
        [machineA, machineB],
        async (a, n, low) => {
          if (a.op === 'usage') {
            // first pass: only A has a figure (a defined cost: A ranks first); from the restart on, B's work is far
            // more expensive (§5.2: it ranks first)
            if (a.to === machineA.did) return { running: 'yes', uj: 100, units: 1, elapsedMs: 10 };
            return pass === 1 ? { running: 'yes' } : { running: 'yes', uj: 1_000_000, units: 1, elapsedMs: 10 };
          }
          if (a.to === machineA.did) {
            if (n === 1) throw cut();
            return { stopped: 'no' };
          }
          return { stopped: 'yes', receipt: preempted(machineB, low.get(machineB.did)!).bytes };
        },
        async () => {
          synced++; // asked once the refusal's mark is kept: no receipt here
          return { accepted: 0, failed: {} };
        },
      );
      o.ask();
      await until(o.queued, 'queued DEVICES_HELD');
      o.st.connect(machineA.did);
      await until(() => synced === 1, 'the retry, refused, its mark kept and the receipts asked for');
      assert.equal(o.stops().length, 2);
      pass = 2;
      await o.restart();
      o.ask();
      await until(o.admitted, 'admitted after the restart');
      assert.deepEqual(
        o.stops().map((s) => s.to),
        [machineA.did, machineA.did, machineB.did],
        'after the restart the pass chose by §5.2, as it would have without one',
      );
      assert.equal(await o.reclaimed(machineA), 'priority', 'A still counts as asked (its first stop may have landed)');
      await o.close();
    } finally {
      t.cleanup();
    }
  });

  it('a provider before `barred` that stopped the work at the first stop refuses the retry (`stopped: "no"`): the mark stays, and the late receipt releases the claim as reclaimed', async () => {
    // Such a provider answers a stop of a job it no longer runs `stopped: "no"`. Before, that refusal dropped the mark
    // of the first stop: the stopped work's receipt arriving afterwards was a reclaim nobody asked for (an ordinary
    // failure), the buyer was told `no`, lowA held its device to its deadline and the urgent claim stayed queued.
    const t = tempDir('c0-preempt-unanswered-');
    try {
      let stoppedWork: Opened<Receipt> | undefined;
      const o = await overlay(t.dir, [machineA], async (a, n, low) => {
        if (a.op === 'usage') return n === 0 ? { running: 'yes', uj: 100, elapsedMs: 10 } : { running: 'no' };
        stoppedWork ??= preempted(machineA, low.get(machineA.did)!);
        if (n === 1) throw cut(); // it stopped the work, signed the receipt; the answer (and the gossip) were lost
        return { stopped: 'no' }; // not running here (any more), and no `barred`
      });
      o.ask();
      await until(o.queued, 'queued DEVICES_HELD');
      o.st.connect(machineA.did);
      await until(() => o.stops().length === 2, 'the retry');
      await sleep(100);
      assert.ok(!o.admitted(), 'a refusal frees nothing');
      assert.equal(await o.reclaimed(machineA), 'priority', 'A was asked, and may have stopped: still the reclaim’s');
      await o.st.hear('receipt', stoppedWork); // the first stop's receipt, late (held gossip, catch-up)
      await until(o.admitted, 'admitted once the stopped work’s receipt released lowA');
      assert.deepEqual(await o.events(), ['Admitted lowA', 'Released lowA', 'Admitted high']);
      const [rel] = await o.st.released();
      assert.equal((rel as unknown as { actual: { uj: number } }).actual.uj, 400);
      assert.equal(await o.reclaimed(machineA), 'priority');
      await o.close();
    } finally {
      t.cleanup();
    }
  });

  it('a provider before `barred` refusing the retry is asked for the job’s receipts: the first stop’s receipt releases the claim in that pass', async () => {
    const t = tempDir('c0-preempt-unanswered-');
    try {
      const synced: string[][] = [];
      let stoppedWork: Opened<Receipt> | undefined;
      const o = await overlay(
        t.dir,
        [machineA],
        async (a, n, low) => {
          if (a.op === 'usage') return n === 0 ? { running: 'yes', uj: 100, elapsedMs: 10 } : { running: 'no' };
          stoppedWork ??= preempted(machineA, low.get(machineA.did)!);
          if (n === 1) throw cut();
          return { stopped: 'no' };
        },
        async (peer, kinds, jobs, hear) => {
          synced.push([peer, ...kinds, ...jobs]);
          await hear('receipt', stoppedWork);
          return { accepted: 1, failed: {} };
        },
      );
      o.ask();
      await until(o.queued, 'queued DEVICES_HELD');
      o.st.connect(machineA.did);
      await until(o.admitted, 'admitted', 500);
      assert.equal(o.stops().length, 2);
      assert.deepEqual(synced, [[machineA.did, 'receipt', o.low.get(machineA.did)!.address]]);
      assert.deepEqual(await o.events(), ['Admitted lowA', 'Released lowA', 'Admitted high']);
      await o.close();
    } finally {
      t.cleanup();
    }
  });
});

// (apart: each bounds a span of time, the retry's wait or the tries a 3 s run of reconnections gets, which the
// side-by-side cases' load could stretch)
describe('a preemption whose stop got no answer is tried again, in time bounds', () => {
  it('as soon as the provider connects again, before the backoff', async () => {
    const t = tempDir('c0-preempt-unanswered-');
    try {
      const o = await overlay(t.dir, [machineA], async (a, n, low) => {
        if (a.op === 'usage') return { running: 'yes', uj: 100, elapsedMs: 10 };
        if (n === 1) throw cut();
        return { stopped: 'yes', receipt: preempted(machineA, low.get(machineA.did)!).bytes };
      });
      o.ask();
      await until(o.queued, 'queued DEVICES_HELD');
      const healed = Date.now();
      o.st.connect(urgentBuyer.did); // another peer: nothing to try again for
      o.st.connect(machineA.did);
      await until(o.admitted, 'admitted after the reconnect', 300);
      assert.ok(Date.now() - healed < STOP_RETRY_FIRST_MS, 'not waiting for the backoff');
      assert.equal(o.stops().length, 2);
      assert.deepEqual(await o.events(), ['Admitted lowA', 'Released lowA', 'Admitted high']);
      await o.close();
    } finally {
      t.cleanup();
    }
  });

  it('a provider that keeps reconnecting and never answers a stop gets a bounded number of tries', async () => {
    const t = tempDir('c0-preempt-unanswered-');
    try {
      const o = await overlay(t.dir, [machineA], async (a) => {
        if (a.op === 'usage') return { running: 'yes', uj: 100, elapsedMs: 10 };
        throw cut();
      });
      o.ask();
      await until(o.queued, 'queued DEVICES_HELD');
      // it reconnects every 20 ms for 3 s (each time answering a usage question, never a stop)
      for (let i = 0; i < 150; i++) {
        o.st.connect(machineA.did);
        await sleep(20);
      }
      const n = o.stops().length;
      // the first stop, one try at the first reconnect, then at most one a backoff step (2 s) apart
      assert.ok(n >= 2 && n <= 3, `stops sent: ${n}`);
      assert.ok(o.asked.filter((x) => x.op === 'usage').length <= 3 * n + 2, 'the usage questions are bounded as well');
      assert.ok(!o.admitted());
      await o.close();
    } finally {
      t.cleanup();
    }
  });
});
