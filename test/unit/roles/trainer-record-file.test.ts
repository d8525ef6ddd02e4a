/**
 * The training worker's records on a disk that fails (src/roles/trainer/record-file.ts,
 * src/roles/trainer/worker.ts `join`; docs/training.md "Starting a run"): a record is
 * written to a temporary file, synced and linked into place, so the file either holds the
 * whole record or does not exist; a write the file system refuses (a full disk) is
 * DATA_DIR_UNWRITABLE with the OS reason, and nothing is left behind. A membership left
 * empty or torn by an older build is set aside and the join signs anew. Before, `train
 * join` on a full disk printed an uncoded "internal error: ENOSPC" and left an empty
 * membership.cbor, and every later join was refused with TRAIN_RUN_EXISTS.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs, { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { join } from 'node:path';
import { C0Error } from '../../../src/errors.js';
import { writeRecord } from '../../../src/roles/trainer/record-file.js';
import { StatusFile } from '../../../src/roles/trainer/status.js';
import { TrainerWorker } from '../../../src/roles/trainer/worker.js';
import { tempDir } from '../ledger/helpers.js';
import { P } from '../market/fixtures.js';
import { fakeNet, makeRun } from './trainer-net.js';

/** Run `fn` with `fs.<name>` failing as a full disk does (named ESM imports of node:fs see it too). */
function diskFull<T>(name: 'writeSync' | 'writeFileSync', fn: () => T): T {
  const f = fs as unknown as Record<string, unknown>;
  const orig = f[name];
  f[name] = (() => {
    throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', errno: -28, syscall: 'write' });
  }) as never;
  syncBuiltinESMExports();
  try {
    return fn();
  } finally {
    f[name] = orig;
    syncBuiltinESMExports();
  }
}

describe('training records on a failing disk', () => {
  it('a record whose write fails is DATA_DIR_UNWRITABLE with the reason, and leaves no file behind', () => {
    const t = tempDir('c0-train-rec-');
    try {
      const path = join(t.dir, 'membership.cbor');
      let err: unknown;
      try {
        diskFull('writeSync', () => writeRecord(path, new Uint8Array([1, 2, 3])));
      } catch (e) {
        err = e;
      }
      assert.ok(err instanceof C0Error, `a coded error, not ${String(err)}`);
      assert.equal(err.code, 'DATA_DIR_UNWRITABLE');
      assert.match(err.message, /no space left on the device \(ENOSPC/);
      assert.deepEqual(readdirSync(t.dir), [], 'neither the record nor a temporary file is left');
      // once there is room, the same record is written
      writeRecord(path, new Uint8Array([1, 2, 3]));
      assert.deepEqual([...readFileSync(path)], [1, 2, 3]);
      assert.throws(() => writeRecord(path, new Uint8Array([4])), (e: unknown) => e instanceof C0Error && e.code === 'TRAIN_RUN_EXISTS');
      assert.deepEqual([...readFileSync(path)], [1, 2, 3], 'never overwritten');
      assert.deepEqual(readdirSync(t.dir), ['membership.cbor']);
    } finally {
      t.cleanup();
    }
  });

  it('status.json is replaced whole: a failed write keeps the last one', () => {
    const t = tempDir('c0-train-rec-');
    try {
      const path = join(t.dir, 'status.json');
      let n = 0;
      const f = new StatusFile(path, () => ({ n: ++n }), () => Date.now());
      f.write();
      assert.throws(() => diskFull('writeFileSync', () => f.write()), (e: unknown) => e instanceof C0Error && e.code === 'DATA_DIR_UNWRITABLE');
      assert.deepEqual(JSON.parse(readFileSync(path, 'utf8')), { n: 1 }, 'the last whole status stays');
      assert.deepEqual(readdirSync(t.dir), ['status.json']);
    } finally {
      t.cleanup();
    }
  });

  it('a join finds the membership.cbor an older build left empty, sets it aside and joins', { timeout: 15_000 }, async () => {
    const [A, B] = [P(540), P(541)];
    const run = makeRun([A, B], A);
    const net = fakeNet();
    const dirs = [tempDir('c0-train-rec-'), tempDir('c0-train-rec-')];
    writeFileSync(join(dirs[0]!.dir, 'membership.cbor'), new Uint8Array(0));
    const ws = [A, B].map((m, i) => new TrainerWorker({ signer: m.signer, did: m.did, run, addrs: {}, dir: dirs[i]!.dir, clock: () => Date.now(), net: net.netFor(m.did) as never, joinTimeoutMs: 5_000 }));
    try {
      for (const w of ws) await w.start();
      await Promise.all(ws.map((w) => w.join()));
      assert.ok(readFileSync(join(dirs[0]!.dir, 'membership.cbor')).length > 0, 'a signed membership now');
      assert.ok(existsSync(join(dirs[0]!.dir, 'membership.cbor.unreadable')), 'the empty one is set aside, not deleted');
    } finally {
      for (const w of ws) await w.stop();
      for (const d of dirs) d.cleanup();
    }
  });
});
