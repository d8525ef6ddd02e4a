/**
 * Over the remembered-peer cap (src/net/connectivity.ts `#trim`; QA ffNetDay2 F3): keys that connect once and leave
 * take each other's places, not those of peers this node has worked with. Before, 34 throwaway keys that connected
 * for a second each pushed every peer not connected at that moment out of the list.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { Connectivity, type ConnectivityHost } from '../../../src/net/connectivity.js';
import type { Logger } from '../../../src/util/log.js';

class Host implements ConnectivityHost {
  conns = new Set<string>();
  isConnected(p: string) {
    return this.conns.has(p);
  }
  peerCount() {
    return this.conns.size;
  }
  async dial(): Promise<string> {
    throw new Error('connect ECONNREFUSED 127.0.0.1:1');
  }
}

const silent = pino({ level: 'silent' }) as unknown as Logger;

test('throwaway keys do not push established peers out; newcomers hold at most half the entries', async () => {
  let wall = 1_796_000_000_000;
  let mono = 0;
  const host = new Host();
  const c = new Connectivity({ host, bootstrap: [], clock: () => wall, monoClock: () => mono, rand: () => 0.5, log: silent, options: { rememberMax: 8 } });
  // four honest peers, each connected for more than establishedAfterMs, then offline (a restart, a blip)
  for (const p of ['H1', 'H2', 'H3', 'H4']) {
    host.conns.add(p);
    c.noteUseful(p, [`/ip4/10.0.0.1/tcp/${p.slice(1)}`]);
  }
  // a tick sees them connected, and one more past establishedAfterMs
  await c.tick();
  wall += 6 * 60_000;
  mono += 6 * 60_000;
  await c.tick();
  host.conns.clear();
  // 34 keys connect one after another for a second each
  for (let i = 0; i < 34; i++) {
    const k = `T${i}`;
    host.conns.add(k);
    c.noteUseful(k, [`/ip4/203.0.113.9/tcp/${40_000 + i}`]);
    wall += 1_000;
    host.conns.delete(k);
  }
  const kept = c.remembered().map((p) => p.peerId);
  assert.equal(kept.length, 8);
  for (const p of ['H1', 'H2', 'H3', 'H4']) assert.ok(kept.includes(p), `${p} kept: ${kept.join(' ')}`);
  // eight keys connected at once: at most half the entries go to newcomers
  for (let i = 100; i < 108; i++) {
    host.conns.add(`T${i}`);
    c.noteUseful(`T${i}`, [`/ip4/203.0.113.9/tcp/${i}`]);
  }
  const now = c.remembered().map((p) => p.peerId);
  assert.equal(now.filter((p) => p.startsWith('H')).length, 4, now.join(' '));
  c.stop?.();
});

test('a newcomer connected for establishedAfterMs becomes established, and survives a restart as such', async () => {
  let wall = 1_796_000_000_000;
  let mono = 0;
  const host = new Host();
  const saved: unknown[] = [];
  const store = { load: () => [], save: (p: unknown[]) => void saved.splice(0, saved.length, ...p) };
  const c = new Connectivity({ host, bootstrap: [], clock: () => wall, monoClock: () => mono, rand: () => 0.5, log: silent, store, options: { rememberMax: 4 } });
  host.conns.add('P');
  c.noteUseful('P', ['/ip4/10.0.0.2/tcp/1']);
  // two short visits five minutes apart do not make it established (review s56): the span starts over at a disconnection
  await c.tick();
  host.conns.delete('P');
  wall += 1000;
  mono += 1000;
  await c.tick();
  host.conns.add('P');
  wall += 5 * 60_000;
  mono += 5 * 60_000;
  c.noteUseful('P', ['/ip4/10.0.0.2/tcp/1']);
  await c.tick();
  assert.notEqual(c.remembered().find((x) => x.peerId === 'P')!.newSince, undefined, 'still a newcomer');
  // then connected throughout, every tick seeing it: established
  wall += 5 * 60_000 + 1;
  mono += 5 * 60_000 + 1;
  await c.tick();
  c.stop?.();
  const p = c.remembered().find((x) => x.peerId === 'P')!;
  assert.equal(p.newSince, undefined, 'established');
  assert.deepEqual(saved.map((x) => (x as { peerId: string }).peerId), ['P'], 'written (at stop)');
});
