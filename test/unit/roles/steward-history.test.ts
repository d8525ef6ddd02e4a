/**
 * What the node's store knows of the steward key's own ledger (src/roles/steward-history.ts; QA qaUp F1, F2), with the
 * whole Steward over a real Ledger and a real RecordStore on LevelDB in temp dirs:
 * - a ledger begun anew (its directory moved aside, ledger.created removed: "a new accounting window") under a key a
 *   witness has cosigned a ledger of is refused STEWARD_KEY_HAS_LEDGER, and nothing is created; a named-witness list
 *   counts only its keys; the key's evidence alone refuses it too;
 * - the ledger put back starts; one shorter than a receipt held is warned about at start;
 * - equivocation evidence about the steward held in the store is shown by status() after a restart;
 * - a ledger of the key kept for another overlay in the data directory (the overlay renamed) refuses a new one too,
 *   and so does one whose owner cannot be read (STEWARD_OTHER_LEDGER_UNREADABLE),
 *   with nothing in the store; another key's ledger there (the data directory under a new identity) does not.
 */
import '../../../src/polyfill.js';
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { C0Error } from '../../../src/errors.js';
import { Ed25519Signer } from '../../../src/records/ed25519.js';
import { seal, type Opened } from '../../../src/records/envelope.js';
import { didFromPublicKey } from '../../../src/records/did.js';
import { closeDb, openDb } from '../../../src/store/db.js';
import { RecordStore } from '../../../src/store/records.js';
import { Ledger, sealEntries, WITNESS_TYPE, EVIDENCE_TYPE, type EquivocationEvidence, type WitnessReceipt } from '../../../src/ledger/index.js';
import type { Logger } from '../../../src/util/log.js';
import { NOW } from '../market/fixtures.js';
import { admitted, steward as stewardKey, tempDir } from '../ledger/helpers.js';
import { stewardIdentity, stewardOnStub } from './steward-stub.js';

const t = tempDir('c0-steward-history-');
after(() => t.cleanup());
const S = stewardIdentity.did;
const W = Ed25519Signer.generate();
const WD = didFromPublicKey(W.publicKey);
const refused = (e: unknown) => e instanceof C0Error && e.code === 'STEWARD_KEY_HAS_LEDGER';

function receipt(length: number, head: string, by = W, witnessedAt = NOW): Opened<WitnessReceipt> {
  return seal(WITNESS_TYPE, { steward: S, length, head, witnessedAt } satisfies WitnessReceipt, by) as Opened<WitnessReceipt>;
}

function evidence(): Opened<EquivocationEvidence> {
  const [a] = sealEntries([admitted('x1', 'ml')], stewardKey, { at: NOW });
  const [b] = sealEntries([admitted('x2', 'ml')], stewardKey, { at: NOW });
  return seal(EVIDENCE_TYPE, { steward: S, seq: 0, held: a!.bytes, conflicting: b!.bytes, observedAt: NOW } satisfies EquivocationEvidence, W) as Opened<EquivocationEvidence>;
}

function capture(): { log: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  return { lines, log: pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) }) as unknown as Logger };
}

function stewardDir(name: string): string {
  const dir = join(t.dir, name);
  mkdirSync(dir);
  writeFileSync(join(dir, 'tree.yaml'), 'entitlements:\n  - { id: lab, guarantee_uj: 200000000, guarantee_devices: 16, over_quota_weight: 0, priority: 0 }\n  - { id: ml, parent: lab, guarantee_uj: 100000000, guarantee_devices: 8, over_quota_weight: 0, priority: 1 }\n');
  return dir;
}

describe("a steward key's ledger is one chain", () => {
  it('a ledger begun anew under a key a witness cosigned is refused STEWARD_KEY_HAS_LEDGER, nothing created; put back, it starts; shorter, it is warned about', async () => {
    const dir = stewardDir('renew');
    const db = await openDb(join(dir, 'db'));
    try {
      const store = await RecordStore.open(db, '', { stewards: [S] });
      // the first ledger: three entries, cosigned to length 3 by W (the receipt kept in the node's store, as gossip does)
      const first = await stewardOnStub(dir, db, new Map(), { history: store, cfg: { witnesses: [WD] } });
      for (const c of ['c1', 'c2', 'c3']) await first.s.ledger.append(admitted(c, 'ml'));
      const { head } = first.s.ledger.head();
      await first.s.stop();
      assert.equal(await store.put(receipt(3, head)), true);

      // restarted as it is: no refusal, no warning
      const quiet = capture();
      const again = await stewardOnStub(dir, db, new Map(), { history: store, cfg: { witnesses: [WD] }, log: quiet.log });
      await again.s.stop();
      assert.deepEqual(quiet.lines.filter((l) => l.code === 'WITNESS_LENGTH_BEYOND'), []);

      // "a new accounting window": the directory moved aside and ledger.created removed
      const ledgerDir = join(dir, 'steward', 't', 'ledger');
      const mark = join(dir, 'steward', 't', 'ledger.created');
      renameSync(ledgerDir, join(dir, 'ledger.period1'));
      rmSync(mark);
      await assert.rejects(stewardOnStub(dir, db, new Map(), { history: store, cfg: { witnesses: [WD] } }), (e: unknown) => {
        assert.ok(refused(e), String(e));
        const d = (e as C0Error).detail as { witnesses: Array<{ witness: string; length: number }>; named: string };
        assert.deepEqual(d.witnesses, [{ witness: WD, length: 3 }]);
        assert.equal(d.named, 'yes');
        assert.match((e as Error).message, /new steward key/);
        return true;
      });
      assert.equal(existsSync(ledgerDir), false, 'no ledger directory is made');
      assert.equal(existsSync(mark), false, 'no ledger.created is written');
      // without network.witnesses, every key's receipt counts
      await assert.rejects(stewardOnStub(dir, db, new Map(), { history: store }), refused);
      // a witness list that does not name W: its receipt is anyone's, and not counted
      const other = didFromPublicKey(Ed25519Signer.generate().publicKey);
      const unnamed = await stewardOnStub(dir, db, new Map(), { history: store, cfg: { witnesses: [other] } });
      assert.equal(unnamed.s.ledger.length, 0);
      await unnamed.s.stop();
      rmSync(ledgerDir, { recursive: true });
      rmSync(mark);

      // a ledger shorter than the receipt held (an old copy put back): it starts, and says so at start
      const short = await stewardOnStub(dir, db, new Map(), { cfg: { witnesses: [WD] } });
      await short.s.ledger.append(admitted('c1', 'ml'));
      await short.s.stop();
      // a second witness cosigned length 3 too, then cosigned again later at length 1 (its own state went back): it no
      // longer holds 3, and is not shown (review s55)
      const W2 = Ed25519Signer.generate();
      const W2D = didFromPublicKey(W2.publicKey);
      assert.equal(await store.put(receipt(3, head, W2)), true);
      assert.equal(await store.put(receipt(1, short.s.ledger.head().head, W2, NOW + 1_000)), true);
      const warned = capture();
      const restored = await stewardOnStub(dir, db, new Map(), { history: store, cfg: { witnesses: [WD, W2D] }, log: warned.log });
      // and status() shows the witness at once, as a receipt heard now would be (before: only the start log, until the
      // witness sent its receipt again)
      const seen = ((await restored.s.status()) as { contradictingWitnesses?: Array<{ witness: string; code: string; length: number; ours: number }> }).contradictingWitnesses;
      assert.deepEqual(
        seen?.map((c) => [c.witness, c.code, c.length, c.ours]),
        [[WD, 'WITNESS_LENGTH_BEYOND', 3, 1]],
      );
      await restored.s.stop();
      const w = warned.lines.find((l) => l.code === 'WITNESS_LENGTH_BEYOND');
      assert.ok(w, 'a start warning for the shorter ledger');
      assert.equal(w.length, 1);
      assert.deepEqual(w.witnesses, [WD, W2D].sort().map((witness) => ({ witness, length: 3 })));

      // the period's ledger put back: it starts on it
      rmSync(ledgerDir, { recursive: true });
      renameSync(join(dir, 'ledger.period1'), ledgerDir);
      const back = await stewardOnStub(dir, db, new Map(), { history: store, cfg: { witnesses: [WD, W2D] } });
      assert.equal(back.s.ledger.length, 3);
      assert.equal((await back.s.status()).contradictingWitnesses, undefined, 'the ledger they cosigned is back: nothing contradicts it');
      await back.s.stop();
    } finally {
      await closeDb(db);
    }
  });

  it("the key's ledger kept for another overlay (the overlay renamed) refuses a new ledger, nothing created; another key's does not", async () => {
    const dir = stewardDir('renamed');
    const db = await openDb(join(dir, 'db'));
    try {
      // the first ledger, written on the overlay's old name (QA ffWitnessDay2 F1: the store of the new name holds no
      // receipt for it, so before, the steward began a second chain at length 0 under the same key, usage refilled)
      const first = await stewardOnStub(dir, db, new Map());
      for (const c of ['c1', 'c2']) await first.s.ledger.append(admitted(c, 'ml'));
      await first.s.stop();
      renameSync(join(dir, 'steward', 't'), join(dir, 'steward', 'acme'));
      const ledgerDir = join(dir, 'steward', 't', 'ledger');
      await assert.rejects(stewardOnStub(dir, db, new Map()), (e: unknown) => {
        assert.ok(refused(e), String(e));
        const d = (e as C0Error).detail as { ledgers: Array<{ overlay: string; length: number }> };
        assert.deepEqual(d.ledgers.map((l) => [l.overlay, l.length]), [['acme', 2]]);
        assert.match((e as Error).message, /network\.overlay: acme/);
        return true;
      });
      assert.equal(existsSync(ledgerDir), false, 'no ledger directory is made');
      assert.equal(existsSync(join(dir, 'steward', 't', 'ledger.created')), false, 'no ledger.created is written');

      // the data directory went on under a new identity: the ledger kept there is another key's, and a new one begins
      rmSync(join(dir, 'steward', 'acme'), { recursive: true });
      const other = await Ledger.open(join(dir, 'steward', 'lab', 'ledger'), { signer: Ed25519Signer.generate() });
      await other.append(admitted('c1', 'ml'));
      await other.close();
      const fresh = await stewardOnStub(dir, db, new Map());
      assert.equal(fresh.s.ledger.length, 0);
      await fresh.s.stop();
    } finally {
      await closeDb(db);
    }
  });

  it("another overlay's ledger whose owner cannot be read (tables without CURRENT) refuses a new ledger, naming it; nothing created (review s57: taken for none)", async () => {
    const dir = stewardDir('unreadable');
    const db = await openDb(join(dir, 'db'));
    try {
      mkdirSync(join(dir, 'steward', 'acme', 'ledger'), { recursive: true });
      writeFileSync(join(dir, 'steward', 'acme', 'ledger', '000005.ldb'), 'tables whose CURRENT was lost');
      await assert.rejects(stewardOnStub(dir, db, new Map()), (e: unknown) => {
        assert.ok(e instanceof C0Error && e.code === 'STEWARD_OTHER_LEDGER_UNREADABLE', String(e));
        assert.match(e.message, /the one kept for acme \(.*acme\/ledger\) cannot be read: STORE_CORRUPT: .*no CURRENT file/);
        return true;
      });
      assert.equal(existsSync(join(dir, 'steward', 't', 'ledger')), false, 'no ledger directory is made');
    } finally {
      await closeDb(db);
    }
  });

  it('evidence against the key held in the store: a new ledger is refused, and status() shows it after a restart', async () => {
    const dir = stewardDir('evidence');
    const db = await openDb(join(dir, 'db'));
    try {
      const store = await RecordStore.open(db, '', { stewards: [S] });
      const first = await stewardOnStub(dir, db, new Map(), { history: store });
      assert.equal((await first.s.status()).evidence, undefined);
      await first.s.ledger.append(admitted('c1', 'ml'));
      // heard on gossip while it ran: the node stored it, the steward counted it
      const ev = evidence();
      await store.put(ev);
      await first.hear('pool-evidence', ev);
      assert.deepEqual((await first.s.status()).evidence, { pairs: 1, witnesses: 1, seqs: [0] });
      await first.s.stop();

      // after a restart, nothing heard since: still shown (read from the store, once: the ledger is there, so the
      // second-ledger check does not read it)
      const asked: number[] = [];
      const counted = { witnessReceiptsFor: store.witnessReceiptsFor.bind(store), evidenceAbout: (steward: string, limit: number) => (asked.push(limit), store.evidenceAbout(steward, limit)) };
      const again = await stewardOnStub(dir, db, new Map(), { history: counted });
      assert.deepEqual((await again.s.status()).evidence, { pairs: 1, witnesses: 1, seqs: [0] });
      assert.equal(asked.length, 1, 'the evidence is read once at start');
      await again.s.stop();

      // a new ledger under the key: refused on the evidence alone
      rmSync(join(dir, 'steward', 't'), { recursive: true });
      await assert.rejects(stewardOnStub(dir, db, new Map(), { history: store }), (e: unknown) => refused(e) && ((e as C0Error).detail as { evidence: number }).evidence === 1);
    } finally {
      await closeDb(db);
    }
  });
});
