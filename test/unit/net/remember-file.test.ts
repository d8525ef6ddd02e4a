/**
 * The remembered-peers file (src/net/connectivity.ts fileRememberStore; QA ffNetDay2 F2): a file not taken whole
 * (damaged, entries of the wrong shape, unreadable) is kept aside and said, never silently replaced, and one that
 * cannot be moved aside is not written over; an empty file is an empty list; a save that fails is said once.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileRememberStore } from '../../../src/net/connectivity.js';
import type { Logger } from '../../../src/util/log.js';

function capture(): { log: Logger; lines: Array<{ level: string; obj: Record<string, unknown>; msg: string }> } {
  const lines: Array<{ level: string; obj: Record<string, unknown>; msg: string }> = [];
  const at = (level: string) => (obj: Record<string, unknown>, msg: string) => void lines.push({ level, obj, msg });
  const log = { warn: at('warn'), info: at('info'), debug: at('debug'), error: at('error'), trace: at('trace'), fatal: at('fatal') } as Record<string, unknown>;
  log.child = () => log;
  return { log: log as unknown as Logger, lines };
}

const peer = { peerId: '12D3KooWBWf5A8rgiVmGooyKKdAgh2fU6gS26fm85bSh2oGmKuZA', addrs: ['/ip4/127.0.0.1/tcp/4001'], lastUsefulAt: 1_796_681_306_953 };

test('a damaged file is moved aside and said, not overwritten by the next save', () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-remember-'));
  try {
    const file = join(dir, 'peers-public.json');
    const damaged = '{"peers": [ {"peerId": "12D3';
    writeFileSync(file, damaged);
    const { log, lines } = capture();
    const store = fileRememberStore(file, { clock: () => Date.UTC(2026, 11, 7, 22, 0, 0) });
    assert.deepEqual(store.load(log), []);
    const w = lines.find((l) => l.obj.code === 'NET_PEERS_FILE_DAMAGED');
    assert.ok(w, 'said with a stable code');
    assert.equal(w.level, 'warn');
    assert.equal(w.obj.keptAs, `${file}.damaged-2026-12-07T22-00-00-000Z`);
    assert.equal(readFileSync(w.obj.keptAs as string, 'utf8'), damaged, 'the damaged bytes are kept');
    store.save([peer], log);
    assert.deepEqual(JSON.parse(readFileSync(file, 'utf8')), { peers: [peer] });
    assert.equal(readFileSync(w.obj.keptAs as string, 'utf8'), damaged, 'and still there after a save');
    // JSON that is not the store's is damaged too
    writeFileSync(file, '[1,2]');
    assert.deepEqual(fileRememberStore(file).load(log), []);
    assert.equal(lines.filter((l) => l.obj.code === 'NET_PEERS_FILE_DAMAGED').length, 2);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

const at = Date.UTC(2026, 11, 8, 1, 0, 0);
const asideName = 'peers-public.json.damaged-2026-12-08T01-00-00-000Z';

test('entries of the wrong shape are left out, counted and kept aside; a missing or empty file is silent', () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-remember-'));
  try {
    const file = join(dir, 'peers-public.json');
    const { log, lines } = capture();
    assert.deepEqual(fileRememberStore(file).load(log), []);
    writeFileSync(file, ' \n');
    assert.deepEqual(fileRememberStore(file).load(log), []);
    assert.equal(lines.length, 0, 'no file yet, or an empty one: nothing to say');
    assert.deepEqual(readdirSync(dir), ['peers-public.json'], 'an empty file is not moved');
    const whole = JSON.stringify({ peers: [peer, { peerId: 7 }, null] });
    writeFileSync(file, whole);
    const store = fileRememberStore(file, { clock: () => at });
    assert.deepEqual(store.load(log), [peer]);
    assert.deepEqual(lines.map((l) => [l.obj.code, l.obj.dropped, l.obj.kept, l.obj.keptAs]), [['NET_PEERS_FILE_ENTRIES_DROPPED', 2, 1, join(dir, asideName)]]);
    assert.deepEqual(JSON.parse(readFileSync(file, 'utf8')), { peers: [peer] }, 'the kept entries written at once');
    // no save this run (a crash, or nothing changed): the next start still finds the peer kept, and copies nothing
    // aside again (review s57: the file was moved aside, and the next start had no peer at all)
    assert.deepEqual(fileRememberStore(file, { clock: () => at }).load(log), [peer]);
    assert.equal(lines.length, 1);
    writeFileSync(file, whole);
    fileRememberStore(file, { clock: () => at }).load(log);
    assert.equal(lines.at(-1)!.obj.keptAs, join(dir, `${asideName}-2`), 'the same time again: a name not taken');
    store.save([peer], log);
    assert.equal(readFileSync(join(dir, asideName), 'utf8'), whole, 'the entries left out are still on disk after a save');
    assert.deepEqual(JSON.parse(readFileSync(file, 'utf8')), { peers: [peer] });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a file that cannot be read is kept aside; one that cannot be kept aside is never written over', () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-remember-'));
  try {
    const file = join(dir, 'peers-public.json');
    const { log, lines } = capture();
    mkdirSync(file);
    const store = fileRememberStore(file, { clock: () => at });
    assert.deepEqual(store.load(log), []);
    assert.deepEqual(lines.map((l) => [l.obj.code, l.obj.keptAs]), [['NET_PEERS_FILE_UNREADABLE', join(dir, asideName)]]);
    store.save([peer], log);
    assert.deepEqual(JSON.parse(readFileSync(file, 'utf8')), { peers: [peer] }, 'written anew once the old one is aside');
    // no name aside can be made (the file's own name is so long that the suffix passes NAME_MAX): the damaged file
    // stays, and this run writes nothing over it
    const long = join(dir, `${'p'.repeat(235)}.json`);
    writeFileSync(long, '{"peers": [');
    lines.length = 0;
    const held = fileRememberStore(long, { clock: () => at });
    assert.deepEqual(held.load(log), []);
    assert.deepEqual(lines.map((l) => [l.obj.code, l.obj.notMoved]), [['NET_PEERS_FILE_DAMAGED', true]]);
    held.save([peer], log);
    assert.equal(readFileSync(long, 'utf8'), '{"peers": [', 'the damaged file is left as it is');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a save that fails is said once, and again after one that worked', () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-remember-'));
  try {
    const { log, lines } = capture();
    const store = fileRememberStore(join(dir, 'gone', 'peers-public.json'));
    store.save([peer], log);
    store.save([peer], log);
    assert.deepEqual(lines.map((l) => [l.level, l.obj.code]), [['warn', 'NET_PEERS_FILE_UNWRITABLE']]);
    // it can be written again (said at info), then not: said again
    mkdirSync(join(dir, 'gone'));
    store.save([peer], log);
    rmSync(join(dir, 'gone'), { recursive: true });
    store.save([peer], log);
    assert.deepEqual(lines.map((l) => [l.level, l.obj.code]), [['warn', 'NET_PEERS_FILE_UNWRITABLE'], ['info', undefined], ['warn', 'NET_PEERS_FILE_UNWRITABLE']]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
