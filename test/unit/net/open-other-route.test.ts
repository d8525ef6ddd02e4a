/**
 * A stream the first connection's process does not speak (src/net/protocols.ts `DirectProtocols` #dialStream;
 * docs/network.md §11 "Two processes with one key"), against a fake libp2p: the peer's other connections are tried,
 * those whose identify listed the protocol first and never those whose identify did not; then the addresses where a
 * process of its key spoke it, each at most once per ALT_RETRY_MS when it gives nothing; then NET_PROTOCOL_UNSUPPORTED.
 */
import '../../../src/polyfill.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Connection, Stream } from '@libp2p/interface';
import { peerIdFromString } from '@libp2p/peer-id';
import { DirectProtocols, NET_ERR, type StreamHost } from '../../../src/net/protocols.js';
import { createNetMetrics } from '../../../src/net/metrics.js';
import { silentLogger } from '../../../src/util/log.js';
import type { C0Error } from '../../../src/errors.js';

const PEER = peerIdFromString('12D3KooWPZNRsECXmgrJRhG6YRvo5hMGCd8EJ6YuxPGroGdwxdh5');
const PROTO = '/c0mpute/exec/1';

const unsupported = (): Error => Object.assign(new Error('Protocol selection failed - could not negotiate /c0mpute/exec/1'), { name: 'UnsupportedProtocolError' });
const fakeStream = { status: 'open', addEventListener() {}, removeEventListener() {} } as unknown as Stream;

function conn(id: string, speaks: boolean, asked: string[]): Connection {
  return {
    id,
    status: 'open',
    remoteAddr: { toString: () => `/ip4/127.0.0.1/tcp/${id}` },
    newStream: async () => {
      asked.push(id);
      if (!speaks) throw unsupported();
      return fakeStream;
    },
  } as unknown as Connection;
}

test('another connection of the peer whose process speaks it: identified ones first, those identified without it never', async () => {
  const asked: string[] = [];
  const conns = [conn('1', false, asked), conn('2', false, asked), conn('3', true, asked)];
  const host: StreamHost = {
    handle: async () => {},
    unhandle: async () => {},
    dialProtocol: async () => {
      asked.push('libp2p');
      throw unsupported();
    },
    getConnections: () => conns,
  };
  // 1 was identified without it, 3 with it, 2 not yet
  const view = { speaks: (id: string) => (id === '1' ? false : id === '3' ? true : undefined), altAddrs: () => [] };
  const d = new DirectProtocols(host, createNetMetrics(), silentLogger(), { conns: view });
  const s = await d.open(PEER, PROTO);
  await s.close().catch(() => undefined);
  assert.deepEqual(asked, ['libp2p', '3']);
});

test('no connection speaks it: the alternative addresses are dialled, one that gave nothing not again for ALT_RETRY_MS; then NET_PROTOCOL_UNSUPPORTED', async () => {
  const dialled: string[] = [];
  const host: StreamHost = {
    handle: async () => {},
    unhandle: async () => {},
    dialProtocol: async () => {
      throw unsupported();
    },
    getConnections: () => [],
    dial: async (ma) => {
      dialled.push(ma.toString());
      throw new Error('connect ECONNREFUSED');
    },
  };
  const view = { speaks: () => undefined, altAddrs: () => ['/ip4/127.0.0.1/tcp/18005'] };
  const d = new DirectProtocols(host, createNetMetrics(), silentLogger(), { conns: view });
  for (let i = 0; i < 3; i++) {
    const e = await d.open(PEER, PROTO).then(() => assert.fail('opened'), (x: unknown) => x as C0Error);
    assert.equal(e.code, NET_ERR.PROTOCOL);
  }
  assert.deepEqual(dialled, [`/ip4/127.0.0.1/tcp/18005/p2p/${PEER.toString()}`], 'dialled once, not on every call');
});
