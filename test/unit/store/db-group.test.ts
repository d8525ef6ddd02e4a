/**
 * store/db.ts group commit: the writes that queue while a group is written go to LevelDB as one batch (synced if any
 * asked), in the order they were made, whatever their sublevel or encoding; a group that fails fails every write in
 * it, and none queued behind it is acknowledged (docs/node.md "When a write fails").
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import { openDb, closeDb, sub, syncBatch, injectWriteFault, setRecovery, storeHealth, type Db } from '../../../src/store/db.js';
import { tempDir } from '../ledger/helpers.js';

describe('writes made together are written together', () => {
  const t = tempDir('c0-dbgroup-');

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
});
