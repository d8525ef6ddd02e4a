/**
 * A run's event log as the daemon's console hub and the console's pages keep
 * it (src/util/run-log.ts). The job and Run pages kept every live event: after
 * an hour of a provider's 10 progress events a second the page held 36,000 and
 * spent ~0.8 s redrawing them on each new one. Now both keep the same bound.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RUN_LOG_BYTES, RUN_LOG_EVENTS, RunEvents } from '../../../src/util/run-log.js';
import { HUB_DEFAULTS } from '../../../src/node/console-hub.js';

type Ev = { e: string; n: number; message?: string };

test('an hour of 10 progress events a second: the log holds at most 300, every other event and the latest progress stay', () => {
  const log = new RunEvents<Ev>();
  const others = ['job', 'offer', 'decision', 'selected', 'claim', 'started'];
  others.forEach((e, n) => log.push({ e, n }));
  const hour = 36_000;
  for (let n = 0; n < hour; n++) {
    log.push({ e: 'progress', n, message: 'step' });
    if (n === hour / 2) log.push({ e: 'failover', n });
  }
  assert.equal(log.events.length, RUN_LOG_EVENTS);
  assert.equal(log.seen, others.length + hour + 1);
  assert.equal(log.omitted, log.seen - RUN_LOG_EVENTS);
  // the non-progress events all stay, in order; the progress kept is the newest
  assert.deepEqual(
    log.events.filter((e) => e.e !== 'progress').map((e) => e.e),
    [...others, 'failover'],
  );
  const progress = log.events.filter((e) => e.e === 'progress');
  assert.equal(progress.at(-1)!.n, hour - 1);
  assert.deepEqual(progress.map((e) => e.n), Array.from({ length: progress.length }, (_, i) => hour - progress.length + i));
  // each kept event keeps its arrival number (a page's stable key), increasing
  assert.equal(log.seqs.length, log.events.length);
  for (let i = 1; i < log.seqs.length; i++) assert.ok(log.seqs[i]! > log.seqs[i - 1]!);
  assert.equal(log.seqs.at(-1), log.seen - 1);
});

test('the byte bound: big events are dropped oldest progress first, then offers and claims, then the oldest; the latest always stays', () => {
  const log = new RunEvents<Ev>(1000, 1000);
  log.push({ e: 'job', n: 0 });
  log.push({ e: 'offer', n: 1, message: 'x'.repeat(300) });
  log.push({ e: 'progress', n: 2, message: 'x'.repeat(300) });
  log.push({ e: 'progress', n: 3, message: 'x'.repeat(300) });
  assert.deepEqual(log.events.map((e) => e.n), [0, 1, 3]);
  log.push({ e: 'result', n: 4, message: 'x'.repeat(400) });
  // the last progress goes before the offer
  assert.deepEqual(log.events.map((e) => e.n), [0, 1, 4]);
  log.push({ e: 'huge', n: 5, message: 'x'.repeat(5000) });
  assert.deepEqual(log.events.map((e) => e.n), [5]);
  assert.equal(log.omitted, 5);
});

test('the daemon and the pages keep one bound', () => {
  assert.equal(HUB_DEFAULTS.runEvents, RUN_LOG_EVENTS);
  assert.equal(HUB_DEFAULTS.runBytes, RUN_LOG_BYTES);
});
