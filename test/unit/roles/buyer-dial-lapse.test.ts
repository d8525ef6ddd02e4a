/**
 * Keys whose only address is a black hole (review s38: a TCP accept that never speaks, so each dial hangs 6-10 s): a
 * hostile relay ranked a hundred such keys first with next-to-nothing offers, the buyer dialled them ahead 8 to 32 at
 * a time, and the job failed at 33 s with the offers of the two providers it was connected to all along lapsed,
 * never tried. Now the wait for a winner's dial ends when the offer of a provider ranked after it that is reached
 * already (connected, or dialled ahead) would lapse within DIAL_LAPSE_MARGIN_MS: every provider not reached is set
 * aside and the decision is taken again among those reached. A reachable winner, dialled within DIAL_MIN_WAIT_MS, is
 * not passed over.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import * as buyerRole from '../../../src/roles/buyer.js';
import type { Selection } from '../../../src/records/kinds.js';
import { NOW, P, advert, offer, type Party } from '../market/fixtures.js';
import { buyerOnFakes, fakeSpec, failingStream as failing, type BuyerFakes } from './buyer-fakes.js';

const ME = P(860);
const KEYS = Array.from({ length: 12 }, (_, i) => P(861 + i));
const HONEST = P(880);
// the honest offer lapses 1 s from the (fake, frozen) clock's now; with a 900 ms margin the buyer stops waiting for a
// dial 100 ms (of real time) after it began
const SHORT = { startBy: NOW + 1_000, expiresAt: NOW + 1_000 };
const MARGIN = { dialLapseMarginMs: 900, dialMinWaitMs: 10 };

/** Dials to `keys` that hang until `release` is called (then they fail, or succeed with `ok`); any other dial succeeds. */
function hangingDials(keys: Party[], ok = false) {
  const dialled: string[] = [];
  const held: Array<() => void> = [];
  let released = false;
  const settle = (res: () => void, rej: (e: Error) => void) => (ok ? res() : rej(new C0Error('NET_DIAL_FAILED', 'the handshake timed out')));
  return {
    dialled,
    release: () => {
      released = true;
      for (const r of held.splice(0)) r();
    },
    dial: (did: string) => {
      dialled.push(did);
      if (!keys.some((k) => k.did === did)) return Promise.resolve();
      return new Promise<void>((res, rej) => (released ? settle(res, rej) : held.push(() => settle(res, rej))));
    },
  };
}

/**
 * The buyer on fakes for these cases: `short`'s offer is the one about to lapse, `connected` says who is connected,
 * `dial` dials; each exec is recorded in `execs`, told to `onExec`, and fails as a broken stream.
 */
function lapseRig(o: { providers: Party[]; short: Party; dial: (did: string) => Promise<void>; connected: (did: string) => boolean; onExec?: (did: string) => void; margin?: Record<string, number> } & Pick<BuyerFakes, 'clock' | 'rank'>) {
  const execs: string[] = [];
  const f = buyerOnFakes(ME, {
    providers: o.providers,
    ...(o.clock ? { clock: o.clock } : {}),
    ...(o.rank ? { rank: o.rank } : {}),
    offerFor: (p, job) => offer(p, job, advert(p), p === o.short ? SHORT : {}),
    exec: () => {
      throw new Error('replaced below');
    },
    deps: {
      ...(o.margin ?? MARGIN),
      dial: o.dial,
      connected: o.connected,
      exec: (did: string) => {
        execs.push(did);
        o.onExec?.(did);
        return failing('NET_STREAM_FAILED', 'reached');
      },
    },
  });
  return { f, execs };
}

test('keys whose dials hang do not let a connected provider’s offer lapse: the providers not reached are set aside and the connected one is selected', { timeout: 20_000 }, async () => {
  const d = hangingDials(KEYS);
  let dialledAtExec = -1;
  const excludedAt: Array<ReadonlySet<string> | undefined> = [];
  const { f, execs } = lapseRig({
    providers: [...KEYS, HONEST],
    short: HONEST,
    rank: (all, _at, excluded) => {
      excludedAt.push(excluded);
      return all.filter((c) => !excluded?.has(c.provider));
    },
    dial: d.dial,
    connected: (did) => did === HONEST.did,
    onExec: (did) => {
      if (did !== HONEST.did) return;
      dialledAtExec = d.dialled.filter((k) => k !== HONEST.did).length;
      // the black holes' dials end only now (their timeout): the run can end
      d.release();
    },
  });
  const result = await f.buyer.run(fakeSpec({ deadlineMs: 600_000 }));
  assert.deepEqual(execs, [HONEST.did], 'the connected provider is sent the job while the keys’ dials still hang');
  // every key ranked above it was dialled and had its least wait first (the 8 dialled ahead, then the 4 past them):
  // a key never dialled is not set aside, so an honest provider ranked among them is not passed over untried
  assert.equal(dialledAtExec, KEYS.length, 'every key ranked above the connected provider dialled before it was sent the job');
  const selections = f.published.filter((p) => p.kind === 'selection').map((p) => p.rec.record as Selection);
  assert.equal(selections.length, 1);
  assert.equal(selections[0]!.winner, f.candidate(HONEST)!.offer.address);
  // the decision that selected it left every key out (so the selection's considered offers recompute to it)
  const selecting = excludedAt.find((e) => e && KEYS.every((k) => e.has(k.did)) && !e.has(HONEST.did));
  assert.ok(selecting, 'a decision without the keys');
  // once the connected provider failed, the keys set aside are waited for again and named as not reached
  assert.deepEqual(
    result.attempts.map((a) => [a.provider, a.outcome.split(':')[0]]),
    [[HONEST.did, 'provider unreachable or gone'], ...KEYS.map((k) => [k.did, 'not reached, not selected'])],
  );
  assert.equal(f.nondeliveries().length, 1, 'the selected provider’s only');
});

test('a hostile connected provider whose offer is about to lapse does not take the job from an honest one ranked above it that was never dialled (second-round review: 8 keys whose dials hang, then the honest one, then the hostile one)', { timeout: 20_000 }, async () => {
  const keys = KEYS.slice(0, buyerRole.DIAL_AHEAD);
  const GOOD = P(881);
  const HOSTILE = P(882);
  const d = hangingDials(keys);
  const { f, execs } = lapseRig({
    providers: [...keys, GOOD, HOSTILE],
    short: HOSTILE,
    dial: d.dial,
    // the hostile provider dialled the buyer itself; the honest one is reachable, and not connected yet
    connected: (did) => did === HOSTILE.did,
    onExec: () => d.release(),
  });
  await f.buyer.run(fakeSpec({ deadlineMs: 600_000 }));
  // before: past the dials ahead (the 8 keys) the honest provider was never dialled, was set aside with the keys as
  // not reached, and the hostile one was selected first
  assert.equal(execs[0], GOOD.did, `the honest provider is dialled and selected first (order: ${execs.join(', ')})`);
  assert.ok(d.dialled.indexOf(GOOD.did) >= 0, 'it was dialled');
});

test('a winner that counts as connected while its own dial hangs is waited for, not decided on again and again (second-round review: ~250 turns in 0.9 s)', { timeout: 20_000 }, async () => {
  const W = KEYS[0]!;
  const RUNNER = P(883);
  const d = hangingDials([W], true);
  let decisions = 0;
  let asked = 0;
  // a clock that runs: once the wait's end is past, every turn's wait would be 0 ms
  const t0 = Date.now();
  const { f } = lapseRig({
    providers: [W, RUNNER],
    short: RUNNER,
    clock: () => NOW + (Date.now() - t0),
    rank: (all, _at, excluded) => {
      decisions++;
      return all.filter((c) => !excluded?.has(c.provider));
    },
    dial: d.dial,
    connected: (did) => {
      asked++;
      return did === W.did || did === RUNNER.did;
    },
  });
  // the dial settles (succeeds) a while after the wait's margin ran out (100 ms in), before the runner-up's offer lapses
  setTimeout(() => d.release(), 600);
  await f.buyer.run(fakeSpec({ deadlineMs: 600_000 }));
  // each turn asks who is connected: a few turns, not one after another for as long as the dial hangs
  assert.ok(asked < 40, `${asked} connection checks (${decisions} decisions) while one dial was pending`);
});

test('a connected runner-up whose offer lapses within the margin already: the wait for the winner’s hung dial ends after its least wait', { timeout: 20_000 }, async () => {
  // the margin began before this winner came up (the winner before it failed late, say): its dial still gets its least
  // wait, and no longer than that
  const d = hangingDials(KEYS);
  const { f, execs } = lapseRig({
    providers: [...KEYS, HONEST],
    short: HONEST,
    clock: () => NOW + 500,
    dial: d.dial,
    connected: (did) => did === HONEST.did,
    onExec: (did) => did === HONEST.did && d.release(),
  });
  await f.buyer.run(fakeSpec({ deadlineMs: 600_000 }));
  assert.equal(execs[0], HONEST.did, 'the connected provider is sent the job while the keys’ dials still hang');
});

test('a provider set aside while its dial hung is back in the decision once its dial succeeds', { timeout: 20_000 }, async () => {
  const d = hangingDials([KEYS[0]!], true);
  const { f, execs } = lapseRig({
    providers: [KEYS[0]!, HONEST],
    short: HONEST,
    dial: d.dial,
    connected: (did) => did === HONEST.did,
    onExec: (did) => did === HONEST.did && d.release(),
  });
  await f.buyer.run(fakeSpec({ deadlineMs: 600_000 }));
  assert.deepEqual(execs, [HONEST.did, KEYS[0]!.did], 'the connected provider first, then the key once reached');
  assert.equal(f.published.filter((p) => p.kind === 'selection').length, 2);
});

test('every provider reachable: the decision’s winner is selected, though a connected runner-up’s offer lapses soon', { timeout: 20_000 }, async () => {
  const { f, execs } = lapseRig({
    providers: [KEYS[0]!, HONEST],
    short: HONEST,
    // the margin as in the tests above, the least wait the default (DIAL_MIN_WAIT_MS)
    margin: { dialLapseMarginMs: MARGIN.dialLapseMarginMs },
    // the winner is not connected; its dial takes a moment (a real one, well within the least wait)
    dial: (did) => (did === HONEST.did ? Promise.resolve() : new Promise<void>((r) => setTimeout(r, 20))),
    connected: (did) => did === HONEST.did,
  });
  const result = await f.buyer.run(fakeSpec({ deadlineMs: 600_000 }));
  assert.deepEqual(execs, [KEYS[0]!.did, HONEST.did], 'the winner first, the runner-up after it failed');
  assert.equal(result.attempts[0]!.provider, KEYS[0]!.did);
});

test('a node that stops while it waits for a dial beside a connected runner-up ends the run interrupted, its wait’s timer with it', { timeout: 20_000 }, async () => {
  let asked!: () => void;
  const dialling = new Promise<void>((r) => (asked = r));
  const f = buyerOnFakes(ME, {
    // the runner-up's offer lapses 120 s from now (the fixtures' default): the wait would end 115 s from now
    providers: [KEYS[0]!, HONEST],
    exec: () => failing('NET_STREAM_FAILED', 'not expected'),
    deps: {
      connected: (did: string) => did === HONEST.did,
      dial: (did: string) => {
        if (did === HONEST.did) return Promise.resolve();
        asked();
        return new Promise<void>(() => {});
      },
    },
  });
  const run = f.buyer.run(fakeSpec({ deadlineMs: 600_000 }));
  await dialling;
  await f.buyer.interrupt();
  const result = await run;
  assert.equal(result.status, 'interrupted');
  assert.deepEqual(f.execs, []);
  assert.equal(f.published.filter((p) => p.kind === 'selection').length, 0);
});
