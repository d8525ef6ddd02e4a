/**
 * A remembered peer whose every address refuses the connection, redial after redial (nothing listens there: a one-shot
 * `c0mpute run` node's throwaway port remembered by a build before the one-shot tag, a node that moved), is forgotten
 * once `forgetRefusedAfterFailures` (10) such redials in a row found it so and it has not been useful for
 * `forgetRefusedAfterMs` (1 hour), counted across restarts (docs/network.md §11; QA qaUp F8: a steward redialled eight
 * such ports at every restart, `failures: 16` in its file, until the 120 of `forgetAfterFailures`). A peer whose dials
 * time out (a link down) keeps the old rule; a refused peer useful within the hour too.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Connectivity, type ConnectivityHost, type DialTarget, type RememberedPeer, type RememberStore } from '../../../src/net/connectivity.js';
import { silentLogger } from '../../../src/util/log.js';

const HOUR = 3_600_000;

/** One other peer is connected (a failure with no connection at all is not counted); every dial fails with `err`. */
class Host implements ConnectivityHost {
  constructor(private err: (t: DialTarget) => Error) {}
  isConnected(p: string) {
    return p === 'OTHER';
  }
  peerCount() {
    return 1;
  }
  async dial(t: DialTarget): Promise<string> {
    throw this.err(t);
  }
}

function memStore(peers: RememberedPeer[]): RememberStore & { peers: RememberedPeer[] } {
  const s = {
    peers,
    load: () => s.peers.map((p) => ({ ...p, addrs: [...p.addrs] })),
    save: (ps: RememberedPeer[]) => void (s.peers = ps.map((p) => ({ ...p, addrs: [...p.addrs] }))),
  };
  return s;
}

const refused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:40711'), { code: 'ECONNREFUSED' });
const silent = () => Object.assign(new Error('The operation was aborted'), { name: 'AbortError' });

/** Run a Connectivity over `store` for `redials` failed redials of P (its backoff driven by a fake monotonic clock). */
async function run(store: RememberStore, host: ConnectivityHost, wall: number, redials: number): Promise<{ c: Connectivity; dials: number }> {
  let mono = 0;
  let dials = 0;
  const c = new Connectivity({ host, bootstrap: [], store, clock: () => wall, monoClock: () => mono, rand: () => 0.5, log: silentLogger(), onDial: (k) => void (k === 'remembered' && dials++) });
  // (a forgotten peer is not dialled again: the passes go on for the time the redials would have taken)
  for (let i = 0; i < 4_000 && dials < redials; i++) {
    await c.tick();
    mono += 500;
  }
  c.stop();
  return { c, dials };
}

test('every address refused, 10 redials in a row, idle for an hour: forgotten, the count kept across restarts', async () => {
  const wall = 1_800_000_000_000;
  const store = memStore([{ peerId: 'P', addrs: ['/ip4/127.0.0.1/tcp/40711', '/ip4/10.0.0.5/tcp/40711'], lastUsefulAt: wall - 2 * HOUR }]);
  // a first run of the steward: 6 refused redials, then it stops (the count is saved at stop)
  await run(store, new Host(refused), wall, 6);
  assert.equal(store.peers[0]?.failures, 6);
  assert.equal(store.peers[0]?.refused, 6);
  // the next start goes on counting: forgotten at the 10th
  const { dials } = await run(store, new Host(refused), wall, 20);
  assert.equal(dials, 4, 'forgotten at the 10th refused redial in a row');
  assert.deepEqual(store.peers, [], 'gone from the store too');
});

test('dials that time out, or a peer useful within the hour: kept (the old rules)', async () => {
  const wall = 1_800_000_000_000;
  const timedOut = memStore([{ peerId: 'P', addrs: ['/ip4/127.0.0.1/tcp/40711'], lastUsefulAt: wall - 2 * HOUR }]);
  await run(timedOut, new Host(silent), wall, 15);
  assert.equal(timedOut.peers[0]?.failures, 15);
  assert.equal(timedOut.peers[0]?.refused, undefined);

  const recent = memStore([{ peerId: 'P', addrs: ['/ip4/127.0.0.1/tcp/40711'], lastUsefulAt: wall - HOUR / 2 }]);
  await run(recent, new Host(refused), wall, 15);
  assert.equal(recent.peers[0]?.refused, 15, 'a node restarting or down for minutes is not forgotten for it');

  // one address refused, the other silent: not "nothing listens anywhere"
  const mixed = memStore([{ peerId: 'P', addrs: ['/ip4/127.0.0.1/tcp/40711', '/ip4/10.0.0.5/tcp/4001'], lastUsefulAt: wall - 2 * HOUR }]);
  await run(mixed, new Host((t) => (t.addrs[0]!.startsWith('/ip4/127') ? refused() : silent())), wall, 15);
  assert.equal(mixed.peers[0]?.failures, 15);
  assert.equal(mixed.peers[0]?.refused, undefined);
});
