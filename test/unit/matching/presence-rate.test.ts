/** Presence that scales with the market (src/matching/presence-rate.ts; docs/scale.md §4, docs/matching.md "Presence"). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { honouredWindowMs, presenceInterval, PRESENCE_TARGET_PER_MARKET } from '../../../src/matching/presence-rate.js';
import { MAX_PRESENCE_WINDOW_MS } from '../../../src/records/kinds.js';

const today = { everyMs: 15_000, windowMs: 45_000 };

test('a small market keeps the configured interval and window exactly', () => {
  assert.equal(PRESENCE_TARGET_PER_MARKET, 5);
  for (const live of [0, 1, 3, 20, 40, 100 / 16, 75]) assert.deepEqual(presenceInterval(live, today), today, `live ${live}`);
  // a configured faster cadence is kept too while the market is small
  assert.deepEqual(presenceInterval(10, { everyMs: 5_000, windowMs: 15_000 }), { everyMs: 5_000, windowMs: 15_000 });
  assert.deepEqual(presenceInterval(75, { everyMs: 1_000, windowMs: 4_000 }), { everyMs: 1_000, windowMs: 4_000 }, 'the tests’ 1 s / 4 s in a market of 75');
  // past 75 the market's interval, whatever was configured
  assert.deepEqual(presenceInterval(80, { everyMs: 1_000, windowMs: 4_000 }), { everyMs: 16_000, windowMs: 48_000 });
});

test('a large market: every = live / target, window = 3 × every, so the market carries the target rate', () => {
  // 10k providers over 16 markets: 625 in one
  assert.deepEqual(presenceInterval(625, today), { everyMs: 125_000, windowMs: 375_000 });
  assert.deepEqual(presenceInterval(300, today, 10), { everyMs: 30_000, windowMs: 90_000 });
  assert.deepEqual(presenceInterval(76, today), { everyMs: 15_200, windowMs: 45_600 });
  // a configured window longer than 3 × every is kept
  assert.deepEqual(presenceInterval(100, { everyMs: 15_000, windowMs: 120_000 }), { everyMs: 20_000, windowMs: 120_000 });
});

test('the window is capped at MAX_PRESENCE_WINDOW_MS and the interval stays a third of it', () => {
  assert.deepEqual(presenceInterval(10_000, today), { everyMs: MAX_PRESENCE_WINDOW_MS / 3, windowMs: MAX_PRESENCE_WINDOW_MS });
  assert.deepEqual(presenceInterval(Infinity, today), today, 'a nonsense count changes nothing');
});

test('peers honour 60 s in a small market, the window of a market twice theirs in a large one, never above the cap', () => {
  assert.equal(honouredWindowMs(0), 60_000);
  assert.equal(honouredWindowMs(37), 60_000);
  assert.equal(honouredWindowMs(50), 60_000, 'a market of 100 providers: 60 s');
  assert.equal(honouredWindowMs(625), 600_000, '2 × 625 providers: 250 s × 3, capped');
  assert.equal(honouredWindowMs(200), 240_000, 'a provider that sees 400 signs a 240 s window');
  assert.ok(honouredWindowMs(313) >= presenceInterval(625, today).windowMs, 'a view half the provider’s still honours its window');
  assert.equal(honouredWindowMs(200, { floorMs: 20_000, targetPerSec: 10 }), 120_000);
  assert.equal(honouredWindowMs(10, { floorMs: 20_000 }), 20_000);
});
