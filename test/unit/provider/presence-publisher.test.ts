/** The provider's presence publisher (src/roles/provider/presence-publisher.ts; docs/matching.md "Presence"). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Ed25519Signer, type Opened, type Presence } from '../../../src/records/index.js';
import { PresencePublisher, presenceOptions } from '../../../src/roles/provider/presence-publisher.js';
import { createLogger } from '../../../src/util/log.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('defaults: a 15 s window, published every 5 s, at most one a second', () => {
  assert.deepEqual(presenceOptions(), { windowMs: 15_000, everyMs: 5_000, minGapMs: 1100, targetPerMarket: 5 });
  assert.equal(presenceOptions({ windowMs: 30_000 }).everyMs, 10_000);
});

test('publishes on start, on its cadence, and soon after the free slots change (debounced)', async () => {
  const sent: Opened<Presence>[] = [];
  let free = 2;
  const p = new PresencePublisher(
    { signer: new Ed25519Signer(new Uint8Array(32).fill(7)), clock: Date.now, log: createLogger({ level: 'silent' }), state: () => ({ workloads: ['b.w', 'a.w'], freeSlots: free }), publish: async (e) => void sent.push(e) },
    { windowMs: 10_000, everyMs: 400, minGapMs: 150 },
  );
  p.start();
  try {
    assert.equal(sent.length, 1);
    assert.deepEqual(sent[0]!.record.workloads, ['a.w', 'b.w']);
    assert.equal(sent[0]!.record.freeSlots, 2);
    assert.equal(sent[0]!.record.windowMs, 10_000);
    p.changed(); // nothing changed: nothing sent
    await sleep(200);
    assert.equal(sent.length, 1);
    free = 1;
    p.changed();
    p.changed();
    free = 0;
    p.changed();
    await sleep(100);
    assert.equal(sent.length, 2, 'one record for the burst of changes');
    assert.equal(sent[1]!.record.freeSlots, 0);
    await sleep(600);
    assert.ok(sent.length >= 3, 'the cadence goes on');
  } finally {
    p.stop();
  }
  const n = sent.length;
  await sleep(500);
  assert.equal(sent.length, n, 'nothing after stop');
});

test('the interval and window follow the live count in its market, read each time it signs', async () => {
  const sent: Opened<Presence>[] = [];
  let live = 1;
  const p = new PresencePublisher(
    { signer: new Ed25519Signer(new Uint8Array(32).fill(8)), clock: Date.now, log: createLogger({ level: 'silent' }), state: () => ({ workloads: ['a.w'], freeSlots: 1 }), publish: async (e) => void sent.push(e), liveInMarket: () => live },
    // target 100 records/s: a market of up to 1 500 (100 × 15 s) keeps 60 ms / 3 s; 1 600 need 16 s, window 48 s; 10⁶ the 10 min cap
    { windowMs: 3_000, everyMs: 60, minGapMs: 10, targetPerMarket: 100 },
  );
  assert.deepEqual(p.interval(), { everyMs: 60, windowMs: 3_000 });
  live = 1_500;
  assert.deepEqual(p.interval(), { everyMs: 60, windowMs: 3_000 });
  live = 1_600;
  assert.deepEqual(p.interval(), { everyMs: 16_000, windowMs: 48_000 });
  live = 1e6;
  assert.deepEqual(p.interval(), { everyMs: 200_000, windowMs: 600_000 });
  live = 5;
  p.start();
  try {
    await sleep(400);
    assert.ok(sent.length >= 3, `a small market: every 60 ms (${sent.length} in 400 ms)`);
    assert.ok(sent.every((e) => e.record.windowMs === 3_000));
    live = 1_600; // the next record signs the large market's window and the cadence slows to 16 s
    for (let i = 0; i < 100 && sent.at(-1)!.record.windowMs !== 48_000; i++) await sleep(50);
    assert.equal(sent.at(-1)!.record.windowMs, 48_000);
    const n = sent.length;
    await sleep(600);
    assert.equal(sent.length, n, 'nothing more within the large market\'s interval');
  } finally {
    p.stop();
  }
});

test('a backward wall-clock step does not hold back the next presence: the change-driven wait follows the monotonic clock and is never longer than minGapMs', async () => {
  const sent: Opened<Presence>[] = [];
  let free = 2;
  let off = 600_000; // the wall clock starts 10 min fast
  const p = new PresencePublisher(
    { signer: new Ed25519Signer(new Uint8Array(32).fill(9)), clock: () => Date.now() + off, log: createLogger({ level: 'silent' }), state: () => ({ workloads: ['a.w'], freeSlots: free }), publish: async (e) => void sent.push(e) },
    { windowMs: 3_000, everyMs: 200, minGapMs: 100 },
  );
  p.start();
  try {
    await sleep(250);
    off = 0; // NTP steps it back to the right time
    await sleep(20);
    free = 1; // a job starts
    p.changed();
    const n = sent.length;
    await sleep(600);
    assert.ok(sent.length - n >= 2, `published ${sent.length - n} records in the 600 ms after the change (everyMs 200): none were held back by the step`);
    assert.equal(sent.at(-1)!.record.freeSlots, 1);
    assert.ok(Math.abs(sent.at(-1)!.record.issuedAt - Date.now()) < 1_000, 'issuedAt is the (corrected) wall time');
  } finally {
    p.stop();
  }
});

test('a change never pushes the next presence later than the periodic one already due', async () => {
  const sent: Opened<Presence>[] = [];
  let free = 2;
  const p = new PresencePublisher(
    { signer: new Ed25519Signer(new Uint8Array(32).fill(10)), clock: Date.now, log: createLogger({ level: 'silent' }), state: () => ({ workloads: ['a.w'], freeSlots: free }), publish: async (e) => void sent.push(e) },
    { windowMs: 30_000, everyMs: 300, minGapMs: 20_000 },
  );
  p.start();
  try {
    await sleep(100);
    free = 1;
    p.changed(); // the gap allows the next one in ~19.9 s, but the periodic one is due in ~200 ms
    // waited for well past the periodic one, and far short of the gap (a loaded machine delays timers by a second or two)
    const end = Date.now() + 8_000;
    while (sent.length < 2 && Date.now() < end) await sleep(20);
    assert.equal(sent.length, 2, 'the periodic record went out on time, not at the change’s gap');
    assert.equal(sent[1]!.record.freeSlots, 1);
  } finally {
    p.stop();
  }
});
