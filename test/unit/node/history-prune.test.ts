/**
 * Dropping the job history by age (src/node/history-prune.ts), with fake
 * stores and mocked timers: the first pass after start, batches until each
 * store in turn says there is no more, the cutoff from the clock and `keepDays`, one log line
 * per pass, a pass asked for while one runs joins it, a failed pass is logged
 * and the next one runs, and stop() waits for the batch in flight.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ClockCorroboration, DAY_MS, startHistoryPruning } from '../../../src/node/history-prune.js';
import type { HistoryPruned } from '../../../src/store/records.js';
import type { Logger } from '../../../src/util/log.js';

const NOW = 1_800_000_000_000;

function capture() {
  const lines: Array<{ level: string; o: Record<string, unknown>; msg: string }> = [];
  const at = (level: string) => (o: Record<string, unknown>, msg: string) => void lines.push({ level, o, msg });
  const log = { info: at('info'), warn: at('warn'), debug: at('debug'), error: at('error'), child: () => log };
  return { log: log as unknown as Logger, lines };
}

/** A store holding `due` records past any cutoff; each call takes up to `max`, or waits for `gate` when given. */
function fakeStore(due: number) {
  const calls: Array<{ before: number; max: number | undefined; after?: string }> = [];
  let gate: Promise<void> | undefined;
  let fail = false;
  return {
    calls,
    hold(p: Promise<void>) {
      gate = p;
    },
    failNext() {
      fail = true;
    },
    async pruneHistory(before: number, max?: number, after?: string): Promise<HistoryPruned> {
      calls.push({ before, max, ...(after !== undefined ? { after } : {}) });
      if (gate) await gate;
      if (fail) {
        fail = false;
        throw new Error('disk full');
      }
      const removed = Math.min(due, max ?? Infinity);
      due -= removed;
      return { removed, more: due > 0, after: `key ${calls.length}` };
    },
  };
}

test('the first pass runs after start and takes batches until no more is due; the cutoff is keepDays before the clock; one line per pass', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout', 'setInterval'] });
  const store = fakeStore(2500);
  const runs = fakeStore(700);
  const { log, lines } = capture();
  const pruned: number[] = [];
  const p = startHistoryPruning({ stores: [store, runs], keepDays: 30, clock: () => NOW, log, firstMs: 1000, everyMs: 60_000, batch: 1000, onPruned: (n) => pruned.push(n) });
  t.mock.timers.tick(999);
  assert.equal(store.calls.length, 0);
  t.mock.timers.tick(1);
  const total = await p.pass(); // joins the pass the timer started
  assert.equal(total, 3200);
  assert.deepEqual(store.calls, [undefined, 'key 1', 'key 2'].map((after) => ({ before: NOW - 30 * DAY_MS, max: 1000, ...(after ? { after } : {}) })), 'each batch starts where the last ended');
  assert.deepEqual(runs.calls, [{ before: NOW - 30 * DAY_MS, max: 1000 }], 'each store in turn');
  assert.deepEqual(pruned, [1000, 1000, 500, 700]);
  assert.deepEqual(lines.map((l) => [l.level, l.msg, l.o.removed]), [['info', 'dropped job history past history.keepDays', 3200]]);
  // the next pass finds nothing: no line
  t.mock.timers.tick(60_000);
  assert.equal(await p.pass(), 0);
  assert.equal(lines.length, 1);
  await p.stop();
});

test('a pass asked for while one runs joins it; a failed pass is logged and the next one runs; stop() waits for the batch in flight and no pass runs after it', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout', 'setInterval'] });
  const store = fakeStore(10);
  const { log, lines } = capture();
  const p = startHistoryPruning({ stores: [store], keepDays: 0.5, clock: () => NOW, log, firstMs: 1000, everyMs: 60_000 });
  store.failNext();
  assert.equal(await p.pass(), 0);
  assert.equal(lines[0]?.level, 'warn');
  assert.match(lines[0]!.msg, /tried again at the next pass/);
  assert.equal(store.calls[0]?.before, NOW - DAY_MS / 2);

  let release!: () => void;
  store.hold(new Promise<void>((r) => (release = r)));
  const a = p.pass();
  const b = p.pass();
  assert.equal(a, b, 'one pass at a time');
  let stopped = false;
  const stopping = p.stop().then(() => (stopped = true));
  await new Promise((r) => setImmediate(r));
  assert.equal(stopped, false, 'stop waits for the batch in flight');
  release();
  await stopping;
  assert.equal(await a, 10);
  const calls = store.calls.length;
  t.mock.timers.tick(120_000);
  await new Promise((r) => setImmediate(r));
  assert.equal(store.calls.length, calls, 'no pass after stop');
});

test('a pass that would drop the whole history waits for the clock to be corroborated, saying so once at warn; then it drops, at warn (QA qaOps F2)', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout', 'setInterval'] });
  const store = fakeStore(7);
  const { log, lines } = capture();
  let corroborated = false;
  // the newest record held is 40 days old by this clock: a clock stepped forward, or a node idle that long
  const p = startHistoryPruning({ stores: [store], keepDays: 30, clock: () => NOW, log, firstMs: 1000, everyMs: 60_000, wholeHistory: { newest: async () => NOW - 40 * DAY_MS, corroborated: () => corroborated } });
  assert.equal(await p.pass(), 0);
  assert.equal(await p.pass(), 0);
  assert.equal(store.calls.length, 0, 'nothing dropped');
  assert.deepEqual(lines.map((l) => [l.level, l.o.code]), [['warn', 'HISTORY_PRUNE_HELD']], 'said once');
  corroborated = true;
  assert.equal(await p.pass(), 7);
  assert.deepEqual(lines.at(-1)?.level, 'warn');
  assert.equal(lines.at(-1)?.o.code, 'HISTORY_PRUNED_ALL');
  await p.stop();
});

test('a held pass runs as soon as the clock is corroborated, not at the next pass (everyMs)', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout', 'setInterval'] });
  const store = fakeStore(5);
  const { log } = capture();
  let wall = NOW;
  const clock = new ClockCorroboration(() => wall, () => wall, 30_000);
  const p = startHistoryPruning({ stores: [store], keepDays: 30, clock: () => wall, log, firstMs: 1000, everyMs: 600_000, wholeHistory: { newest: async () => NOW - 40 * DAY_MS, corroborated: () => clock.holds() } });
  clock.onCorroborated = () => p.corroborated();
  t.mock.timers.tick(1000);
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
  assert.equal(store.calls.length, 0, 'the first pass held');
  wall += 5_000;
  clock.note(wall - 1_000); // a peer's fresh record
  for (let i = 0; i < 5 && store.calls.length === 0; i++) await new Promise((r) => setImmediate(r));
  assert.ok(store.calls.length > 0, 'the held pass ran once the clock was corroborated');
  const calls = store.calls.length;
  clock.note(wall - 500); // already corroborated: no pass of its own
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
  assert.equal(store.calls.length, calls);
  await p.stop();
});

test('a pass that leaves the newest record runs without corroboration, at info', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout', 'setInterval'] });
  const store = fakeStore(3);
  const { log, lines } = capture();
  const p = startHistoryPruning({ stores: [store], keepDays: 30, clock: () => NOW, log, firstMs: 1000, everyMs: 60_000, wholeHistory: { newest: async () => NOW - 2 * DAY_MS, corroborated: () => false } });
  assert.equal(await p.pass(), 3);
  assert.deepEqual(lines.map((l) => [l.level, l.msg]), [['info', 'dropped job history past history.keepDays']]);
  // nothing held at all: nothing to guard
  const empty = startHistoryPruning({ stores: [fakeStore(0)], keepDays: 30, clock: () => NOW, log, wholeHistory: { newest: async () => undefined, corroborated: () => false } });
  assert.equal(await empty.pass(), 0);
  assert.equal(lines.length, 1);
  await p.stop();
  await empty.stop();
});

test("the clock is corroborated by a peer's record signed within the skew window, until the wall clock steps away from the monotonic one", () => {
  let wall = NOW;
  let mono = 5_000;
  const c = new ClockCorroboration(() => wall, () => mono, 30_000);
  assert.equal(c.holds(), false, 'nothing heard yet');
  c.note(NOW - 40 * DAY_MS); // a peer's record 40 days "old": this clock is the one that is off
  assert.equal(c.holds(), false);
  c.note(NOW - 2_000);
  assert.equal(c.holds(), true);
  wall += 600_000;
  mono += 600_000;
  assert.equal(c.holds(), true, 'ten minutes on, both clocks alike');
  wall += 40 * DAY_MS;
  assert.equal(c.holds(), false, 'the wall clock stepped since');
});
