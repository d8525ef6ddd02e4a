/**
 * `c0mpute witness evidence <did> --out DIR`: a DIR that cannot be made (a file there, a path through a file) is
 * refused as every other `--out` is, OUTPUT_UNWRITABLE (exit 3), before the daemon is asked: not an internal error
 * (exit 70, "this is a bug").
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ed25519Signer, didFromPublicKey } from '../../../src/records/index.js';
import { EXIT } from '../../../src/cli/context.js';
import { tempDir } from '../ledger/helpers.js';

const bin = fileURLToPath(new URL('../../../../bin/c0mpute.js', import.meta.url));

function c0(home: string, ...args: string[]): { code: number; stderr: string } {
  const r = spawnSync(process.execPath, [bin, ...args], { encoding: 'utf8', env: { ...process.env, C0MPUTE_HOME: home } });
  return { code: r.status ?? -1, stderr: r.stderr };
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
});
