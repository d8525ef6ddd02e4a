/**
 * A run with no provider left to fail over to asks for more offers (review s38 r2, "late rescue"): the buyer selected
 * p1, p3 joined later and learned the job with its selection by sync, so it skipped the job as decided; p1 was then
 * killed and the job failed with most of its deadline left while p3 sat idle. Now the run, with no untried candidate
 * left and its deadline more than a collection window away, asks (BuyerDeps.rescue: job-push/1 in the daemon, which a
 * provider answers whatever it heard of the job) and decides again among the offers that came; at most
 * MAX_RESCUES_PER_RUN times a run, and not when no offer came or the deadline is too close.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as buyerRole from '../../../src/roles/buyer.js';
import type { RankedCandidate } from '../../../src/roles/buyer.js';
import { NOW, P, type Party } from '../market/fixtures.js';
import { buyerOnFakes, fakeSpec, failingStream } from './buyer-fakes.js';

const ME = P(1900);
const P1 = P(1901);
/** (read through the module: a build before the bound has none, and the tests then fail on what the run did) */
const MAX_RESCUES_PER_RUN = (buyerRole as { MAX_RESCUES_PER_RUN?: number }).MAX_RESCUES_PER_RUN ?? 2;
const LATE = [P(1902), P(1903), P(1904)];

/** p1 quoted at once; each late provider is in the book once a rescue asked it (`answering` of them answer each ask). */
function rig(answering = 1, clock?: () => number) {
  const inBook = new Set([P1.did]);
  const asks: Array<ReadonlySet<string>> = [];
  let next = 0;
  const f = buyerOnFakes(ME, {
    providers: [P1, ...LATE],
    rank: (all: RankedCandidate[], _at: number, excluded: ReadonlySet<string> | undefined) => all.filter((c) => inBook.has(c.provider) && !excluded?.has(c.provider)),
    exec: () => failingStream('NET_STREAM_FAILED', 'provider gone'),
    ...(clock ? { clock } : {}),
    deps: {
      rescue: async (_job: unknown, tried: ReadonlySet<string>) => {
        asks.push(new Set(tried));
        let got = 0;
        for (let i = 0; i < answering && next < LATE.length; i++, got++) inBook.add(LATE[next++]!.did);
        return got;
      },
    },
  });
  return { f, asks };
}

const dids = (ps: Party[]) => ps.map((p) => p.did);

test('no provider left to fail over to: providers not tried are asked, and one that offers is tried', { timeout: 20_000 }, async () => {
  const { f, asks } = rig();
  const result = await f.buyer.run(fakeSpec({ deadlineMs: 240_000 }));
  assert.ok(asks.length >= 1, 'the buyer asked for more offers');
  assert.deepEqual([...asks[0]!], [P1.did], 'those already tried are named, so they are not asked');
  assert.deepEqual(f.execs.slice(0, 2), [P1.did, LATE[0]!.did], 'the late provider is selected after p1 failed');
  assert.equal(result.attempts[1]!.provider, LATE[0]!.did);
});

test('asking for more offers is bounded per run', { timeout: 20_000 }, async () => {
  const { f, asks } = rig();
  const result = await f.buyer.run(fakeSpec({ deadlineMs: 240_000 }));
  assert.equal(asks.length, MAX_RESCUES_PER_RUN);
  assert.deepEqual(f.execs, [P1.did, ...dids(LATE.slice(0, MAX_RESCUES_PER_RUN))]);
  assert.equal(result.status, 'failed');
});

test('an ask that brings no offer ends the run as before', { timeout: 20_000 }, async () => {
  const { f, asks } = rig(0);
  const result = await f.buyer.run(fakeSpec({ deadlineMs: 240_000 }));
  assert.equal(asks.length, 1);
  assert.deepEqual(f.execs, [P1.did]);
  assert.equal(result.status, 'failed');
});

test('no ask when the deadline is no more than a collection window away', { timeout: 20_000 }, async () => {
  let now = NOW;
  const { f, asks } = rig(1, () => now);
  const run = f.buyer.run(fakeSpec({ deadlineMs: 240_000 }), (e) => {
    // p1 fails with the deadline 5 ms away (the fakes' collection window is 10 ms)
    if (e.e === 'selection') now = NOW + 240_000 - 5;
  });
  const result = await run;
  assert.equal(asks.length, 0);
  assert.deepEqual(f.execs, [P1.did]);
  assert.equal(result.status, 'failed');
});
