/**
 * Where an overlay's outcome catch-up starts (src/node/overlay.ts `outcomeCatchUp`; docs/network.md §5 "Catching up
 * on outcomes"): the newest outcome the evidence store holds, less the skew window and a minute, never later than
 * now and never further back than the record cache's time-to-live.
 */
import '../../../src/polyfill.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { outcomeCatchUp } from '../../../src/node/overlay.js';

const NOW = 1_800_000_000_000;
const H = 3_600_000;
const ev = (receipts: number[], acceptances: number[], nondeliveries: number[]) =>
  ({
    evidence: {
      receipts: new Map(receipts.map((t, i) => [`r${i}`, { record: { completedAt: t } }])),
      acceptances: new Map(acceptances.map((t, i) => [`a${i}`, { record: { signedAt: t } }])),
      nondeliveries: new Map(nondeliveries.map((t, i) => [`n${i}`, { record: { signedAt: t } }])),
    },
  }) as never;

test('the catch-up starts at the newest outcome held, less skew and a minute; within the TTL; not after now', () => {
  const c = outcomeCatchUp(ev([NOW - 20 * 60_000], [NOW - 10 * 60_000], [NOW - 30 * 60_000]), NOW, 30_000);
  assert.deepEqual(c.kinds, ['receipt', 'acceptance', 'nondelivery', 'nondelivery2', 'nondelivery3']);
  assert.equal(c.from, NOW - 10 * 60_000 - 30_000 - 60_000);
  assert.equal(c.maxAgeMs, H);
  assert.equal(outcomeCatchUp(ev([], [], []), NOW, 30_000).from, NOW - H, 'nothing held: the last hour');
  assert.equal(outcomeCatchUp(ev([NOW - 5 * H], [], []), NOW, 30_000, 2 * H).from, NOW - 2 * H, 'held long ago: the TTL given');
  assert.equal(outcomeCatchUp(ev([NOW + H], [], []), NOW, 30_000).from, NOW - 90_000, 'a receipt dated ahead counts as now');
});

test('after a run whose store failed a write and was reopened, the catch-up starts at that failed write, less skew and a minute, within the TTL (review s43 R2 F1)', () => {
  // outcomes stored after the reopen are newer than the failure: before, the catch-up started after them
  const held = ev([NOW - 2 * 60_000], [NOW - 60_000], []);
  assert.equal(outcomeCatchUp(held, NOW, 30_000, H, NOW - 20 * 60_000).from, NOW - 20 * 60_000 - 90_000);
  assert.equal(outcomeCatchUp(held, NOW, 30_000, H, NOW - 30_000).from, NOW - 60_000 - 90_000, 'a failure after the newest held changes nothing');
  assert.equal(outcomeCatchUp(held, NOW, 30_000, H, NOW - 3 * H).from, NOW - H, 'never further back than the TTL');
});
