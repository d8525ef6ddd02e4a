import { test } from 'node:test';
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
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
