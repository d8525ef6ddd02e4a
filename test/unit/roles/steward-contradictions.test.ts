/**
 * A witness receipt that contradicts the steward's ledger (src/roles/steward-contradictions.ts) is worked out again
 * against the ledger as it is whenever status() shows it, and kept across a restart. Before (QA witness pass, finding
 * 2) the warning was frozen when the receipt came: after a restore to 20 and six appends the status still said "holds
 * length 24, this ledger has 20 (WITNESS_LENGTH_BEYOND)" beside "ledger length 26", and after a restart it was gone
 * while the witnesses still held the other head (they refuse a forked ledger's heads and send nothing again). The whole
 * Steward over a real Ledger and LevelDB; the overlay's network is a stub.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ed25519Signer, didFromPublicKey, seal } from '../../../src/records/index.js';
import { openDb, closeDb, type Db } from '../../../src/store/db.js';
import { Ledger, WITNESS_TYPE, type WitnessReceipt } from '../../../src/ledger/index.js';
import type { Contradiction } from '../../../src/roles/steward-contradictions.js';
import { fakeClock } from '../../../src/util/clock.js';
import { admitted, steward as stewardKey, tempDir } from '../ledger/helpers.js';
import { NOW } from '../market/fixtures.js';
import { stewardIdentity, stewardOnStub } from './steward-stub.js';

const TREE = `entitlements:
  - { id: lab, guarantee_uj: 100000000, guarantee_devices: 64, over_quota_weight: 0, priority: 0 }
`;

/** A ledger directory of `n` admissions (`prefix` names the claims: the same prefix, the same entries). */
async function ledgerDir(dir: string, n: number, prefix = 'c'): Promise<Array<{ length: number; head: string }>> {
  mkdirSync(dir, { recursive: true });
  const l = await Ledger.open(dir, { signer: stewardKey, now: fakeClock(NOW) });
  const heads = [];
  for (let i = 0; i < n; i++) {
    await l.append(admitted(`${prefix}${i}`, 'lab'));
    heads.push(l.head());
  }
  await l.close();
  return heads;
}

type Shown = { contradictingWitnesses?: Contradiction[] };

async function withDirs(fn: (t: { dir: string; ledger: string; db: Db; start: () => ReturnType<typeof stewardOnStub> }) => Promise<void>): Promise<void> {
  const t = tempDir('c0-contradictions-');
  writeFileSync(join(t.dir, 'tree.yaml'), TREE);
  const db = await openDb(join(t.dir, 'db'));
  try {
    await fn({ dir: t.dir, ledger: join(t.dir, 'steward', 't', 'ledger'), db, start: () => stewardOnStub(t.dir, db, new Map()) });
  } finally {
    await closeDb(db);
    t.cleanup();
  }
}

const receipt = (w: Ed25519Signer, length: number, head: string, witnessedAt = NOW) => {
  const r = seal(WITNESS_TYPE, { steward: stewardIdentity.did, length, head, witnessedAt } satisfies WitnessReceipt, w);
  return { bytes: r.bytes, signer: r.signer };
};

describe('a contradicting witness receipt is shown as it stands against the ledger now', () => {
  it('WITNESS_LENGTH_BEYOND with the ledger’s length now while it is shorter, WITNESS_HEAD_MISMATCH once it has grown past the length with other entries', async () => {
    await withDirs(async ({ ledger, start }) => {
      // the steward had 6 entries a witness cosigned; it was restored to the first 3 and appends others
      const tmp = join(ledger, '..', 'newer');
      const newer = await ledgerDir(tmp, 6);
      await ledgerDir(ledger, 3);
      const { s, hear } = await start();
      try {
        const w = Ed25519Signer.generate();
        await hear('pool-witness', receipt(w, 3, s.ledger.head().head, NOW - 1000)); // a witness this ledger holds a receipt from
        await hear('pool-witness', receipt(w, 6, newer[5]!.head));
        const shown = async () => ((await s.status()) as Shown).contradictingWitnesses?.map((c) => [c.code, c.length, c.ours]);
        assert.deepEqual(await shown(), [['WITNESS_LENGTH_BEYOND', 6, 3]]);
        await s.ledger.append(admitted('x0', 'lab'));
        assert.deepEqual(await shown(), [['WITNESS_LENGTH_BEYOND', 6, 4]], 'the ledger’s length now, not when the receipt came');
        for (let i = 1; i < 4; i++) await s.ledger.append(admitted(`x${i}`, 'lab'));
        assert.deepEqual(await shown(), [['WITNESS_HEAD_MISMATCH', 6, 7]], 'grown past it: another head at length 6');
      } finally {
        await s.stop();
        rmSync(tmp, { recursive: true, force: true });
      }
    });
  });

  it('is kept across a restart, and goes once the ledger covers it again (the right copy put back)', async () => {
    await withDirs(async ({ dir, ledger, start }) => {
      const right = join(dir, 'right-copy');
      const heads = await ledgerDir(right, 5);
      await ledgerDir(ledger, 2); // restored from an old copy: the same first 2 entries
      const w = Ed25519Signer.generate();
      let st = await start();
      await st.hear('pool-witness', receipt(w, 2, st.s.ledger.head().head, NOW - 1000));
      await st.hear('pool-witness', receipt(w, 5, heads[4]!.head));
      assert.equal(((await st.s.status()) as Shown).contradictingWitnesses?.length, 1);
      await st.s.stop();

      // restarted: the witness sends nothing again, and the warning is still there, worked out again
      st = await start();
      assert.deepEqual(((await st.s.status()) as Shown).contradictingWitnesses?.map((c) => [c.witness, c.code, c.length, c.ours]), [[didFromPublicKey(w.publicKey), 'WITNESS_LENGTH_BEYOND', 5, 2]]);
      await st.s.stop();

      // the right copy put back: the witness's receipt covers it exactly, and no longer contradicts it
      rmSync(ledger, { recursive: true, force: true });
      cpSync(right, ledger, { recursive: true });
      st = await start();
      try {
        assert.equal(st.s.ledger.length, 5);
        assert.equal(((await st.s.status()) as Shown).contradictingWitnesses, undefined);
      } finally {
        await st.s.stop();
      }
      st = await start();
      try {
        assert.equal(((await st.s.status()) as Shown).contradictingWitnesses, undefined, 'forgotten on disk too');
      } finally {
        await st.s.stop();
      }
    });
  });
});
