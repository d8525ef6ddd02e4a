/**
 * Each connection's identify, kept apart from the PeerId's (src/net/peer-conns.ts; docs/network.md §11 "Two processes
 * with one key"): two processes holding one key are told apart by their run tags, or by listen addresses with none in
 * common when a peer sends no tag; the duplicate is listed for an hour after it was last seen; the addresses a peer's
 * processes spoke a protocol from are dialled when no open connection speaks it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DUPLICATE_KEEP_MS, PeerConnections, distinctProcesses, newRunTag, runOf, type ConnIdentity } from '../../../src/net/peer-conns.js';

const EXEC = '/c0mpute/exec/1';
const RECORDS = '/c0mpute/records/1';

function conn(id: string, over: Partial<ConnIdentity> = {}): ConnIdentity {
  return { id, peer: 'P', remote: `/ip4/127.0.0.1/tcp/5${id.length}${id.charCodeAt(0)}`, outbound: false, listen: ['/ip4/127.0.0.1/tcp/18005'], protocols: new Set([RECORDS, EXEC]), run: 'aaaaaaaaaaaa', ...over };
}

test('the run tag rides in the user agent; a peer without one is told apart by listen addresses with none in common', () => {
  const tag = newRunTag();
  assert.match(tag, /^c0mpute-run\/[0-9a-f]{12}$/);
  assert.equal(runOf(`js-libp2p/3.3.11 node/20.19.0 ${tag}`), tag.slice('c0mpute-run/'.length));
  assert.equal(runOf('js-libp2p/3.3.11 node/20.19.0'), undefined);
  assert.equal(runOf(undefined), undefined);
  assert.notEqual(newRunTag(), tag);
  // tags decide when both have one, whatever the addresses (two cloned machines both announce 127.0.0.1:4001)
  assert.equal(distinctProcesses({ run: 'a1a1a1a1', listen: ['/x'] }, { run: 'b2b2b2b2', listen: ['/x'] }), true);
  assert.equal(distinctProcesses({ run: 'a1a1a1a1', listen: ['/x'] }, { run: 'a1a1a1a1', listen: ['/y'] }), false, 'one process whose addresses changed');
  // without: disjoint listen addresses only
  assert.equal(distinctProcesses({ listen: ['/x', '/y'] }, { listen: ['/y'] }), false);
  assert.equal(distinctProcesses({ listen: ['/x'] }, { run: 'b2b2b2b2', listen: ['/y'] }), true);
  assert.equal(distinctProcesses({ listen: [] }, { listen: ['/y'] }), false, 'nothing said: nothing concluded');
});

test('two processes under one PeerId: named once per connection, current while both are connected, listed an hour after', () => {
  const pc = new PeerConnections();
  assert.equal(pc.identified(conn('a'), 1_000), undefined, 'one connection: nothing to compare');
  // a second connection of the same process (a simultaneous dial) is no duplicate
  assert.equal(pc.identified(conn('a2', { remote: '/ip4/127.0.0.1/tcp/40002' }), 1_100), undefined);
  const clone = conn('z', { run: 'bbbbbbbbbbbb', listen: ['/ip4/127.0.0.1/tcp/18013'], protocols: new Set([RECORDS]) });
  const seen = pc.identified(clone, 2_000);
  assert.ok(seen?.fresh);
  assert.equal(seen.duplicate.current, true);
  assert.deepEqual(seen.duplicate.processes.map((p) => [p.listen, p.protocols]).sort(), [
    [['/ip4/127.0.0.1/tcp/18005'], [EXEC, RECORDS]],
    [['/ip4/127.0.0.1/tcp/18013'], [RECORDS]],
  ]);
  // its identify push: the same connection, not a new duplicate
  assert.equal(pc.identified(clone, 2_500)?.fresh, false);
  assert.equal(pc.speaks('z', EXEC), false);
  assert.equal(pc.speaks('a', EXEC), true);
  assert.equal(pc.speaks('unknown', EXEC), undefined);
  assert.deepEqual(pc.listenOf('P'), ['/ip4/127.0.0.1/tcp/18005', '/ip4/127.0.0.1/tcp/18013']);
  // the clone goes: the peer's addresses are the provider's again, and the duplicate is kept, not current
  const left = pc.closed('z', 3_000);
  assert.deepEqual(left?.remaining.map((c) => c.id), ['a', 'a2']);
  assert.deepEqual(pc.listenOf('P'), ['/ip4/127.0.0.1/tcp/18005']);
  const [d] = pc.duplicates(4_000);
  assert.equal(d?.current, false);
  assert.equal(d?.lastSeenAt, 3_000);
  assert.equal(d?.firstSeenAt, 2_000);
  assert.equal(pc.wasDuplicated('P'), true);
  assert.equal(pc.duplicates(3_000 + DUPLICATE_KEEP_MS).length, 1);
  assert.equal(pc.duplicates(3_001 + DUPLICATE_KEEP_MS).length, 0, 'forgotten an hour after it was last seen');
  assert.equal(pc.wasDuplicated('P'), false);
});

test('addresses to dial when no open connection speaks a protocol: where a process of the key that spoke it listened, not where one that does not listens', () => {
  const pc = new PeerConnections();
  pc.identified(conn('a', { listen: ['/ip4/127.0.0.1/tcp/18005', '/ip4/10.0.0.5/tcp/18005'] }), 1_000);
  pc.closed('a', 1_500);
  pc.identified(conn('z', { run: 'bbbbbbbbbbbb', listen: ['/ip4/127.0.0.1/tcp/18013'], protocols: new Set([RECORDS]) }), 2_000);
  assert.deepEqual(pc.altAddrs('P', EXEC), ['/ip4/127.0.0.1/tcp/18005', '/ip4/10.0.0.5/tcp/18005']);
  assert.deepEqual(pc.altAddrs('P', '/c0mpute/other/1'), [], 'no process of the key spoke it');
  assert.deepEqual(pc.altAddrs('Q', EXEC), []);
  // addresses kept elsewhere (the remembered-peer file, from before a restart) come after, less the copy's own
  assert.deepEqual(pc.altAddrs('P', EXEC, ['/ip4/127.0.0.1/tcp/18013/p2p/P', '/ip4/192.0.2.1/tcp/4001/p2p/P', '/ip4/127.0.0.1/tcp/18005']), ['/ip4/127.0.0.1/tcp/18005', '/ip4/10.0.0.5/tcp/18005', '/ip4/192.0.2.1/tcp/4001']);
  const fresh = new PeerConnections();
  fresh.identified(conn('z', { run: 'bbbbbbbbbbbb', listen: ['/ip4/127.0.0.1/tcp/18013'], protocols: new Set([RECORDS]) }), 1_000);
  assert.deepEqual(fresh.altAddrs('P', EXEC, ['/ip4/127.0.0.1/tcp/18013', '/ip4/127.0.0.1/tcp/18005']), ['/ip4/127.0.0.1/tcp/18005'], 'after a restart: the remembered addresses alone');
  // the provider is connected again: its address is an open connection's now, not one to dial
  pc.identified(conn('a3', { remote: '/ip4/127.0.0.1/tcp/18005/p2p/P', outbound: true, listen: ['/ip4/127.0.0.1/tcp/18005'] }), 3_000);
  assert.deepEqual(pc.altAddrs('P', EXEC), ['/ip4/10.0.0.5/tcp/18005']);
});
