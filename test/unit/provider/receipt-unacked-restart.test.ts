/**
 * A receipt kept just before the provider died, while its buyer had not yet shown it got it (docs/node.md "A receipt
 * the buyer did not get on the stream"): its wait for the buyer is written with the receipt itself, in the same
 * synced batch (src/node/provider-wiring.ts receiptDeliveryOn, src/store/provider-runs.ts `record`), and the next start
 * sends it to the buyer directly and gossips it. Before, the wait was written only after the output and the receipt
 * had been streamed (and only when that failed), so a provider killed while its output streamed kept a receipt no one
 * else ever saw. The same for EXEC_PROVIDER_CRASHED receipts signed at start, killed before `deliver`. A receipt the
 * buyer acknowledged on the stream leaves nothing to send. Real LevelDB; the "kill" is a send or a gossip that never
 * returns, and the next start opens a new provider on the same store.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { type Opened } from '../../../src/records/envelope.js';
import { type Job, type Offer, type Receipt } from '../../../src/records/kinds.js';
import { fakeClock } from '../../../src/util/clock.js';
import { silentLogger } from '../../../src/util/log.js';
import { Provider } from '../../../src/roles/provider/provider.js';
import type { ExecFrame } from '../../../src/roles/exec-protocol.js';
import type { ExecIO } from '../../../src/roles/provider/exec-input.js';
import type { ProviderRuns } from '../../../src/store/provider-runs.js';
import { receiptDeliveryOn } from '../../../src/node/provider-wiring.js';
import type { OfferSendOutcome } from '../../../src/net/offer-route.js';
import { NOW, buyerDid, did, runsConfig, runsDeps, runsJob, selectionOf, withStore } from './runs-rig.js';

const input = new TextEncoder().encode('deliver me');
const never = new Promise<never>(() => {});

/** One start of the provider on `runs`, wired to its receipt delivery as the node wires it. */
async function start(runs: ProviderRuns, clock: ReturnType<typeof fakeClock>, o: { answer?: OfferSendOutcome; publish?: () => Promise<number> } = {}) {
  const sent: Array<{ buyer: string; receipt: string }> = [];
  const gossiped: string[] = [];
  const kept: Array<Opened<Receipt>> = [];
  const { delivery, deps, keepReceipt } = await receiptDeliveryOn(runs, {
    send: async (to, r) => {
      sent.push({ buyer: to, receipt: r.address });
      return o.answer ?? 'accepted';
    },
    clock,
    log: silentLogger(),
    self: did,
  });
  const config = runsConfig(['builtin.sha256', 'builtin.sleep']);
  const p = new Provider({
    ...deps,
    ...runsDeps(runs, clock),
    config,
    receiptAckMs: 200,
    publish: async (kind, env) => {
      if (kind !== 'receipt') return 1;
      if (o.publish) return o.publish();
      gossiped.push(env.address);
      return 1;
    },
    onReceipt: async (r, _offer, job) => {
      await keepReceipt(r, Math.max(job.record.deadline, r.record.completedAt));
      kept.push(r);
    },
  });
  await p.start();
  // the first try of each resumed receipt is not awaited by start
  await new Promise((r) => setImmediate(r));
  return { p, delivery, sent, gossiped, kept };
}

function job(workload: string, params: string): Opened<Job> {
  return runsJob(workload, input, params);
}

/** Offer on `j`, then serve its exec stream with `io` (frames and the buyer's side up to the caller). */
async function serve(p: Provider, j: Opened<Job>, io: Partial<ExecIO> & Pick<ExecIO, 'send'>): Promise<void> {
  const offer = (await p.onJob(j)) as Opened<Offer>;
  assert.ok(offer, 'offered');
  const selection = selectionOf(j, offer);
  const queue: unknown[] = [{ t: 'exec', selection: selection.bytes, job: j.bytes, offer: offer.bytes, input }];
  await p.handleExec({ next: async () => queue.shift(), signal: new AbortController().signal, reserve: () => {}, setDeadline: () => {}, ...io });
}


test('a receipt kept while the output still streamed, then the provider killed: the next start sends it to the buyer and gossips it, once', async () => {
  await withStore('unacked', async (runs) => {
    const clock = fakeClock(NOW);
    const first = await start(runs, clock);
    const j = job('builtin.sha256', '1');
    // the output frame never leaves: the process is killed while it streams
    void serve(first.p, j, { send: (f) => ((f as ExecFrame).t === 'output' ? never : Promise.resolve()) });
    for (let i = 0; i < 300 && first.kept.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    const [r] = first.kept;
    assert.ok(r, 'the receipt was kept before the output streamed');
    assert.deepEqual([first.sent, first.gossiped], [[], []], 'neither sent nor gossiped before the kill');

    clock.advance(5_000);
    const second = await start(runs, clock);
    assert.deepEqual(second.sent, [{ buyer: buyerDid, receipt: r.address }], 'sent to its buyer at start');
    assert.deepEqual(second.gossiped, [r.address], 'and gossiped');
    for (let i = 0; i < 100 && (await runs.waitingReceipts()).length > 0; i++) await new Promise((res) => setTimeout(res, 10));
    assert.deepEqual(await runs.waitingReceipts(), [], 'the buyer answered: nothing waits any more');

    const third = await start(runs, clock);
    assert.deepEqual([third.sent, third.gossiped], [[], []], 'not sent again');
    await Promise.all([first.p.stop(), second.p.stop(), third.p.stop()]);
  });
});

test('a buyer not reachable at that start gets the receipt when it connects; the wait survives another restart', async () => {
  await withStore('unacked-away', async (runs) => {
    const clock = fakeClock(NOW);
    const first = await start(runs, clock);
    void serve(first.p, job('builtin.sha256', '2'), { send: (f) => ((f as ExecFrame).t === 'output' ? never : Promise.resolve()) });
    for (let i = 0; i < 300 && first.kept.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    const r = first.kept[0]!;
    const second = await start(runs, clock, { answer: 'unreachable' });
    assert.deepEqual(second.sent.map((s) => s.receipt), [r.address], 'tried at start');
    assert.deepEqual(second.delivery.waitingFor(), [buyerDid], 'and waiting for the buyer');
    assert.deepEqual((await runs.waitingReceipts()).map((w) => w.address), [r.address], 'still on disk');
    second.delivery.onConnected(buyerDid);
    await new Promise((res) => setImmediate(res));
    assert.equal(second.sent.length, 2, 'sent again when the buyer connected');
    await Promise.all([first.p.stop(), second.p.stop()]);
  });
});

test('a receipt the buyer acknowledged on the stream (it reset or closed it after the receipt) leaves nothing to send at the next start', async () => {
  await withStore('acked', async (runs) => {
    const clock = fakeClock(NOW);
    const first = await start(runs, clock);
    await serve(first.p, job('builtin.sha256', '3'), { send: async () => {}, callerEnded: async () => 'reset' as const });
    assert.equal(first.kept.length, 1);
    assert.deepEqual(first.sent, [], 'not sent directly: the stream delivered it');
    for (let i = 0; i < 100 && (await runs.waitingReceipts()).length > 0; i++) await new Promise((r) => setTimeout(r, 10));
    assert.deepEqual(await runs.waitingReceipts(), [], 'its wait left the store with the acknowledgement');
    const second = await start(runs, clock);
    assert.deepEqual([second.sent, second.gossiped], [[], []]);
    await Promise.all([first.p.stop(), second.p.stop()]);
  });
});

test('an EXEC_PROVIDER_CRASHED receipt signed at start, the provider killed before it was sent: the start after sends it', async () => {
  await withStore('crashed-unsent', async (runs) => {
    const clock = fakeClock(NOW);
    const first = await start(runs, clock);
    const slow = job('builtin.sleep', '60000');
    let accepted = false;
    void serve(first.p, slow, { send: async (f) => void ((f as ExecFrame).t === 'accepted' && (accepted = true)) });
    for (let i = 0; i < 300 && !accepted; i++) await new Promise((r) => setTimeout(r, 10));
    assert.ok(accepted, 'running when the first crash comes');

    // the second start signs and keeps the failed receipt, and is killed in its gossip, before it is sent
    clock.advance(5_000);
    const second = start(runs, clock, { publish: () => never });
    for (let i = 0; i < 300 && !(await runs.has(slow.address)); i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(await runs.has(slow.address), true, 'the failed receipt was kept');

    const third = await start(runs, clock);
    assert.equal(third.sent.length, 1, 'the failed receipt went to its buyer');
    assert.equal(third.sent[0]!.buyer, buyerDid);
    assert.equal(third.gossiped.length, 1, 'and was gossiped');
    assert.equal(third.gossiped[0], third.sent[0]!.receipt);
    await Promise.all([first.p.stop(), third.p.stop()]);
    void second;
  });
});
