/**
 * A live ledger whose directory is gone (review r2 E S3). The steward's ledger is its own LevelDB at
 * <data-dir>/steward/<overlay>/ledger; moved aside, or a link to a volume not mounted, the steward started on a new
 * empty ledger ("ledger replayed" length 0): a chain restarted at 0 that its witnesses hold longer copies of. Now
 * Steward.start passes a record beside it (ledger.created, LedgerOptions.createdMark) and while that is there an
 * empty or missing ledger directory is STORE_MISSING, nothing created. Real LevelDB in temp dirs.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { C0Error } from '../../../src/errors.js';
import { closeDb, openDb } from '../../../src/store/db.js';
import { Ledger } from '../../../src/ledger/index.js';
import { fakeClock } from '../../../src/util/clock.js';
import { NOW } from '../market/fixtures.js';
import { stewardOnStub } from '../roles/steward-stub.js';
import { admitted, steward, tempDir } from './helpers.js';

const t = tempDir('c0-ledger-created-');
after(() => t.cleanup());
const missing = (e: unknown) => e instanceof C0Error && e.code === 'STORE_MISSING';

describe('a live ledger directory that is gone', () => {
  it('Ledger.open with a createdMark: the record is written; the directory moved aside or emptied is STORE_MISSING, nothing made', async () => {
    const dir = join(t.dir, 'l1', 'ledger');
    const mark = join(t.dir, 'l1', 'ledger.created');
    const l = await Ledger.open(dir, { signer: steward, now: fakeClock(NOW), createdMark: mark });
    await l.append(admitted('c1'));
    await l.close();
    assert.ok(existsSync(mark));
    renameSync(dir, `${dir}-aside`);
    await assert.rejects(Ledger.open(dir, { signer: steward, createdMark: mark }), missing);
    assert.equal(existsSync(dir), false, 'no ledger directory is made');
    mkdirSync(dir); // a mount point, not mounted
    await assert.rejects(Ledger.open(dir, { signer: steward, createdMark: mark }), missing);
    assert.deepEqual(readdirSync(dir), []);
    rmSync(dir, { recursive: true });
    renameSync(`${dir}-aside`, dir);
    const again = await Ledger.open(dir, { signer: steward, createdMark: mark });
    assert.equal(again.length, 1);
    await again.close();
  });

  it('without a createdMark (ledger import/verify directories) a missing directory is created as before', async () => {
    const dir = join(t.dir, 'l2', 'ledger');
    const l = await Ledger.open(dir, { signer: steward });
    assert.equal(l.length, 0);
    await l.close();
    assert.equal(existsSync(join(t.dir, 'l2', 'ledger.created')), false);
  });

  it("the steward's ledger: a start after its directory was moved aside is STORE_MISSING, not a new chain at 0", async () => {
    const dir = join(t.dir, 's');
    mkdirSync(dir);
    writeFileSync(join(dir, 'tree.yaml'), 'entitlements:\n  - { id: lab, guarantee_uj: 200000000, guarantee_devices: 16, over_quota_weight: 0, priority: 0 }\n  - { id: ml, parent: lab, guarantee_uj: 100000000, guarantee_devices: 8, over_quota_weight: 0, priority: 1 }\n');
    const db = await openDb(join(dir, 'db'));
    try {
      const { s } = await stewardOnStub(dir, db, new Map());
      await s.stop();
      assert.ok(existsSync(join(dir, 'steward', 't', 'ledger.created')));
      renameSync(join(dir, 'steward', 't', 'ledger'), join(dir, 'ledger-aside'));
      await assert.rejects(stewardOnStub(dir, db, new Map()), missing);
      assert.equal(existsSync(join(dir, 'steward', 't', 'ledger')), false);
    } finally {
      await closeDb(db);
    }
  });
});
