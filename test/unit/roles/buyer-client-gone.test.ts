/**
 * A run whose client went away (review s43 R6 F2: Ctrl-C on `c0mpute run` through a daemon was run, accepted and paid,
 * its output thrown away). Before the run commits (a selection signed) the job is withdrawn as at the node's stop:
 * interrupted, nothing selected, a steward's claim released. After, the run goes on to its end.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { BuyerEvent, OffersCollected } from '../../../src/roles/buyer.js';
import { RunBreak } from '../../../src/roles/run-break.js';
import { C0Error } from '../../../src/errors.js';
import { NOW, P } from '../market/fixtures.js';
import { buyerOnFakes, failingStream, fakeSpec } from './buyer-fakes.js';

const ME = P(790);
const A = P(791);
const B = P(792);

test('RunBreak: the client leaving breaks the run off until it commits, the node’s stop at any time', () => {
  const stop = new AbortController();
  const gone = new AbortController();
  const early = new RunBreak(stop.signal, gone.signal);
  gone.abort();
  assert.ok(early.aborted && early.byClient);
  assert.equal(early.commit(), false, 'nothing commits once broken off');
  early.clear();

  const stop2 = new AbortController();
  const gone2 = new AbortController();
  const late = new RunBreak(stop2.signal, gone2.signal);
  assert.equal(late.commit(), true);
  gone2.abort();
  assert.ok(!late.aborted, 'past the point of no return the client leaving changes nothing');
  assert.equal(late.commit(), true);
  stop2.abort(new C0Error('JOB_INTERRUPTED', 'this node is stopping'));
  assert.ok(late.aborted && !late.byClient, 'the node’s stop still breaks it off');
  assert.equal((late.signal.reason as C0Error).message, 'this node is stopping');
  late.clear();

  // a client gone before the run began
  const gone3 = new AbortController();
  gone3.abort();
  const before = new RunBreak(new AbortController().signal, gone3.signal);
  assert.ok(before.aborted && before.byClient);
});

test('the client leaves during the offer window: the job is withdrawn, interrupted, nothing selected or run', async () => {
  const withdrawn: string[] = [];
  const gone = new AbortController();
  const f = buyerOnFakes(ME, {
    providers: [A, B],
    exec: () => failingStream('NET_STREAM_FAILED', 'not reached'),
    deps: {
      // the window ends when the client leaves (the run's signal aborts with it; without that the run would go on)
      waitForOffers: () => new Promise<OffersCollected>((resolve) => (gone.signal.aborted ? resolve({ offers: 2, ended: 'window' }) : gone.signal.addEventListener('abort', () => resolve({ offers: 2, ended: 'window' }), { once: true }))),
      admission: async () => ({ verdict: 'Admit', claim: 'sha256:claim' }),
      withdraw: async (job: { address: string }) => void withdrawn.push(job.address),
    },
  });
  const events: BuyerEvent[] = [];
  const result = await f.buyer.run(
    fakeSpec({ entitlement: 'ml' }),
    (e) => {
      events.push(e);
      if (e.e === 'job') gone.abort();
    },
    { gone: gone.signal },
  );
  assert.equal(result.status, 'interrupted');
  assert.equal(result.error?.code, 'JOB_INTERRUPTED');
  assert.match(result.error!.message, /its client went away before a provider was selected: the job was withdrawn/);
  assert.deepEqual(f.execs, []);
  assert.ok(!f.published.some((p) => p.kind === 'selection'), 'no selection published');
  assert.ok(!events.some((e) => e.e === 'selection' || e.e === 'collected'));
  assert.equal(events.at(-1)?.e, 'interrupted');
  assert.deepEqual(withdrawn, [result.job.address], 'the steward’s claim is released');
});

test('the client leaves after the selection: the run goes on to its end (here a failover to the runner-up)', async () => {
  const gone = new AbortController();
  const signals: AbortSignal[] = [];
  const f = buyerOnFakes(ME, {
    providers: [A, B],
    exec: (did, signal) => {
      signals.push(signal);
      if (did !== A.did) return failingStream('NET_STREAM_FAILED', 'runner-up gone');
      return (async function* () {
        yield { t: 'accepted', startedAt: NOW };
        gone.abort();
        await new Promise((r) => setImmediate(r));
        throw new C0Error('NET_STREAM_FAILED', 'stream reset');
      })();
    },
  });
  const events: BuyerEvent[] = [];
  const result = await f.buyer.run(fakeSpec(), (e) => events.push(e), { gone: gone.signal });
  assert.ok(gone.signal.aborted);
  assert.equal(result.status, 'failed');
  assert.deepEqual(f.execs, [A.did, B.did], 'the run went on after its client left');
  assert.ok(signals.every((s) => !s.aborted), 'no attempt was broken off by the client leaving');
  assert.ok(!events.some((e) => e.e === 'interrupted'));
});
