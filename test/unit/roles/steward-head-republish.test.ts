/**
 * The steward republishes its ledger's current head on pool-head (src/roles/steward.ts): soon after start and then
 * every `headRepublishMs` (the overlay's network.resyncMs), not only right after an append, so a head published while
 * a witness was away or before the mesh formed is heard again (gossip does not replay history). An empty ledger has
 * no head to publish. The whole Steward over a real Ledger and LevelDB; the overlay's network is a stub that records
 * what is published.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ed25519Signer, didFromPublicKey, open, seal } from '../../../src/records/index.js';
import { openDb, closeDb } from '../../../src/store/db.js';
import { EVIDENCE_TYPE, Ledger, POOL_TYPE, WITNESS_TYPE, sealEntries, type EquivocationEvidence, type WitnessReceipt } from '../../../src/ledger/index.js';
import type { Steward } from '../../../src/roles/steward.js';
import { fakeClock } from '../../../src/util/clock.js';
import { admitted, released, steward as stewardKey, tempDir } from '../ledger/helpers.js';
import { NOW } from '../market/fixtures.js';
import { stewardIdentity, stewardOnStub, until } from './steward-stub.js';

const TREE = `entitlements:
  - { id: lab, guarantee_uj: 100000000, guarantee_devices: 4, over_quota_weight: 0, priority: 0 }
`;
const identity = stewardIdentity;

async function withSteward(entries: number, headRepublishMs: number, fn: (published: Uint8Array[], head: Uint8Array | undefined, s: Steward, hear: (kind: string, rec: unknown) => Promise<void>) => Promise<void>): Promise<void> {
  const t = tempDir('c0-head-republish-');
  writeFileSync(join(t.dir, 'tree.yaml'), TREE);
  const dir = join(t.dir, 'steward', 't', 'ledger');
  mkdirSync(dir, { recursive: true });
  const l = await Ledger.open(dir, { signer: stewardKey, now: fakeClock(NOW) });
  for (let i = 0; i < entries; i++) await l.append(i % 2 ? released(`c${i - 1}`) : admitted(`c${i}`, 'lab'));
  const all = await l.entries();
  await l.close();
  const db = await openDb(join(t.dir, 'db'));
  const published: Uint8Array[] = [];
  const { s, hear } = await stewardOnStub(t.dir, db, new Map(), { cfg: { headRepublishMs }, published: (kind, bytes) => void (kind === 'pool-head' && published.push(bytes)) });
  try {
    await fn(published, all[all.length - 1], s, hear);
  } finally {
    await s.stop();
    await closeDb(db);
    t.cleanup();
  }
}

describe('the steward republishes its head', () => {
  it('publishes the current head with no append: soon after start, then every headRepublishMs', async () => {
    await withSteward(2, 30, async (published, head) => {
      await until(() => published.length >= 3, 'three publications of the head');
      for (const b of published) assert.deepEqual(b, head);
    });
  });

  it('publishes nothing for an empty ledger, and the head once there is one', async () => {
    await withSteward(0, 30, async (published, _head, s) => {
      await s.publishHead();
      assert.equal(published.length, 0);
      await s.ledger.append(admitted('late', 'lab'));
      const [head] = await s.ledger.entries(0, 1);
      await until(() => published.length >= 1, 'the new head republished');
      assert.deepEqual(published[0], head);
    });
  });

  it('stops once the witnesses heard have sent a receipt covering the head, and starts again at a new head', async () => {
    await withSteward(2, 30, async (published, _head, s, hear) => {
      await until(() => published.length >= 2, 'the head republished');
      const w = Ed25519Signer.generate();
      const { length, head } = s.ledger.head();
      const receipt = seal(WITNESS_TYPE, { steward: identity.did, length, head, witnessedAt: NOW } satisfies WitnessReceipt, w);
      await hear('pool-witness', { bytes: receipt.bytes, signer: receipt.signer });
      assert.equal(s.headNeedsWitness(), false);
      // publications begun before the receipt (each reads the ledger first) may still land: let them, then none more
      await new Promise((r) => setTimeout(r, 300));
      const n = published.length;
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(published.length, n, `no more republishing once covered (${published.length - n} more)`);
      await s.ledger.append(admitted('more', 'lab'));
      assert.equal(s.headNeedsWitness(), true, 'a head the witness has not covered');
    });
  });
});

describe('a witness holding more than the steward’s ledger', () => {
  it('its receipt (WITNESS_LENGTH_BEYOND: the ledger was restored from an older copy) is shown by status(), and a valid one signed after it clears it', async () => {
    await withSteward(2, 60_000, async (_published, _head, s, hear) => {
      const w = Ed25519Signer.generate();
      const { length, head } = s.ledger.head();
      // a witness this ledger holds a receipt from (none named: only such keys are shown one by one)
      const before = seal(WITNESS_TYPE, { steward: identity.did, length, head, witnessedAt: NOW - 1000 } satisfies WitnessReceipt, w);
      await hear('pool-witness', { bytes: before.bytes, signer: before.signer });
      const beyond = seal(WITNESS_TYPE, { steward: identity.did, length: 5, head: `sha256:${'ab'.repeat(32)}`, witnessedAt: NOW } satisfies WitnessReceipt, w);
      await hear('pool-witness', { bytes: beyond.bytes, signer: beyond.signer });
      const shown = ((await s.status()) as { contradictingWitnesses?: Array<{ witness: string; code: string; length: number; ours: number }> }).contradictingWitnesses;
      assert.deepEqual(shown, [{ witness: beyond.signer, code: 'WITNESS_LENGTH_BEYOND', length: 5, ours: 2, witnessedAt: NOW, at: NOW }]);
      // the witness's own state went back (it cosigns this ledger again): a receipt signed later
      const ok = seal(WITNESS_TYPE, { steward: identity.did, length, head, witnessedAt: NOW + 1000 } satisfies WitnessReceipt, w);
      await hear('pool-witness', { bytes: ok.bytes, signer: ok.signer });
      assert.equal(((await s.status()) as { contradictingWitnesses?: unknown }).contradictingWitnesses, undefined);
    });
  });
});

describe('equivocation evidence about the steward', () => {
  it('is shown by status() (pairs, witnesses, seqs), once per pair; evidence about another key is not', async () => {
    await withSteward(2, 60_000, async (_published, _head, s, hear) => {
      const pair = (signer: Ed25519Signer, n: number) => {
        const [a] = sealEntries([admitted(`a${n}`, 'lab')], signer, { at: NOW });
        const [b] = sealEntries([admitted(`b${n}`, 'lab')], signer, { at: NOW });
        return { a: a!.bytes, b: b!.bytes };
      };
      const evidence = (w: Ed25519Signer, p: { a: Uint8Array; b: Uint8Array }, steward = identity.did) =>
        open(seal(EVIDENCE_TYPE, { steward, seq: 0, held: p.a, conflicting: p.b, observedAt: NOW } satisfies EquivocationEvidence, w).bytes, EVIDENCE_TYPE);
      const shown = async () => ((await s.status()) as { evidence?: { pairs: number; witnesses: number; seqs: number[] } }).evidence;
      const other = Ed25519Signer.generate();
      await hear('pool-evidence', evidence(Ed25519Signer.generate(), pair(other, 1), didFromPublicKey(other.publicKey)));
      assert.equal(await shown(), undefined, 'about another key');
      const p = pair(stewardKey, 2);
      const [w1, w2] = [Ed25519Signer.generate(), Ed25519Signer.generate()];
      await hear('pool-evidence', evidence(w1, p));
      await hear('pool-evidence', evidence(w2, p));
      await hear('pool-evidence', evidence(w1, { a: p.b, b: p.a }));
      assert.deepEqual(await shown(), { pairs: 1, witnesses: 2, seqs: [0] });
    });
  });
});

describe('a contradiction shown is not cleared by a replay', () => {
  it('the witness’s own old receipt, to a length the restored ledger still has, leaves the WITNESS_LENGTH_BEYOND shown', async () => {
    await withSteward(4, 60_000, async (_published, _head, s, hear) => {
      const w = Ed25519Signer.generate();
      const [, e1] = await s.ledger.entries(0, 2);
      // signed long ago, before the steward went on to 8 and was restored to 4: it still checks out against the ledger
      const old = seal(WITNESS_TYPE, { steward: identity.did, length: 2, head: open(e1!, POOL_TYPE).address, witnessedAt: NOW - 3_600_000 } satisfies WitnessReceipt, w);
      await hear('pool-witness', { bytes: old.bytes, signer: old.signer }); // held by the restored ledger
      const beyond = seal(WITNESS_TYPE, { steward: identity.did, length: 8, head: `sha256:${'cd'.repeat(32)}`, witnessedAt: NOW } satisfies WitnessReceipt, w);
      await hear('pool-witness', { bytes: beyond.bytes, signer: beyond.signer });
      const shown = async () => ((await s.status()) as { contradictingWitnesses?: Array<{ witness: string; length: number }> }).contradictingWitnesses;
      assert.deepEqual((await shown())?.map((c) => [c.witness, c.length]), [[beyond.signer, 8]]);
      await hear('pool-witness', { bytes: old.bytes, signer: old.signer }); // any node that kept it replays it
      assert.deepEqual((await shown())?.map((c) => [c.witness, c.length]), [[beyond.signer, 8]], 'still shown');
      assert.equal((await s.ledger.receipts()).length, 1, 'the old receipt itself is valid and kept');
    });
  });
});

describe('contradicting receipts from keys the ledger holds no receipt from (no witnesses named)', () => {
  type Shown = { contradictingWitnesses?: Array<{ witness: string; length: number }>; contradictingOthers?: { receipts: number } };
  it('are counted, not listed, and never push out a known witness’s warning', async () => {
    await withSteward(4, 60_000, async (_published, _head, s, hear) => {
      const seal1 = (k: Ed25519Signer, length: number, head: string, witnessedAt = NOW) => {
        const r = seal(WITNESS_TYPE, { steward: identity.did, length, head, witnessedAt } satisfies WitnessReceipt, k);
        return { bytes: r.bytes, signer: r.signer };
      };
      // a genuine witness: it cosigned this ledger, then holds 8 (the ledger was restored to 4)
      const genuine = Ed25519Signer.generate();
      const g = seal1(genuine, 4, s.ledger.head().head, NOW - 1000);
      await hear('pool-witness', g);
      await hear('pool-witness', seal1(genuine, 8, `sha256:${'cd'.repeat(32)}`));
      // throwaway keys, one message each: a longer length, or another head ("this history was rewritten")
      for (let i = 0; i < 70; i++) await hear('pool-witness', seal1(Ed25519Signer.generate(), 1_000_000_000, `sha256:${'ab'.repeat(32)}`));
      await hear('pool-witness', seal1(Ed25519Signer.generate(), 1, `sha256:${'ef'.repeat(32)}`));
      const st = (await s.status()) as Shown;
      assert.deepEqual(st.contradictingWitnesses?.map((c) => [c.witness, c.length]), [[g.signer, 8]], 'the genuine witness only, listed');
      assert.equal(st.contradictingOthers?.receipts, 71);
    });
  });
});
