/**
 * Remembered peers (src/net/connectivity.ts; docs/network.md §11): a remembered peer that becomes unreachable (a
 * one-shot `c0mpute run` node on a throwaway port, gone for good) is one info line, then debug only: before, the
 * count was logged at info on every power of two, again after each short reconnection (38 lines in ~5 min for two
 * departed one-shot nodes).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { Connectivity, type ConnectivityHost, type DialTarget } from '../../../src/net/connectivity.js';
import type { Logger } from '../../../src/util/log.js';

class DownHost implements ConnectivityHost {
  up = new Set<string>();
  conns = new Set<string>();
  dials = 0;
  isConnected(p: string) {
    return this.conns.has(p);
  }
  peerCount() {
    return this.conns.size;
  }
  async dial(t: DialTarget) {
    this.dials++;
    const id = t.peerId ?? '?';
    if (!this.up.has(id)) throw new Error('connect ECONNREFUSED 127.0.0.1:1');
    this.conns.add(id);
    return id;
  }
}

function recording(): { log: Logger; lines: Array<{ level: number; msg: string; peer?: string }> } {
  const lines: Array<{ level: number; msg: string; peer?: string }> = [];
  const log = pino({ level: 'debug' }, { write: (s: string) => void lines.push(JSON.parse(s) as { level: number; msg: string }) }) as unknown as Logger;
  return { log, lines };
}

test('a remembered peer gone for good: one info line, then debug; after it comes back and goes again, one more', async () => {
  let now = 0;
  const host = new DownHost();
  const { log, lines } = recording();
  const c = new Connectivity({ host, bootstrap: [], monoClock: () => now, rand: () => 0.5, log });
  c.noteUseful('P', ['/ip4/127.0.0.1/tcp/9']);
  const info = () => lines.filter((l) => l.level >= 30 && l.peer === 'P');
  for (; now < 600_000; now += 500) await c.tick();
  assert.ok(host.dials >= 15, `${host.dials} dials in 10 minutes`);
  assert.equal(info().length, 1, info().map((l) => l.msg).join('\n'));
  assert.match(info()[0]!.msg, /remembered peer unreachable/);
  assert.ok(lines.filter((l) => l.level === 20 && l.peer === 'P').length >= host.dials - 1);

  host.up.add('P');
  while (!host.isConnected('P')) {
    now += 500;
    await c.tick();
  }
  assert.match(info().at(-1)!.msg, /reconnected/);
  host.up.delete('P');
  host.conns.delete('P');
  const before = info().length;
  for (const end = now + 600_000; now < end; now += 500) await c.tick();
  assert.equal(info().length, before + 1);
});

test('throwaway keys that connect and leave: one info line in full, then a count a minute, not a line each (review s42 R5 F1)', async () => {
  let now = 0;
  const host = new DownHost();
  const { log, lines } = recording();
  const c = new Connectivity({ host, bootstrap: [], monoClock: () => now, rand: () => 0.5, log });
  for (let i = 0; i < 30; i++) c.noteUseful(`K${i}`, [`/ip4/127.0.0.1/tcp/${1000 + i}`]);
  const unreachable = () => lines.filter((l) => l.level >= 30 && /remembered peer unreachable/.test(l.msg));
  for (; now < 30_000; now += 500) await c.tick();
  assert.ok(host.dials >= 30, `${host.dials} dials`);
  // before: 30 lines, one per key (30 of the 32 remembered at most)
  assert.equal(unreachable().length, 1, unreachable().map((l) => l.peer).join(' '));
  for (; now < 70_000; now += 500) await c.tick();
  c.stop();
  const all = unreachable() as Array<{ msg: string; more?: number }>;
  assert.equal(all.length, 2, 'the first in full, then one summary');
  assert.match(all[1]!.msg, /\(repeated\)/);
  assert.equal(all[1]!.more, 29);
});

test('a peer banned for flooding is forgotten, in memory and in the file, and neither dialled nor remembered while refused; a bootstrap entry stays but waits out the ban (QA qaNet F3)', async () => {
  let now = 0;
  const host = new DownHost();
  const banned = new Set<string>();
  const h: ConnectivityHost = Object.assign(host, { refused: (p: string) => banned.has(p) });
  let file: Array<{ peerId: string }> = [{ peerId: 'F', addrs: ['/ip4/127.0.0.1/tcp/41183'], lastUsefulAt: 1 } as never];
  const store = { load: () => file as never, save: (peers: Array<{ peerId: string }>) => void (file = peers.map((p) => ({ ...p }))) };
  const { log, lines } = recording();
  const c = new Connectivity({ host: h, bootstrap: ['/ip4/127.0.0.1/tcp/4001/p2p/B'], monoClock: () => now, rand: () => 0.5, store, log });
  c.noteUseful('P', ['/ip4/127.0.0.1/tcp/9']);
  assert.deepEqual(c.remembered().map((p) => p.peerId).sort(), ['F', 'P']);
  // F floods and is banned: the network tells connectivity (peer-abuse.ts onBan → forget)
  banned.add('F');
  c.forget('F', 'banned for flooding');
  assert.deepEqual(c.remembered().map((p) => p.peerId), ['P']);
  assert.deepEqual(file.map((p) => p.peerId), ['P'], 'gone from the file: a restart does not dial it');
  assert.ok(lines.some((l) => l.peer === 'F' && /remembered peer forgotten: banned for flooding/.test(l.msg)));
  // it identifies again while banned (a connection the gater let through before the ban): not remembered
  c.noteUseful('F', ['/ip4/127.0.0.1/tcp/41183']);
  assert.deepEqual(c.remembered().map((p) => p.peerId), ['P']);
  // a banned bootstrap peer is not dialled while refused, and is again once the ban ends
  banned.add('B');
  const dialled: string[] = [];
  const dial = host.dial.bind(host);
  host.dial = async (t: DialTarget) => {
    dialled.push(t.peerId ?? '?');
    return dial(t);
  };
  for (; now < 60_000; now += 500) await c.tick();
  assert.ok(!dialled.includes('F') && !dialled.includes('B'), dialled.join(' '));
  assert.ok(dialled.includes('P'));
  banned.delete('B');
  for (const end = now + 10_000; now < end; now += 500) await c.tick();
  assert.ok(dialled.includes('B'), 'dialled again once its ban ended');
});
