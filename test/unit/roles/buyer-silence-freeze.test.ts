/**
 * A buyer frozen while its provider works (SIGSTOP, a suspended machine, a blocked event loop) must not give the
 * provider up for its own freeze (docs/node.md "Buyer": "A buyer that stops or stalls blames no provider"). After a
 * freeze, timers run before the I/O that waited, so the silence watchdog fired before the provider's buffered frames
 * were read: QA ffMatchDay2 F2, a buyer SIGSTOPped 25 s (under STALL_MS, so not taken as its own stall) gave its
 * provider up EXEC_PROVIDER_SILENT at once and signed a non-delivery against it. Now a watchdog that fires a stall tick
 * or more late waits once more, a short grace, for the frames in this node's buffers, and a provider silent on time is
 * still given up; so is one silent after the grace, late or not (one grace a window: review s57, where a re-armed
 * whole window each late firing could keep a silent provider to the deadline on a loaded machine).
 *
 * The freeze here is the event loop blocked by synchronous work; the frame "read after it" comes in a timer set after
 * the freeze, so after the timers that came due during it, as the I/O of a process resumed by SIGCONT is (libuv's
 * poll is interrupted, EINTR, and its next turn runs the timers due first).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { SilenceWatch } from '../../../src/roles/buyer.js';
import { STALL_TICK_MS } from '../../../src/util/stall-watch.js';

const freeze = (ms: number) => {
  const until = performance.now() + ms;
  while (performance.now() < until);
};

test('silence: a freeze of this process past the window is not the provider’s silence; a silence on time still is', async () => {
  const w = new SilenceWatch();
  w.heard({ t: 'accepted', startedAt: Date.now(), keepaliveMs: 100 }); // silent past 300 ms: given up
  freeze(300 + STALL_TICK_MS + 200);
  await new Promise<void>((ok) =>
    setTimeout(() => {
      w.heard({ t: 'keepalive' }); // its frame, read once this process runs again
      ok();
    }, 0),
  );
  assert.equal(w.signal.aborted, false, 'given up for this node’s own freeze');
  await sleep(600);
  assert.equal(w.signal.aborted, true, 'a provider silent past its window, this node running, is given up');
  assert.equal((w.signal.reason as { code?: string }).code, 'EXEC_PROVIDER_SILENT');
  w.stop();
});

test('opening: a stream that opens during a freeze of this process is not EXEC_PROVIDER_NOT_READY', async () => {
  const w = new SilenceWatch(undefined, { openMs: 200, readyMs: 200 });
  w.begin();
  freeze(200 + STALL_TICK_MS + 200);
  await new Promise<void>((ok) =>
    setTimeout(() => {
      w.heard({ t: 'accepted', startedAt: Date.now() });
      ok();
    }, 0),
  );
  assert.equal(w.signal.aborted, false, 'given up for this node’s own freeze');
  assert.equal(w.notReady, false);
  w.stop();
});

test('one grace a window: a watchdog late again in its grace fires (a loaded loop cannot keep a silent provider)', async () => {
  const w = new SilenceWatch();
  w.heard({ t: 'accepted', startedAt: Date.now(), keepaliveMs: 100 }); // window 300 ms
  freeze(300 + STALL_TICK_MS + 200);
  await sleep(0); // the late firing: a grace of 300 ms (its window) instead
  assert.equal(w.signal.aborted, false);
  freeze(300 + STALL_TICK_MS + 200); // late again, and no frame came
  await sleep(0);
  assert.equal(w.signal.aborted, true, 'given up after its grace');
  assert.equal((w.signal.reason as { code?: string }).code, 'EXEC_PROVIDER_SILENT');
  w.stop();
});

test('opening: a stream that does not open after a freeze of this process is still EXEC_PROVIDER_NOT_READY, after the grace', async () => {
  const w = new SilenceWatch(undefined, { openMs: 200, readyMs: 200 });
  w.begin();
  freeze(200 + STALL_TICK_MS + 200);
  await sleep(0);
  assert.equal(w.signal.aborted, false, 'not at once: the grace first');
  await sleep(400);
  assert.equal(w.signal.aborted, true);
  assert.equal(w.notReady, true);
  w.stop();
});
