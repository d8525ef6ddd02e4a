/**
 * store/db.ts: a failed write poisons the handle (every later write is refused with STORE_WRITE_FAILED, nothing is
 * acknowledged), and the handle is reopened once the disk takes writes: sublevels work again, holders re-read their
 * state first (a ledger whose head on disk changed refuses: STORE_REOPEN_REFUSED). The real torn log on a full
 * disk is test/e2e/store-disk-full.test.ts.
 */
import { describe, it, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import { openDb, closeDb, sub, syncBatch, injectWriteFault, setRecovery, storeHealth, onStoreEvent, onStoreFatal, type Db } from '../../../src/store/db.js';
import { Ledger } from '../../../src/ledger/index.js';
import { encodeCanonical } from '../../../src/records/index.js';
import { admitted, steward, tempDir } from '../ledger/helpers.js';

const enospc = () => Object.assign(new Error('IO error: /x/000003.log: No space left on device'), { code: 'LEVEL_IO_ERROR' });
const code = (c: string) => (e: unknown) => e instanceof C0Error && e.code === c;
const until = async (f: () => boolean, ms = 3000) => {
  const end = Date.now() + ms;
  while (!f()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 5));
  }
};

describe('a failed LevelDB write poisons the handle until it is reopened', () => {
  const t = tempDir('c0-dbfail-');
  afterEach(() => onStoreFatal(undefined));
  after(() => t.cleanup());

  it('refuses every later write at once, then reopens (sublevels and all) and takes writes again', async () => {
    const db: Db = await openDb(`${t.dir}/a`);
    try {
      setRecovery(db, { firstDelayMs: 5, maxDelayMs: 20, probeBytes: 4096 });
      const s = sub(db, 'jobs');
      await syncBatch(db, [{ type: 'put', sublevel: s, key: 'a', value: new Uint8Array([1]) }]);
      const seen: string[] = [];
      onStoreEvent(db, 'poisoned', (h) => seen.push(`poisoned ${h.cause}`));
      onStoreEvent(db, 'recovered', () => seen.push('recovered'));
      injectWriteFault(db, enospc());
      await assert.rejects(s.put('b', new Uint8Array([2])), (e: unknown) => code('STORE_WRITE_FAILED')(e) && /No space left on device/.test((e as Error).message));
      assert.equal(storeHealth(db).ok, false);
      assert.equal(storeHealth(db).writeErrors, 1);
      // every write kind, on the root or a sublevel, is refused while poisoned
      await assert.rejects(s.put('c', new Uint8Array([3])), code('STORE_WRITE_FAILED'));
      await assert.rejects(s.del('a'), code('STORE_WRITE_FAILED'));
      await assert.rejects(syncBatch(db, [{ type: 'put', sublevel: s, key: 'd', value: new Uint8Array([4]) }]), code('STORE_WRITE_FAILED'));
      await assert.rejects(db.batch().put('e', new Uint8Array([5])).write(), code('STORE_WRITE_FAILED'));
      await until(() => storeHealth(db).ok);
      assert.deepEqual(seen, ['poisoned IO error: /x/000003.log: No space left on device', 'recovered']);
      assert.equal(storeHealth(db).reopens, 1);
      // the same sublevel object reads and writes again
      await s.put('f', new Uint8Array([6]));
      assert.deepEqual([...(await s.keys().all())], ['a', 'f']);
    } finally {
      await closeDb(db);
    }
  });

  it('while the reopen holds the database closed, reads say STORE_REOPENING and writes STORE_WRITE_FAILED (not abstract-level\'s LEVEL_*_NOT_OPEN); a failed open is retried', async () => {
    const db: Db = await openDb(`${t.dir}/reopening`);
    try {
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      let closedNow = false;
      let opens = 0;
      setRecovery(db, {
        firstDelayMs: 5,
        maxDelayMs: 20,
        probe: async () => true,
        beforeOpen: async () => {
          closedNow = true;
          if (++opens === 1) throw new Error('IO error: no space left on device'); // the first open fails: retried
          await held;
        },
      });
      const s = sub(db, 'jobs');
      await s.put('a', new Uint8Array([1]));
      await s.put('b', new Uint8Array([2]));
      const it = s.keys();
      assert.equal(await it.next(), 'a');
      injectWriteFault(db, enospc());
      await assert.rejects(s.put('x', new Uint8Array([9])), code('STORE_WRITE_FAILED'));
      await until(() => closedNow && opens >= 2);
      assert.equal(db.status, 'closed');
      await assert.rejects(s.get('a'), code('STORE_REOPENING'));
      await assert.rejects(db.get('a'), code('STORE_REOPENING'));
      await assert.rejects(s.getMany(['a']), code('STORE_REOPENING'));
      await assert.rejects(it.next(), code('STORE_REOPENING'));
      await assert.rejects(s.put('y', new Uint8Array([9])), code('STORE_WRITE_FAILED'));
      await assert.rejects(db.batch([{ type: 'del', key: 'z' }]), code('STORE_WRITE_FAILED'));
      release();
      await until(() => storeHealth(db).ok);
      assert.deepEqual([...(await s.keys().all())], ['a', 'b']);
      // outside a reopen, abstract-level's own errors are left as they are
      const done = s.keys();
      await done.close();
      await assert.rejects(done.next(), (e: unknown) => (e as { code?: string }).code === 'LEVEL_ITERATOR_NOT_OPEN');
    } finally {
      await closeDb(db);
    }
  });

  it('a ledger re-reads its head at the reopen: the same head goes on; another one refuses (STORE_REOPEN_REFUSED)', async () => {
    const dir = `${t.dir}/ledger`;
    const l = await Ledger.open(dir, { signer: steward });
    const db = await openDb(dir); // the ledger's shared handle
    try {
      setRecovery(db, { firstDelayMs: 5, maxDelayMs: 20, probeBytes: 4096 });
      await l.append(admitted('c0'));
      injectWriteFault(db, enospc());
      await assert.rejects(l.append(admitted('c1')), code('STORE_WRITE_FAILED'));
      await until(() => storeHealth(db).ok);
      assert.equal((await l.append(admitted('c1'))).seq, 1);
      // a failed append whose entry reached the disk anyway: the head on disk moves under the ledger
      const fatal: C0Error[] = [];
      onStoreFatal((e) => fatal.push(e));
      await db.batch([{ type: 'put', sublevel: sub(db, 'meta'), key: 'head', value: encodeCanonical({ length: 3, head: new Uint8Array(32).fill(9), steward: l.steward }) }] as never);
      injectWriteFault(db, enospc());
      await assert.rejects(l.append(admitted('c2')), code('STORE_WRITE_FAILED'));
      await until(() => fatal.length > 0);
      assert.equal(fatal[0]!.code, 'STORE_REOPEN_REFUSED');
      assert.equal(storeHealth(db).ok, false, 'the handle stays refusing writes');
      await assert.rejects(l.append(admitted('c2')), code('STORE_REOPEN_REFUSED'));
    } finally {
      await closeDb(db);
      await l.close();
      t.cleanup();
    }
  });
});
