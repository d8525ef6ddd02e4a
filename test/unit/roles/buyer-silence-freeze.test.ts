/**
 * A buyer frozen while its provider works (SIGSTOP, a suspended machine, a blocked event loop) must not give the
 * provider up for its own freeze (docs/node.md "Buyer": "A buyer that stops or stalls blames no provider"). After a
 * freeze, timers run before the I/O that waited, so the silence watchdog fired before the provider's buffered frames
 * were read: QA ffMatchDay2 F2, a buyer SIGSTOPped 25 s (under STALL_MS, so not taken as its own stall) gave its
 * provider up EXEC_PROVIDER_SILENT at once and signed a non-delivery against it. Now a watchdog that fires a stall tick
 * or more late arms again instead, and a provider silent on time is still given up.
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
