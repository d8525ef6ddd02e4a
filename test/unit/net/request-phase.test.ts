/**
 * A collected request (`serve`, `Network.handle`) is read within its request phase (ProtocolLimits.requestMs), not
 * the protocol's whole deadline: steward/1 gives a claim's answer a day (it may wait in line), and four keys that sent
 * all but the last byte of their frames held the steward's whole request budget for those 24 hours (review s39, real
 * daemons). The answer still has the whole deadline once the request is in. Two real networks over TCP on 127.0.0.1.
 */
import '../../../src/polyfill.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createNetwork, type Network } from '../../../src/net/node.js';
import { Ed25519Signer } from '../../../src/records/index.js';
import { REQUEST_BASE_MS, limitsFor, requestDeadlineMs } from '../../../src/net/protocols.js';
import { TRAIN_LIMITS } from '../../../src/training/transport.js';
import { POOL_MIN_REQUEST_RATE, poolServeLimits } from '../../../src/roles/pool-member/wiring.js';
import { POOL_PROTOCOL } from '../../../src/roles/pool-member/member.js';
import type { C0Error } from '../../../src/errors.js';

const PROTO = '/c0mpute/test-request-phase/1';

test('a caller that stops before its end frame is cut at the request phase; one that sent its request is answered past it', async () => {
  const base = { listen: ['/ip4/127.0.0.1/tcp/0'], loopback: true, connectivity: { minPeers: 0 }, verifyThreads: 0 };
  const server = await createNetwork({ ...base, signer: Ed25519Signer.generate() });
  const client = await createNetwork({ ...base, signer: Ed25519Signer.generate() });
  const nets: Network[] = [server, client];
  try {
    await server.start();
    await client.start();
    // an answer that takes 3 s, on a protocol whose answers may take an hour; the request has 1.5 s (not less: on a
    // loaded 2-core machine a 400 ms phase cut the first, whole request before the server read its end frame)
    await server.handle(
      PROTO,
      async (frames, ctx) => {
        await new Promise((r) => setTimeout(r, 3_000));
        await ctx.send({ got: frames.length });
      },
      { deadlineMs: 3_600_000, requestMs: 1_500 },
    );
    await client.dial(server.addrs()[0]!);
    const answered = await client.request(server.peerId, PROTO, [{ a: 1 }], { limits: { deadlineMs: 20_000 } });
    assert.deepEqual(answered, [{ got: 1 }], 'the request was in: the answer had the whole deadline');

    const s = await client.openStream(server.peerId, PROTO, { limits: { deadlineMs: 20_000 } });
    await s.send({ a: 1 }); // and never its end frame
    // cut by the server at its request phase (the stream reset), not by this caller's own 20 s (NET_DEADLINE)
    await assert.rejects(s.next(), (e: C0Error) => e.code === 'NET_STREAM_FAILED');
    await s.close().catch(() => undefined);
  } finally {
    for (const n of nets) await n.stop();
  }
});

test('the request phase by default: 30 s plus one largest frame at 128 KiB/s, never past the deadline; many-frame protocols keep theirs', () => {
  assert.equal(requestDeadlineMs(limitsFor('/x', { deadlineMs: 24 * 3_600_000, maxFrameBytes: 1024 * 1024 })), REQUEST_BASE_MS + 8_000);
  assert.equal(requestDeadlineMs(limitsFor('/x', { deadlineMs: 10_000 })), 10_000);
  assert.equal(requestDeadlineMs(limitsFor('/x', { deadlineMs: 600_000, maxFrameBytes: 4 * 1024 * 1024 })), REQUEST_BASE_MS + 32_000);
  assert.equal(requestDeadlineMs(limitsFor('/x', TRAIN_LIMITS)), TRAIN_LIMITS.deadlineMs, 'train/1 requests are up to 128 MiB: the whole 60 s as before');
  // pool/1: a coordinator's 4 MiB run request over a 60 KiB/s link was cut at the default 62 s (review s40); served to
  // the roster's members only, it gets 30 s plus the frame at 32 KiB/s
  const pool = poolServeLimits(30_000);
  assert.equal(requestDeadlineMs(limitsFor(POOL_PROTOCOL, pool)), REQUEST_BASE_MS + Math.ceil(((4 * 1024 * 1024) / POOL_MIN_REQUEST_RATE) * 1000));
  assert.ok(requestDeadlineMs(limitsFor(POOL_PROTOCOL, pool)) > ((4 * 1024 * 1024) / (60 * 1024)) * 1000, 'a whole frame at 60 KiB/s fits');
});
