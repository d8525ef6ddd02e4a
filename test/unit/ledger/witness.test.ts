import { describe, it, mock } from 'node:test';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import { Ed25519Signer, didFromPublicKey, open } from '../../../src/records/index.js';
import { openDb, closeDb, sub } from '../../../src/store/db.js';
import { hashHex } from '../../../src/records/address.js';
import { fakeClock } from '../../../src/util/clock.js';
import { sodium } from '../../../src/util/sodium.js';
import { decodeCanonical, encodeCanonical } from '../../../src/records/cbor.js';
import { Ledger, Witness, WITNESS_TYPE, gradeAttestation, sealEntries, verifyLedger, verifyEquivocation, verifySuccessorFork, evidencePairAgainst, EVIDENCE_TYPE, type EquivocationEvidence, type WitnessReceipt } from '../../../src/ledger/index.js';
import { seal } from '../../../src/records/index.js';
import { admitted, released, steward, tempDir } from './helpers.js';

const S = didFromPublicKey(steward.publicKey);

async function withWitness(fn: (w: Witness, dir: string) => Promise<void>, signer = Ed25519Signer.generate()): Promise<void> {
  const t = tempDir('c0-witness-');
  const db = await openDb(t.dir);
  try {
    await fn(new Witness(db, signer, { now: fakeClock() }), t.dir);
  } finally {
    await closeDb(db);
    t.cleanup();
  }
}

const codeIs = (code: string) => (e: unknown) => e instanceof C0Error && e.code === code;

describe('Witness', () => {
  const chain = sealEntries([admitted('r1'), admitted('r2'), released('r1'), admitted('r3'), released('r2')], steward);
  const bytes = chain.map((e) => e.bytes);

  it('cosigns a verified extension and keeps the head; the receipt grades the ledger witnessed', async () => {
    await withWitness(async (w) => {
      const r1 = await w.cosign(S, bytes.slice(0, 2));
      assert.deepEqual([r1.record.length, r1.record.head, r1.record.steward], [2, chain[1]!.address, S]);
      assert.deepEqual(await w.held(S), { length: 2, head: chain[1]!.address });
      const r2 = await w.cosign(S, bytes.slice(2));
      assert.equal(r2.record.length, 5);
      // a request may pass through the held head
      const r3 = await w.cosign(S, bytes.slice(1));
      assert.equal(r3.record.length, 5);
      const opened = open(r2.bytes, WITNESS_TYPE);
      assert.equal(opened.signer, w.did);
      const a = gradeAttestation({ steward: S, addresses: chain.map((e) => e.address) }, [r1.bytes, r2.bytes]);
      assert.deepEqual(a.witnesses, [{ witness: w.did, length: 5 }]);
    });
  });

  it('refuses to countersign a ledger sealed with its own key (§6.7)', async () => {
    await withWitness(async (w) => {
      await assert.rejects(w.cosign(S, bytes), codeIs('WITNESS_IS_STEWARD'));
    }, steward);
  });

  it('refuses a gap, a shorter history and a fork, returning the head it holds', async () => {
    await withWitness(async (w) => {
      await assert.rejects(w.cosign(S, bytes.slice(1, 3)), codeIs('WITNESS_CONFLICT'));
      await w.cosign(S, bytes.slice(0, 3));
      const held = { length: 3, head: chain[2]!.address };
      await assert.rejects(w.cosign(S, bytes.slice(4)), (e: unknown) => e instanceof C0Error && e.code === 'WITNESS_CONFLICT' && JSON.stringify((e.detail as { held: unknown }).held) === JSON.stringify(held));
      await assert.rejects(w.cosign(S, bytes.slice(0, 2)), codeIs('WITNESS_CONFLICT'));
      // a fork after the held head whose first entry does not link to it: proof of equivocation (below)
      const fork = sealEntries([admitted('zz')], steward, { start: { length: 3, head: chain[1]!.address } });
      await assert.rejects(w.cosign(S, [fork[0]!.bytes]), codeIs('WITNESS_EQUIVOCATION'));
      assert.deepEqual(await w.held(S), held);
      assert.equal((await w.evidence(S)).length, 1, 'the fork is kept');
      // the honest steward resends from the held head
      assert.equal((await w.cosign(S, bytes.slice(3))).record.length, 5);
    });
  });

  it('refuses entries that do not verify or do not chain, and an empty request', async () => {
    await withWitness(async (w) => {
      await assert.rejects(w.cosign(S, []), codeIs('WITNESS_EMPTY_REQUEST'));
      const t = Uint8Array.from(bytes[0]!);
      t[t.length - 1]! ^= 1;
      await assert.rejects(w.cosign(S, [t]), codeIs('WITNESS_BAD_ENTRY'));
      await assert.rejects(w.cosign(S, [bytes[0]!, bytes[2]!]), codeIs('WITNESS_BROKEN_LINK'));
      const other = sealEntries([admitted('r1')], Ed25519Signer.generate());
      await assert.rejects(w.cosign(S, [other[0]!.bytes]), codeIs('WITNESS_BAD_ENTRY'));
      assert.deepEqual((await w.held(S)).length, 0);
    });
  });

  it('keeps equivocation evidence that anyone can verify from the two records alone', async () => {
    await withWitness(async (w) => {
      await w.cosign(S, bytes.slice(0, 2));
      const rewritten = sealEntries([admitted('r1'), admitted('r2-other')], steward);
      await assert.rejects(w.cosign(S, rewritten.map((e) => e.bytes)), codeIs('WITNESS_EQUIVOCATION'));
      const ev = await w.evidence(S);
      assert.equal(ev.length, 1);
      const v = verifyEquivocation(ev[0]!.a, ev[0]!.b);
      assert.deepEqual([v.steward, v.seq], [S, 1]);
      assert.deepEqual(await w.held(S), { length: 2, head: chain[1]!.address });
      assert.throws(() => verifyEquivocation(bytes[0]!, bytes[0]!), codeIs('EQUIVOCATION_NOT_PROVEN'));
      assert.throws(() => verifyEquivocation(bytes[0]!, bytes[1]!), codeIs('EQUIVOCATION_NOT_PROVEN'));
      // one pair, whichever way round a witness published it; about another key or not proven: nothing
      const rec = (a: Uint8Array, b: Uint8Array, about = S): EquivocationEvidence => ({ steward: about, seq: 1, held: a, conflicting: b, observedAt: 0 });
      const pair = evidencePairAgainst(rec(ev[0]!.a, ev[0]!.b), S);
      assert.deepEqual(pair && { seq: pair.seq, form: pair.form }, { seq: 1, form: 'same-seq' });
      assert.equal(evidencePairAgainst(rec(ev[0]!.b, ev[0]!.a), S)?.key, pair!.key);
      assert.equal(evidencePairAgainst(rec(ev[0]!.a, ev[0]!.b, 'did:key:z6Mkother'), 'did:key:z6Mkother'), undefined, 'the entries are signed by S');
      assert.equal(evidencePairAgainst(rec(ev[0]!.a, ev[0]!.b), 'did:key:z6Mkother'), undefined);
      assert.equal(evidencePairAgainst(rec(bytes[0]!, bytes[1]!), S), undefined, 'not proven');
      assert.equal(evidencePairAgainst({ ...rec(ev[0]!.a, ev[0]!.b), form: 'successor' }, S), undefined, 'not a successor fork');
    });
  });

  it('a fork beginning after the held head (entry n does not link to head h) is refused and kept as evidence, whether the run starts at n or passes through h', async () => {
    const t = tempDir('c0-witness-');
    const signer = Ed25519Signer.generate();
    try {
      let db = await openDb(t.dir);
      let w = new Witness(db, signer, { now: fakeClock() });
      await w.cosign(S, bytes.slice(0, 3));
      const held = { length: 3, head: chain[2]!.address };
      // The steward also signed a history whose seq 2 is another entry: its seq 3 names that one as prev.
      const other = sealEntries([admitted('r1'), admitted('r2'), admitted('r3-other'), released('r1')], steward);
      const forkAt3 = other[3]!;
      assert.notEqual(other[2]!.address, chain[2]!.address);
      // (1) the run starts right after the held head
      await assert.rejects(w.cosign(S, [forkAt3.bytes]), (e: unknown) => e instanceof C0Error && e.code === 'WITNESS_EQUIVOCATION' && (e.detail as { form?: string }).form === 'successor');
      // (2) the run passes through the held head (the same entry at seq 2), then forks
      const through = [bytes[2]!, forkAt3.bytes];
      await assert.rejects(w.cosign(S, through), codeIs('WITNESS_EQUIVOCATION'));
      assert.deepEqual(await w.held(S), held, 'nothing cosigned');
      const ev = await w.evidence(S);
      assert.equal(ev.length, 1, 'the same proof is kept once (keyed by seq and the conflicting entry)');
      assert.equal(ev[0]!.form, 'successor');
      assert.deepEqual(ev[0]!.a, bytes[2]);
      assert.deepEqual(ev[0]!.b, forkAt3.bytes);
      // anyone verifies it from the two records alone
      assert.deepEqual(verifySuccessorFork(ev[0]!.a, ev[0]!.b).seq, 2);
      assert.throws(() => verifySuccessorFork(bytes[2]!, bytes[3]!), codeIs('EQUIVOCATION_NOT_PROVEN'), 'an honest successor proves nothing');
      assert.throws(() => verifySuccessorFork(bytes[1]!, forkAt3.bytes), codeIs('EQUIVOCATION_NOT_PROVEN'), 'not the successor');
      // it is a valid pool-evidence/1 record; mislabelled, it is refused
      const rec: EquivocationEvidence = { steward: S, seq: 2, held: ev[0]!.a, conflicting: ev[0]!.b, observedAt: 1_800_000_000_000, form: 'successor' };
      assert.equal((open(seal(EVIDENCE_TYPE, rec as never, signer).bytes, EVIDENCE_TYPE).record as EquivocationEvidence).form, 'successor');
      assert.throws(() => seal(EVIDENCE_TYPE, { ...rec, form: undefined } as never, signer), codeIs('EVIDENCE_NOT_PROVEN'));
      assert.throws(() => seal(EVIDENCE_TYPE, { ...rec, seq: 3 } as never, signer), codeIs('EVIDENCE_MISLABELLED'));
      // the evidence is on disk
      await closeDb(db);
      db = await openDb(t.dir);
      w = new Witness(db, signer);
      assert.equal((await w.evidence(S)).length, 1);
      // a gap (the run starts after seq n) proves nothing: refused, nothing more kept
      const gap = sealEntries([admitted('x')], steward, { start: { length: 4, head: forkAt3.address } });
      await assert.rejects(w.cosign(S, [gap[0]!.bytes]), codeIs('WITNESS_CONFLICT'));
      assert.equal((await w.evidence(S)).length, 1);
      // the honest steward still extends the held head
      assert.equal((await w.cosign(S, bytes.slice(3))).record.length, 5);
      await closeDb(db);
    } finally {
      t.cleanup();
    }
  });

  it('a head the steward announces (pool-head) is checked against the held head: a fork of it is kept, anything else is not', async () => {
    await withWitness(async (w) => {
      assert.equal(await w.observeHead(S, bytes[0]!), undefined, 'nothing held yet');
      await w.cosign(S, bytes.slice(0, 3));
      for (const honest of [bytes[1]!, bytes[2]!, bytes[3]!, bytes[4]!]) assert.equal(await w.observeHead(S, honest), undefined);
      assert.equal(await w.observeHead(S, sealEntries([admitted('x')], Ed25519Signer.generate())[0]!.bytes), undefined, 'not the steward’s');
      const other = sealEntries([admitted('r1'), admitted('r2'), admitted('r3-other'), released('r1')], steward);
      const same = await w.observeHead(S, other[2]!.bytes);
      assert.deepEqual([same?.seq, same?.form], [2, undefined]);
      const next = await w.observeHead(S, other[3]!.bytes);
      assert.deepEqual([next?.seq, next?.form], [2, 'successor']);
      assert.equal((await w.evidence(S)).length, 2);
      assert.deepEqual(await w.held(S), { length: 3, head: chain[2]!.address });
    });
  });

  it('two Witness instances over one database (two overlays) share one state: of two forks sent at once, one is cosigned and the other kept as evidence', async () => {
    await withWitness(async (w, dir) => {
      const db = await openDb(dir); // the same handle (openDb shares one per path), as every overlay of a node gets
      try {
        const other = new Witness(db, Ed25519Signer.generate(), { now: fakeClock() });
        await w.cosign(S, bytes.slice(0, 3));
        const start = { length: 3, head: chain[2]!.address };
        const x = sealEntries([admitted('x3'), admitted('x4')], steward, { start });
        const y = sealEntries([admitted('y3'), admitted('y4')], steward, { start });
        const [rx, ry] = await Promise.allSettled([w.cosign(S, [bytes[2]!, ...x.map((e) => e.bytes)]), other.cosign(S, [bytes[2]!, ...y.map((e) => e.bytes)])]);
        assert.equal(rx.status, 'fulfilled');
        assert.equal(ry.status, 'rejected');
        assert.ok(codeIs('WITNESS_EQUIVOCATION')((ry as PromiseRejectedResult).reason));
        assert.deepEqual(await other.held(S), { length: 5, head: x[1]!.address });
        assert.equal((await w.evidence(S)).length, 1);
      } finally {
        await closeDb(db);
      }
    });
  });

  it('evidence is kept only about a steward held or named: a fork inside the run of a key never cosigned is only refused, nothing written', async () => {
    const t = tempDir('c0-witness-');
    const db = await openDb(t.dir);
    try {
      const fork = sealEntries([admitted('x')], steward, { start: { length: 1, head: `sha256:${'11'.repeat(32)}` } })[0]!;
      const run = [bytes[0]!, fork.bytes]; // seq 0 and a seq 1 that does not link to it
      const unnamed = new Witness(db, Ed25519Signer.generate(), { now: fakeClock() });
      await assert.rejects(unnamed.cosign(S, run), codeIs('WITNESS_BROKEN_LINK'));
      assert.equal(await unnamed.keep(S, bytes[1]!, sealEntries([admitted('r1'), admitted('other')], steward)[1]!.bytes), undefined);
      assert.equal((await unnamed.evidence(S)).length, 0);
      // named (witness.stewards): kept before any head is held
      const named = new Witness(db, Ed25519Signer.generate(), { now: fakeClock(), stewards: [S] });
      await assert.rejects(named.cosign(S, run), codeIs('WITNESS_EQUIVOCATION'));
      assert.equal((await unnamed.evidence(S)).length, 1);
      // once a head is held, the unnamed witness keeps it too
      const again = new Witness(db, Ed25519Signer.generate(), { now: fakeClock() });
      await again.cosign(S, bytes.slice(0, 1));
      const other = sealEntries([admitted('r1-other')], steward)[0]!;
      assert.equal((await again.keep(S, bytes[0]!, other.bytes))?.seq, 0);
      assert.equal((await again.evidence(S)).length, 2);
    } finally {
      await closeDb(db);
      t.cleanup();
    }
  });

  it('checks held evidence once, not on every read (GET /v1/witness polls it); evidence changed on disk is checked again', { skip: sodium === undefined }, async () => {
    const t = tempDir('c0-witness-');
    let db = await openDb(t.dir);
    const signer = Ed25519Signer.generate();
    const verifies = mock.method(sodium!, 'crypto_sign_verify_detached');
    try {
      const w = new Witness(db, signer, { now: fakeClock(), stewards: [S] });
      for (const i of [1, 2, 3]) await w.keep(S, bytes[0]!, sealEntries([admitted(`other-${i}`)], steward)[0]!.bytes);
      let n = verifies.mock.callCount();
      assert.ok(n >= 6, 'each pair is verified as it is kept');
      // what this process verified as it stored it is read back without a signature check, through any instance
      for (let i = 0; i < 5; i++) assert.equal((await w.evidence(S)).length, 3);
      assert.equal((await new Witness(db, signer, { now: fakeClock(), stewards: [S] }).evidence(S)).length, 3);
      assert.equal(verifies.mock.callCount(), n, 'reading what this witness verified costs no signature check');
      // a restart (the store reopened: it is a directory that could have been changed meanwhile) checks each once on load
      await closeDb(db);
      db = await openDb(t.dir);
      const again = new Witness(db, signer, { now: fakeClock(), stewards: [S] });
      assert.equal((await again.evidence(S)).length, 3);
      assert.ok(verifies.mock.callCount() >= n + 6, 'checked on load');
      n = verifies.mock.callCount();
      for (let i = 0; i < 5; i++) assert.equal((await again.evidence(S)).length, 3);
      assert.equal(verifies.mock.callCount(), n, 'then not again');
      // evidence altered in the store (b's signature broken) is checked again, and never reported as held evidence
      const ev = sub(db, 'witness-evidence');
      const [key, value] = (await ev.iterator({ limit: 1 }).all())[0]!;
      const m = decodeCanonical(value) as { a: Uint8Array; b: Uint8Array };
      const b = new Uint8Array(m.b);
      b[b.length - 1]! ^= 1;
      await ev.put(key, encodeCanonical({ ...m, b }));
      await assert.rejects(again.evidence(S), (e: unknown) => e instanceof C0Error);
    } finally {
      verifies.mock.restore();
      await closeDb(db);
      t.cleanup();
    }
  });

  it('state survives a restart (written before the receipt is returned)', async () => {
    const t = tempDir('c0-witness-');
    const signer = Ed25519Signer.generate();
    try {
      let db = await openDb(t.dir);
      await new Witness(db, signer).cosign(S, bytes.slice(0, 3));
      await closeDb(db);
      db = await openDb(t.dir);
      const w = new Witness(db, signer);
      assert.deepEqual(await w.held(S), { length: 3, head: chain[2]!.address });
      await assert.rejects(w.cosign(S, bytes.slice(0, 2)), codeIs('WITNESS_CONFLICT'));
      await closeDb(db);
    } finally {
      t.cleanup();
    }
  });

  it('a ledger stores receipts that cover its head and refuses others', async () => {
    const t = tempDir();
    try {
      await withWitness(async (w) => {
        const l = await Ledger.open(t.dir, { signer: steward });
        for (let i = 0; i < 3; i++) await l.append(admitted(`k${i}`));
        assert.equal((await l.attestation()).grade, 'self-attested');
        const rc = await w.cosign(S, await l.entries(0, 3));
        await l.addReceipt(rc.bytes);
        const a = await l.attestation();
        assert.deepEqual([a.grade, a.witnessedLength], ['witnessed', 3]);
        const foreign = await w.cosign(S, sealEntries([admitted('a')], steward, { start: { length: 3, head: l.head().head } }).map((e) => e.bytes));
        await assert.rejects(l.addReceipt(foreign.bytes), codeIs('LEDGER_RECEIPT_REFUSED'));
        assert.equal((foreign.record as WitnessReceipt).length, 4);
        await l.close();
      });
    } finally {
      t.cleanup();
    }
  });

  it("a ledger holds each witness's longest receipt only, and drops the shorter ones an earlier build kept", async () => {
    const t = tempDir();
    const A = Ed25519Signer.generate();
    const B = Ed25519Signer.generate();
    const cover = async (l: Ledger, w: Ed25519Signer, length: number, at = 0) => seal(WITNESS_TYPE, { steward: S, length, head: (await l.addressAt(length - 1))!, witnessedAt: 1000 + length + at } satisfies WitnessReceipt, w);
    try {
      let l = await Ledger.open(t.dir, { signer: steward });
      for (let i = 0; i < 4; i++) await l.append(admitted(`k${i}`));
      const a2 = await cover(l, A, 2);
      const a4 = await cover(l, A, 4);
      assert.equal((await l.addReceipt(a2.bytes)).stored, true);
      assert.equal((await l.addReceipt(a4.bytes)).stored, true);
      // no longer than the one held: covered already, not stored
      assert.equal((await l.addReceipt(a2.bytes)).stored, false);
      assert.equal((await l.addReceipt((await cover(l, A, 4, 1)).bytes)).stored, false);
      // two of one witness at once: the longer is held whatever order they land in
      const [b3, b1] = [await cover(l, B, 3), await cover(l, B, 1)];
      await Promise.all([l.addReceipt(b3.bytes), l.addReceipt(b1.bytes)]);
      const held = async () => (await l.receipts()).map((b) => open(b, WITNESS_TYPE)).map((o) => `${o.signer === didFromPublicKey(A.publicKey) ? 'A' : 'B'}${(o.record as WitnessReceipt).length}`).sort();
      assert.deepEqual(await held(), ['A4', 'B3']);
      assert.deepEqual((await l.attestation()).witnesses.map((w) => w.length).sort(), [3, 4]);
      const b4 = await cover(l, B, 4);
      await l.close();

      // a directory an earlier build wrote kept every receipt, and may hold one that contradicts the ledger
      const other = sealEntries([admitted('x'), admitted('y')], steward);
      const mismatch = seal(WITNESS_TYPE, { steward: S, length: 2, head: other[1]!.address, witnessedAt: 5 } satisfies WitnessReceipt, A);
      // and one whose signature does not verify, claiming a longer cover by B (an imported directory's are stored as given)
      const forged = b4.bytes.slice();
      forged[forged.length - 1]! ^= 1;
      const db = await openDb(t.dir);
      await sub(db, 'receipts').batch([a2.bytes, b1.bytes, mismatch.bytes, forged].map((b) => ({ type: 'put' as const, key: hashHex(b), value: b })));
      await closeDb(db);
      l = await Ledger.open(t.dir, { signer: steward });
      const statuses = (await l.attestation()).receipts.map((r) => r.status).sort();
      // the shorter covers go; evidence of a rewritten history is never dropped; a forged receipt displaces nothing
      assert.deepEqual(statuses, ['invalid', 'mismatch', 'valid', 'valid']);
      assert.deepEqual((await l.attestation()).witnesses.map((w) => w.length).sort(), [3, 4]);
      const kept = new Set((await l.receipts()).map((b) => hashHex(b)));
      assert.equal(kept.size, 4);
      assert.ok(kept.has(hashHex(forged)) && kept.has(hashHex(b3.bytes)), 'the forged receipt is kept for what it is, and B’s real one stays');
      assert.deepEqual([kept.has(hashHex(mismatch.bytes)), kept.has(hashHex(a2.bytes)), kept.has(hashHex(b1.bytes))], [true, false, false]);
      await l.close();
    } finally {
      t.cleanup();
    }
  });

  it('named witnesses: a receipt from any other key counts for nothing, neither toward the grade nor as a rewrite; the ledger refuses to store one', async () => {
    const t = tempDir();
    const named = Ed25519Signer.generate();
    const rogue = Ed25519Signer.generate();
    const N = didFromPublicKey(named.publicKey);
    const R = didFromPublicKey(rogue.publicKey);
    try {
      let l = await Ledger.open(t.dir, { signer: steward });
      for (let i = 0; i < 3; i++) await l.append(admitted(`n${i}`));
      const good = seal(WITNESS_TYPE, { steward: S, length: 3, head: (await l.addressAt(2))!, witnessedAt: 10 } satisfies WitnessReceipt, named);
      // the rogue says it saw another head at length 2 (what a rewritten history looks like), and pads the grade
      const elsewhere = sealEntries([admitted('z1'), admitted('z2')], steward);
      const lie = seal(WITNESS_TYPE, { steward: S, length: 2, head: elsewhere[1]!.address, witnessedAt: 11 } satisfies WitnessReceipt, rogue);
      const pad = seal(WITNESS_TYPE, { steward: S, length: 3, head: (await l.addressAt(2))!, witnessedAt: 12 } satisfies WitnessReceipt, rogue);
      const addresses = await Promise.all([0, 1, 2].map(async (i) => (await l.addressAt(i))!));
      const receipts = [good.bytes, lie.bytes, pad.bytes];
      // every key counts: the lie reads as a rewrite, the pad as a second witness
      const all = gradeAttestation({ steward: S, addresses }, receipts);
      assert.deepEqual(all.receipts.map((r) => r.status), ['valid', 'mismatch', 'valid']);
      assert.equal(all.witnesses.length, 2);
      const entries = await l.entries(0, 3);
      assert.equal(verifyLedger({ entries, receipts }).problem?.code, 'WITNESS_HEAD_MISMATCH');
      // named: only N counts
      const only = gradeAttestation({ steward: S, addresses }, receipts, { witnesses: [N] });
      assert.deepEqual(only.receipts, [{ status: 'valid', witness: N, length: 3, head: addresses[2]! }, { status: 'not-named', witness: R }, { status: 'not-named', witness: R }]);
      assert.deepEqual(only.witnesses, [{ witness: N, length: 3 }]);
      const rep = verifyLedger({ entries, receipts }, { witnesses: [N] });
      assert.deepEqual([rep.ok, rep.problem, rep.attestation.grade], [true, undefined, 'witnessed']);
      // a named key's forged receipt is still told apart from one that verifies
      const forged = good.bytes.slice();
      forged[forged.length - 1]! ^= 1;
      assert.equal(gradeAttestation({ steward: S, addresses }, [forged], { witnesses: [N] }).receipts[0]!.status, 'invalid');
      // nobody named: nothing counts, the ledger is self-attested
      assert.equal(verifyLedger({ entries, receipts }, { witnesses: [] }).attestation.grade, 'self-attested');

      // a steward's ledger told its witnesses refuses the others' receipts (nothing written) and grades with the list
      await l.addReceipt(pad.bytes);
      await l.close();
      l = await Ledger.open(t.dir, { signer: steward, witnesses: [N] });
      await assert.rejects(l.addReceipt(lie.bytes), (e: unknown) => e instanceof C0Error && e.code === 'LEDGER_RECEIPT_REFUSED' && (e.detail as { status: string }).status === 'not-named');
      assert.equal((await l.addReceipt(good.bytes)).stored, true);
      assert.equal((await l.receipts()).length, 2, 'the receipt stored before the list stays on disk');
      const a = await l.attestation();
      assert.deepEqual(a.witnesses, [{ witness: N, length: 3 }]);
      assert.deepEqual(a.receipts.map((r) => r.status).sort(), ['not-named', 'valid']);
      await l.close();
    } finally {
      t.cleanup();
    }
  });
});
