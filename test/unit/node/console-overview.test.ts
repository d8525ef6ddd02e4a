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
import { Registry } from 'prom-client';
import { createLinkMetrics } from '../../../src/net/link-metrics.js';
import { RefusalLog } from '../../../src/net/refusals.js';
import { silentLogger } from '../../../src/util/log.js';
import { refusedPhrases } from '../../../ui/format.js';

const PEERS = [
  { peerId: '12D3KooWlinked', did: 'did:key:z6Mklinked', addrs: ['/ip4/127.0.0.1/tcp/1'] },
  { peerId: '12D3KooWbacked', addrs: ['/ip4/127.0.0.1/tcp/2'] },
  { peerId: '12D3KooWnogossip', addrs: ['/ip4/127.0.0.1/tcp/3'] },
];

function fakeDaemon(registry?: Registry): Daemon {
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
    registry: registry ?? { getMetricsAsJSON: async () => [] },
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

  it('counts refused connections per reason and failed handshakes per cause; the console says the wrong-key hint for a garbled one only (QA qaCon F2)', async () => {
    const registry = new Registry();
    const link = createLinkMetrics(registry, { connections: () => [], gossip: () => undefined });
    // wired as the node wires it (src/net/node.ts)
    const log = new RefusalLog({ log: silentLogger(), count: (reason, cause) => link.refused.inc(cause ? { reason, cause } : { reason }) });
    log.refused('handshake', '10.0.0.1', { cause: 'gone' });
    log.refused('handshake', '10.0.0.2', { cause: 'gone' });
    log.refused('handshake', '10.0.0.3', { cause: 'garbled' });
    log.refused('allowlist', 'peer');
    const route = consoleRoutes(fakeDaemon(registry), {} as ConsoleSessions, { samples: [] } as unknown as ConsoleHub, async () => undefined).find((r) => r.path === '/v1/console/overview')!;
    const r = (await route.handler({ params: {}, query: new URLSearchParams(), body: undefined } as never, {} as never)) as { overlays: Array<{ refused: Record<string, number>; handshakes: Record<string, number> }> };
    const o = r.overlays[0]!;
    // the per-reason figures as before (summed over causes)
    assert.deepEqual(o.refused, { handshake: 3, allowlist: 1 });
    assert.deepEqual(o.handshakes, { gone: 2, garbled: 1 });
    const said = refusedPhrases(o.refused, o.handshakes);
    assert.deepEqual(said, [
      { text: '2 failed handshakes, the peer went away mid-handshake: harmless (a restart, a dial that gave up, a port scan)', warn: false },
      { text: '1 failed handshake, garbled: a wrong swarm key?', warn: true },
      { text: '1 not on the allowlist: it holds the swarm key (has it leaked?)', warn: true },
    ]);
    // the QA's restart: one peer gone, no hint of a wrong key anywhere
    assert.doesNotMatch(refusedPhrases({ handshake: 1 }, { gone: 1 }).map((p) => p.text).join(' '), /swarm key/);
    // a daemon from before the causes: the number, and where to look
    assert.deepEqual(refusedPhrases({ handshake: 1 }, undefined), [{ text: '1 failed handshake (the node’s log says why)', warn: false }]);
  });
});
