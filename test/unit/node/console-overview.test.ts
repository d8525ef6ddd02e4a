/**
 * GET /v1/console/overview carries each peer's gossip streams and prune backoff, as GET /v1/peers has them (review
 * s40 C F1's Overview note): the console's peers table showed every connected peer as "connected", one this node
 * sends no gossip to (no outbound stream, or backed off) included.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { consoleRoutes } from '../../../src/node/console-routes.js';
import type { ConsoleHub } from '../../../src/node/console-hub.js';
import type { ConsoleSessions } from '../../../src/node/console-session.js';
import type { Daemon } from '../../../src/node/daemon.js';

const PEERS = [
  { peerId: '12D3KooWlinked', did: 'did:key:z6Mklinked', addrs: ['/ip4/127.0.0.1/tcp/1'] },
  { peerId: '12D3KooWbacked', addrs: ['/ip4/127.0.0.1/tcp/2'] },
  { peerId: '12D3KooWnogossip', addrs: ['/ip4/127.0.0.1/tcp/3'] },
];

function fakeDaemon(): Daemon {
  const overlay = {
    name: 'public',
    roles: ['buyer'],
    net: {
      peerId: { toString: () => '12D3KooWself' },
      addrs: () => [],
      peers: () => PEERS,
      gossip: () => ({
        kinds: {},
        peerKinds: new Map(),
        peerMesh: new Map(),
        peerLink: new Map([
          ['12D3KooWlinked', { out: true, in: true, backoffMs: 0 }],
          ['12D3KooWbacked', { out: false, in: true, backoffMs: 41_999.6 }],
        ]),
      }),
    },
    registry: { getMetricsAsJSON: async () => [] },
    d: { network: {} },
    networkHealth: () => ({ state: 'ok' }),
  };
  return { did: 'did:key:z6Mkself', apiAddress: '127.0.0.1:1', clock: () => 10, startedAt: 0, primary: overlay, overlays: new Map([['public', overlay]]) } as unknown as Daemon;
}

describe('GET /v1/console/overview', () => {
  it("gives each peer its gossip streams and backoff, as /v1/peers does; a peer without gossip gets neither", async () => {
    const route = consoleRoutes(fakeDaemon(), {} as ConsoleSessions, { samples: [] } as unknown as ConsoleHub, async () => undefined).find((r) => r.path === '/v1/console/overview')!;
    const r = (await route.handler({ params: {}, query: new URLSearchParams(), body: undefined } as never, {} as never)) as { overlays: Array<{ peers: Array<Record<string, unknown>> }> };
    assert.deepEqual(r.overlays[0]!.peers, [
      { ...PEERS[0], streams: { out: true, in: true }, backoffMs: 0 },
      { ...PEERS[1], streams: { out: false, in: true }, backoffMs: 42_000 },
      PEERS[2],
    ]);
  });
});
