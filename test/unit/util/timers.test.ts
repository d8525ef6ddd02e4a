/**
 * Timers of any length (src/util/timers.ts): Node runs a setTimeout,
 * setInterval or AbortSignal.timeout of more than 2^31 − 1 ms after 1 ms, so a
 * stream deadline of a job a month away (deadlineSignal) fired at once. The
 * helpers chain timers of at most MAX_TIMER_MS; the fake-clock tests check the
 * chain fires at the sum of its steps and not before.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { clearableTimeoutSignal, MAX_TIMER_MS, raceTimeout, setLongInterval, setLongTimeout, timeoutSignal } from '../../../src/util/timers.js';
import { deadlineSignal, NET_ERR } from '../../../src/net/frames.js';
import type { C0Error } from '../../../src/errors.js';

const MONTH = 30 * 24 * 3600_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Advance the fake clock in steps a Node timer can take: the mock schedules a timer set inside a tick from the tick's end. */
function advance(t: { mock: { timers: { tick(ms: number): void } } }, ms: number): void {
  for (let left = ms; left > 0; left -= MAX_TIMER_MS) t.mock.timers.tick(Math.min(left, MAX_TIMER_MS));
}

test('a stream deadline past 24.8 days does not fire at once, nor when moved there (real timers)', async () => {
  const d = deadlineSignal(MONTH);
  const moved = deadlineSignal(30_000);
  moved.reset(MONTH, 'run');
  await sleep(30);
  assert.equal(d.signal.aborted, false, 'a 30-day stream deadline fired within 30 ms');
  assert.equal(moved.signal.aborted, false, 'a run phase moved to 30 days fired within 30 ms');
  d.clear();
  moved.clear();
  // a short one still fires, with its phase named
  const short = deadlineSignal(MONTH);
  short.reset(5, 'input');
  await sleep(30);
  assert.equal(short.signal.aborted, true);
  assert.equal((short.signal.reason as C0Error).code, NET_ERR.DEADLINE);
  assert.match((short.signal.reason as C0Error).message, /input deadline of 5 ms/);
  short.clear();
});

test('timeoutSignal past 24.8 days does not abort at once; up to it, it is AbortSignal.timeout (real timers)', async () => {
  const long = timeoutSignal(MONTH);
  const short = timeoutSignal(5);
  await sleep(30);
  assert.equal(long.aborted, false);
  assert.equal(short.aborted, true);
  assert.equal((short.reason as DOMException).name, 'TimeoutError');
});

test('setLongTimeout chains timers: fires at the whole delay, not at a step (fake clock)', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  let fired = 0;
  setLongTimeout(() => fired++, 2 * MAX_TIMER_MS + 10);
  t.mock.timers.tick(MAX_TIMER_MS);
  assert.equal(fired, 0);
  t.mock.timers.tick(MAX_TIMER_MS);
  assert.equal(fired, 0);
  t.mock.timers.tick(9);
  assert.equal(fired, 0);
  t.mock.timers.tick(1);
  assert.equal(fired, 1);
  advance(t, 3 * MAX_TIMER_MS);
  assert.equal(fired, 1, 'once');
  // cleared mid-chain: never
  const cleared = setLongTimeout(() => fired++, MONTH);
  t.mock.timers.tick(MAX_TIMER_MS);
  cleared.clear();
  advance(t, MONTH);
  assert.equal(fired, 1);
});

test('a timeoutSignal past 24.8 days aborts at its delay with a TimeoutError (fake clock)', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const s = timeoutSignal(MONTH);
  advance(t, MONTH - 1);
  assert.equal(s.aborted, false);
  t.mock.timers.tick(1);
  assert.equal(s.aborted, true);
  assert.equal((s.reason as DOMException).name, 'TimeoutError');
});

test('a deadlineSignal past 24.8 days fires NET_DEADLINE at its delay (fake clock)', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const d = deadlineSignal(30_000);
  d.reset(MONTH, 'run');
  advance(t, MONTH - 1);
  assert.equal(d.signal.aborted, false);
  t.mock.timers.tick(1);
  assert.equal((d.signal.reason as C0Error).code, NET_ERR.DEADLINE);
  d.clear();
});

test('setLongInterval: a period past 24.8 days runs once per period, not every 1 ms (fake clock)', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout', 'setInterval'] });
  let runs = 0;
  const every = setLongInterval(() => runs++, MONTH);
  advance(t, MONTH - 1);
  assert.equal(runs, 0);
  t.mock.timers.tick(1);
  assert.equal(runs, 1);
  advance(t, MONTH);
  assert.equal(runs, 2);
  every.clear();
  advance(t, 2 * MONTH);
  assert.equal(runs, 2);
  // a short period is an ordinary interval
  const short = setLongInterval(() => runs++, 100);
  t.mock.timers.tick(350);
  assert.equal(runs, 5);
  short.clear();
});

test('clearableTimeoutSignal aborts at its delay with a TimeoutError, and never once cleared, short or long (fake clock)', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const long = clearableTimeoutSignal(MONTH);
  const short = clearableTimeoutSignal(50);
  advance(t, MONTH - 1);
  assert.equal(long.signal.aborted, false);
  assert.equal(short.signal.aborted, true);
  assert.equal((short.signal.reason as DOMException).name, 'TimeoutError');
  t.mock.timers.tick(1);
  assert.equal(long.signal.aborted, true);
  assert.equal((long.signal.reason as DOMException).name, 'TimeoutError');
  const [clearedLong, clearedShort] = [clearableTimeoutSignal(MONTH), clearableTimeoutSignal(50)];
  t.mock.timers.tick(49);
  clearedShort.clear();
  t.mock.timers.tick(MAX_TIMER_MS);
  clearedLong.clear(); // mid-chain
  advance(t, 2 * MONTH);
  assert.equal(clearedLong.signal.aborted, false);
  assert.equal(clearedShort.signal.aborted, false);
});

test('raceTimeout: the promise’s value when it settles first, the timeout value when the delay passes first; the timer is cleared either way (fake clock)', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  assert.equal(await raceTimeout(Promise.resolve('done'), 1_000, 'late'), 'done');
  const never = new Promise<string>(() => {});
  const p = raceTimeout(never, 1_000, 'late');
  t.mock.timers.tick(999);
  await Promise.resolve();
  t.mock.timers.tick(1);
  assert.equal(await p, 'late');
  // past Node's longest timer too (setLongTimeout): not fired early
  let settled = false;
  const long = raceTimeout(never, MAX_TIMER_MS * 2, 'late').then(() => (settled = true));
  t.mock.timers.tick(MAX_TIMER_MS);
  await Promise.resolve();
  assert.equal(settled, false);
  t.mock.timers.tick(MAX_TIMER_MS);
  await long;
  assert.equal(settled, true);
  await assert.rejects(raceTimeout(Promise.reject(new Error('boom')), 1_000, 'late'), /boom/);
});

// ref'd, the child would outlive the test's give-up (60 s) by nine minutes: the test fails instead of passing late
test('raceTimeout with unref: its timer does not keep the process alive (a child that waits on it exits at once)', { timeout: 60_000 }, async (t) => {
  const { spawn } = await import('node:child_process');
  const mod = new URL('../../../src/util/timers.js', import.meta.url).href;
  // a wait of ten minutes on a promise that never settles: with the timer ref'd the child would live ten minutes
  const script = `import { raceTimeout } from ${JSON.stringify(mod)}; void raceTimeout(new Promise(() => {}), 600000, 0, { unref: true });`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: 'ignore' });
  t.after(() => child.kill('SIGKILL'));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  assert.equal(code, 0);
});
