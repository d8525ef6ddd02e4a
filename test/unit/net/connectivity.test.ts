import '../../../src/polyfill.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backoffDelay, classifyDialError, Connectivity, CONNECTIVITY_DEFAULTS, ReconnectSchedule, type ConnectivityHost, type DialTarget, type RememberedPeer } from '../../../src/net/connectivity.js';
import { GossipHealth, type GossipProblem, type MeshGap } from '../../../src/net/gossip-health.js';
import { RefusalLog } from '../../../src/net/refusals.js';
import { assessNetwork } from '../../../src/node/net-health.js';
import { seededRandom } from '../../../src/net/faults.js';
import { silentLogger, type Logger } from '../../../src/util/log.js';
import { discoveryCandidates, type WalkEvent } from '../../../src/net/link-hosts.js';
import type { PeerId } from '@libp2p/interface';

const policy = { initialMs: 250, maxMs: 4_000, factor: 2, jitter: 0.25 };

test('backoff grows by the factor from the initial delay and is capped', () => {
  // rand 0.5 = no jitter
  assert.deepEqual([0, 1, 2, 3, 4, 5, 6, 50, 10_000].map((n) => backoffDelay(n, policy, 0.5)), [250, 500, 1000, 2000, 4000, 4000, 4000, 4000, 4000]);
});

test('jitter stays within ±jitter and never above the cap', () => {
  const r = seededRandom(3);
  for (let n = 0; n < 40; n++) {
    const raw = Math.min(policy.maxMs, policy.initialMs * 2 ** n);
    const d = backoffDelay(n, policy, r());
    assert.ok(d >= Math.floor(raw * 0.75) && d <= Math.min(policy.maxMs, Math.ceil(raw * 1.25)), `failures ${n}: ${d}`);
  }
  assert.equal(backoffDelay(0, policy, 0), 188); // 250 × 0.75, rounded
  assert.equal(backoffDelay(0, policy, 0.999999), 312);
  assert.equal(backoffDelay(9, policy, 0.999999), 4000);
});

test('the schedule never gives up: after any number of failures the next dial is at most the cap away', () => {
  let now = 0;
  const s = new ReconnectSchedule(() => policy, seededRandom(9));
  s.connected('p');
  s.disconnected('p', now);
  assert.ok(!s.due('p', now), 'not at the very moment of the loss');
  const gaps: number[] = [];
  for (let i = 0; i < 10_000; i++) {
    const at = s.nextAt('p')!;
    now = at;
    assert.ok(s.due('p', now));
    gaps.push(s.failed('p', now));
  }
  assert.equal(s.failures('p'), 10_000);
  assert.ok(Math.max(...gaps) <= policy.maxMs);
  assert.ok(gaps.slice(-100).every((g) => g >= policy.maxMs * 0.75), 'at the cap, only jitter below it');
  s.connected('p');
  assert.equal(s.failures('p'), 0, 'a success resets the backoff');
  assert.ok(!s.due('p', now + 1e9));
});

class FakeHost implements ConnectivityHost {
  up = new Set<string>(); // peers that accept a dial
  conns = new Set<string>();
  dials: string[] = [];
  found: DialTarget[] = [];
  isConnected(p: string) {
    return this.conns.has(p);
  }
  peerCount() {
    return this.conns.size;
  }
  async dial(t: DialTarget) {
    const id = t.peerId ?? '?';
    this.dials.push(id);
    if (!this.up.has(id)) throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { name: 'Error' });
    this.conns.add(id);
    return id;
  }
  async discover() {
    return this.found;
  }
}

test('Connectivity redials a lost bootstrap peer with backoff, forever, and reconnects within the cap once it is back', async () => {
  let now = 1_000;
  const host = new FakeHost();
  host.up.add('B');
  const c = new Connectivity({ host, bootstrap: ['/ip4/127.0.0.1/tcp/1/p2p/B'], monoClock: () => now, rand: () => 0.5, log: silentLogger() });
  c.schedule.disconnected('B', now, true);
  await c.tick();
  assert.deepEqual(host.dials, ['B']);
  assert.ok(host.isConnected('B'));

  // B restarts: down for 10 minutes of fake time.
  host.conns.delete('B');
  host.up.delete('B');
  host.dials = [];
  const downAt = now;
  for (; now < downAt + 600_000; now += 100) await c.tick();
  assert.ok(host.dials.length >= 600_000 / 4_000 - 10, `${host.dials.length} dials in 10 minutes`);
  const st = c.status().bootstrap[0]!;
  assert.equal(st.connected, false);
  assert.equal(st.lastError?.code, 'NET_CONNECTION_REFUSED');
  assert.equal(st.failures, host.dials.length);

  host.up.add('B');
  const upAt = now;
  while (!host.isConnected('B')) {
    now += 100;
    await c.tick();
  }
  assert.ok(now - upAt <= CONNECTIVITY_DEFAULTS.bootstrap.maxMs, `reconnected ${now - upAt} ms after it came back`);
  assert.equal(c.status().bootstrap[0]!.lastError, undefined);
});

test('a dial that stopping the node aborts is neither reported nor counted: no "retrying" line from a node that is stopping', async () => {
  const lines: string[] = [];
  const log = { ...silentLogger(), warn: (_o: unknown, msg: string) => void lines.push(msg), info: (_o: unknown, msg: string) => void lines.push(msg) } as unknown as Logger;
  const host = new FakeHost();
  let abort!: (e: Error) => void;
  // the dial hangs until the node stops, which aborts it (libp2p's stop aborts the dials in flight)
  host.dial = (t: DialTarget) => (host.dials.push(t.peerId ?? '?'), new Promise<string>((_r, reject) => (abort = reject)));
  const dials: boolean[] = [];
  const c = new Connectivity({ host, bootstrap: ['/ip4/127.0.0.1/tcp/1/p2p/B'], monoClock: () => 1_000, rand: () => 0.5, log, onDial: (_k, ok) => void dials.push(ok) });
  c.schedule.disconnected('B', 1_000, true);
  const tick = c.tick();
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(host.dials, ['B']);
  c.stop();
  abort(Object.assign(new Error('The operation was aborted'), { name: 'AbortError' }));
  await tick;
  assert.deepEqual(lines, []);
  assert.deepEqual(dials, []);
  assert.equal(c.status().bootstrap[0]!.failures, 0);
});

test('remembered peers are redialled and kept across restarts through the store; below minPeers the DHT is asked', async () => {
  let now = 0;
  let saved: RememberedPeer[] = [];
  const store = { load: () => saved, save: (p: RememberedPeer[]) => void (saved = p) };
  const host = new FakeHost();
  const a = new Connectivity({ host, bootstrap: [], monoClock: () => now, rand: () => 0.5, store, log: silentLogger(), options: { minPeers: 3 } });
  a.noteUseful('P', ['/ip4/127.0.0.1/tcp/9']);
  assert.equal(saved.length, 1);

  // A new process: the remembered peer is dialled at start.
  host.up.add('P');
  const b = new Connectivity({ host, bootstrap: [], monoClock: () => now, rand: () => 0.5, store, log: silentLogger(), options: { minPeers: 3 } });
  b.start(); // the first tick dials every remembered peer at once
  b.stop();
  await new Promise((r) => setImmediate(r));
  assert.ok(host.isConnected('P'));
  // one peer, minimum three: the DHT's answer is dialled
  host.found = [{ peerId: 'Q', addrs: ['/ip4/127.0.0.1/tcp/10/p2p/Q'] }];
  host.up.add('Q');
  now += CONNECTIVITY_DEFAULTS.discoverEveryMs;
  await b.tick();
  assert.ok(host.isConnected('Q'));
});

test('dial errors get stable codes; a PeerId mismatch is told apart', () => {
  assert.equal(classifyDialError(Object.assign(new Error('Payload identity key 12D3… does not match expected remote identity key 12D3…'), { name: 'UnexpectedPeerError' })).code, 'NET_PEER_ID_MISMATCH');
  assert.equal(classifyDialError(new Error('connect ECONNREFUSED 127.0.0.1:4001')).code, 'NET_CONNECTION_REFUSED');
  assert.equal(classifyDialError(Object.assign(new Error('The operation was aborted due to timeout'), { name: 'TimeoutError' })).code, 'NET_DIAL_TIMEOUT');
});

test('assessNetwork says no peers (with the bootstrap error) and no market plainly', () => {
  const none = assessNetwork({ peers: 0, remembered: 0, bootstrap: [{ addr: '/ip4/1.2.3.4/tcp/1/p2p/X', connected: false, failures: 3, lastError: { code: 'NET_PEER_ID_MISMATCH', message: 'x' } }] }, 0);
  assert.equal(none.code, 'NET_NO_PEERS');
  assert.match(none.message, /no peers: bootstrap .* another PeerId/);
  assert.equal(assessNetwork({ peers: 0, remembered: 0, bootstrap: [] }, 0).message, 'this node has no peers and no bootstrap peer is configured (set network.bootstrap)');
  assert.equal(assessNetwork({ peers: 2, remembered: 0, bootstrap: [] }, 0).code, 'NET_NO_MARKET');
  assert.equal(assessNetwork({ peers: 2, remembered: 0, bootstrap: [] }, 1).state, 'ok');
});

/** A gossip self-check over one peer P with `problem`, repairAfterMs 10 s; `actions` lists its repairs and their counts. */
function selfCheck(problem: () => GossipProblem | undefined, clock: () => number): { h: GossipHealth; actions: string[] } {
  const actions: string[] = [];
  const h = new GossipHealth(
    { gossipPeers: async () => ['P'], problem, reopen: async () => void actions.push('reopen'), reconnect: async () => void actions.push('reconnect') },
    { clock, log: silentLogger(), onRepair: (a) => actions.push(`count:${a}`), options: { repairAfterMs: 10_000 } },
  );
  return { h, actions };
}

test('the gossip self-check re-opens a detached peer after repairAfterMs, then reconnects it', async () => {
  let now = 0;
  let problem: GossipProblem | undefined = 'no-router';
  const { h, actions } = selfCheck(() => problem, () => now);
  await h.check();
  now = 9_999;
  await h.check();
  assert.deepEqual(actions, [], 'not before repairAfterMs');
  now = 10_000;
  await h.check();
  assert.deepEqual(actions, ['count:reopen', 'reopen']);
  now = 20_000;
  await h.check();
  assert.deepEqual(actions.slice(2), ['count:reconnect', 'reconnect'], 'still detached: the connection is redone');
  problem = undefined;
  now = 40_000;
  await h.check();
  assert.equal(actions.length, 4, 'a healthy peer is left alone');
});

test('a peer attached with both streams but subscribed to nothing is re-opened once, never reconnected (its streams in flight are kept)', async () => {
  // A driver or client node that subscribes to no topic (a pipeline driver calling stage 0) looks like 'no-subscriptions' for
  // good: a reopen re-sends this node's subscriptions, and if the peer still has none it has none to send. Before, the next
  // check closed and redialled its connection every ~15 s, and a pipeline call in flight on it (the next stage stopped) died
  // with a local NET_STREAM_FAILED ~25 s in, before stage 0 could answer PIPELINE_NEXT_STAGE_FAILED.
  let now = 0;
  let problem: GossipProblem | undefined = 'no-subscriptions';
  const { h, actions } = selfCheck(() => problem, () => now);
  for (now = 0; now <= 120_000; now += 5_000) await h.check();
  assert.deepEqual(actions, ['count:reopen', 'reopen'], 'one reopen, no reconnect');
  // a peer detached otherwise after that is still repaired up to a reconnect
  problem = 'no-outbound';
  for (now = 125_000; now <= 160_000; now += 5_000) await h.check();
  assert.ok(actions.includes('reconnect'), JSON.stringify(actions));
});

test('a peer kept out of every mesh of its topics is named once after meshGapAfterMs, with the backoff or the score that keeps it out; never repaired', async () => {
  let now = 0;
  let gap: MeshGap | undefined = { backoffMs: 55_000, score: 0 };
  const lines: Array<{ level: string; msg: string; fields: Record<string, unknown> }> = [];
  const at = (level: string) => (fields: Record<string, unknown>, msg: string) => void lines.push({ level, msg, fields });
  const log = { ...silentLogger(), warn: at('warn'), info: at('info') } as unknown as Logger;
  // read through a function: an assert.deepEqual(lines, []) narrows the array to never[] for what follows
  const line = (i: number) => lines[i]!;
  const repairs: string[] = [];
  const h = new GossipHealth(
    { gossipPeers: async () => ['P'], problem: () => undefined, meshGap: () => gap, reopen: async () => void repairs.push('reopen'), reconnect: async () => void repairs.push('reconnect') },
    { clock: () => now, log, onRepair: (a) => repairs.push(a), options: { meshGapAfterMs: 30_000 } },
  );
  await h.check();
  now = 29_999;
  await h.check();
  assert.deepEqual(lines, [], 'not before meshGapAfterMs');
  now = 30_000;
  await h.check();
  assert.equal(lines.length, 1);
  assert.equal(line(0).level, 'info');
  assert.match(line(0).msg, /prune backoff/);
  assert.deepEqual(line(0).fields, { peer: 'P', outMs: 30_000, backoffMs: 55_000, score: 0 });
  now = 90_000;
  await h.check();
  assert.equal(lines.length, 1, 'said once');
  gap = undefined;
  await h.check();
  assert.match(line(1).msg, /in this node's gossip mesh again/);
  // out again, this time for a negative score: a warning, which names it
  gap = { backoffMs: 0, score: -12.346 };
  await h.check();
  now = 130_000;
  await h.check();
  assert.equal(line(2).level, 'warn');
  assert.match(line(2).msg, /score is below 0/);
  assert.equal(line(2).fields.score, -12.35);
  assert.deepEqual(repairs, [], 'nothing is repaired: the backoff is the protocol, a score decays');
});

test('refused connections are all counted; the log is rate-limited per peer with a suppressed count', () => {
  let now = 0;
  const lines: Array<Record<string, unknown>> = [];
  const log = { ...silentLogger(), warn: (o: Record<string, unknown>) => void lines.push(o) } as unknown as Logger;
  const counts: string[] = [];
  const r = new RefusalLog({ log, count: (reason) => counts.push(reason), clock: () => now, windowMs: 60_000 });
  for (let i = 0; i < 10; i++) r.refused('handshake', '10.0.0.1');
  r.refused('allowlist', 'peerA');
  now = 60_000;
  r.refused('handshake', '10.0.0.1');
  assert.equal(counts.length, 12);
  assert.deepEqual(lines.map((l) => [l.reason, l.from, l.suppressedSinceLast]), [['handshake', '10.0.0.1', 0], ['allowlist', 'peerA', 0], ['handshake', '10.0.0.1', 9]]);
});

test('refusal lines: at most 20 a reason per window across addresses, said when they run out, the rest counted in the next line of the kind', () => {
  let now = 0;
  const lines: Array<Record<string, unknown>> = [];
  const log = { ...silentLogger(), warn: (o: Record<string, unknown>) => void lines.push(o), info: (o: Record<string, unknown>) => void lines.push(o) } as unknown as Logger;
  let counted = 0;
  const r = new RefusalLog({ log, count: () => void counted++, clock: () => now, windowMs: 60_000 });
  // a flood from 500 addresses, then one from another reason: the budget is the reason's
  for (let i = 0; i < 500; i++) r.refused('pending', `2001:db8:${i.toString(16)}::/64`, { cause: 'ip' });
  r.refused('pending', '10.0.0.9', { cause: 'total' });
  assert.equal(counted, 501, 'every refusal is counted');
  assert.equal(lines.filter((l) => l.cause === 'ip' && l.from !== undefined).length, 20);
  assert.deepEqual(lines.filter((l) => l.linesPerWindow !== undefined).map((l) => [l.reason, l.cause]), [['pending', 'ip']], 'said once, when the lines ran out');
  assert.equal(lines.filter((l) => l.cause === 'total').length, 1, 'another cause has a budget of its own');
  now = 60_000;
  r.refused('pending', '10.0.0.1', { cause: 'ip' });
  assert.equal(lines.at(-1)!.suppressedOverBudget, 480);
  r.refused('pending', '10.0.0.2', { cause: 'ip' });
  assert.equal(lines.at(-1)!.suppressedOverBudget, undefined, 'said once');
});

test('a gossip stream error on a connected peer is repaired at once, at most once per peer per 2 s', async () => {
  let now = 0;
  const actions: string[] = [];
  const h = new GossipHealth(
    { gossipPeers: async () => [], problem: () => undefined, reopen: async (p) => void actions.push(`reopen:${p}`), reconnect: async () => undefined },
    { clock: () => now, log: silentLogger(), onRepair: (a) => actions.push(`count:${a}`) },
  );
  h.onStreamError('P', false);
  assert.deepEqual(actions, [], 'a peer that is gone is left to the connectivity manager');
  h.onStreamError('P', true);
  h.onStreamError('P', true);
  now = 1_999;
  h.onStreamError('P', true);
  now = 2_000;
  h.onStreamError('P', true);
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(actions, ['count:stream-error', 'reopen:P', 'count:stream-error', 'reopen:P']);
});

test('a DHT walk gives the peers it reached, then the peers its answers named; never itself, at most max', async () => {
  const peer = (id: string, addrs = [`/ip4/127.0.0.1/tcp/1`]) => ({ id: { toString: () => id } as unknown as PeerId, multiaddrs: addrs });
  async function* walk(): AsyncIterable<WalkEvent> {
    // the line p — r — c with a key nearer r than c: r names c (and p itself), the walk does not go on to c
    yield { name: 'PEER_RESPONSE', closer: [peer('c'), peer('p'), peer('noaddr', [])] };
    yield { name: 'QUERY_PROGRESS' };
    yield { name: 'FINAL_PEER', peer: peer('r') };
  }
  assert.deepEqual(await discoveryCandidates(walk(), 'p', 8), [
    { peerId: 'r', addrs: ['/ip4/127.0.0.1/tcp/1/p2p/r'] },
    { peerId: 'c', addrs: ['/ip4/127.0.0.1/tcp/1/p2p/c'] },
  ]);
  assert.deepEqual((await discoveryCandidates(walk(), 'p', 1)).map((t) => t.peerId), ['r'], 'reached first, cut at max');
  // a peer both named and reached is listed once, as reached; a walk that fails part-way keeps what it heard
  async function* broken(): AsyncIterable<WalkEvent> {
    yield { name: 'FINAL_PEER', peer: peer('c') };
    yield { name: 'PEER_RESPONSE', closer: [peer('c'), peer('d')] };
    throw new Error('aborted');
  }
  assert.deepEqual((await discoveryCandidates(broken(), 'p', 8)).map((t) => t.peerId), ['c', 'd']);
});

test('the gossip self-check and the refusal log measure their windows on the monotonic clock: a backward wall-clock step delays no repair and hides no log line', async () => {
  const realNow = Date.now;
  const actions: string[] = [];
  const lines: Array<Record<string, unknown>> = [];
  const log = { ...silentLogger(), warn: (o: Record<string, unknown>) => void lines.push(o) } as unknown as Logger;
  const h = new GossipHealth(
    { gossipPeers: async () => ['P'], problem: () => 'no-router', reopen: async () => void actions.push('reopen'), reconnect: async () => void actions.push('reconnect') },
    { log: silentLogger(), onRepair: () => {}, options: { repairAfterMs: 30 } },
  );
  const r = new RefusalLog({ log, count: () => {}, windowMs: 30 });
  try {
    await h.check(); // P is detached from here
    r.refused('handshake', '10.0.0.1');
    const stepped = realNow() - 600_000;
    Date.now = () => stepped + (performance.now() % 1e9); // NTP steps the wall clock back 10 min
    await new Promise((res) => setTimeout(res, 60));
    await h.check();
    r.refused('handshake', '10.0.0.1');
  } finally {
    Date.now = realNow;
  }
  assert.deepEqual(actions, ['reopen'], 'repaired repairAfterMs after it was detached, not 10 min later');
  assert.equal(lines.length, 2, 'the window of the refusal log passed: the next refusal is written');
});

test('remembered peers are stamped with wall time (lastUsefulAt), which means the same after a restart; backoff stays monotonic', () => {
  let saved: RememberedPeer[] = [];
  const store = { load: () => saved, save: (p: RememberedPeer[]) => void (saved = p) };
  const WALL = 1_800_000_000_000;
  // process A, an hour after it started; then process B, just started (its monotonic clock restarts at 0)
  const a = new Connectivity({ host: new FakeHost(), bootstrap: [], clock: () => WALL, monoClock: () => 3_600_000, rand: () => 0.5, store, log: silentLogger() });
  a.noteUseful('A', ['/ip4/127.0.0.1/tcp/9']);
  const b = new Connectivity({ host: new FakeHost(), bootstrap: [], clock: () => WALL + 60_000, monoClock: () => 100, rand: () => 0.5, store, log: silentLogger() });
  b.noteUseful('B', ['/ip4/127.0.0.1/tcp/10']);
  assert.deepEqual(
    saved.map((p) => [p.peerId, p.lastUsefulAt]),
    [
      ['A', WALL],
      ['B', WALL + 60_000],
    ],
    'wall times: B, useful later, has the later time',
  );
  // by default the wall clock is Date.now
  const before = Date.now();
  const c = new Connectivity({ host: new FakeHost(), bootstrap: [], store, log: silentLogger() });
  c.noteUseful('C', ['/ip4/127.0.0.1/tcp/11']);
  assert.ok(saved.find((p) => p.peerId === 'C')!.lastUsefulAt >= before);
});
