/**
 * Inbound connections that never finish their handshake (docs/network.md §15 "Connections not finished"; QA ffNetDay2
 * F1): twelve raw TCP connections that send nothing, from one address, kept every new peer out of a node (libp2p's
 * node-wide bound of 10 still handshaking), and nothing said so. Now one address holds at most 8, the node 64, and
 * the refusals are named.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { sleep, startNode, stopAll, waitFor } from './net-helpers.js';

/** Hold `n` TCP connections from `from` to `port` that send nothing; resolves once each is open (or failed). */
async function silent(port: number, n: number, from: string): Promise<net.Socket[]> {
  return Promise.all(
    Array.from({ length: n }, () => new Promise<net.Socket>((resolve) => {
      const s = net.connect({ port, host: '127.0.0.1', localAddress: from });
      s.on('error', () => resolve(s));
      s.on('connect', () => resolve(s));
    })),
  );
}

test('silent TCP connections from one address do not keep a new peer out, and are named', async (t) => {
  const a = await startNode();
  const b = await startNode();
  const socks: net.Socket[] = [];
  try {
    const port = Number(a.addrs()[0]!.split('/tcp/')[1]!.split('/')[0]);
    // another loopback address than the honest peer's (Linux routes 127.0.0.0/8 to lo)
    const probe = await silent(port, 1, '127.0.0.2');
    if (probe[0]!.destroyed) {
      t.skip('127.0.0.2 is not usable here');
      return;
    }
    // libp2p takes 5 new connections a second from one address: 12 in three rounds, as a patient attacker would
    socks.push(...probe, ...(await silent(port, 4, '127.0.0.2')));
    await sleep(1_050);
    socks.push(...(await silent(port, 5, '127.0.0.2')));
    await sleep(1_050);
    socks.push(...(await silent(port, 2, '127.0.0.2')));
    await sleep(200);
    // an honest peer from another address still gets in while they are held (before: refused, ECONNRESET)
    await b.dial(a.addrs()[0]!, { timeoutMs: 4_000 });
    await waitFor(() => a.connectivity().peers >= 1, 3_000, 'a sees b');
    // past its 8 still handshaking, the address was refused, and that is named
    await waitFor(() => (a.inboundRefusals?.() ?? []).some((r) => r.code === 'NET_INBOUND_PENDING_PER_IP' && r.count >= 2), 3_000, 'the hostile address refused past its 8');
    const r = a.inboundRefusals!().find((x) => x.code === 'NET_INBOUND_PENDING_PER_IP')!;
    assert.equal(r.lastFrom, '127.0.0.2');
    assert.equal(r.from, 1);
  } finally {
    for (const s of socks) s.destroy();
    await stopAll([a, b]);
  }
});
