/**
 * A clean stop (SIGTERM) with work in flight (docs/node.md "Orphaned work after a crash", last paragraph): the
 * provider aborts each run and waits, at most STOP_DRAIN_MS, until its receipt (EXEC_ABORTED) is signed, stored and
 * written on the exec stream, still open, before the node stops its network, receipt delivery and store
 * (OverlayNode.interruptRuns). Before, `stop` aborted the runs and returned at once, and what came next raced them:
 * the buyer got no receipt and signed a non-delivery, or the store closed first and the next start signed
 * EXEC_PROVIDER_CRASHED for a clean stop (exec33 finding 3). A receipt handed to the delivery after it stopped is kept
 * for the next start. Real LevelDB, wired as the node wires it (provider-wiring.ts receiptDeliveryOn).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { open, type Opened } from '../../../src/records/envelope.js';
import { T, type Job, type Offer, type Receipt } from '../../../src/records/kinds.js';
import { fakeClock } from '../../../src/util/clock.js';
import { silentLogger } from '../../../src/util/log.js';
import { Provider, type ProviderDeps } from '../../../src/roles/provider/provider.js';
import type { ExecFrame } from '../../../src/roles/exec-protocol.js';
import type { ExecIO } from '../../../src/roles/provider/exec-input.js';
import type { ProviderRuns } from '../../../src/store/provider-runs.js';
import { receiptDeliveryOn } from '../../../src/node/provider-wiring.js';
import { NOW, did, runsConfig, runsDeps, runsJob, selectionOf, withStore } from './runs-rig.js';

const input = new TextEncoder().encode('stop me');

async function start(runs: ProviderRuns, clock: ReturnType<typeof fakeClock>, extra: Partial<ProviderDeps> = {}) {
  const sent: string[] = [];
  const kept: Array<Opened<Receipt>> = [];
  const { delivery, deps, keepReceipt } = await receiptDeliveryOn(runs, {
    send: async (_to, r) => (sent.push(r.address), 'accepted'),
    clock,
    log: silentLogger(),
    self: did,
  });
  const config = runsConfig(['builtin.sleep'], 2);
  const p = new Provider({
    ...deps,
    ...runsDeps(runs, clock),
    config,
    publish: async () => 1,
    onReceipt: async (r, _offer, job) => {
      await keepReceipt(r, Math.max(job.record.deadline, r.record.completedAt));
      kept.push(r);
    },
    ...extra,
  });
  await p.start();
  await new Promise((r) => setImmediate(r));
  return { p, delivery, sent, kept };
}

function job(params: string): Opened<Job> {
  return runsJob('builtin.sleep', input, params);
}

/** The exec request for `j` on `offer`. */
function request(j: Opened<Job>, offer: Opened<Offer>): unknown {
  const selection = selectionOf(j, offer);
  return { t: 'exec', selection: selection.bytes, job: j.bytes, offer: offer.bytes, input };
}

/** Serve `j`'s exec stream; its frames, and when it has been accepted. */
function serve(p: Provider, j: Opened<Job>, offer: Opened<Offer>, io: Partial<ExecIO> = {}) {
  const frames: ExecFrame[] = [];
  const queue: unknown[] = [request(j, offer)];
  const done = p.handleExec({ next: async () => queue.shift(), send: async (f) => void frames.push(f as ExecFrame), signal: new AbortController().signal, reserve: () => {}, setDeadline: () => {}, ...io });
  const accepted = async () => {
    for (let i = 0; i < 300 && !frames.some((f) => f.t === 'accepted'); i++) await new Promise((r) => setTimeout(r, 10));
    assert.ok(frames.some((f) => f.t === 'accepted'), 'running');
  };
  return { frames, done, accepted };
}


test('a clean stop with work running: once stop() resolves, each run’s EXEC_ABORTED receipt is stored and written on its stream, and no note is left', async () => {
  await withStore('stop-drain', async (runs) => {
    const clock = fakeClock(NOW);
    const h = await start(runs, clock);
    const [a, b] = [job('60000'), job('60001')];
    const [oa, ob] = [(await h.p.onJob(a)) as Opened<Offer>, (await h.p.onJob(b)) as Opened<Offer>];
    const [sa, sb] = [serve(h.p, a, oa, { callerEnded: async () => 'reset' as const }), serve(h.p, b, ob, { callerEnded: async () => 'reset' as const })];
    await sa.accepted();
    await sb.accepted();

    await h.p.stop();
    for (const [j, s] of [[a, sa], [b, sb]] as const) {
      const rf = s.frames.find((f) => f.t === 'receipt') as Extract<ExecFrame, { t: 'receipt' }> | undefined;
      assert.ok(rf, 'the receipt was written on the stream before stop() resolved');
      const r = open(rf.receipt, T.receipt);
      assert.deepEqual([r.record.job, r.record.status, r.record.failure?.code], [j.address, 'failed', 'EXEC_ABORTED']);
      assert.equal(await runs.has(j.address), true, 'and stored');
    }
    assert.deepEqual(await runs.notes(), [], 'no note left: the next start signs no EXEC_PROVIDER_CRASHED');
    assert.equal(h.p.running, 0);
    await Promise.all([sa.done, sb.done]);
  });
});

test('the wait is bounded: a run whose receipt cannot be stored in time does not hold the stop past the wait', async () => {
  await withStore('stop-bound', async (runs) => {
    const clock = fakeClock(NOW);
    const h = await start(runs, clock, { onReceipt: () => new Promise(() => {}) });
    const a = job('60000');
    const s = serve(h.p, a, (await h.p.onJob(a)) as Opened<Offer>);
    await s.accepted();
    const t0 = Date.now();
    await h.p.stop(200);
    assert.ok(Date.now() - t0 < 2_000, `stop took ${Date.now() - t0} ms`);
  });
});

test('an exec arriving while the provider stops is refused EXEC_BUSY; nothing runs', async () => {
  await withStore('stop-refuse', async (runs) => {
    const clock = fakeClock(NOW);
    const h = await start(runs, clock);
    const a = job('60000');
    const offer = (await h.p.onJob(a)) as Opened<Offer>;
    await h.p.stop();
    const s = serve(h.p, a, offer);
    await s.done;
    assert.deepEqual(s.frames.map((f) => [f.t, (f as { code?: string }).code]), [['refused', 'EXEC_BUSY']]);
    assert.deepEqual(h.kept, []);
    assert.equal(await runs.has(a.address), false);
  });
});

test('a receipt the buyer did not acknowledge before the delivery stopped is kept, and sent at the next start', async () => {
  await withStore('stop-keep', async (runs) => {
    const clock = fakeClock(NOW);
    let lose!: (v: 'lost') => void;
    const lost = new Promise<'lost'>((r) => (lose = r));
    const h = await start(runs, clock);
    const a = job('60000');
    const s = serve(h.p, a, (await h.p.onJob(a)) as Opened<Offer>, { callerEnded: () => lost });
    await s.accepted();
    await h.p.stop();
    // the node's stop goes on: the delivery stops, then the network, which ends the stream from this side
    h.delivery.stop();
    lose('lost');
    await s.done;
    const r = h.kept[0]!;
    assert.deepEqual((await runs.waitingReceipts()).map((w) => [w.address, w.untried]), [[r.address, true]], 'kept, untried');
    const next = await start(runs, clock);
    assert.deepEqual(next.sent, [r.address], 'sent at the next start');
    await next.p.stop();
  });
});
