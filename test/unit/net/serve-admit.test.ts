/**
 * ServeOptions.admit (src/net/protocols.ts): a protocol served to a known set of keys refuses any other key by its
 * connection's key before a byte of its request is read. Before, such a protocol (pool/1, pipeline/1, preempt/1)
 * checked the caller in its handler, after the whole request was in: a stranger that sent all but the end of a large
 * frame held its bytes, the stream budget and a stream slot for the whole request phase. Two real networks over TCP.
 */
import '../../../src/polyfill.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createNetwork, type Network } from '../../../src/net/node.js';
import { Ed25519Signer } from '../../../src/records/index.js';
import { C0Error } from '../../../src/errors.js';

const PROTO = '/c0mpute/test-admit/1';

test('a refused key gets the refusal at once, mid-request; an admitted key is served; the handler never runs for the refused', async () => {
  const base = { listen: ['/ip4/127.0.0.1/tcp/0'], loopback: true, connectivity: { minPeers: 0 }, verifyThreads: 0 };
  const server = await createNetwork({ ...base, signer: Ed25519Signer.generate() });
  const friend = await createNetwork({ ...base, signer: Ed25519Signer.generate() });
  const stranger = await createNetwork({ ...base, signer: Ed25519Signer.generate() });
  const nets: Network[] = [server, friend, stranger];
  try {
    for (const n of nets) await n.start();
    let handled = 0;
    const friendPeer = friend.peerId.toString();
    await server.handle(
      PROTO,
      async (frames, ctx) => {
        handled++;
        await ctx.send({ got: frames.length });
      },
      // an hour to send a request: only the refusal can end the stranger's stream before this test's deadline
      { deadlineMs: 3_600_000, requestMs: 3_600_000, maxFrameBytes: 2 * 1024 * 1024 },
      { admit: (peer) => (peer.toString() === friendPeer ? undefined : new C0Error('TEST_NOT_ADMITTED', 'not on the list')) },
    );
    await friend.dial(server.addrs()[0]!);
    await stranger.dial(server.addrs()[0]!);

    assert.deepEqual(await friend.request(server.peerId, PROTO, [{ a: 1 }]), [{ got: 1 }], 'an admitted key is served');

    const s = await stranger.openStream(server.peerId, PROTO, { limits: { deadlineMs: 10_000, maxFrameBytes: 2 * 1024 * 1024 } });
    await s.send(new Uint8Array(1024 * 1024)).catch(() => undefined); // and never its end frame
    await assert.rejects(s.next(), (e: C0Error) => e.code === 'TEST_NOT_ADMITTED' && (e.detail as { remote?: boolean }).remote === true);
    await s.close().catch(() => undefined);
    // a whole request from the stranger: refused the same way, never handled
    await assert.rejects(stranger.request(server.peerId, PROTO, [{ a: 1 }]), (e: C0Error) => e.code === 'TEST_NOT_ADMITTED');
    assert.equal(handled, 1, 'only the admitted request reached the handler');
  } finally {
    for (const n of nets) await n.stop();
  }
});
