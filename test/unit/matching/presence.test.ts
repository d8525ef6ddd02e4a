/** The live-provider view (src/matching/presence.ts; docs/matching.md "Presence") with a fake clock. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { seal, T, type Advert, type Opened, type Presence } from '../../../src/records/index.js';
import { PresenceView } from '../../../src/matching/presence.js';
import { presenceHook, PRESENCE_HOOK_ERR } from '../../../src/node/presence-wiring.js';
import { ValidationError } from '../../../src/net/gossip-validation.js';
import { fakeClock } from '../../../src/util/clock.js';
import { NOW, P, advert, byDid, shuffle, type Party } from '../market/fixtures.js';

function presence(p: Party, over: Partial<Presence> = {}): Opened<Presence> {
  return seal(T.presence, { workloads: ['infer.llm'], freeSlots: 2, issuedAt: NOW, windowMs: 15_000, ...over }, p.signer);
}

/** A view over the given parties' adverts (all live unless said otherwise). */
function view(adverts: Opened<Advert>[], opts: ConstructorParameters<typeof PresenceView>[1] = {}): PresenceView {
  const by = new Map(adverts.map((a) => [a.signer, a]));
  return new PresenceView((did, now) => {
    const a = by.get(did);
    return a && a.record.expiresAt > now ? a : undefined;
  }, opts);
}

test('a presence is live for its window after issuedAt, then gone (and dropped from memory)', () => {
  const v = view([advert(P(1))]);
  assert.equal(v.add(presence(P(1)), NOW), 'added');
  assert.deepEqual(v.live(NOW + 14_999).map((l) => [l.did, l.freeSlots, l.liveUntil]), [[P(1).did, 2, NOW + 15_000]]);
  assert.deepEqual(v.live(NOW + 15_000), []);
  assert.equal(v.size, 0);
  // One that arrives already past its window is not kept.
  assert.equal(v.add(presence(P(1)), NOW + 15_000), 'expired');
  assert.equal(v.size, 0);
});

test('a later presence replaces the held one; an earlier one does not', () => {
  const v = view([advert(P(1))]);
  v.add(presence(P(1), { issuedAt: NOW, freeSlots: 2 }), NOW);
  assert.equal(v.add(presence(P(1), { issuedAt: NOW + 5_000, freeSlots: 0 }), NOW + 5_000), 'replaced');
  assert.equal(v.add(presence(P(1), { issuedAt: NOW + 1_000, freeSlots: 3 }), NOW + 5_000), 'stale');
  const l = v.live(NOW + 16_000);
  assert.equal(l.length, 1, 'the newer record keeps it live past the older one’s window');
  assert.equal(l[0]!.freeSlots, 0);
  assert.equal(l[0]!.liveUntil, NOW + 20_000);
});

test('freeSlots 0 is live (taking no new work)', () => {
  const v = view([advert(P(1))]);
  v.add(presence(P(1), { freeSlots: 0 }), NOW);
  const l = v.live(NOW);
  assert.equal(l.length, 1);
  assert.equal(l[0]!.freeSlots, 0);
});

test('no live advert: not live; workloads are those the advert lists too', () => {
  const a2 = advert(P(2), { expiresAt: NOW + 5_000 });
  const v = view([advert(P(1), { workloads: ['infer.llm'] }), a2]);
  v.add(presence(P(1), { workloads: ['embed.text', 'infer.llm'] }), NOW);
  v.add(presence(P(2)), NOW);
  assert.equal(v.add(presence(P(3)), NOW), 'no-advert', 'not even held');
  assert.deepEqual(v.live(NOW).map((l) => l.did), byDid([P(1), P(2)]).map((p) => p.did));
  assert.deepEqual(v.live(NOW).find((l) => l.did === P(1).did)!.workloads, ['infer.llm']);
  assert.deepEqual(v.live(NOW + 5_000).map((l) => l.did), [P(1).did], 'P(2)’s advert expired');
});

test('a window is capped at maxWindowMs whatever the record claims; the far future is refused', () => {
  const v = view([advert(P(1))], { maxWindowMs: 20_000, skewMs: 1_000 });
  v.add(presence(P(1), { windowMs: 600_000 }), NOW);
  assert.equal(v.live(NOW + 19_999).length, 1);
  assert.equal(v.live(NOW + 20_000).length, 0);
  assert.equal(v.add(presence(P(1), { issuedAt: NOW + 2_000 }), NOW), 'future');
});

test('a clock running ahead does not stretch the window: liveness counts from receipt when a record is dated ahead of it (QA qaMatch F3)', () => {
  // a provider whose clock is 25 s fast, 6 s windows: before, live until issuedAt + 6 s = 31 s after it was received
  const v = view([advert(P(1))], { skewMs: 30_000 });
  assert.equal(v.add(presence(P(1), { issuedAt: NOW + 25_000, windowMs: 6_000, freeSlots: 2 }), NOW), 'added');
  assert.deepEqual(v.live(NOW + 5_999).map((l) => [l.did, l.liveUntil]), [[P(1).did, NOW + 6_000]]);
  assert.deepEqual(v.live(NOW + 6_000), [], 'gone when its window, counted from receipt, ends');
});

test('the records a provider signs once its clock is put right replace the one dated ahead (QA qaMatch F3)', () => {
  const v = view([advert(P(1))], { skewMs: 30_000 });
  v.add(presence(P(1), { issuedAt: NOW + 25_000, windowMs: 6_000, freeSlots: 2 }), NOW);
  // restarted with a correct clock: a lower issuedAt, received later; before, `stale` until the first one lapsed
  assert.equal(v.add(presence(P(1), { issuedAt: NOW + 3_000, windowMs: 6_000, freeSlots: 1 }), NOW + 3_000), 'replaced');
  assert.deepEqual(v.live(NOW + 3_000).map((l) => [l.freeSlots, l.liveUntil]), [[1, NOW + 9_000]]);
  // a record signed before the held one's receipt, arriving late, is still older
  assert.equal(v.add(presence(P(1), { issuedAt: NOW + 1_000, windowMs: 6_000, freeSlots: 0 }), NOW + 3_500), 'stale');
  // records no later than their receipt order by issuedAt, whatever the arrival order (as before)
  assert.equal(v.add(presence(P(1), { issuedAt: NOW + 4_000, windowMs: 6_000, freeSlots: 2 }), NOW + 4_500), 'replaced');
  assert.equal(v.add(presence(P(1), { issuedAt: NOW + 3_900, windowMs: 6_000, freeSlots: 0 }), NOW + 4_600), 'stale');
});

test('bounded: past maxProviders the presence that lapses first goes', () => {
  const ps = [1, 2, 3, 4].map(P);
  const v = view(ps.map((p) => advert(p)), { maxProviders: 3 });
  ps.forEach((p, i) => v.add(presence(p, { issuedAt: NOW + (i === 0 ? 0 : 1000 * i) }), NOW + 3000));
  assert.equal(v.size, 3);
  assert.deepEqual(v.live(NOW + 3000).map((l) => l.did), byDid(ps.slice(1)).map((p) => p.did));
});

test('deterministic: the same records in any arrival order give the same view, in DID order', () => {
  const ps = Array.from({ length: 12 }, (_, i) => P(i + 1));
  const recs = ps.flatMap((p, i) => [presence(p, { issuedAt: NOW - 1000 * (i % 4), freeSlots: i % 3 }), presence(p, { issuedAt: NOW - 2000 * (i % 4) - 500, freeSlots: 7 })]);
  const ads = ps.map((p) => advert(p));
  const clock = fakeClock(NOW);
  const runs = [1, 2, 3, 4, 5].map((seed) => {
    const v = view(ads);
    for (const r of shuffle(recs, seed)) v.add(r, clock());
    return v.live(clock() + 9_000).map((l) => [l.did, l.presence.address, l.freeSlots]);
  });
  for (const r of runs) assert.deepEqual(r, runs[0]);
  assert.deepEqual(runs[0]!.map((r) => r[0]), byDid(ps).map((p) => p.did));
  assert.ok(runs[0]!.every((r) => r[2] !== 7), 'the newest presence wins');
});

test('gossip hook: presence needs the signer’s live advert and only its workloads', async () => {
  const clock = fakeClock(NOW);
  const a = advert(P(1), { workloads: ['infer.llm'] });
  const hook = presenceHook((did) => (did === a.signer ? a : undefined), clock);
  const code = async (p: Opened<Presence>) => {
    try {
      await hook(p, { attachments: [] } as never);
      return 'accept';
    } catch (e) {
      assert.ok(e instanceof ValidationError);
      assert.equal(e.verdict, 'ignore');
      return e.code;
    }
  };
  assert.equal(await code(presence(P(1))), 'accept');
  assert.equal(await code(presence(P(2))), PRESENCE_HOOK_ERR.PRESENCE_NO_ADVERT);
  assert.equal(await code(presence(P(1), { workloads: ['embed.text', 'infer.llm'] })), PRESENCE_HOOK_ERR.PRESENCE_WORKLOAD_NOT_ADVERTISED);
});

test('a flood changes nothing: one signer’s records only replace its own; keys without adverts are never live', () => {
  const v = view([advert(P(1))]);
  for (let i = 0; i < 500; i++) v.add(presence(P(1), { issuedAt: NOW + i, freeSlots: i % 5 }), NOW + i);
  for (let i = 0; i < 50; i++) assert.equal(v.add(presence(P(1000 + i), { freeSlots: 9 }), NOW + 500), 'no-advert');
  assert.equal(v.size, 1, 'nothing held for keys without adverts');
  const l = v.live(NOW + 500);
  assert.deepEqual(l.map((x) => [x.did, x.freeSlots]), [[P(1).did, 499 % 5]]);
});

test('the honoured window grows with the market: a long window is honoured in a large market, capped in a small one', () => {
  const claim = 180_000; // a 10k market's provider signs 3-minute windows (or longer)
  // small market: 3 providers; the 60 s cap holds, and a claim of 10 min is refused too
  const small = view([1, 2, 3].map((i) => advert(P(i))));
  for (const i of [2, 3]) small.add(presence(P(i)), NOW);
  small.add(presence(P(1), { windowMs: claim }), NOW);
  assert.equal(small.liveUntil(presence(P(1), { windowMs: claim })), NOW + 60_000);
  assert.equal(small.liveUntil(presence(P(1), { windowMs: 600_000 })), NOW + 60_000);
  assert.deepEqual(small.live(NOW + 61_000).map((l) => l.did), []);
  // large market: 100 providers held in the record's market (target 1/s assumed by the peers: 2 × 100 / 1 = 200 s
  // intervals, a window up to 600 s honoured); the same record is live for its whole 180 s
  const parties = Array.from({ length: 100 }, (_, i) => P(i + 1));
  const large = view(parties.map((p) => advert(p)), { targetPerMarket: 1 });
  for (const p of parties.slice(1)) large.add(presence(p, { windowMs: claim }), NOW);
  large.add(presence(P(1), { windowMs: claim }), NOW);
  assert.equal(large.heldIn(['00', ...Array.from({ length: 16 }, (_, i) => i.toString(16).padStart(2, '0'))]), 100);
  assert.equal(large.liveUntil(presence(P(1), { windowMs: claim })), NOW + claim);
  assert.equal(large.live(NOW + 179_000).length, 100);
  assert.equal(large.liveUntil(presence(P(1), { windowMs: 600_000 })), NOW + 600_000, 'up to the record cap');
  // a record of another market is judged by that market's size (none held there): 60 s
  assert.equal(large.liveUntil(presence(P(1), { workloads: ['other.w'], windowMs: claim })), NOW + 60_000);
  assert.deepEqual(large.live(NOW + 181_000), []);
  assert.equal(large.size, 0);
});
