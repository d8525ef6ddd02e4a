/**
 * streamError (src/net/frames.ts): what a direct stream's failure is reported as. NET_DEADLINE only when the stream's
 * own signal fired (its deadline, or its caller's); a stream aborted under it while that signal is live (libp2p's
 * connection monitor aborting a connection whose pings go unanswered, a muxer torn down) is its connection lost,
 * reported with the connection's reason, not as a deadline of the protocol's limit.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import { NET_ERR, deadlineSignal, streamError } from '../../../src/net/frames.js';

const WEEK = 604_800_000;

test('an AbortError from the connection while the stream’s deadline is live: NET_STREAM_FAILED naming the connection’s reason, not NET_DEADLINE', () => {
  const d = deadlineSignal(WEEK);
  try {
    const ping = Object.assign(new Error('the ping to the peer timed out'), { name: 'AbortError' });
    const err = streamError(ping, d.signal, WEEK);
    assert.equal(err.code, NET_ERR.STREAM);
    assert.match(err.message, /connection/);
    assert.match(err.message, /the ping to the peer timed out/);
    assert.doesNotMatch(err.message, /deadline/);
    assert.equal((err.detail as { name?: string }).name, 'AbortError');
    const timeout = streamError(Object.assign(new Error('The operation was aborted due to timeout'), { name: 'TimeoutError' }), d.signal, WEEK);
    assert.equal(timeout.code, NET_ERR.STREAM);
    assert.match(timeout.message, /aborted due to timeout/);
  } finally {
    d.clear();
  }
});

test('the stream’s own deadline fired: NET_DEADLINE with its phase and length', async () => {
  const d = deadlineSignal(5);
  await new Promise((r) => setTimeout(r, 30));
  const err = streamError(Object.assign(new Error('aborted'), { name: 'AbortError' }), d.signal, 5);
  d.clear();
  assert.equal(err.code, NET_ERR.DEADLINE);
  assert.match(err.message, /deadline of 5 ms/);
});

test('the caller’s signal fired (its own deadline or stop): NET_DEADLINE, saying it was the caller’s', () => {
  const outer = new AbortController();
  const d = deadlineSignal(WEEK, outer.signal);
  outer.abort(Object.assign(new Error('The operation was aborted due to timeout'), { name: 'TimeoutError' }));
  const err = streamError(Object.assign(new Error('aborted'), { name: 'AbortError' }), d.signal, WEEK);
  d.clear();
  assert.equal(err.code, NET_ERR.DEADLINE);
  assert.doesNotMatch(err.message, new RegExp(String(WEEK)));
  assert.match(err.message, /caller/);
  // a coded reason is kept as it is
  const coded = new AbortController();
  const d2 = deadlineSignal(WEEK, coded.signal);
  coded.abort(new C0Error('JOB_INTERRUPTED', 'stopping'));
  assert.equal(streamError(new Error('x'), d2.signal, WEEK).code, 'JOB_INTERRUPTED');
  d2.clear();
});
