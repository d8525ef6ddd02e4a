/**
 * A read that reaches the database as it closes for good (the node stopping: a record still being validated when the
 * network stops) is STORE_CLOSED, not abstract-level's bare LEVEL_DATABASE_NOT_OPEN / LEVEL_ITERATOR_NOT_OPEN, which
 * the validator took for a bug and logged at error level on a clean stop (review s42 R2); and the validator counts a
 * STORE_* failure as this node's, not the record's: ignore, never reject (src/store/db.ts, src/net/gossip-validation.ts
 * verdictOf). An iterator closed by its own reader is left with abstract-level's code (db-write-failure.test.ts).
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import { openDb, closeDb, sub, type Db } from '../../../src/store/db.js';
import { verdictOf } from '../../../src/net/gossip-validation.js';
import { tempDir } from '../ledger/helpers.js';

const code = (c: string) => (e: unknown) => (e as { code?: string }).code === c;

describe('reads at the close', () => {
  const t = tempDir('c0-dbreadclose-');
  after(() => t.cleanup());

  it('a get after the close and an iterator the close ended are STORE_CLOSED', async () => {
    const db: Db = await openDb(`${t.dir}/a`);
    const s = sub(db, 's');
    await s.put('a', new Uint8Array([1]));
    await s.put('b', new Uint8Array([2]));
    const it = s.keys();
    assert.equal(await it.next(), 'a');
    await closeDb(db);
    await assert.rejects(it.next(), code('STORE_CLOSED'));
    await assert.rejects(s.get('a'), code('STORE_CLOSED'));
    await assert.rejects(db.get('a'), code('STORE_CLOSED'));
    await assert.rejects(s.put('c', new Uint8Array([3])), code('STORE_CLOSED'));
  });

  it('the validator counts a STORE_* failure as ignore: this node\'s store, not the record', () => {
    for (const c of ['STORE_CLOSED', 'STORE_REOPENING', 'STORE_READ_FAILED', 'STORE_WRITE_FAILED', 'STORE_CORRUPT']) assert.deepEqual(verdictOf(new C0Error(c, 'x')), { verdict: 'ignore', reason: c });
    assert.equal(verdictOf(new C0Error('RECORD_BAD_SHAPE', 'x')).verdict, 'reject');
  });
});
