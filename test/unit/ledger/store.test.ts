import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { C0Error } from '../../../src/errors.js';
import { Ed25519Signer, didFromPublicKey, sealRaw, encodeCanonical } from '../../../src/records/index.js';
import { fakeClock } from '../../../src/util/clock.js';
import { openDb, closeDb, sub } from '../../../src/store/db.js';
import { PoolState, admittedEvent, buildTree, type Claim } from '../../../src/pool/index.js';
import { GENESIS, Ledger, POOL_TYPE, readLedgerDir, replay, seqKey, verifyLedger, writeLedgerDir, encodeLedgerFile, decodeLedgerFile, entryFor } from '../../../src/ledger/index.js';
import { ent } from '../pool/helpers.js';
import { admitted, released, steward, tempDir } from './helpers.js';

async function rejects(p: Promise<unknown>, code: string): Promise<void> {
  await assert.rejects(p, (e: unknown) => e instanceof C0Error && e.code === code);
}

describe('Ledger on LevelDB', () => {
  it('appends, reports head, serves ranges, and usage after a restart equals usage before', async () => {
    const t = tempDir();
    try {
      const clock = fakeClock();
      const l = await Ledger.open(t.dir, { signer: steward, now: clock });
      assert.deepEqual(l.head(), { length: 0, head: GENESIS });
      const a0 = await l.append(admitted('r1', 'a', 100));
      await l.append(admitted('r2', 'b', 200));
      await l.append(released('r1', 70));
      assert.equal(a0.seq, 0);
      assert.equal(l.length, 3);
      const before = [...l.book.entitlements];
      const head = l.head();
      assert.equal((await l.entries(1, 3)).length, 2);
      assert.equal((await l.entries(5, 9)).length, 0);
      await rejects(l.entries(3, 1), 'LEDGER_BAD_RANGE');
      assert.equal((await l.records(2))[0]!.event, 'Released');
      await l.close();
      const again = await Ledger.open(t.dir, { signer: steward });
      assert.deepEqual(again.head(), head);
      assert.deepEqual([...again.book.entitlements], before);
      assert.deepEqual(again.book.usage('a'), { usedUj: 70, settledUj: 70, heldDevices: 0 });
      await again.close();
    } finally {
      t.cleanup();
    }
  });

  it("a node's data directory given for a ledger: LEDGER_NOT_FOUND says where its stewards' ledgers are", async () => {
    const t = tempDir();
    try {
      const bare = await readLedgerDir(t.dir).catch((e: unknown) => e);
      assert.ok(bare instanceof C0Error && bare.code === 'LEDGER_NOT_FOUND');
      assert.doesNotMatch(bare.message, /data directory/);
      writeFileSync(join(t.dir, 'config.yaml'), 'roles: [buyer]\n');
      const node = await readLedgerDir(t.dir).catch((e: unknown) => e);
      assert.ok(node instanceof C0Error && node.code === 'LEDGER_NOT_FOUND');
      assert.match(node.message, /looks like a node's data directory: a steward's ledger is .*steward\/<overlay>\/ledger$/);
    } finally {
      t.cleanup();
    }
  });

  it('refuses an inconsistent append with a code and writes nothing', async () => {
    const t = tempDir();
    try {
      const l = await Ledger.open(t.dir, { signer: steward });
      await l.append(admitted('r1'));
      await rejects(l.append(released('ghost')), 'LEDGER_RELEASE_UNKNOWN_CLAIM');
      await rejects(l.append(admitted('r1')), 'LEDGER_DUPLICATE_CLAIM');
      await rejects(l.append({ event: 'Released', claim: 'r1', actual: { uj: -1, grade: 'HwShunt' } }), 'POOL_UJ_INVALID');
      assert.equal(l.length, 1);
      await l.close();
      assert.equal((await readLedgerDir(t.dir)).entries.length, 1);
    } finally {
      t.cleanup();
    }
  });

  it('concurrent appends are serialised by the single writer', async () => {
    const t = tempDir();
    try {
      const l = await Ledger.open(t.dir, { signer: steward });
      const rs = await Promise.all(Array.from({ length: 50 }, (_, i) => l.append(admitted(`c${i}`, 'a', 1))));
      assert.deepEqual(rs.map((r) => r.seq), Array.from({ length: 50 }, (_, i) => i));
      await l.close();
      assert.equal(replay((await readLedgerDir(t.dir)).entries).ok, true);
    } finally {
      t.cleanup();
    }
  });

  it('is read-only without the key, and refuses to open under another steward', async () => {
    const t = tempDir();
    try {
      const l = await Ledger.open(t.dir, { signer: steward });
      await l.append(admitted('r1'));
      await l.close();
      const ro = await Ledger.open(t.dir);
      assert.equal(ro.steward, didFromPublicKey(steward.publicKey));
      await rejects(ro.append(admitted('r2')), 'LEDGER_READ_ONLY');
      await ro.close();
      await rejects(Ledger.open(t.dir, { signer: Ed25519Signer.generate() }), 'LEDGER_WRONG_STEWARD');
    } finally {
      t.cleanup();
    }
  });

  it('refuses to open a tampered directory and names the index', async () => {
    const t = tempDir();
    try {
      const l = await Ledger.open(t.dir, { signer: steward });
      for (let i = 0; i < 4; i++) await l.append(admitted(`r${i}`));
      await l.close();
      const db = await openDb(t.dir);
      const s = open2(db);
      const b = Uint8Array.from((await s.get(seqKey(2)))!);
      b[b.length - 3]! ^= 1;
      await s.put(seqKey(2), b);
      await closeDb(db);
      await assert.rejects(Ledger.open(t.dir, { signer: steward }), (e: unknown) => e instanceof C0Error && e.code === 'LEDGER_CORRUPT' && (e.detail as { index: number }).index === 2);
      const rep = verifyLedger(await readLedgerDir(t.dir));
      assert.deepEqual([rep.ok, rep.problem!.index, rep.problem!.code], [false, 2, 'ENVELOPE_BAD_SIGNATURE']);
    } finally {
      t.cleanup();
    }
  });

  it('refuses a directory whose head does not match its entries', async () => {
    const t = tempDir();
    try {
      const l = await Ledger.open(t.dir, { signer: steward });
      await l.append(admitted('r1'));
      await l.close();
      const db = await openDb(t.dir);
      await sub(db, 'entries').del(seqKey(0));
      await closeDb(db);
      await rejects(Ledger.open(t.dir, { signer: steward }), 'LEDGER_HEAD_MISMATCH');
    } finally {
      t.cleanup();
    }
  });

  it('a damaged head record (meta/head) is LEDGER_HEAD_MISMATCH, at open and in verify; the entries are untouched and can be exported to rebuild it', async () => {
    const damaged: Array<[string, Uint8Array]> = [
      ['the wrong shape', encodeCanonical({ length: 2, head: 'x' })],
      ['a head of the wrong size', encodeCanonical({ length: 2, head: new Uint8Array(31) })],
      ['a length that is not a count', encodeCanonical({ length: 'two', head: new Uint8Array(32) })],
      ['not a map', encodeCanonical([2, new Uint8Array(32)])],
      ['bytes that do not decode', Uint8Array.of(0xff, 0x00, 0x13)],
    ];
    for (const [what, bytes] of damaged) {
      const t = tempDir();
      try {
        const l = await Ledger.open(t.dir, { signer: steward });
        await l.append(admitted('r1'));
        await l.append(admitted('r2'));
        const head = l.head();
        await l.close();
        const before = await readLedgerDir(t.dir);
        let db = await openDb(t.dir);
        await sub(db, 'meta').put('head', bytes);
        await closeDb(db);
        await assert.rejects(Ledger.open(t.dir, { signer: steward }), (e: unknown) => e instanceof C0Error && e.code === 'LEDGER_HEAD_MISMATCH' && (e.detail as { entries?: unknown }).entries !== undefined, what);
        // nothing stored was changed by the refused open
        db = await openDb(t.dir);
        assert.deepEqual(new Uint8Array((await sub(db, 'meta').get('head'))!), bytes, what);
        await closeDb(db);
        const raw = await readLedgerDir(t.dir);
        assert.deepEqual(raw.entries, before.entries, what);
        const rep = verifyLedger(raw);
        assert.equal(rep.ok, false, what);
        assert.equal(rep.replay.ok, true, `${what}: the entries themselves verify`);
        assert.equal(rep.problem?.code, 'LEDGER_HEAD_MISMATCH', what);
        // what an operator does: export the entries and import them into a new directory, which writes a new head
        const t2 = tempDir();
        try {
          await writeLedgerDir(t2.dir, decodeLedgerFile(encodeLedgerFile(raw)));
          const again = await Ledger.open(t2.dir, { signer: steward });
          assert.deepEqual(again.head(), head, what);
          await again.close();
        } finally {
          t2.cleanup();
        }
      } finally {
        t.cleanup();
      }
    }
  });

  it('a PoolState attached to the ledger decides against replayed usage', async () => {
    const t = tempDir();
    try {
      const tree = buildTree([ent('p', { over_quota_weight: 0 }), ent('a', { parent: 'p' }), ent('b', { parent: 'p' })]);
      const l = await Ledger.open(t.dir, { signer: steward });
      const state = new PoolState(tree, l.book);
      l.attach(state);
      const c: Claim = { id: 'k1', entitlement: 'a', class: 'x', gang_size: 1, devices_per_member: 1, estimate: { uj: 900, grade: 'HwShunt' } };
      const v = state.decide(c);
      assert.equal(v.verdict, 'Admit');
      if (v.verdict === 'Admit') await l.append(admittedEvent(c, v));
      await l.close();
      const l2 = await Ledger.open(t.dir, { signer: steward });
      const s2 = new PoolState(tree, l2.book);
      assert.deepEqual(s2.explain('a'), state.explain('a'));
      // a 200 µJ Estimator claim no longer fits the guarantee and may not borrow
      assert.equal(s2.decide({ ...c, id: 'k2', estimate: { uj: 200, grade: 'Estimator' } }).verdict, 'Queue');
      await l2.close();
    } finally {
      t.cleanup();
    }
  });

  it('exports to a file and imports into an empty directory', async () => {
    const t = tempDir();
    const u = tempDir();
    try {
      const l = await Ledger.open(t.dir, { signer: steward });
      for (let i = 0; i < 5; i++) await l.append(admitted(`r${i}`));
      await l.close();
      const raw = await readLedgerDir(t.dir);
      const file = decodeLedgerFile(encodeLedgerFile(raw));
      assert.equal(file.entries.length, 5);
      const r = await writeLedgerDir(u.dir, file);
      assert.equal(r.length, 5);
      const l2 = await Ledger.open(u.dir, { signer: steward });
      assert.deepEqual(l2.head(), { length: 5, head: r.head });
      await l2.close();
      await rejects(writeLedgerDir(u.dir, file), 'LEDGER_IMPORT_NOT_EMPTY');
      assert.equal((() => { try { decodeLedgerFile(encodeCanonical({ format: 'x' })); } catch (e) { return (e as C0Error).code; } return undefined; })(), 'LEDGER_FILE_MALFORMED');
    } finally {
      t.cleanup();
      u.cleanup();
    }
  });

  it('refuses to import a non-canonical entry (§6.6) at its index', async () => {
    const u = tempDir();
    try {
      const s = didFromPublicKey(steward.publicKey);
      const core = encodeCanonical({ ...entryFor(admitted('r1'), 0, GENESIS, s, 5), prev: new Uint8Array(32) });
      const indefinite = new Uint8Array([0xbf, ...core.subarray(1), 0xff]);
      await assert.rejects(writeLedgerDir(u.dir, { entries: [sealRaw(POOL_TYPE, indefinite, steward)], receipts: [] }), (e: unknown) => e instanceof C0Error && e.code === 'LEDGER_CORRUPT' && (e.detail as { code: string }).code === 'CBOR_INDEFINITE_LENGTH');
    } finally {
      u.cleanup();
    }
  });
});

function open2(db: Awaited<ReturnType<typeof openDb>>) {
  return sub(db, 'entries');
}
