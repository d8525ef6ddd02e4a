/**
 * The bound on witness records (pool-evidence/1, pool-witness/1) in the record store, on a real LevelDB in a temp dir
 * (src/store/records.ts, witness-keep.ts WitnessRecordBounds; docs/overlays.md "What a node keeps of witness records"):
 * a flood from fresh keys stays under the cap, also after a reopen; the first to arrive goes first; a named steward's
 * records are never pushed out by strangers'; and the steward's own ledger keeps only so many witness keys.
 */
import '../../../src/polyfill.js';
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ed25519Signer } from '../../../src/records/ed25519.js';
import { seal, type Opened } from '../../../src/records/envelope.js';
import { didFromPublicKey } from '../../../src/records/did.js';
import { hashHex } from '../../../src/records/address.js';
import { closeDb, openDb, sub, syncBatch, type Db } from '../../../src/store/db.js';
import { RecordStore } from '../../../src/store/records.js';
import { Ledger, sealEntries, WITNESS_TYPE, EVIDENCE_TYPE, type EquivocationEvidence, type WitnessReceipt } from '../../../src/ledger/index.js';
import type { PoolEvent } from '../../../src/pool/index.js';

const NOW = 1_800_000_000_000;
const did = (s: Ed25519Signer) => didFromPublicKey(s.publicKey);
const admitted = (claim: string): PoolEvent => ({ event: 'Admitted', claim, entitlement: 'x', reserved: { uj: 1, grade: 'Estimator' }, devices: 1, borrowed_uj: 0 });

/** Evidence that `steward` signed two entries at seq 0, noticed by `witness` (any key: both are free to make). */
function evidence(steward: Ed25519Signer, witness: Ed25519Signer, n: number): Opened<EquivocationEvidence> {
  const [a] = sealEntries([admitted(`a${n}`)], steward, { at: NOW });
  const [b] = sealEntries([admitted(`b${n}`)], steward, { at: NOW });
  return seal(EVIDENCE_TYPE, { steward: did(steward), seq: 0, held: a!.bytes, conflicting: b!.bytes, observedAt: NOW + n } satisfies EquivocationEvidence, witness) as Opened<EquivocationEvidence>;
}

function receipt(steward: string, witness: Ed25519Signer, length: number, n = 0): Opened<WitnessReceipt> {
  return seal(WITNESS_TYPE, { steward, length, head: hashHex(Uint8Array.of(length & 255, n & 255, n >> 8)), witnessedAt: NOW + n } satisfies WitnessReceipt, witness) as Opened<WitnessReceipt>;
}

const fresh = () => Ed25519Signer.generate();

describe('witness records are bounded (real LevelDB)', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'c0-wrec-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('a flood of evidence and receipts from fresh keys stays at the cap, the first to arrive going first, and stays there after a reopen', async () => {
    const path = join(dir, 'flood');
    const bounds = { maxEvidence: 20, maxReceipts: 30, maxWitnesses: 4 };
    let db = await openDb(path);
    const evs: Array<Opened<EquivocationEvidence>> = [];
    const rcs: Array<Opened<WitnessReceipt>> = [];
    try {
      const s = await RecordStore.open(db, '', { witnessRecords: bounds });
      for (let i = 0; i < 60; i++) {
        const e = evidence(fresh(), fresh(), i);
        const r = receipt(did(fresh()), fresh(), 1 + (i % 5), i);
        evs.push(e);
        rcs.push(r);
        assert.equal(await s.put(e), true, 'each is taken (the newest is never the one evicted)');
        assert.equal(await s.put(r), true);
      }
      assert.equal((await s.list(EVIDENCE_TYPE)).length, 20);
      assert.equal((await s.list(WITNESS_TYPE)).length, 30);
      assert.deepEqual(s.looseWitnessRecords, { evidence: 20, receipts: 30 });
      // the first to arrive went: the newest are the ones held
      for (const [i, e] of evs.entries()) assert.equal(await s.has(e.address), i >= 40, `evidence ${i}`);
      for (const [i, r] of rcs.entries()) assert.equal(await s.has(r.address), i >= 30, `receipt ${i}`);
      // an evicted receipt left witness-keep's index too: nothing is listed for its steward
      assert.deepEqual(await s.witnessReceiptsFor(rcs[0]!.record.steward), []);
      assert.equal((await s.witnessReceiptsFor(rcs[59]!.record.steward)).length, 1);
      await closeDb(db);

      // across a restart: the counts are read back, and the flood goes on evicting the oldest
      db = await openDb(path);
      const s2 = await RecordStore.open(db, '', { witnessRecords: bounds });
      assert.deepEqual(s2.looseWitnessRecords, { evidence: 20, receipts: 30 });
      for (let i = 60; i < 70; i++) {
        const e = evidence(fresh(), fresh(), i);
        evs.push(e);
        await s2.put(e);
      }
      assert.equal((await s2.list(EVIDENCE_TYPE)).length, 20);
      for (const [i, e] of evs.entries()) assert.equal(await s2.has(e.address), i >= 50, `evidence ${i} after the reopen`);
      await closeDb(db);

      // a cap lowered between runs applies at open, the oldest first
      db = await openDb(path);
      const s3 = await RecordStore.open(db, '', { witnessRecords: { ...bounds, maxEvidence: 5, maxReceipts: 7 } });
      assert.deepEqual(s3.looseWitnessRecords, { evidence: 5, receipts: 7 });
      assert.equal((await s3.list(EVIDENCE_TYPE)).length, 5);
      assert.equal((await s3.list(WITNESS_TYPE)).length, 7);
      for (const [i, e] of evs.entries()) assert.equal(await s3.has(e.address), i >= 65, `evidence ${i} after the cap was lowered`);
      for (const [i, r] of rcs.entries()) assert.equal(await s3.has(r.address), i >= 53, `receipt ${i} after the cap was lowered`);
    } finally {
      await closeDb(db);
    }
  });

  test("a named steward's evidence and its witnesses' receipts are never pushed out by strangers' records; its own bound keeps the first", async () => {
    const path = join(dir, 'named');
    const bounds = { maxEvidence: 5, maxReceipts: 5, maxWitnesses: 2 };
    const steward = fresh();
    const S = did(steward);
    const [w1, w2] = [fresh(), fresh()];
    let db = await openDb(path);
    try {
      const s = await RecordStore.open(db, '', { witnessRecords: bounds, stewards: [S] });
      const own = evidence(steward, w1, 0);
      const r1 = receipt(S, w1, 1);
      const r2 = receipt(S, w2, 1);
      assert.equal(await s.put(own), true);
      assert.equal(await s.put(r1), true);
      assert.equal(await s.put(r2), true);
      // strangers flood: many times the cap, from fresh keys
      for (let i = 0; i < 40; i++) {
        await s.put(evidence(fresh(), fresh(), i));
        await s.put(receipt(did(fresh()), fresh(), 1, i));
      }
      assert.equal(await s.has(own.address), true, "the named steward's evidence stays");
      assert.equal(await s.has(r1.address), true);
      assert.equal(await s.has(r2.address), true);
      assert.deepEqual(s.looseWitnessRecords, { evidence: 5, receipts: 5 });
      // a named witness key's longer receipt still replaces its shorter one (witness-keep.ts), inside the bound
      const r1b = receipt(S, w1, 2);
      assert.equal(await s.put(r1b), true);
      // past maxWitnesses keys, a receipt from a new key for the named steward is not stored
      assert.equal(await s.put(receipt(S, fresh(), 1)), false);
      // genuine evidence re-wrapped by any key: the first maxEvidence stay, further ones are not stored
      for (let i = 1; i < 5; i++) assert.equal(await s.put(evidence(steward, fresh(), i)), true);
      assert.equal(await s.put(evidence(steward, fresh(), 9)), false);
      assert.equal(await s.has(own.address), true);
      await closeDb(db);

      // across a restart, still named: its records stay outside the cap, and its bounds still hold
      db = await openDb(path);
      const s2 = await RecordStore.open(db, '', { witnessRecords: bounds, stewards: [S] });
      for (let i = 0; i < 20; i++) await s2.put(evidence(fresh(), fresh(), 100 + i));
      assert.equal(await s2.has(own.address), true);
      assert.equal(await s2.put(receipt(S, fresh(), 1, 7)), false);
      assert.equal(await s2.put(evidence(steward, fresh(), 10)), false);
      assert.deepEqual((await s2.witnessReceiptsFor(S)).map((r) => `${r.signer === did(w1) ? 'w1' : 'w2'}:${r.record.length}`).sort(), ['w1:1', 'w1:2', 'w2:1']);
      await closeDb(db);

      // no longer named: its records join the others' order (they arrived first) and go under the cap
      db = await openDb(path);
      const s3 = await RecordStore.open(db, '', { witnessRecords: bounds });
      assert.deepEqual(s3.looseWitnessRecords, { evidence: 5, receipts: 5 });
      assert.equal(await s3.has(own.address), false);
      assert.equal(await s3.has(r1.address), false);
    } finally {
      await closeDb(db);
    }
  });

  test('a store from before the bound is indexed once at open and brought under the cap', async () => {
    const path = join(dir, 'upgrade');
    let db: Db = await openDb(path);
    try {
      const s = await RecordStore.open(db, '', { witnessRecords: { maxEvidence: 1000, maxReceipts: 1000, maxWitnesses: 4 } });
      for (let i = 0; i < 12; i++) await s.put(evidence(fresh(), fresh(), i));
      // forget the index, as a store an earlier build wrote has none
      const keep = sub(db, 'witnesskeep');
      const ops: unknown[] = [];
      for await (const k of keep.keys()) ops.push({ type: 'del', key: k, sublevel: keep });
      await syncBatch(db, ops);
      await closeDb(db);
      db = await openDb(path);
      const s2 = await RecordStore.open(db, '', { witnessRecords: { maxEvidence: 4, maxReceipts: 4, maxWitnesses: 4 } });
      assert.equal((await s2.list(EVIDENCE_TYPE)).length, 4);
      assert.deepEqual(s2.looseWitnessRecords, { evidence: 4, receipts: 0 });
      await s2.put(evidence(fresh(), fresh(), 99));
      assert.equal((await s2.list(EVIDENCE_TYPE)).length, 4);
    } finally {
      await closeDb(db);
    }
  });

  test("a steward's ledger without a witness list keeps the receipts of the first maxWitnesses keys; with a list, its keys", async () => {
    const t = mkdtempSync(join(dir, 'ledger-'));
    const steward = fresh();
    const S = did(steward);
    const cover = async (l: Ledger, w: Ed25519Signer, length: number) => seal(WITNESS_TYPE, { steward: S, length, head: (await l.addressAt(length - 1))!, witnessedAt: NOW + length } satisfies WitnessReceipt, w);
    const [a, b] = [fresh(), fresh()];
    let l = await Ledger.open(t, { signer: steward, maxWitnesses: 2 });
    try {
      for (let i = 0; i < 3; i++) await l.append(admitted(`k${i}`));
      assert.equal((await l.addReceipt((await cover(l, a, 2)).bytes)).stored, true);
      assert.equal((await l.addReceipt((await cover(l, b, 1)).bytes)).stored, true);
      // a flood of valid receipts from fresh keys (anyone can sign the head the steward publishes): none is stored
      for (let i = 0; i < 20; i++) assert.equal((await l.addReceipt((await cover(l, fresh(), 3)).bytes)).stored, false);
      // the keys held still advance
      assert.equal((await l.addReceipt((await cover(l, a, 3)).bytes)).stored, true);
      assert.equal((await l.receipts()).length, 2);
      const att = await l.attestation();
      assert.equal(att.grade, 'witnessed');
      assert.deepEqual(att.witnesses.map((w) => w.witness).sort(), [did(a), did(b)].sort());
      await l.close();

      // at open, a directory holding more keys than the bound keeps those with the longest receipts
      l = await Ledger.open(t, { signer: steward, maxWitnesses: 1 });
      assert.deepEqual((await l.attestation()).witnesses, [{ witness: did(a), length: 3 }]);
      await l.close();

      // named witnesses: the list is the bound, whatever maxWitnesses says
      const c = fresh();
      l = await Ledger.open(t, { signer: steward, maxWitnesses: 1, witnesses: [did(a), did(c)] });
      assert.equal((await l.addReceipt((await cover(l, c, 3)).bytes)).stored, true);
      assert.deepEqual((await l.attestation()).witnesses.map((w) => w.witness).sort(), [did(a), did(c)].sort());
    } finally {
      await l.close();
    }
  });
});
