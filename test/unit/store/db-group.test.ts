/**
 * store/db.ts group commit: the writes that queue while a group is written go to LevelDB as one batch (synced if any
 * asked), in the order they were made, whatever their sublevel or encoding; a group that fails fails every write in
 * it, and none queued behind it is acknowledged (docs/node.md "When a write fails").
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import { openDb, closeDb, sub, syncBatch, injectWriteFault, setRecovery, storeHealth, type Db } from '../../../src/store/db.js';
import { tempDir } from '../ledger/helpers.js';

describe('writes made together are written together', () => {
  const t = tempDir('c0-dbgroup-');
  after(() => t.cleanup());

  it('puts, dels and batches on sublevels of different encodings, made at once, all land in order', async () => {
    const db: Db = await openDb(`${t.dir}/a`);
    try {
      const bytes = sub(db, 'b');
      const text = db.sublevel<string, string>('t', { valueEncoding: 'utf8' });
      const json = db.sublevel<string, { n: number }>('j', { valueEncoding: 'json' });
      const writes: Promise<unknown>[] = [];
      for (let i = 0; i < 300; i++) {
        writes.push(bytes.put(`k${i}`, new Uint8Array([i & 255])));
        writes.push(i % 7 === 0 ? syncBatch(db, [{ type: 'put', sublevel: text, key: `k${i}`, value: `v${i}` }]) : text.put(`k${i}`, `v${i}`));
        writes.push(syncBatch(db, [{ type: 'put', sublevel: json, key: `k${i}`, value: { n: i } }]));
        if (i % 3 === 0) writes.push(text.del(`k${i}`));
      }
      // the same key written twice in one group: the later write wins, as one at a time
      writes.push(bytes.put('k1', new Uint8Array([201])), bytes.put('k1', new Uint8Array([202])));
      await Promise.all(writes);
      assert.deepEqual([...(await bytes.get('k1'))!], [202]);
      assert.deepEqual([...(await bytes.get('k299'))!], [299 & 255]);
      assert.equal(await text.get('k3'), undefined);
      assert.equal(await text.get('k4'), 'v4');
      assert.deepEqual(await json.get('k150'), { n: 150 });
      assert.equal((await json.keys().all()).length, 300);
      assert.equal((await text.keys().all()).length, 200);
    } finally {
      await closeDb(db);
    }
  });

  it('a group that fails fails every write in it, and the writes queued behind it are refused, none acknowledged', async () => {
    const db: Db = await openDb(`${t.dir}/b`);
    try {
      setRecovery(db, { probe: async () => false, firstDelayMs: 60_000 });
      const s = sub(db, 's');
      await s.put('before', new Uint8Array([1]));
      // the first write goes alone (nothing is being written); the next 50 queue behind it and form one group
      injectWriteFault(db, Object.assign(new Error('IO error: No space left on device'), { code: 'LEVEL_IO_ERROR' }));
      const results = await Promise.allSettled(Array.from({ length: 51 }, (_, i) => s.put(`w${i}`, new Uint8Array([i]))));
      assert.ok(results.every((r) => r.status === 'rejected' && r.reason instanceof C0Error && r.reason.code === 'STORE_WRITE_FAILED'), 'every write failed or was refused');
      assert.equal(storeHealth(db).writeErrors, 1, 'one failed write; the rest were refused without reaching LevelDB');
      assert.deepEqual(await s.keys().all(), ['before']);
    } finally {
      await closeDb(db);
    }
  });
  it('closeDb returns while writers keep writing: the writes queued before it are written, later ones refused', { timeout: 30_000 }, async () => {
    const db: Db = await openDb(`${t.dir}/c`);
    const s = sub(db, 's');
    let stop = false;
    let n = 0;
    const refused = new Set<string>();
    const acked: string[] = [];
    const writer = async (id: number) => {
      while (!stop) {
        const key = `w${id}-${n++}`;
        try {
          await s.put(key, new Uint8Array([1]));
          acked.push(key);
        } catch (e) {
          refused.add((e as { code?: string }).code ?? String(e));
          await new Promise((r) => setTimeout(r, 1));
        }
      }
    };
    const ws = Array.from({ length: 8 }, (_, i) => writer(i));
    await new Promise((r) => setTimeout(r, 100));
    await closeDb(db); // before: the drain never ended while the writers refilled its queue
    stop = true;
    await Promise.all(ws);
    assert.ok([...refused].every((c) => c === 'STORE_CLOSED' || c === 'LEVEL_DATABASE_NOT_OPEN'), [...refused].join());
    assert.ok(refused.size > 0, 'writes made once the close began were refused');
    const again: Db = await openDb(`${t.dir}/c`);
    try {
      const kept = new Set(await sub(again, 's').keys().all());
      assert.ok(acked.length > 0 && acked.every((k) => kept.has(k)), 'every write acknowledged before the close is on disk');
    } finally {
      await closeDb(again);
    }
  });

  it('writes queued when the database is closed directly are written before LevelDB closes (never reach a closed binding)', async () => {
    const db: Db = await openDb(`${t.dir}/d`);
    const s = sub(db, 's');
    await s.put('a', new Uint8Array([1]));
    const queued = Array.from({ length: 2000 }, (_, i) => s.put(`z${i}`, new Uint8Array([1])));
    const closing = db.close();
    const settled = await Promise.allSettled(queued);
    await closing;
    await db.open();
    try {
      const kept = (await sub(db, 's').keys().all()).length;
      assert.equal(kept, 1 + settled.filter((r) => r.status === 'fulfilled').length, 'every write acknowledged is there');
    } finally {
      await closeDb(db);
    }
  });
});
