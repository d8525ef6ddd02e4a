/**
 * A winner that promised no keepalives and then delivers nothing (Sybil review, phases b/c): a fresh key quoting 0 and
 * 1 ms answered `accepted` without `keepaliveMs` and held the stream open; the buyer waited for the whole deadline
 * (failed in 45 s on a 40 s deadline, NET_DEADLINE) and never failed over, though an honest runner-up's offer was live.
 * Now such a provider is held to its quote: from the end of the input it is given up once its quoted duration has
 * overrun by as much again, and by at least OVERRUN_GRACE_MS (overrunLimitMs), with a `timeout` non-delivery and a
 * failover to the runner-up. The same holds for one that never even answers `accepted`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as buyerRole from '../../../src/roles/buyer.js';
import { C0Error } from '../../../src/errors.js';
import type { NonDelivery } from '../../../src/records/kinds.js';
import { NOW, P } from '../market/fixtures.js';
import { runAgainstWinner, abortedBy as aborted } from './buyer-fakes.js';

const ME = P(810);
const A = P(811);
const B = P(812);

/** A run against A (the winner, misbehaving as `a` says) and B (the runner-up, reached: its stream fails, which is all this test needs). */
const runWith = (a: (signal: AbortSignal, sent?: () => void) => AsyncGenerator<unknown>) => runAgainstWinner(ME, A, B, (signal, h) => a(signal, h.sent));

test('a winner that accepted without promising keepalives and then sends nothing is given up once it overran its quote: a timeout non-delivery, and the runner-up is tried', { timeout: 20_000 }, async () => {
  const { f, execs, events, result } = await runWith(async function* (signal, sent) {
    sent?.();
    yield { t: 'accepted', startedAt: NOW };
    yield { t: 'progress', message: 'working' };
    // the stream stays open and nothing more comes
    await aborted(signal);
  });
  assert.deepEqual(execs, [A.did, B.did], 'failed over to the runner-up');
  const a = result.attempts[0]!;
  assert.equal(a.provider, A.did);
  assert.equal(a.outcome, 'provider overran its quote: EXEC_PROVIDER_OVERRAN');
  assert.ok(a.nondelivery, 'a non-delivery is signed');
  // A's, then the runner-up's (its stream failed)
  assert.deepEqual(
    f.nondeliveries().map((p) => [(p.rec.record as NonDelivery).provider, (p.rec.record as NonDelivery).reason]),
    [
      [A.did, 'timeout'],
      [B.did, 'unreachable'],
    ],
  );
  assert.ok(events.some((e) => e.e === 'failover' && e.from === A.did));
});

test('a winner that never takes the input (no accepted) is given up once a provider\'s own input phase is over: a timeout non-delivery, and the runner-up is tried', { timeout: 20_000 }, async () => {
  const { f, execs, result } = await runAgainstWinner(
    ME,
    A,
    B,
    async function* (signal, h) {
      h.sent?.();
      await aborted(signal);
      yield undefined;
    },
    { inputBaseMs: 50 },
  );
  assert.deepEqual(execs, [A.did, B.did]);
  assert.equal(result.attempts[0]!.outcome, 'provider did not take the input in time: EXEC_PROVIDER_NOT_READY');
  assert.deepEqual((f.nondeliveries()[0]!.rec.record as NonDelivery).reason, 'timeout');
});

test('a winner that promised keepalives is watched for its silence, not held to its quote; its output ends every watch', { timeout: 20_000 }, async () => {
  const { result } = await runWith(async function* (signal, sent) {
    sent?.();
    yield { t: 'accepted', startedAt: NOW, keepaliveMs: 1000 };
    // well past the overrun limit (50 ms after a 1 ms quote), keepalives coming
    for (let i = 0; i < 4; i++) {
      await Promise.race([new Promise((r) => setTimeout(r, 100)), aborted(signal)]);
      yield { t: 'keepalive' };
    }
    yield { t: 'output', data: new Uint8Array(1) };
    throw new C0Error('EXEC_TEST_DONE', 'ended after the output');
  });
  assert.equal(result.attempts[0]!.outcome, 'provider unreachable or gone: EXEC_TEST_DONE');
});

test('the overrun allowed: the quote again, at least the grace', () => {
  const { overrunLimitMs, OVERRUN_GRACE_MS, EXEC_PROVIDER_OVERRAN } = buyerRole;
  assert.equal(EXEC_PROVIDER_OVERRAN, 'EXEC_PROVIDER_OVERRAN');
  assert.equal(overrunLimitMs(1), 1 + OVERRUN_GRACE_MS);
  assert.equal(overrunLimitMs(60_000), 120_000);
  assert.equal(overrunLimitMs(10_000, 50), 20_000);
  assert.equal(OVERRUN_GRACE_MS, 15_000);
  assert.equal(overrunLimitMs(Number.NaN), OVERRUN_GRACE_MS);
});
