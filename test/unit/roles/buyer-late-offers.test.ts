/**
 * Offers that come late (review r2 of the dial-ahead): the run's loop allowed 2 × (the first ranking) + 1 turns, but
 * each later decision reads the live book, so offers that came after the first decision join it. A key with a
 * black-hole address won the first decision; six fresh keys with no address known quoted meanwhile and ranked first
 * in the next decisions; each was set aside in a turn of its own, the turns ran out, and the job failed in 9 s with
 * one attempt (`bh-sybil: not reached`) while the two honest providers were never tried nor named. Now setting keys
 * aside uses no turn (every key of the decision with no address known is set aside in one), the loop ends only when
 * no provider is left, at the deadline or on delivery, and a run that ends at the deadline names those it did not try.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import * as buyerRole from '../../../src/roles/buyer.js';
import type { RankedCandidate } from '../../../src/roles/buyer.js';
import { NOW, P, type Party } from '../market/fixtures.js';
import { buyerOnFakes, fakeSpec, failingStream as failing } from './buyer-fakes.js';

const ME = P(860);
const BH = P(861);
const P1 = P(862);
const P2 = P(863);

/** The first decision ranks the black-hole key, then p1 and p2; every later one the late keys first (they quote less). */
function lateRanking(late: Party[]) {
  return (all: RankedCandidate[], _at: number, excluded: ReadonlySet<string> | undefined) => {
    const by = new Map(all.map((c) => [c.provider, c]));
    const order = excluded === undefined ? [BH, P1, P2] : [...late, BH, P1, P2];
    return order.map((p) => by.get(p.did)!).filter((c) => !excluded?.has(c.provider));
  };
}

function fakes(late: Party[], deps: Record<string, unknown> = {}, clock?: () => number) {
  let decisions = 0;
  const rank = lateRanking(late);
  const f = buyerOnFakes(ME, {
    providers: [BH, P1, P2, ...late],
    rank: (all, at, excluded) => {
      decisions++;
      return rank(all, at, excluded);
    },
    exec: () => failing('NET_STREAM_FAILED', 'reached'),
    ...(clock ? { clock } : {}),
    deps: {
      dial: async (did: string, lookUp: boolean) => {
        if (did === BH.did) throw new C0Error('NET_DIAL_FAILED', 'black hole');
        if (late.some((p) => p.did === did)) throw new C0Error(lookUp ? 'NET_DIAL_FAILED' : buyerRole.NO_ADDRESS, 'no address');
      },
      ...deps,
    },
  });
  return { f, decisions: () => decisions };
}

test('late keys with no address known do not use up the turns: the honest providers are tried', { timeout: 20_000 }, async () => {
  const late = Array.from({ length: 6 }, (_, i) => P(870 + i));
  const { f } = fakes(late);
  const result = await f.buyer.run(fakeSpec({ deadlineMs: 600_000 }));
  assert.deepEqual(f.execs, [P1.did, P2.did], 'both honest providers are sent the job, p1 first');
  assert.equal(result.attempts[0]!.provider, BH.did);
  assert.equal(result.attempts[0]!.outcome, 'not reached, not selected: NET_DIAL_FAILED');
  assert.deepEqual(
    result.attempts.slice(1, 3).map((a) => a.provider),
    [P1.did, P2.did],
  );
  // then the late keys, looked up, are not reached either
  assert.deepEqual(new Set(result.attempts.slice(3).map((a) => a.provider)), new Set(late.map((p) => p.did)));
});

test('a flood of late keys with no address known is set aside in a few decisions, not one each', { timeout: 20_000 }, async () => {
  const late = Array.from({ length: 300 }, (_, i) => P(1000 + i));
  const probed: string[] = [];
  const { f, decisions } = fakes(late, {
    addressKnown: async (did: string) => {
      probed.push(did);
      return !late.some((p) => p.did === did);
    },
  });
  let atP2 = -1;
  const result = await f.buyer.run(fakeSpec({ deadlineMs: 600_000 }), (e) => {
    if (e.e === 'selection' && e.winner.provider === P2.did) atP2 = decisions();
  });
  assert.deepEqual(f.execs, [P1.did, P2.did], 'the honest providers are sent the job');
  // the first decision, one without BH that sets the 300 aside at once, then p1's and p2's
  assert.ok(atP2 >= 1 && atP2 <= 4, `decisions before p2 was selected: ${atP2}`);
  assert.ok(probed.length <= late.length + 2 * buyerRole.DIAL_AHEAD_MAX, `peer-store reads: ${probed.length}`);
  assert.deepEqual(
    result.attempts.slice(0, 3).map((a) => a.provider),
    [BH.did, P1.did, P2.did],
  );
  // then at most DIAL_AHEAD_MAX of the keys are looked up (not reached), the rest named as not tried, counted
  const lookedUp = result.attempts.filter((a) => a.outcome === 'not reached, not selected: NET_DIAL_FAILED').length - 1;
  assert.equal(lookedUp, buyerRole.DIAL_AHEAD_MAX);
  // (and one more that sets aside at once every key left with no address known, past the look-ups)
  assert.ok(decisions() <= 4 + 1 + buyerRole.DIAL_AHEAD_MAX + 2, `decisions: ${decisions()}`);
  const named = result.attempts.filter((a) => a.outcome.startsWith('not tried'));
  assert.equal(named.length, buyerRole.UNTRIED_NAMED + 1);
  assert.equal(named.at(-1)!.provider, `(${late.length - buyerRole.DIAL_AHEAD_MAX - buyerRole.UNTRIED_NAMED} more)`);
});

test('a run that reaches its deadline names the live candidates it did not try', { timeout: 20_000 }, async () => {
  let now = NOW;
  const { f } = fakes(
    [],
    {
      dial: async (did: string) => {
        // the black hole's dial takes until past the job's deadline
        if (did === BH.did) {
          now = NOW + 700_000;
          throw new C0Error('NET_DIAL_FAILED', 'black hole');
        }
      },
    },
    () => now,
  );
  const result = await f.buyer.run(fakeSpec({ deadlineMs: 600_000 }));
  assert.equal(result.status, 'failed');
  assert.deepEqual(f.execs, []);
  assert.deepEqual(
    result.attempts.map((a) => [a.provider, a.outcome]),
    [
      [BH.did, 'not reached, not selected: NET_DIAL_FAILED'],
      [P1.did, 'not tried: the job’s deadline passed'],
      [P2.did, 'not tried: the job’s deadline passed'],
    ],
  );
});

test('past the look-ups a provider with an address whose offer came late is still tried: only look-ups count toward the cap', { timeout: 20_000 }, async () => {
  const late = Array.from({ length: 40 }, (_, i) => P(1400 + i));
  const P3 = P(1499);
  let lookingUp = false;
  const f = buyerOnFakes(ME, {
    providers: [P1, P3, ...late],
    // p1 first; then the 40 keys with no address, and, once the look-ups began, p3 (its offer came late) below them
    rank: (all, _at, excluded) => {
      const by = new Map(all.map((c) => [c.provider, c]));
      const order = excluded === undefined ? [P1] : [...late, ...(lookingUp ? [P3] : [])];
      return order.map((p) => by.get(p.did)!).filter((c) => !excluded?.has(c.provider));
    },
    exec: () => failing('NET_STREAM_FAILED', 'reached'),
    deps: {
      dial: async (did: string, lookUp: boolean) => {
        if (lookUp) lookingUp = true;
        if (late.some((p) => p.did === did)) throw new C0Error(lookUp ? 'NET_DIAL_FAILED' : buyerRole.NO_ADDRESS, 'no address');
      },
      addressKnown: async (did: string) => !late.some((p) => p.did === did),
    },
  });
  const result = await f.buyer.run(fakeSpec({ deadlineMs: 600_000 }));
  assert.deepEqual(f.execs, [P1.did, P3.did], 'p3 is sent the job after the look-ups');
  assert.equal(result.attempts.filter((a) => a.outcome === 'not reached, not selected: NET_DIAL_FAILED').length, buyerRole.DIAL_AHEAD_MAX);
});

test('a flood of late offers that each fail is bounded: at most MAX_SELECTIONS_PER_RUN selections, the rest named and counted', { timeout: 30_000 }, async () => {
  const late = Array.from({ length: 200 }, (_, i) => P(1600 + i));
  const f = buyerOnFakes(ME, {
    providers: [P1, ...late],
    // p1 first; then 200 keys that quote less, each reachable, each failing its attempt
    rank: (all, _at, excluded) => {
      const by = new Map(all.map((c) => [c.provider, c]));
      const order = excluded === undefined ? [P1] : late;
      return order.map((p) => by.get(p.did)!).filter((c) => !excluded?.has(c.provider));
    },
    exec: () => failing('NET_STREAM_FAILED', 'reached'),
    deps: { dial: async () => undefined, addressKnown: async () => true },
  });
  const result = await f.buyer.run(fakeSpec({ deadlineMs: 600_000 }));
  assert.equal(f.execs.length, buyerRole.MAX_SELECTIONS_PER_RUN, 'selections stop at the bound');
  const named = result.attempts.filter((a) => a.outcome.startsWith('not tried'));
  assert.equal(named.length, buyerRole.UNTRIED_NAMED + 1, 'the rest named, then counted');
  assert.match(named[0]!.outcome, /providers were selected and none delivered/);
  assert.ok(result.attempts.length <= buyerRole.MAX_SELECTIONS_PER_RUN + buyerRole.UNTRIED_NAMED + 1);
});
