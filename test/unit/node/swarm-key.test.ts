/** An overlay's swarm key file is checked when it is read: a file that is not one is SWARM_KEY_INVALID (exit 3), not libp2p's error at start (exit 70). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readSwarmKey } from '../../../src/node/overlay.js';
import { generateSwarmKey } from '../../../src/net/libp2p-host.js';

test('a swarm key file is read when it is one, refused with SWARM_KEY_INVALID when not', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-swarm-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const good = join(dir, 'good.key');
  writeFileSync(good, generateSwarmKey());
  assert.ok(readSwarmKey(good).length > 64);
  writeFileSync(join(dir, 'crlf.key'), Buffer.from(generateSwarmKey()).toString().replaceAll('\n', '\r\n') + '\r\n');
  assert.ok(readSwarmKey(join(dir, 'crlf.key')).length > 64);
  for (const [name, text] of [
    ['hostname', 'myhost\n'],
    ['short', '/key/swarm/psk/1.0.0/\n/base16/\nabcd\n'],
    ['codec', '/key/swarm/psk/1.0.0/\n/base64/\n' + 'a'.repeat(64)],
    ['empty', ''],
  ] as const) {
    writeFileSync(join(dir, name), text);
    assert.throws(() => readSwarmKey(join(dir, name)), { code: 'SWARM_KEY_INVALID' }, name);
  }
  assert.throws(() => readSwarmKey(join(dir, 'missing')), { code: 'SWARM_KEY_UNREADABLE' });
});
