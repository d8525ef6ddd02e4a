/**
 * What `start` and `witness evidence` refuse before anything opens (review s43 R6 F6), with the real CLI:
 * - a role whose config section is missing (`--role provider`, no `provider` section) and an API port already taken
 *   were said only after the store opened and the network started (~7-8 s; a provider published its advert first):
 *   now before db/ is even made;
 * - `witness evidence nope` passed the daemon's 400 through (exit 3); a wrong DID is a wrong command line (exit 2). So
 *   is `ledger fetch nope`'s (it was the daemon's DID_MALFORMED, exit 3): a steward's DID is LEDGER_BAD_STEWARD in all three
 *   of ledger verify, ledger fetch and witness evidence (QA witness pass, finding 7).
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { once } from 'node:events';
import { startRig } from './start-rig.js';

const { root, c0, start, keysInit } = startRig('c0-start-early-');

describe('start refuses before the store opens or the network starts', () => {
  it('--role provider with no provider section: CONFIG_INVALID field provider, and no db/', async () => {
    const d = await keysInit('no-provider');
    const cfg = join(root, 'buyer.yaml');
    writeFileSync(cfg, 'roles: [buyer]\n');
    const r = await start(d, '--config', cfg, '--role', 'provider');
    assert.equal(r.code, 3, r.out);
    assert.match(r.out, /error CONFIG_INVALID: .*the provider role needs a `provider` section/);
    assert.equal(existsSync(join(d, 'db')), false, 'the store was opened before the refusal');
  });

  it('an API port already taken: API_LISTEN_FAILED, and no db/', async () => {
    const s = createServer();
    s.listen(0, '127.0.0.1');
    await once(s, 'listening');
    after(() => s.close());
    const d = await keysInit('api-taken');
    const r = await start(d, '--api', `127.0.0.1:${(s.address() as AddressInfo).port}`);
    assert.equal(r.code, 3, r.out);
    assert.match(r.out, /error API_LISTEN_FAILED/);
    assert.equal(existsSync(join(d, 'db')), false, 'the store was opened before the refusal');
  });

  it('roles: [] is CONFIG_INVALID naming roles, exit 3, and no db/ (QA qaOps F8)', async () => {
    const d = await keysInit('no-roles');
    const cfg = join(root, 'no-roles.yaml');
    writeFileSync(cfg, 'roles: []\n');
    const r = await start(d, '--config', cfg);
    assert.equal(r.code, 3, r.out);
    assert.match(r.out, /error CONFIG_INVALID: .*no-roles\.yaml: roles: empty/);
    assert.equal(existsSync(join(d, 'db')), false, 'the store was opened before the refusal');
  });

  it('a directory in the place of api.token: API_TOKEN_UNREADABLE (exit 3, never 70), no chmod advice, before the network starts (QA qaOps F6)', async () => {
    const d = await keysInit('token-dir');
    mkdirSync(join(d, 'api.token'));
    for (const mode of [0o755, 0o700]) {
      chmodSync(join(d, 'api.token'), mode);
      const r = await start(d);
      assert.equal(r.code, 3, r.out);
      assert.match(r.out, /error API_TOKEN_UNREADABLE: .*api\.token is not a regular file \(a directory\)/);
      assert.doesNotMatch(r.out, /chmod|network started|internal error/);
      assert.equal(existsSync(join(d, 'db')), false, 'the store was opened before the refusal');
    }
  });
});

describe('witness evidence checks its DID argument', () => {
  it('`witness evidence nope` is LEDGER_BAD_STEWARD, exit 2, as `ledger fetch nope` and `ledger verify --steward nope` are; `reputation nope` DID_MALFORMED, exit 2 (no daemon asked)', async () => {
    const d = join(root, 'no-daemon');
    for (const [args, code] of [
      [['witness', 'evidence', 'nope'], 'LEDGER_BAD_STEWARD'],
      [['ledger', 'fetch', 'nope', join(root, 'x.ledger')], 'LEDGER_BAD_STEWARD'],
      [['ledger', 'fetch', 'did:key:z6Mkbogus', join(root, 'x.ledger')], 'LEDGER_BAD_STEWARD'],
      [['reputation', 'nope'], 'DID_MALFORMED'],
    ] as const) {
      const r = await c0(d, ...args);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.out}`);
      assert.match(r.out, new RegExp(`error ${code}: steward must be a did:key|error ${code}: did must be a did:key`));
    }
  });
});
