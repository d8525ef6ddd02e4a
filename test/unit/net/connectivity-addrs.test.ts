/**
 * Remembered peers' addresses and their end (src/net/connectivity.ts; docs/network.md "Reconnection and liveness").
 *
 * Review (real daemons): a remembered peer whose first address black-holes (TCP accepted, nothing answers) was never
 * reconnected through the store: the whole dial had a 5 s deadline and libp2p gives each address 6 s in turn, so the
 * working second address was never tried. And remembered peers never aged out: a peer that connected once could
 * leave up to 32 addresses per entry that the node dialled for ever, across restarts.
 *
 * The fake host models libp2p's dial: a target's addresses one after another, a silent address using 6 s of the
 * dial's deadline, without waiting in real time.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { Connectivity, type ConnectivityHost, type DialTarget, type RememberedPeer, type RememberStore } from '../../../src/net/connectivity.js';
import type { Logger } from '../../../src/util/log.js';
import { silentLogger } from '../../../src/util/log.js';

const SILENT_MS = 6_000; // libp2p's default per-address deadline before the fix

class AddrHost implements ConnectivityHost {
  /** Addresses (bare) that answer, with the peer that listens there. */
  answers = new Map<string, string>();
  /** Addresses that accept TCP and never answer. */
  silent = new Set<string>();
  conns = new Set<string>();
  others = 0; // other connected peers (not dialled here)
  dialed: string[] = [];
  pending: Array<() => void> = [];
  hang = new Set<string>(); // dials to these peers never end
  isConnected(p: string) {
    return this.conns.has(p);
  }
  peerCount() {
    return this.conns.size + this.others;
  }
  async dial(t: DialTarget, timeoutMs: number) {
    if (t.peerId && this.hang.has(t.peerId)) return new Promise<string>(() => {});
    let spent = 0;
    for (const a of t.addrs) {
      const b = a.replace(/\/p2p\/[^/]+$/, '');
      this.dialed.push(b);
      if (this.silent.has(b)) {
        spent += Math.min(SILENT_MS, timeoutMs);
        if (spent >= timeoutMs) throw Object.assign(new Error('The operation was aborted due to timeout'), { name: 'TimeoutError' });
        continue;
      }
      const id = this.answers.get(b);
      if (id && id === t.peerId) {
        this.conns.add(id);
        return id;
      }
    }
    throw new Error('connect ECONNREFUSED');
  }
}

function memStore(peers: RememberedPeer[] = []): RememberStore & { peers: RememberedPeer[]; saves: number } {
  const s = {
    peers,
    saves: 0,
    load: () => structuredClone(s.peers),
    save(p: RememberedPeer[]) {
      s.saves++;
      s.peers = structuredClone(p);
    },
  };
  return s;
}

function recording(): { log: Logger; lines: Array<{ level: number; msg: string; peer?: string }> } {
  const lines: Array<{ level: number; msg: string; peer?: string }> = [];
  const log = pino({ level: 'debug' }, { write: (s: string) => void lines.push(JSON.parse(s) as { level: number; msg: string }) }) as unknown as Logger;
  return { log, lines };
}

const BH = '/ip4/203.0.113.7/tcp/4001';
const REAL = '/ip4/192.168.1.5/tcp/4001';

test('a remembered peer whose first address is silent is reached on its second, which then goes first (also after a restart)', async () => {
  let now = 0;
  const host = new AddrHost();
  host.silent.add(BH);
  host.answers.set(REAL, 'A');
  const store = memStore([{ peerId: 'A', addrs: [BH, REAL], lastUsefulAt: Date.now() }]);
  const c = new Connectivity({ host, bootstrap: [], store, monoClock: () => now, rand: () => 0.5, log: silentLogger() });
  for (; now < 60_000 && !host.isConnected('A'); now += 500) await c.tick();
  assert.ok(host.isConnected('A'), `not connected in 60 s; dialled ${host.dialed.join(' ')}`);
  assert.deepEqual(store.peers[0]!.addrs, [REAL, BH], 'the address that answered goes first');

  // Identify then reports the announced order and the address this node dialled: the learned order stays.
  c.noteUseful('A', [BH, REAL], `${REAL}/p2p/A`);
  assert.deepEqual(c.remembered()[0]!.addrs, [REAL, BH]);

  const host2 = new AddrHost();
  host2.silent.add(BH);
  host2.answers.set(REAL, 'A');
  const c2 = new Connectivity({ host: host2, bootstrap: [], store, monoClock: () => now, rand: () => 0.5, log: silentLogger() });
  for (let i = 0; i < 10 && !host2.isConnected('A'); i++, now += 1_500) await c2.tick();
  assert.ok(host2.isConnected('A'));
  assert.deepEqual(host2.dialed, [REAL], 'after a restart the address that answered is dialled first');
});

test('a dial gives up after two silent addresses, which go to the back: the next dial starts with the others', async () => {
  let now = 0;
  const host = new AddrHost();
  const bh = [1, 2, 3].map((i) => `/ip4/203.0.113.${i}/tcp/4001`);
  for (const a of bh) host.silent.add(a);
  host.answers.set(REAL, 'A');
  const store = memStore([{ peerId: 'A', addrs: [...bh, REAL], lastUsefulAt: Date.now() }]);
  const c = new Connectivity({ host, bootstrap: [], store, monoClock: () => now, rand: () => 0.5, log: silentLogger() });
  for (; now < 60_000 && !host.isConnected('A'); now += 500) await c.tick();
  assert.ok(host.isConnected('A'));
  assert.deepEqual(host.dialed, [bh[0], bh[1], bh[2], REAL]);
  assert.deepEqual(store.peers[0]!.addrs, [REAL, bh[0], bh[1], bh[2]], 'the one that answered first, the one silent last time last');
});

test('the DHT top-up reaches a found peer whose first address is silent', async () => {
  const host = new AddrHost() as AddrHost & { discover(): Promise<DialTarget[]> };
  host.others = 1;
  host.silent.add(BH);
  host.answers.set(REAL, 'D');
  host.discover = async () => [{ peerId: 'D', addrs: [`${BH}/p2p/D`, `${REAL}/p2p/D`] }];
  const c = new Connectivity({ host, bootstrap: [], monoClock: () => 0, rand: () => 0.5, log: silentLogger() });
  await c.tick();
  assert.ok(host.isConnected('D'));
});

test('a remembered entry keeps at most rememberAddrs addresses, the one dialled first; an old file with more loads', () => {
  const many = Array.from({ length: 32 }, (_, i) => `/ip4/10.0.0.${i}/tcp/1`);
  const c = new Connectivity({ host: new AddrHost(), bootstrap: [], log: silentLogger() });
  c.noteUseful('P', many, '/ip4/10.0.0.20/tcp/1/p2p/P');
  const kept = c.remembered()[0]!.addrs;
  assert.equal(kept.length, 8);
  assert.equal(kept[0], '/ip4/10.0.0.20/tcp/1');
  assert.deepEqual(kept.slice(1), many.slice(0, 7));

  // A file written before: 40 addresses, a monotonic stamp, no failure count.
  const store = memStore([
    { peerId: 'Q', addrs: Array.from({ length: 40 }, (_, i) => `/ip4/10.1.0.${i}/tcp/1`), lastUsefulAt: 12_345 },
    { peerId: 'R', addrs: ['/ip4/10.2.0.1/tcp/1/p2p/R'], lastUsefulAt: Date.now() - 1_000 },
  ]);
  const c2 = new Connectivity({ host: new AddrHost(), bootstrap: [], store, log: silentLogger() });
  const [q, r] = c2.remembered();
  assert.equal(q!.addrs.length, 8);
  assert.ok(q!.lastUsefulAt > Date.now() - 60_000, 'a monotonic stamp counts from now');
  assert.deepEqual(r!.addrs, ['/ip4/10.2.0.1/tcp/1']);
});

test('a remembered peer is forgotten after forgetAfterFailures counted failed redials, counted across restarts; not while this node has no connection', async () => {
  let now = 0;
  const host = new AddrHost();
  host.silent.add(BH);
  const store = memStore([{ peerId: 'X', addrs: [BH], lastUsefulAt: Date.now() }]);
  const { log, lines } = recording();
  const opts = { forgetAfterFailures: 10, saveEveryMs: 0 };
  const c = new Connectivity({ host, bootstrap: [], store, options: opts, monoClock: () => now, rand: () => 0.5, log });
  // No connection at all: this node's own network may be down, nothing counts.
  for (let i = 0; i < 40; i++, now += 31_000) await c.tick();
  assert.equal(c.remembered().length, 1);
  assert.equal(store.peers[0]!.failures ?? 0, 0);

  host.others = 1;
  for (let i = 0; i < 6; i++, now += 31_000) await c.tick();
  assert.equal(store.peers[0]!.failures, 6, 'the count is stored');
  c.stop();

  const c2 = new Connectivity({ host, bootstrap: [], store, options: opts, monoClock: () => now, rand: () => 0.5, log });
  const before = host.dialed.length;
  for (let i = 0; i < 20 && c2.remembered().length; i++, now += 31_000) await c2.tick();
  assert.equal(c2.remembered().length, 0, 'forgotten');
  assert.equal(host.dialed.length - before, 4, 'at the tenth failure, four after the restart');
  assert.deepEqual(store.peers, []);
  assert.ok(lines.some((l) => l.level === 30 && l.peer === 'X' && /forgotten/.test(l.msg)));
  const dials = host.dialed.length;
  for (let i = 0; i < 10; i++, now += 31_000) await c2.tick();
  assert.equal(host.dialed.length, dials, 'no longer dialled');
});

test('a success resets the failure count; a peer not useful for forgetAfterMs is forgotten once forgetIdleAfterFailures redials in a row failed', async () => {
  let now = 0;
  let wall = Date.now();
  const host = new AddrHost();
  host.others = 1;
  host.answers.set(REAL, 'Y');
  const store = memStore([{ peerId: 'Y', addrs: [REAL], lastUsefulAt: wall, failures: 5 }]);
  const c = new Connectivity({ host, bootstrap: [], store, monoClock: () => now, clock: () => wall, rand: () => 0.5, log: silentLogger() });
  for (let i = 0; i < 10 && !host.isConnected('Y'); i++, now += 1_500) await c.tick();
  assert.ok(host.isConnected('Y'));
  assert.equal(store.peers[0]!.failures, undefined);

  host.conns.delete('Y');
  host.answers.delete(REAL);
  wall += 8 * 24 * 3_600_000;
  const before = host.dialed.length;
  for (let i = 0; i < 20 && c.remembered().length; i++, now += 31_000) await c.tick();
  assert.equal(c.remembered().length, 0);
  assert.equal(host.dialed.length - before, c.opts.forgetIdleAfterFailures, 'forgotten at its tenth counted failure, not its first (a link blip)');
});

test('a peer connected for a week is useful all along: its first failed redials after a link cut do not forget it, and it is reached again (second-round review)', async () => {
  let now = 0;
  let wall = Date.now();
  const host = new AddrHost();
  host.others = 1;
  host.answers.set(REAL, 'Z');
  const store = memStore([{ peerId: 'Z', addrs: [REAL], lastUsefulAt: wall }]);
  const { log, lines } = recording();
  const c = new Connectivity({ host, bootstrap: [], store, options: { saveEveryMs: 0 }, monoClock: () => now, clock: () => wall, rand: () => 0.5, log });
  for (let i = 0; i < 10 && !host.isConnected('Z'); i++, now += 1_500) await c.tick();
  assert.ok(host.isConnected('Z'));
  // eight days connected, passes every few seconds
  for (let d = 0; d < 8 * 24; d++, wall += 3_600_000, now += 5_000) await c.tick();
  assert.ok(wall - store.peers[0]!.lastUsefulAt <= 3_600_000, 'its stamp was renewed while connected, and saved');
  // the link is cut: three redials fail, then it answers again
  host.conns.delete('Z');
  host.answers.delete(REAL);
  for (let i = 0; i < 3; i++, now += 31_000) await c.tick();
  assert.equal(c.remembered().length, 1, 'not forgotten');
  assert.ok(!lines.some((l) => /forgotten/.test(l.msg)));
  host.answers.set(REAL, 'Z');
  for (let i = 0; i < 10 && !host.isConnected('Z'); i++, now += 31_000) await c.tick();
  assert.ok(host.isConnected('Z'), 'reached again');
});

test('a pass does not wait for a dial that has not ended: another peer is redialled meanwhile', async () => {
  const host = new AddrHost();
  host.hang.add('H');
  const store = memStore([{ peerId: 'H', addrs: [BH], lastUsefulAt: Date.now() }]);
  const c = new Connectivity({ host, bootstrap: [`${REAL}/p2p/A`], store, options: { tickMs: 5, idleTickMs: 50, bootstrap: { initialMs: 5, maxMs: 20, factor: 2, jitter: 0 } }, log: silentLogger() });
  c.start();
  try {
    const end = Date.now() + 5_000;
    // A is refused until now; the first pass is still waiting on H's dial.
    await new Promise((r) => setTimeout(r, 20));
    assert.ok(!host.isConnected('A'));
    host.answers.set(REAL, 'A');
    while (!host.isConnected('A') && Date.now() < end) await new Promise((r) => setTimeout(r, 5));
    assert.ok(host.isConnected('A'));
  } finally {
    c.stop();
  }
});
