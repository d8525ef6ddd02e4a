/**
 * A run with no provider left to fail over to asks for more offers (review s38 r2, "late rescue"): the buyer selected
 * p1, p3 joined later and learned the job with its selection by sync, so it skipped the job as decided; p1 was then
 * killed and the job failed with most of its deadline left while p3 sat idle. Now the run, with no untried candidate
 * left and its deadline more than a collection window away, asks (BuyerDeps.rescue: job-push/1 in the daemon, which a
 * provider answers whatever it heard of the job) and decides again among the offers that came; at most
 * MAX_RESCUES_PER_RUN times a run, an ask that brought no offer followed by one to others, and not when nobody is
 * left to ask or the deadline is too close.
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

/**
 * p1 quoted at once; each ask asks the first late provider not named in its `tried` (those tried, and those asked
 * before), which is in the book from then on when `answers` says it offers.
 */
function rig(answers: (did: string) => boolean = () => true, clock?: () => number) {
  const inBook = new Set([P1.did]);
  const asks: Array<ReadonlySet<string>> = [];
  const widened: boolean[] = [];
  const f = buyerOnFakes(ME, {
    providers: [P1, ...LATE],
    rank: (all: RankedCandidate[], _at: number, excluded: ReadonlySet<string> | undefined) => all.filter((c) => inBook.has(c.provider) && !excluded?.has(c.provider)),
    exec: () => failingStream('NET_STREAM_FAILED', 'provider gone'),
    ...(clock ? { clock } : {}),
    deps: {
      rescue: async (_job: unknown, tried: ReadonlySet<string>, opts?: { widen?: boolean }) => {
        asks.push(new Set(tried));
        widened.push(opts?.widen === true);
        const asked = dids(LATE)
          .filter((d) => !tried.has(d))
          .slice(0, 1);
        const offered = asked.filter(answers);
        for (const d of offered) inBook.add(d);
        return { offers: offered.length, asked };
      },
    },
  });
  return { f, asks, widened };
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

test('an ask whose providers stay silent is followed by one to others, not to them (second-round review: two silent cheap keys filled the only ask)', { timeout: 20_000 }, async () => {
  const { f, asks, widened } = rig((d) => d === LATE[1]!.did);
  const result = await f.buyer.run(fakeSpec({ deadlineMs: 240_000 }));
  assert.ok(asks.length >= 2, 'asked again after an ask that brought nothing');
  assert.deepEqual(widened.slice(0, 2), [false, true], 'the second ask, after one that brought nothing, as wide as a push goes');
  assert.deepEqual([...asks[1]!].sort(), [P1.did, LATE[0]!.did].sort(), 'the second names the silent one asked first, so it goes to another');
  assert.deepEqual(f.execs, [P1.did, LATE[1]!.did], 'the provider the second ask reached is tried');
  assert.equal(result.attempts[1]!.provider, LATE[1]!.did);
});

test('asks that bring no offer end the run once MAX_RESCUES_PER_RUN are spent, or at once when nobody was left to ask', { timeout: 20_000 }, async () => {
  const silent = rig(() => false);
  const result = await silent.f.buyer.run(fakeSpec({ deadlineMs: 240_000 }));
  assert.equal(silent.asks.length, MAX_RESCUES_PER_RUN);
  assert.deepEqual(silent.f.execs, [P1.did]);
  assert.equal(result.status, 'failed');
  // an ask that asked nobody (every provider tried or asked) is not repeated
  let calls = 0;
  const none = buyerOnFakes(ME, {
    providers: [P1],
    rank: (all: RankedCandidate[], _at: number, excluded: ReadonlySet<string> | undefined) => all.filter((c) => c.provider === P1.did && !excluded?.has(c.provider)),
    exec: () => failingStream('NET_STREAM_FAILED', 'provider gone'),
    deps: { rescue: async () => (calls++, { offers: 0, asked: [] }) },
  });
  assert.equal((await none.buyer.run(fakeSpec({ deadlineMs: 240_000 }))).status, 'failed');
  assert.equal(calls, 1);
});

test('no ask when the deadline is no more than a collection window away', { timeout: 20_000 }, async () => {
  let now = NOW;
  const { f, asks } = rig(undefined, () => now);
  const run = f.buyer.run(fakeSpec({ deadlineMs: 240_000 }), (e) => {
    // p1 fails with the deadline 5 ms away (the fakes' collection window is 10 ms)
    if (e.e === 'selection') now = NOW + 240_000 - 5;
  });
  const result = await run;
  assert.equal(asks.length, 0);
  assert.deepEqual(f.execs, [P1.did]);
  assert.equal(result.status, 'failed');
});
