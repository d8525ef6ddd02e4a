/**
 * The remembered-peers file (src/net/connectivity.ts fileRememberStore; QA ffNetDay2 F2): a damaged file is kept
 * aside and said, never silently replaced; entries of the wrong shape are counted; a save that fails is said once.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
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

test('entries of the wrong shape are left out and counted; a missing file is silent', () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-remember-'));
  try {
    const file = join(dir, 'peers-public.json');
    const { log, lines } = capture();
    assert.deepEqual(fileRememberStore(file).load(log), []);
    assert.equal(lines.length, 0, 'no file yet: nothing to say');
    writeFileSync(file, JSON.stringify({ peers: [peer, { peerId: 7 }, null] }));
    assert.deepEqual(fileRememberStore(file).load(log), [peer]);
    assert.deepEqual(lines.map((l) => [l.obj.code, l.obj.dropped, l.obj.kept]), [['NET_PEERS_FILE_ENTRIES_DROPPED', 2, 1]]);
    assert.deepEqual(readdirSync(dir), ['peers-public.json'], 'a readable file is not moved');
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
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
