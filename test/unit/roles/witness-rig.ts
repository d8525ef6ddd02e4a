/**
 * What the witness role tests share (witness-start, witness-rollback): a steward chain's shape, a head heard from it,
 * a bounded wait, and a witness key and database that outlive the role (`start` starts it again on them; every role
 * started is stopped and the database closed and removed at the end).
 */
import assert from 'node:assert/strict';
import { Ed25519Signer, didFromPublicKey, open, type Opened } from '../../../src/records/index.js';
import { openDb, closeDb } from '../../../src/store/db.js';
import { POOL_TYPE, type LedgerEntry } from '../../../src/ledger/index.js';
import { WitnessRole, type WitnessConfig, type WitnessPorts } from '../../../src/roles/witness.js';
import { tempDir } from '../ledger/helpers.js';

export type Chain = Array<{ bytes: Uint8Array; address: string }>;
export const head = (e: { bytes: Uint8Array }): Opened<LedgerEntry> => open(e.bytes, POOL_TYPE) as Opened<LedgerEntry>;

export async function until(cond: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.fail(`timed out waiting for ${what}`);
}

export type Db = Awaited<ReturnType<typeof openDb>>;

/** Run `fn` with a witness key, its database and `start`, over `ports`. */
export async function withWitness(prefix: string, ports: WitnessPorts, fn: (w: { db: Db; me: Ed25519Signer; start: (cfg: WitnessConfig) => Promise<WitnessRole> }) => Promise<void>): Promise<void> {
  const t = tempDir(prefix);
  const db = await openDb(t.dir);
  const me = Ed25519Signer.generate();
  const roles: WitnessRole[] = [];
  const start = async (cfg: WitnessConfig) => {
    const r = await WitnessRole.start(ports, db, { signer: me, did: didFromPublicKey(me.publicKey) } as never, cfg);
    roles.push(r);
    return r;
  };
  try {
    await fn({ db, me, start });
  } finally {
    for (const r of roles) await r.stop();
    await closeDb(db);
    t.cleanup();
  }
}
