/**
 * Escapes from the buyer's watch (review r2 of the overrun rule, overrun-escape.mjs):
 * - a winner that promised no keepalives ended the overrun rule with one frame, a `keepalive` with `last: 'yes'` or
 *   one `output` chunk, then stalled: nothing watched the stream after, and the job waited to its deadline (45 s on a
 *   40 s deadline, NET_DEADLINE, no failover). Now `last: 'yes'` counts only from a provider that promised keepalives,
 *   and from a silent provider's first output its chunks must follow within the grace until the receipt.
 * - the phase before the request is sent was unwatched: a winner that never says `ready` to an input sent in frames
 *   (over 64 KiB), or whose stream does not open (its process frozen), held the buyer to the deadline. Now the stream
 *   must open within EXEC_OPEN_MS and the provider take the request within the grace of it opening
 *   (EXEC_PROVIDER_NOT_READY, a `timeout` non-delivery, and the failover).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as buyerRole from '../../../src/roles/buyer.js';
import { inputAllowanceMs, inputLimitMs, overrunLimitMs } from '../../../src/roles/buyer.js';
import { C0Error } from '../../../src/errors.js';
import type { NonDelivery } from '../../../src/records/kinds.js';
import { execExchange, type ExecChannel, type ExecFrame } from '../../../src/roles/exec-protocol.js';
import { NOW, P } from '../market/fixtures.js';
import { runAgainstWinner, type WinnerHooks, abortedBy as aborted } from './buyer-fakes.js';

const ME = P(880);
const A = P(881);
const B = P(882);

/** A run against A (the winner, misbehaving as `a` says) and B (the runner-up, reached: its stream fails). */
const runWith = (a: (signal: AbortSignal, h: WinnerHooks) => AsyncGenerator<unknown>, deps: Record<string, unknown> = {}) => runAgainstWinner(ME, A, B, a, deps);

function givenUp(r: Awaited<ReturnType<typeof runWith>>, outcome: string): void {
  assert.deepEqual(r.execs, [A.did, B.did], 'failed over to the runner-up');
  assert.equal(r.result.attempts[0]!.outcome, outcome);
  const nd = r.f.nondeliveries().map((p) => [(p.rec.record as NonDelivery).provider, (p.rec.record as NonDelivery).reason]);
  assert.deepEqual(nd[0], [A.did, 'timeout']);
}

test('a last keepalive from a winner that promised no keepalives does not end the overrun rule', { timeout: 20_000 }, async () => {
  const r = await runWith(async function* (signal, h) {
    h.opened?.();
    h.sent?.();
    yield { t: 'accepted', startedAt: NOW };
    yield { t: 'keepalive', last: 'yes' };
    await aborted(signal);
  });
  givenUp(r, 'provider overran its quote: EXEC_PROVIDER_OVERRAN');
});

test('one output chunk from a winner that promised no keepalives does not buy it the deadline: the next must follow within the grace', { timeout: 20_000 }, async () => {
  const r = await runWith(async function* (signal, h) {
    h.opened?.();
    h.sent?.();
    yield { t: 'accepted', startedAt: NOW };
    yield { t: 'output', data: new Uint8Array(1) };
    // progress is not delivery: it does not extend the wait for the next chunk
    yield { t: 'progress', message: 'still sending' };
    await aborted(signal);
  });
  givenUp(r, 'provider overran its quote: EXEC_PROVIDER_OVERRAN');
});

test('output chunks that keep coming from a winner that promised no keepalives are not cut off', { timeout: 20_000 }, async () => {
  const r = await runWith(
    async function* (_signal, h) {
      h.opened?.();
      h.sent?.();
      yield { t: 'accepted', startedAt: NOW };
      for (let i = 0; i < 5; i++) yield { t: 'output', data: new Uint8Array(1) };
      throw new C0Error('EXEC_TEST_DONE', 'ended after the output');
    },
    { overrunGraceMs: 5_000 },
  );
  assert.equal(r.result.attempts[0]!.outcome, 'provider unreachable or gone: EXEC_TEST_DONE');
});

test('a byte now and then, each inside the grace, does not hold the buyer: the output must keep a floor of bytes a second', { timeout: 20_000 }, async () => {
  const r = await runWith(async function* (signal, h) {
    h.opened?.();
    h.sent?.();
    yield { t: 'accepted', startedAt: NOW };
    // a byte every 30 ms, inside the 50 ms grace each time, for as long as the buyer waits (a gap rule never ended it)
    while (!signal.aborted) {
      yield { t: 'output', data: new Uint8Array(1) };
      await new Promise((ok) => setTimeout(ok, 30));
    }
    await aborted(signal);
  });
  givenUp(r, 'provider overran its quote: EXEC_PROVIDER_OVERRAN');
});

test('big chunks slower than the grace apart (a slow link) are not cut off: each buys time for its size', { timeout: 20_000 }, async () => {
  const r = await runWith(async function* (_signal, h) {
    h.opened?.();
    h.sent?.();
    yield { t: 'accepted', startedAt: NOW };
    // 64 KiB every 120 ms, more than the 50 ms grace apart: a gap rule cut this honest output at the second chunk
    for (let i = 0; i < 4; i++) {
      yield { t: 'output', data: new Uint8Array(64 * 1024) };
      await new Promise((ok) => setTimeout(ok, 120));
    }
    throw new C0Error('EXEC_TEST_DONE', 'ended after the output');
  });
  assert.equal(r.result.attempts[0]!.outcome, 'provider unreachable or gone: EXEC_TEST_DONE');
});

test('the overrun does not count the input: it runs from accepted; the input phase is a provider\'s own, and the grace', () => {
  assert.equal(overrunLimitMs(1000, 15_000), 16_000);
  // 16 MiB at the 128 KiB/s a provider requires of an input: 128 s more than the 30 s base, and the grace
  assert.equal(inputLimitMs(16 * 1024 * 1024, 30_000, 15_000), 30_000 + 128_000 + 15_000);
  assert.equal(inputLimitMs(0), buyerRole.EXEC_INPUT_BASE_MS + buyerRole.OVERRUN_GRACE_MS);
  assert.equal(inputAllowanceMs(0), 0);
});

test('a winner whose stream opened but that never takes the request (no ready) is given up', { timeout: 20_000 }, async () => {
  const r = await runWith(async function* (signal, h) {
    h.opened?.();
    await aborted(signal);
    yield undefined;
  });
  givenUp(r, `provider did not take the request in time: ${buyerRole.EXEC_PROVIDER_NOT_READY}`);
});

test('a winner whose stream does not open (its process frozen) is given up after the open limit', { timeout: 20_000 }, async () => {
  const r = await runWith(
    async function* (signal) {
      await aborted(signal);
      yield undefined;
    },
    { openLimitMs: 100 },
  );
  givenUp(r, `provider did not take the request in time: ${buyerRole.EXEC_PROVIDER_NOT_READY}`);
  assert.ok(buyerRole.EXEC_OPEN_MS > 20_000, 'an honest provider frozen 10–20 s still opens in time');
});

test('the exchange tells its watch of the ready to an input sent in frames', async () => {
  const heard: string[] = [];
  const answers: unknown[] = [{ t: 'ready' }];
  const ch: ExecChannel = {
    send: async () => {},
    end: async () => {},
    next: async () => answers.shift(),
    closeWrite: async () => {},
    close: async () => {},
  };
  const req = { t: 'exec' as const, selection: new Uint8Array(1), job: new Uint8Array(1), offer: new Uint8Array(1), input: new Uint8Array(100 * 1024) };
  for await (const _ of execExchange(ch, req, undefined, (f: ExecFrame) => heard.push(f.t))) void _;
  assert.deepEqual(heard, ['ready']);
});
