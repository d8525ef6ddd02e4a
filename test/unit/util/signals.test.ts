import { test } from 'node:test';
import assert from 'node:assert/strict';
import { getEventListeners, getMaxListeners, setMaxListeners } from 'node:events';
import { linkedSignal } from '../../../src/util/signals.js';

test('linkedSignal aborts with the reason of the first source to abort, and then listens on none', () => {
  const a = new AbortController();
  const b = new AbortController();
  const l = linkedSignal([a.signal, b.signal]);
  assert.equal(l.signal.aborted, false);
  const why = new Error('b first');
  b.abort(why);
  assert.equal(l.signal.aborted, true);
  assert.equal(l.signal.reason, why);
  a.abort(new Error('a later'));
  assert.equal(l.signal.reason, why, 'the first reason stays');
  assert.equal(getEventListeners(a.signal, 'abort').length, 0);
});

test('linkedSignal over a source already aborted is aborted at once, with its reason, and adds no listener', () => {
  const live = new AbortController();
  const gone = new AbortController();
  gone.abort(new Error('already'));
  const l = linkedSignal([live.signal, gone.signal]);
  assert.equal(l.signal.aborted, true);
  assert.equal((l.signal.reason as Error).message, 'already');
  assert.equal(getEventListeners(live.signal, 'abort').length, 0);
});

test('clear() leaves nothing on a long-lived source: many waits beside a node’s stop signal hold nothing after (AbortSignal.any leaks there on Node 20)', () => {
  const stop = new AbortController();
  for (let i = 0; i < 1000; i++) {
    const mine = new AbortController();
    const l = linkedSignal([mine.signal, stop.signal]);
    l.clear();
  }
  assert.equal(getEventListeners(stop.signal, 'abort').length, 0);
  // cleared: a later abort of the source no longer reaches it
  const l = linkedSignal([stop.signal]);
  l.clear();
  stop.abort();
  assert.equal(l.signal.aborted, false);
});

test('many waits at once on one long-lived source trip no listener-leak warning; once they end, its limit is back where it was', async () => {
  const warnings: Error[] = [];
  const onWarning = (w: Error): void => {
    warnings.push(w);
  };
  process.on('warning', onWarning);
  try {
    const stop = new AbortController();
    const before = getMaxListeners(stop.signal);
    const waits = Array.from({ length: 50 }, () => linkedSignal([new AbortController().signal, stop.signal]));
    assert.equal(getEventListeners(stop.signal, 'abort').length, 50);
    await new Promise((r) => setImmediate(r)); // warnings are emitted on the next tick
    assert.deepEqual(warnings.map((w) => w.message), []);
    for (const [i, w] of waits.entries()) {
      w.clear();
      if (i % 2) w.clear(); // a second clear (after an abort, or in a finally) takes nothing off twice
    }
    assert.equal(getMaxListeners(stop.signal), before);
    // a leak of other listeners on the source is still reported
    for (let i = 0; i <= before; i++) stop.signal.addEventListener('abort', () => {});
    await new Promise((r) => setImmediate(r));
    assert.match(warnings.map((w) => w.message).join('\n'), /memory leak/i);
  } finally {
    process.off('warning', onWarning);
  }
});

test('a source whose listener limit is unlimited (0), before or during a wait, stays so, and the wait still aborts with it', () => {
  const before = new AbortController();
  setMaxListeners(0, before.signal); // Node 20: getMaxListeners throws on such a target
  const a = linkedSignal([before.signal]);
  a.clear();
  const during = new AbortController();
  const b = linkedSignal([during.signal]);
  setMaxListeners(0, during.signal);
  const why = new Error('stopped');
  during.abort(why);
  assert.equal(b.signal.reason, why);
  b.clear();
  assert.equal(getEventListeners(during.signal, 'abort').length, 0);
});
