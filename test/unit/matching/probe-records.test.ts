/**
 * The offline probe's live providers (`market probe --records`, liveFromRecords in src/matching/probe.ts) follow the
 * daemon's rule (PresenceView, src/matching/presence.ts): a presence's window capped as the view caps it, its
 * workloads those its advert lists, the newest presence per provider (equal issuedAt: the higher address) and no older
 * one standing in for it once it lapses. Each case is checked against a PresenceView that heard every record as it was
 * issued, as a daemon does.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { liveFromRecords } from '../../../src/matching/probe.js';
import { PresenceView } from '../../../src/matching/presence.js';
import type { LiveProvider } from '../../../src/matching/types.js';
import { seal, T, type Advert, type Opened, type Presence } from '../../../src/records/index.js';
import { NOW, P, advert } from '../market/fixtures.js';

const W = 'infer.llm';
const prices = [{ workload: W, unit: 'job', price: { amount: '0.5', currency: 'USD' } }];
const presence = (n: number, over: Partial<Presence> = {}) => seal(T.presence, { workloads: [W], freeSlots: 4, issuedAt: NOW - 1_000, windowMs: 15_000, ...over }, P(n).signer);

/** A daemon's view at `now`: every presence heard when issued, the latest advert of each provider. */
function daemon(presences: Opened<Presence>[], adverts: Opened<Advert>[], now: number): LiveProvider[] {
  const latest = new Map<string, Opened<Advert>>();
  for (const a of adverts) {
    const c = latest.get(a.signer);
    if (!c || a.record.seq > c.record.seq) latest.set(a.signer, a);
  }
  const view = new PresenceView((did, t) => {
    const a = latest.get(did);
    return a && a.record.expiresAt > t ? a : undefined;
  });
  for (const p of [...presences].sort((a, b) => a.record.issuedAt - b.record.issuedAt)) view.add(p, p.record.issuedAt);
  return view.live(now);
}

const brief = (l: LiveProvider[]) => l.map((p) => ({ did: p.did, presence: p.presence.address, workloads: p.workloads, freeSlots: p.freeSlots, liveUntil: p.liveUntil }));

test('a window longer than the view honours is capped offline as in the daemon', () => {
  const ads = [advert(P(1), { prices })];
  const long = [presence(1, { issuedAt: NOW - 300_000, windowMs: 600_000 })];
  assert.deepEqual(daemon(long, ads, NOW), []);
  assert.deepEqual(liveFromRecords(long, ads, NOW), []);
  // inside the honoured 60 s: live, until issuedAt + 60 s
  const fresh = [presence(1, { issuedAt: NOW - 30_000, windowMs: 600_000 })];
  assert.deepEqual(brief(liveFromRecords(fresh, ads, NOW)), brief(daemon(fresh, ads, NOW)));
  assert.equal(liveFromRecords(fresh, ads, NOW)[0]!.liveUntil, NOW + 30_000);
});

test('workloads the advert does not list are not live offline either', () => {
  const ads = [advert(P(1), { prices, workloads: [W] })];
  const ps = [presence(1, { workloads: [W, 'train.lora'] })];
  assert.deepEqual(liveFromRecords(ps, ads, NOW)[0]!.workloads, [W]);
  assert.deepEqual(brief(liveFromRecords(ps, ads, NOW)), brief(daemon(ps, ads, NOW)));
});

test('of two presences issued at once the higher address is kept; a newer one lapsed is not replaced by an older one', () => {
  const ads = [advert(P(1), { prices }), advert(P(2), { prices })];
  const twins = [presence(1, { freeSlots: 1 }), presence(1, { freeSlots: 2 })];
  const higher = twins[0]!.address > twins[1]!.address ? twins[0]! : twins[1]!;
  for (const order of [twins, [...twins].reverse()]) {
    assert.equal(liveFromRecords(order, ads, NOW)[0]!.presence.address, higher.address);
    assert.deepEqual(brief(liveFromRecords(order, ads, NOW)), brief(daemon(order, ads, NOW)));
  }
  // P(2): an older presence still inside its window, a newer one past its own
  const lapsed = [presence(2, { issuedAt: NOW - 20_000, windowMs: 60_000 }), presence(2, { issuedAt: NOW - 16_000, windowMs: 15_000 })];
  assert.deepEqual(daemon(lapsed, ads, NOW), []);
  assert.deepEqual(liveFromRecords(lapsed, ads, NOW), []);
});

test('a market of many providers: the same live set offline as in the daemon, whatever the records’ order', () => {
  const ads = Array.from({ length: 40 }, (_, i) => advert(P(i + 1), { prices, workloads: i % 3 === 0 ? [W, 'train.lora'] : [W] }));
  const ps: Opened<Presence>[] = [];
  for (let i = 1; i <= 40; i++) {
    ps.push(presence(i, { issuedAt: NOW - 1_000 * i, windowMs: 5_000 * (i % 7) + 5_000, workloads: [W, 'train.lora'], freeSlots: i % 4 }));
    if (i % 5 === 0) ps.push(presence(i, { issuedAt: NOW - 1_000 * i, windowMs: 90_000, freeSlots: 9 }));
  }
  const want = brief(daemon(ps, ads, NOW));
  assert.ok(want.length > 5 && want.length < 40, `${want.length} live`);
  assert.deepEqual(brief(liveFromRecords(ps, ads, NOW)), want);
  assert.deepEqual(brief(liveFromRecords([...ps].reverse(), ads, NOW)), want);
});
