/**
 * What the network keeps of records dropped for their dates (src/net/clock-drops.ts): offers only for this node's own
 * jobs, so made-up jobs cannot crowd its notes out; a provider's adverts dated ahead only when the provider itself sent
 * them, cleared by its next advert taken, said for ten minutes at most.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ADVERT_AHEAD_SAID_MS, AdvertsAhead, ClockDrops } from '../../../src/net/clock-drops.js';
import { NOW, P, advert, job, offer } from '../market/fixtures.js';

test('offers dropped for their dates are noted only for the jobs this node announced; no flood of notes pushes one out, only its 256 later jobs do', () => {
  const drops = new ClockDrops(30_000);
  const buyer = P(1);
  // the buyer's 1,000 earlier jobs (their addresses are public: gossiped), then the one it waits for now
  const earlier = Array.from({ length: 1000 }, (_, i) => job(buyer, { announcedAt: NOW - 10_000 - i }).address);
  for (const j of earlier) drops.expect(j);
  const mine = job(buyer);
  const provider = P(2);
  const ad = advert(provider);
  const dated = { issuedAt: NOW + 60_000, startBy: NOW + 120_000, expiresAt: NOW + 90_000 };
  const ahead = offer(provider, mine, ad, dated);
  drops.note(ahead.bytes, provider.did, 'RECORD_FROM_FUTURE', NOW);
  assert.equal(drops.of(mine.address).size, 0, 'not announced yet: not noted');
  drops.expect(mine.address);
  drops.note(ahead.bytes, P(3).did, 'RECORD_FROM_FUTURE', NOW);
  assert.equal(drops.of(mine.address).size, 0, 'sent by another peer than its signer: not noted');
  drops.note(ahead.bytes, provider.did, 'RECORD_FROM_FUTURE', NOW);
  const noted = { code: 'RECORD_FROM_FUTURE', byMs: 60_000, at: NOW };
  assert.deepEqual(drops.of(mine.address).get(provider.did), noted);
  // a peer's dated offers for each earlier job and for 1,000 jobs it made up
  const flooder = P(4);
  const fad = advert(flooder);
  for (const j of earlier) drops.note(offer(flooder, j, fad, dated).bytes, flooder.did, 'RECORD_FROM_FUTURE', NOW);
  for (let i = 0; i < 1000; i++) {
    const made = 'sha256:' + i.toString(16).padStart(64, '0');
    drops.note(offer(flooder, made, fad, dated).bytes, flooder.did, 'RECORD_FROM_FUTURE', NOW);
    assert.equal(drops.of(made).size, 0);
  }
  assert.deepEqual(drops.of(mine.address).get(provider.did), noted, 'still noted after the flood');
  assert.equal(drops.of(earlier.at(-1)!).size, 1, 'an earlier job still kept has its drop noted');
  // 256 jobs announced after it: it goes, as the oldest
  for (let i = 0; i < 256; i++) drops.expect(job(buyer, { announcedAt: NOW - 500 + i }).address);
  assert.equal(drops.of(mine.address).size, 0);
});

test('a provider’s advert dated ahead is noted when the provider sent it, cleared by one of its adverts taken, said ten minutes at most', () => {
  const ahead = new AdvertsAhead(30_000);
  const p = P(4);
  const early = advert(p, { issuedAt: NOW + 45_000, expiresAt: NOW + 3_600_000 });
  ahead.note(early.bytes, P(5).did, NOW);
  assert.deepEqual(ahead.recent(NOW), [], 'relayed by another peer: anyone can date a copy');
  ahead.note(advert(p, { issuedAt: NOW + 20_000, expiresAt: NOW + 3_600_000 }).bytes, p.did, NOW);
  assert.deepEqual(ahead.recent(NOW), [], 'inside the 30 s window: not dropped for it');
  ahead.note(early.bytes, p.did, NOW);
  assert.deepEqual(ahead.recent(NOW + 1000), [{ did: p.did, byMs: 45_000, at: NOW }]);
  assert.deepEqual(ahead.recent(NOW + ADVERT_AHEAD_SAID_MS), [], 'said for ten minutes');
  ahead.taken(p.did);
  assert.deepEqual(ahead.recent(NOW + 1000), [], 'its clock put right: an advert taken clears it');
  // bounded: the 64 noted last
  for (let i = 0; i < 100; i++) ahead.note(advert(P(100 + i), { issuedAt: NOW + 45_000, expiresAt: NOW + 3_600_000 }).bytes, P(100 + i).did, NOW);
  const r = ahead.recent(NOW);
  assert.equal(r.length, 64);
  assert.equal(r.at(-1)!.did, P(199).did);
});
