/**
 * Keys that cannot be dialled (Sybil review, phase a): forty fresh keys with no listening address quoted every job at
 * next to nothing, ranked first, and each became an attempt of its own: a selection signed, stored and published, a
 * dial that failed (NET_DIAL_FAILED), a non-delivery signed, stored and published, then the next. 0.4–1.4 s each, so
 * a job took 17–29 s and a few more keys let the honest offer (30 s) lapse. Now the buyer dials the winner and the
 * next of the ranking at once before it signs a selection (DIAL_AHEAD), and a winner that cannot be dialled is left
 * out of the decision, which is taken again without it: no selection names it, so none is signed for it, and no
 * non-delivery either. A winner with no address known is not looked up while a provider with one is left.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import * as buyerRole from '../../../src/roles/buyer.js';
import type { Selection } from '../../../src/records/kinds.js';
import { P } from '../market/fixtures.js';
import { buyerOnFakes, fakeSpec, failingStream as failing } from './buyer-fakes.js';

const ME = P(820);
const KEYS = Array.from({ length: 12 }, (_, i) => P(821 + i));
const HONEST = P(840);

test('winners that cannot be dialled are dialled at once, left out without a selection or a non-delivery, and the first reachable provider gets the job', { timeout: 20_000 }, async () => {
  const dialled: string[] = [];
  const held: Array<() => void> = [];
  const execs: string[] = [];
  const f = buyerOnFakes(ME, {
    providers: [...KEYS, HONEST],
    exec: () => {
      throw new Error('replaced below');
    },
    deps: {
      // a key's dial fails only once DIAL_AHEAD dials were asked for: a buyer that waited for each dial before the
      // next would never see the first one end (and the test's timeout would fail it)
      dial: (did: string) => {
        dialled.push(did);
        // these keys have addresses (stale ones): each dial is a real one
        if (did === HONEST.did) return Promise.resolve();
        const fail = new Promise<void>((_, reject) => held.push(() => reject(new C0Error('NET_DIAL_FAILED', 'no address'))));
        if (dialled.length >= buyerRole.DIAL_AHEAD) for (const r of held.splice(0)) r();
        return fail;
      },
      exec: (did: string) => {
        execs.push(did);
        return failing('NET_STREAM_FAILED', 'reached');
      },
    },
  });
  const result = await f.buyer.run(fakeSpec({ deadlineMs: 600_000 }));
  assert.deepEqual(execs, [HONEST.did], 'only the reachable provider is sent the job');
  assert.deepEqual(
    result.attempts.map((a) => a.provider),
    [...KEYS, HONEST].map((p) => p.did),
  );
  for (const a of result.attempts.slice(0, KEYS.length)) {
    assert.equal(a.outcome, 'not reached, not selected: NET_DIAL_FAILED');
    assert.equal(a.nondelivery, undefined);
  }
  const selections = f.published.filter((p) => p.kind === 'selection').map((p) => p.rec.record as Selection);
  assert.equal(selections.length, 1, 'one selection: the reachable provider’s');
  assert.equal(selections[0]!.winner, f.candidate(HONEST)!.offer.address);
  assert.equal(f.nondeliveries().length, 1, 'the only non-delivery is the selected provider’s');
  assert.equal(new Set(dialled).size, dialled.length, 'each provider dialled once');
});

test('a node that stops while the winner is being dialled ends the run as interrupted', { timeout: 20_000 }, async () => {
  let asked!: () => void;
  const dialling = new Promise<void>((r) => (asked = r));
  const f = buyerOnFakes(ME, {
    providers: [KEYS[0]!, HONEST],
    exec: () => failing('NET_STREAM_FAILED', 'not expected'),
    deps: {
      dial: () => {
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

test('keys with no address known cost no look-up while a provider with one is left; they are looked up after it failed, and one reached then is selected', { timeout: 20_000 }, async () => {
  const LEGACY = P(841);
  const dials: Array<[string, boolean]> = [];
  const execs: string[] = [];
  const order: string[] = [];
  // ranked: three keys, a provider reachable only by a look-up (one of the version before offers came direct), then
  // the honest provider, whose address is known (its stream fails: this test is about whom the buyer reaches)
  const f = buyerOnFakes(ME, {
    providers: [KEYS[0]!, KEYS[1]!, KEYS[2]!, LEGACY, HONEST],
    exec: () => {
      throw new Error('replaced below');
    },
    deps: {
      dial: async (did: string, lookUp: boolean) => {
        dials.push([did, lookUp]);
        if (lookUp) order.push('look-up');
        if (did === HONEST.did) return;
        if (!lookUp) throw new C0Error(buyerRole.NO_ADDRESS, 'no address known');
        if (did === LEGACY.did) return;
        throw new C0Error('NET_DIAL_FAILED', 'not found on the DHT');
      },
      exec: (did: string) => {
        execs.push(did);
        order.push(`exec ${did}`);
        return failing('NET_STREAM_FAILED', 'reached');
      },
    },
  });
  const result = await f.buyer.run(fakeSpec({ deadlineMs: 600_000 }));
  assert.equal(order[0], `exec ${HONEST.did}`, 'no look-up before the provider with an address was tried');
  assert.deepEqual(execs, [HONEST.did, LEGACY.did], 'the provider with an address first, then the one looked up');
  const looked = dials.filter(([, l]) => l).map(([d]) => d);
  assert.deepEqual(looked.sort(), [KEYS[0]!, KEYS[1]!, KEYS[2]!, LEGACY].map((p) => p.did).sort(), 'looked up only once the honest provider had failed');
  assert.deepEqual(
    result.attempts.map((a) => [a.provider, a.outcome.split(':')[0]]),
    [
      [HONEST.did, 'provider unreachable or gone'],
      [KEYS[0]!.did, 'not reached, not selected'],
      [KEYS[1]!.did, 'not reached, not selected'],
      [KEYS[2]!.did, 'not reached, not selected'],
      [LEGACY.did, 'provider unreachable or gone'],
    ],
  );
  assert.equal(f.nondeliveries().length, 2, 'the two selected providers’ only');
});
