/**
 * A buyer that stops or stalls does not blame the provider (finding day2-27 #1): a daemon stopped (SIGTERM) while its
 * job ran signed a non-delivery against the healthy winner, failed over, and wrote to a closed store; one SIGSTOPped
 * past the peers' ping timeout signed `unreachable` against the winner that had delivered. Now the node's stop
 * interrupts its runs (JOB_INTERRUPTED, the last event; no non-delivery, no failover), and an attempt during which
 * this process did not run for longer than STALL_MS is recorded as interrupted here (BUYER_STALLED), not signed
 * against the provider.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { STALL_MS, localInterruption, type BuyerEvent, type OffersCollected } from '../../../src/roles/buyer.js';
import { StallWatch, type StallWatchHandle } from '../../../src/util/stall-watch.js';
import { LIVENESS } from '../../../src/net/libp2p-host.js';
import { C0Error } from '../../../src/errors.js';
import { NOW, P } from '../market/fixtures.js';
import { buyerOnFakes, fakeSpec } from './buyer-fakes.js';

const ME = P(780);
const A = P(781);
const B = P(782);

const spec = fakeSpec();

/** A buyer over fakes: providers A then B ranked; `exec` is the exchange with whichever is selected. */
function rig(o: { exec: (did: string, signal: AbortSignal) => AsyncIterable<unknown>; frozenMs?: number; waitForOffers?: (signal?: AbortSignal) => Promise<OffersCollected> }) {
  const stalls = o.frozenMs === undefined ? undefined : { begin: (): StallWatchHandle => ({ longestFreezeMs: () => o.frozenMs!, totalFreezeMs: () => o.frozenMs!, end: () => {} }) };
  const f = buyerOnFakes(ME, {
    providers: [A, B],
    exec: o.exec,
    deps: {
      waitForOffers: async (_j: string, _w: number, _e: number, _on: unknown, signal?: AbortSignal) => (o.waitForOffers ? o.waitForOffers(signal) : { offers: 2, ended: 'window' as const }),
      ...(stalls ? { stalls } : {}),
    },
  });
  return {
    buyer: f.buyer,
    execs: f.execs,
    get published() {
      return f.published.map((p) => p.kind);
    },
    get stored() {
      return f.stored.map((r) => r.type);
    },
  };
}

/** An exchange that accepts, then waits until its signal aborts and fails as a broken stream would. */
async function* acceptThenHang(_did: string, signal: AbortSignal): AsyncIterable<unknown> {
  yield { t: 'accepted', startedAt: NOW };
  if (!signal.aborted) await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
  throw new C0Error('NET_STREAM_FAILED', 'the stream was aborted');
}

test('localInterruption: the node stopping, or a freeze past STALL_MS, is this node’s doing; anything else is the provider’s', () => {
  assert.equal(localInterruption({ stopping: true, frozenMs: 0 }), 'stopping');
  assert.equal(localInterruption({ stopping: false, frozenMs: STALL_MS + 1 }), 'stalled');
  assert.equal(localInterruption({ stopping: false, frozenMs: STALL_MS }), undefined);
  assert.equal(localInterruption({ stopping: false, frozenMs: 2_000 }), undefined);
  assert.equal(localInterruption({ stopping: false, frozenMs: 6_000, stallMs: 5_000 }), 'stalled');
  // the threshold is the shortest silence after which a peer may drop the connection
  assert.equal(STALL_MS, LIVENESS.pingMinTimeoutMs);
});

test('the node’s stop interrupts a run mid-attempt: JOB_INTERRUPTED as its last event, no non-delivery, no failover', async () => {
  const r = rig({ exec: acceptThenHang });
  const events: BuyerEvent[] = [];
  let stopped: Promise<void> | undefined;
  const result = await r.buyer.run(spec, (e) => {
    events.push(e);
    if (e.e === 'accepted') stopped = r.buyer.interrupt();
  });
  await stopped;
  assert.equal(result.status, 'interrupted');
  assert.equal(result.error?.code, 'JOB_INTERRUPTED');
  assert.match(result.error!.message, new RegExp(`running at ${A.did}, which is not blamed`));
  assert.deepEqual(result.attempts, [{ provider: A.did, outcome: 'interrupted: this node is stopping (JOB_INTERRUPTED)' }]);
  assert.deepEqual(r.execs, [A.did], 'no failover to the runner-up');
  assert.ok(!r.published.some((k) => k.startsWith('nondelivery')), 'no non-delivery published');
  assert.ok(!r.stored.some((t) => t.startsWith('c0mpute.nondelivery')), 'no non-delivery stored');
  assert.ok(!events.some((e) => e.e === 'nondelivery' || e.e === 'failover'));
  assert.deepEqual(events.at(-1), { e: 'interrupted', code: 'JOB_INTERRUPTED', message: result.error!.message });
  // and no run starts after the stop
  await assert.rejects(r.buyer.run(spec), { code: 'JOB_INTERRUPTED' });
});

test('the stop during the offer window ends the run at once, interrupted, before anything is selected', async () => {
  const r = rig({ exec: acceptThenHang, waitForOffers: (signal) => new Promise((resolve) => (signal!.aborted ? resolve({ offers: 0, ended: 'stopped' }) : signal!.addEventListener('abort', () => resolve({ offers: 0, ended: 'stopped' }), { once: true }))) });
  const events: BuyerEvent[] = [];
  const running = r.buyer.run(spec, (e) => {
    events.push(e);
    if (e.e === 'job') void r.buyer.interrupt();
  });
  const result = await running;
  assert.equal(result.status, 'interrupted');
  assert.equal(result.error?.code, 'JOB_INTERRUPTED');
  assert.deepEqual(result.attempts, []);
  assert.deepEqual(r.execs, []);
  assert.ok(!events.some((e) => e.e === 'selection' || e.e === 'collected'));
  assert.equal(events.at(-1)?.e, 'interrupted');
});

test('interrupt waits for the runs it broke off, and no longer than its bound', async () => {
  // a run whose exchange ignores the abort: the stop does not wait for it past the bound
  let release!: () => void;
  const r = rig({
    exec: async function* () {
      yield { t: 'accepted', startedAt: NOW };
      await new Promise<void>((resolve) => (release = resolve));
    },
  });
  let accepted!: () => void;
  const seen = new Promise<void>((resolve) => (accepted = resolve));
  const run = r.buyer.run(spec, (e) => e.e === 'accepted' && accepted());
  await seen;
  await r.buyer.interrupt(50); // resolves: the bound, not the run, ended the wait
  // the exchange ends after all: the attempt ends and clears its timers (its quote's overrun, 2 min), which would
  // otherwise hold this test's process open until they fire
  release();
  await run;
});

test('a stream that broke while this process did not run past STALL_MS is no non-delivery (BUYER_STALLED); a short freeze is', async () => {
  const broken = async function* (): AsyncIterable<unknown> {
    yield { t: 'accepted', startedAt: NOW };
    throw new C0Error('NET_STREAM_FAILED', 'stream reset');
  };
  const stalled = rig({ exec: broken, frozenMs: 60_000 });
  const events: BuyerEvent[] = [];
  const result = await stalled.buyer.run(spec, (e) => events.push(e));
  assert.equal(result.status, 'failed');
  assert.deepEqual(stalled.execs, [A.did, B.did], 'the run goes on with the runner-up: this node runs again');
  for (const a of result.attempts) {
    assert.match(a.outcome, /^interrupted: this node did not run for 60 s during the attempt \(BUYER_STALLED\)/);
    assert.equal(a.nondelivery, undefined);
  }
  assert.ok(!stalled.published.some((k) => k.startsWith('nondelivery')));
  assert.ok(!events.some((e) => e.e === 'nondelivery'));
  // a freeze shorter than that: the provider's doing as far as this node can tell
  const brief = rig({ exec: broken, frozenMs: 3_000 });
  const r2 = await brief.buyer.run(spec);
  assert.equal(r2.attempts.length, 2);
  assert.ok(r2.attempts.every((a) => a.nondelivery !== undefined && a.outcome.startsWith('provider unreachable or gone')));
  assert.equal(brief.published.filter((k) => k === 'nondelivery').length, 2);
});

test('StallWatch: reports the longest time the process did not run since the watch began, the ongoing freeze included', () => {
  let now = 0;
  let tick: (() => void) | undefined;
  const w = new StallWatch({ everyMs: 1_000, now: () => now, every: (fn) => ((tick = fn), () => (tick = undefined)) });
  const a = w.begin();
  assert.ok(tick, 'the timer runs while watched');
  for (let i = 0; i < 5; i++) {
    now += 1_000;
    tick!();
  }
  assert.equal(a.longestFreezeMs(), 0, 'ticks on time: no freeze');
  now += 60_000; // SIGSTOP: no tick for 60 s; asked before the first tick after SIGCONT
  assert.equal(a.longestFreezeMs(), 59_000);
  tick!();
  now += 1_000;
  tick!();
  assert.equal(a.longestFreezeMs(), 59_000, 'kept once the tick saw it');
  // a watch begun after a freeze ended does not count it; one begun mid-freeze counts only its own part
  now += 20_000;
  const b = w.begin();
  assert.equal(b.longestFreezeMs(), 0);
  now += 3_000;
  assert.equal(b.longestFreezeMs(), 2_000);
  tick!();
  assert.equal(a.longestFreezeMs(), 59_000);
  a.end();
  assert.ok(tick, 'still watched by b');
  b.end();
  assert.equal(tick, undefined, 'no watch, no timer');
  assert.equal(b.longestFreezeMs(), 2_000);
});
