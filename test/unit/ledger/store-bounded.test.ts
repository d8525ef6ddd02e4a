/**
 * An open Ledger keeps its head in memory and reads an entry's address from the store when asked (s35b finding 1:
 * it kept every entry's address string in an array for the life of the ledger, ~200 B a claim). The answers are
 * the same: addressAt(seq) for every seq, and a witness receipt at any length graded valid or mismatched exactly as
 * before, live and after a reopen.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Ed25519Signer, didFromPublicKey, seal } from '../../../src/records/index.js';
import { encodeCanonical } from '../../../src/records/cbor.js';
import { addressToBytes } from '../../../src/records/address.js';
import { openDb, closeDb, sub } from '../../../src/store/db.js';
import { GENESIS, Ledger, WITNESS_TYPE, replay, sealEntries, seqKey, type WitnessReceipt } from '../../../src/ledger/index.js';
import type { PoolEvent } from '../../../src/pool/index.js';
import { admitted, released, steward, tempDir } from './helpers.js';

const S = didFromPublicKey(steward.publicKey);

describe('Ledger addresses come from the store', () => {
  it('addressAt(seq) answers every seq as the replay does, before and after a reopen; receipts at old lengths are graded as before', async () => {
    const t = tempDir();
    const W = Ed25519Signer.generate();
    try {
      let l = await Ledger.open(t.dir, { signer: steward });
      assert.equal(await l.addressAt(0), undefined);
      for (let i = 0; i < 6; i++) {
        await l.append(admitted(`k${i}`));
        if (i % 2) await l.append(released(`k${i}`));
      }
      const check = async () => {
        const want = replay(await l.entries()).addresses;
        assert.equal(want.length, 9);
        for (let i = 0; i < want.length; i++) assert.equal(await l.addressAt(i), want[i], `seq ${i}`);
        for (const bad of [-1, 9, 100, 1.5, Number.NaN]) assert.equal(await l.addressAt(bad), undefined, `seq ${bad}`);
        assert.deepEqual(l.head(), { length: 9, head: want[8] });
        return want;
      };
      const addrs = await check();
      const at = (length: number, head = addrs[length - 1]!, at = 0) => seal(WITNESS_TYPE, { steward: S, length, head, witnessedAt: 100 + length + at } satisfies WitnessReceipt, W);
      // a receipt covering an old length, and one a witness signed over another history at an old length
      assert.equal((await l.addReceipt(at(3).bytes)).stored, true);
      const other = sealEntries([admitted('x'), admitted('y')], steward);
      await assert.rejects(l.addReceipt(at(2, other[1]!.address).bytes), /mismatch/);
      await assert.rejects(l.addReceipt(at(10, addrs[8]).bytes), /mismatch/);
      let a = await l.attestation();
      assert.deepEqual([a.grade, a.witnessedLength, a.receipts.map((r) => r.status)], ['witnessed', 3, ['valid']]);
      await l.close();
      l = await Ledger.open(t.dir, { signer: steward });
      await check();
      a = await l.attestation();
      assert.deepEqual([a.grade, a.witnessedLength], ['witnessed', 3]);
      assert.equal((await l.addReceipt(at(7).bytes)).stored, true);
      a = await l.attestation();
      assert.deepEqual([a.witnessedLength, a.receipts.map((r) => r.status)], [7, ['valid']]);
      await l.close();
      await assert.rejects(l.addressAt(2), /closed/);
    } finally {
      t.cleanup();
    }
  });

  it('an open ledger of 3,800 entries retains well under 100 B of heap per entry (was ~235: an address per entry, an id and an observation per claim)', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const heap = () => {
      gc();
      gc();
      return process.memoryUsage().heapUsed; // strings and objects (the id set's typed array: test/unit/pool/usage-bounded.test.ts)
    };
    const t = tempDir();
    try {
      const N = 1_900; // 3,800 entries: replayed on this thread (replayParallel's workers from 4,000)
      const events: PoolEvent[] = [];
      for (let i = 0; i < N; i++) events.push(admitted(`sha256:${i.toString(16).padStart(64, '0')}`, 'a', 100, { class: i % 2 ? 'small' : 'big' }), released(`sha256:${i.toString(16).padStart(64, '0')}`, 50 + (i % 7), i % 3 ? 'ModelBased' : 'Estimator'));
      // written as writeLedgerDir writes them, without its replay (Ledger.open verifies them all)
      const sealed = sealEntries(events, steward);
      const db = await openDb(t.dir);
      await db.batch([...sealed.map((e, i) => ({ type: 'put', sublevel: sub(db, 'entries'), key: seqKey(i), value: e.bytes })), { type: 'put', sublevel: sub(db, 'meta'), key: 'head', value: encodeCanonical({ length: sealed.length, head: addressToBytes(sealed.at(-1)!.address), steward: S }) }] as never, { sync: true });
      await closeDb(db);
      sealed.length = 0;
      events.length = 0;
      // what the ledger holds: the heap with it, less the heap once it is let go (closed first: its store's own
      // buffers, LevelDB's and not the ledger's, go with the store). The least of up to three opens: one measure can
      // take in what the process allocated meanwhile and frees later (112 B an entry was seen once, with the whole
      // unit suite loading the machine), and none is less than what the ledger itself keeps
      const measure = async (): Promise<number> => {
        // the only reference is the box's, so letting it go lets the ledger go
        const box: { l?: Ledger } = { l: await Ledger.open(t.dir, { signer: steward }) };
        assert.equal(box.l!.length, 2 * N);
        assert.notEqual(box.l!.head().head, GENESIS);
        assert.equal(box.l!.book.estimate('small', {}).ok, true);
        await box.l!.close();
        const held = heap();
        box.l = undefined;
        return (held - heap()) / (2 * N);
      };
      const perEntry: number[] = [];
      for (let i = 0; i < 3 && !(Math.min(...perEntry) < 100); i++) perEntry.push(await measure());
      assert.ok(Math.min(...perEntry) < 100, `${perEntry.map((b) => b.toFixed(0)).join(', ')} B per entry`);
    } finally {
      t.cleanup();
    }
  });
});
