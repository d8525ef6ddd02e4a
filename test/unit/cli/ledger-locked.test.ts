/**
 * `ledger verify|show|export` on a running steward's own ledger (QA qaUp F6): the daemon holds the LevelDB, so the read
 * is refused STORE_LOCKED (exit 3) as before, and the message now says how such a ledger is read: `ledger fetch` from
 * that daemon into a file, then `ledger verify FILE`. The "daemon" is this test process: it holds a real ledger open in
 * `<data-dir>/steward/acme/ledger` and its daemon.json names it; the CLI is a real process. A ledger held by a process
 * that is no daemon of that data directory gets no pointer.
 */
import '../../../src/polyfill.js';
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ledger } from '../../../src/ledger/index.js';
import { DAEMON_FILE } from '../../../src/node/daemon-info.js';
import { DID_FILE } from '../../../src/node/identity.js';
import { didFromPublicKey } from '../../../src/records/did.js';
import { admitted, steward } from '../ledger/helpers.js';
import { runNode } from './cli-run.js';

const bin = fileURLToPath(new URL('../../../../bin/c0mpute.js', import.meta.url));
const root = mkdtempSync(join(tmpdir(), 'c0-ledger-locked-'));
after(() => rmSync(root, { recursive: true, force: true }));
const S = didFromPublicKey(steward.publicKey);

// a plain process, not a test runner's child: without NODE_TEST_CONTEXT
const { NODE_TEST_CONTEXT: _, ...env } = process.env;
const c0 = async (...args: string[]) => {
  const r = await runNode([bin, ...args], { timeout: 60_000, env: { ...env, C0MPUTE_PASSPHRASE: '' } });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
};

describe('a running steward’s ledger read from its directory', () => {
  it('STORE_LOCKED, exit 3, pointing to `ledger fetch <steward> FILE` then `ledger verify FILE` (verify, show, export)', async () => {
    const dataDir = join(root, 'steward-node');
    const dir = join(dataDir, 'steward', 'acme', 'ledger');
    mkdirSync(dir, { recursive: true });
    const l = await Ledger.open(dir, { signer: steward });
    try {
      await l.append(admitted('c1'));
      const cmd = (sub: string[]) => c0(...sub);
      // held by a process that is not the data directory's daemon: the refusal as it was, no pointer
      const plain = await cmd(['ledger', 'verify', dir]);
      assert.equal(plain.code, 3, plain.stderr);
      assert.match(plain.stderr, /^error STORE_LOCKED: /m);
      assert.doesNotMatch(plain.stderr, /ledger fetch/);

      // the data directory's daemon (this process) holds it
      writeFileSync(join(dataDir, DAEMON_FILE), JSON.stringify({ pid: process.pid, did: S, api: 'http://127.0.0.1:1', startedAt: Date.now(), dataDir: realpathSync(dataDir) }));
      writeFileSync(join(dataDir, DID_FILE), `${S}\n`);
      for (const sub of [['ledger', 'verify', dir], ['ledger', 'show', dir], ['ledger', 'export', dir, join(root, 'out.ledger')]]) {
        const r = await cmd(sub);
        assert.equal(r.code, 3, `${sub.join(' ')}: ${r.stderr}`);
        assert.match(r.stderr, /^error STORE_LOCKED: /m, sub.join(' '));
        assert.ok(r.stderr.includes(`ledger fetch ${S} FILE --overlay acme\``), `${sub.join(' ')}: ${r.stderr}`);
        assert.ok(r.stderr.includes('`c0mpute ledger verify FILE`'), sub.join(' '));
      }
    } finally {
      await l.close();
    }
  });
});
