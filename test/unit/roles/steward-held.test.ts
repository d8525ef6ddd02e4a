/**
 * What a steward's node holds against its ledger, read offline (src/roles/steward-held.ts, `c0mpute ledger verify
 * <data-dir>/steward/<overlay>/ledger`): besides the evidence and the receipts the running steward kept as
 * contradicting, the witness receipts the node heard for its key. A ledger directory restored from an older copy,
 * the node's store kept, is shorter than what those receipts cover; `start` warns of it, and the offline verify said
 * `problem none` (QA ffLedger F3).
 */
import '../../../src/polyfill.js';
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Ed25519Signer } from '../../../src/records/ed25519.js';
import { didFromPublicKey } from '../../../src/records/did.js';
import { closeDb, openDb, sub } from '../../../src/store/db.js';
import { encodeCanonical } from '../../../src/records/cbor.js';
import { CONTRADICTING_SUB } from '../../../src/roles/steward-contradictions.js';
import { RecordStore } from '../../../src/store/records.js';
import { sealEntries, Witness, writeLedgerDir } from '../../../src/ledger/index.js';
import { heldAgainstLedger } from '../../../src/roles/steward-held.js';
import { admitted, steward as stewardKey, tempDir } from '../ledger/helpers.js';

const t = tempDir('c0-steward-held-');
after(() => t.cleanup());
const S = didFromPublicKey(stewardKey.publicKey);

describe('the witness receipts a steward’s node heard, against its ledger directory', () => {
  it('a ledger shorter than what a witness cosigned (restored from an older copy) is WITNESS_LENGTH_BEYOND; one it covers is not; --witness counts only those named', async () => {
    const chain = sealEntries(Array.from({ length: 4 }, (_, i) => admitted(`h${i}`)), stewardKey);
    const node = join(t.dir, 'node');
    const ldir = join(node, 'steward', 'acme', 'ledger');
    mkdirSync(join(node, 'steward', 'acme'), { recursive: true });
    // the ledger directory from an older backup: 2 entries
    await writeLedgerDir(ldir, { entries: chain.slice(0, 2).map((e) => e.bytes), receipts: [] });
    // the node's store kept what it heard later: witness A cosigned 4, witness B only 2
    const cosign = async (name: string, n: number) => {
      const wdb = await openDb(join(t.dir, name));
      const w = new Witness(wdb, Ed25519Signer.generate());
      const r = await w.cosign(S, chain.slice(0, n).map((e) => e.bytes));
      await closeDb(wdb);
      return { did: w.did, r };
    };
    const a = await cosign('wa', 4);
    const b = await cosign('wb', 2);
    const db = await openDb(join(node, 'db'));
    const store = await RecordStore.open(db, 'acme~', { stewards: [S] });
    await store.put(a.r);
    await store.put(b.r);
    // A's receipt also kept by the steward as contradicting (its sublevel: what `steward status` shows)
    await sub(db, `acme~${CONTRADICTING_SUB}`).put(a.did, encodeCanonical({ receipt: a.r.bytes, at: 1 }));
    await closeDb(db);
    const view = { length: 2, addresses: chain.slice(0, 2).map((e) => e.address) };
    const held = await heldAgainstLedger(ldir, S, view);
    assert.equal(held?.store, 'read');
    assert.deepEqual(held.store === 'read' ? held.contradicting : undefined, [{ witness: a.did, code: 'WITNESS_LENGTH_BEYOND', length: 4 }]);
    // only B named (--witness B): A's receipt is not counted, heard or kept by the steward (review s54)
    const named = await heldAgainstLedger(ldir, S, view, { witnesses: [b.did], only: [b.did] });
    assert.deepEqual(named?.store === 'read' ? named.contradicting : undefined, []);
    // kept as contradicting by the steward: counted whatever the heard receipts' list, but for --witness naming others (review s54)
    const none = await heldAgainstLedger(ldir, S, view, { witnesses: [] });
    assert.deepEqual(none?.store === 'read' ? none.contradicting : undefined, [{ witness: a.did, code: 'WITNESS_LENGTH_BEYOND', length: 4 }], 'the steward kept it');
    // the right copy (4 entries): nothing against it
    const whole = await heldAgainstLedger(ldir, S, { length: 4, addresses: chain.map((e) => e.address) });
    assert.deepEqual(whole?.store === 'read' ? whole.contradicting : undefined, []);
  });
});
