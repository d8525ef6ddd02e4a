/**
 * `c0mpute witness evidence <did> --out DIR`: a DIR that cannot be made (a file there, a path through a file) is
 * refused as every other `--out` is, OUTPUT_UNWRITABLE (exit 3), before the daemon is asked: not an internal error
 * (exit 70, "this is a bug"). What it writes, pool-evidence/1 records, is what `record verify` checks.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ed25519Signer, didFromPublicKey, seal } from '../../../src/records/index.js';
import { EVIDENCE_TYPE, Witness, sealEntries, verifyEquivocation, type EquivocationEvidence } from '../../../src/ledger/index.js';
import { closeDb, openDb } from '../../../src/store/db.js';
import { EXIT } from '../../../src/cli/context.js';
import { admitted, steward as stewardKey, tempDir } from '../ledger/helpers.js';

const bin = fileURLToPath(new URL('../../../../bin/c0mpute.js', import.meta.url));

function c0(home: string, ...args: string[]): { code: number; stdout: string; stderr: string } {
  // without node:test's marker: the child is the CLI, not a test runner's child
  const { NODE_TEST_CONTEXT: _, ...env } = process.env;
  const r = spawnSync(process.execPath, [bin, ...args], { encoding: 'utf8', env: { ...env, C0MPUTE_HOME: home } });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

describe('witness evidence --out', () => {
  it('a directory that cannot be made is OUTPUT_UNWRITABLE (exit 3), before any daemon is asked', () => {
    const t = tempDir('c0-witness-out-');
    try {
      const steward = didFromPublicKey(Ed25519Signer.generate().publicKey);
      const file = join(t.dir, 'afile');
      writeFileSync(file, 'x');
      for (const out of [file, join(file, 'sub')]) {
        // no daemon runs in this data dir: the path is refused first
        const r = c0(t.dir, '--data-dir', join(t.dir, 'data'), 'witness', 'evidence', steward, '--out', out);
        assert.equal(r.code, EXIT.OPERATOR, r.stderr);
        assert.match(r.stderr, /OUTPUT_UNWRITABLE/);
        assert.doesNotMatch(r.stderr, /internal error|this is a bug/);
      }
      assert.ok(statSync(file).isFile(), 'the file there is left as it was');
      // a directory that can be made is made (and then the daemon is asked: none runs here)
      const made = join(t.dir, 'new', 'dir');
      const r = c0(t.dir, '--data-dir', join(t.dir, 'data'), 'witness', 'evidence', steward, '--out', made);
      assert.doesNotMatch(r.stderr, /OUTPUT_UNWRITABLE/);
      assert.ok(existsSync(made));
    } finally {
      t.cleanup();
    }
  });

  it('a pool-evidence/1 record, as it writes them, is checked by `record verify` and shown by `record inspect`', () => {
    const t = tempDir('c0-witness-out-');
    try {
      const held = sealEntries([admitted('r1'), admitted('r2')], stewardKey);
      const forked = sealEntries([admitted('r1'), admitted('r2-other')], stewardKey);
      const v = verifyEquivocation(held[1]!.bytes, forked[1]!.bytes);
      const rec: EquivocationEvidence = { steward: v.steward, seq: v.seq, held: held[1]!.bytes, conflicting: forked[1]!.bytes, observedAt: 1_800_000_000_000 };
      const file = join(t.dir, 'evidence-1-0.rec');
      writeFileSync(file, seal(EVIDENCE_TYPE, rec as never, Ed25519Signer.generate()).bytes);
      for (const args of [['record', 'verify', file], ['record', 'verify', file, '--type', EVIDENCE_TYPE]]) {
        const r = c0(t.dir, ...args);
        assert.equal(r.code, 0, r.stdout + r.stderr);
        assert.match(r.stdout, /^valid pool-evidence\/1 signed by did:key:/);
      }
      const shown = c0(t.dir, 'record', 'inspect', file);
      assert.equal(shown.code, 0, shown.stderr);
      assert.match(shown.stdout, /valid\s+yes/);
      assert.match(c0(t.dir, 'record', 'verify', '--help').stdout, /pool-evidence\/1/, 'the help names it');
    } finally {
      t.cleanup();
    }
  });
});

describe('witness evidence with no daemon running', () => {
  it('reads the evidence from the node’s own store, whatever its roles (the proof stays readable with the node down; QA witness pass, finding 5)', async () => {
    const t = tempDir('c0-witness-offline-');
    try {
      const data = join(t.dir, 'data');
      assert.equal(c0(t.dir, '--data-dir', data, 'init', '--no-passphrase').code, 0);
      writeFileSync(join(data, 'config.yaml'), "roles: [buyer]\nnetwork: { listen: ['/ip4/127.0.0.1/tcp/0'], bootstrap: [] }\n");
      const s = Ed25519Signer.generate();
      const steward = didFromPublicKey(s.publicKey);
      const [a] = sealEntries([admitted('a')], s);
      const [b] = sealEntries([admitted('b')], s);
      const db = await openDb(join(data, 'db'));
      try {
        assert.ok(await new Witness(db, Ed25519Signer.generate(), { stewards: [steward] }).keep(steward, a!.bytes, b!.bytes));
      } finally {
        await closeDb(db);
      }
      const r = c0(t.dir, '--data-dir', data, 'witness', 'evidence', steward, '--json');
      assert.equal(r.code, EXIT.OK, r.stdout + r.stderr);
      const out = JSON.parse(r.stdout) as { steward: string; evidence: Array<{ seq: number; form: string }> };
      assert.deepEqual([out.steward, out.evidence.map((e) => [e.seq, e.form])], [steward, [[0, 'same-seq']]]);
      // a steward it kept nothing about: an empty answer, as the daemon gives it
      const none = c0(t.dir, '--data-dir', data, 'witness', 'evidence', didFromPublicKey(Ed25519Signer.generate().publicKey));
      assert.equal(none.code, EXIT.OK, none.stdout + none.stderr);
      assert.match(none.stdout, /^no evidence kept about /);
    } finally {
      t.cleanup();
    }
  });
});
