/**
 * A steward catches up on the selections and receipts it did not hear (src/roles/steward.ts catchUp; pool/1 §6.1,
 * §6.2): one published while it was down is asked of the open claim's buyer after the restart, and the claim is
 * released with the receipt's actual figure at once, not at its deadline charging {0, Estimator}. The whole Steward
 * over a real Ledger and LevelDB in a temp dir; the overlay's network is a stub whose records/1 sync hands over what
 * the named peer holds, through the steward's own gossip handlers.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Opened } from '../../../src/records/envelope.js';
import type { Job, Selection } from '../../../src/records/kinds.js';
import { openDb, closeDb, type Db } from '../../../src/store/db.js';
import type { StewardConfig } from '../../../src/roles/steward.js';
import { tempDir } from '../ledger/helpers.js';
import { stewardOnStub, stubBuyer, until } from './steward-stub.js';
import { P, job, offer, receipt } from '../market/fixtures.js';

const TREE = `entitlements:
  - { id: lab, guarantee_uj: 100000000, guarantee_devices: 4, over_quota_weight: 0, priority: 0 }
  - { id: ml, parent: lab, guarantee_uj: 50000000, guarantee_devices: 2, over_quota_weight: 0, priority: 1 }
`;
const buyer = stubBuyer;
const provider = P(21);

/** What each peer would answer a records/1 sync with, by kind. */
type Held = Map<string, Partial<Record<'selection' | 'receipt', unknown[]>>>;

/**
 * A Steward on `dir` whose stub records/1 sync hands over what the named peer holds, through its gossip handlers.
 * `byJob`: the peer also answers records/1 `jobs` (`old`: it answers NET_BAD_REQUEST, a node before the op), handing
 * over what it holds naming the jobs asked, at most `newest` of them by kind (a `live` answer holds only the oldest).
 */
async function start(dir: string, db: Db, records: Map<string, Opened<Job>>, held: Held, cfg: Partial<StewardConfig> = {}, byJob?: 'new' | 'old', live = Infinity) {
  const synced: Array<{ peer: string; kinds: string[] }> = [];
  const askedJobs: Array<{ peer: string; kinds: string[]; jobs: string[] }> = [];
  const st = await stewardOnStub(dir, db, records, {
    cfg,
    ...(byJob
      ? {
          syncJobs: async (peer: string, kinds: string[], jobs: string[], hear: (kind: string, rec: unknown) => Promise<void>) => {
            askedJobs.push({ peer, kinds, jobs });
            if (byJob === 'old') return { accepted: 0, failed: Object.fromEntries(kinds.map((k) => [k, 'NET_BAD_REQUEST'])) };
            let accepted = 0;
            for (const k of kinds as Array<'selection' | 'receipt'>) {
              for (const rec of held.get(peer)?.[k] ?? []) {
                if (!jobs.includes((rec as { record: { job: string } }).record.job)) continue;
                await hear(k, rec);
                accepted++;
              }
            }
            return { accepted, failed: {} };
          },
        }
      : {}),
    syncFrom: async (peer, kinds, hear) => {
      synced.push({ peer, kinds });
      let accepted = 0;
      for (const k of kinds as Array<'selection' | 'receipt'>) {
        // a live sync answers oldest first: a busy party's newest records are past what one answer holds
        for (const rec of (held.get(peer)?.[k] ?? []).slice(0, live)) {
          await hear(k, rec);
          accepted++;
        }
      }
      return { accepted };
    },
  });
  return { ...st, admit: (j: Opened<Job>) => st.admit(j), synced, askedJobs };
}

/** A steward on a fresh directory admits one job of `buyer` and stops: its claim is open, as a restart finds it. */
async function admittedThenDown(prefix: string, nonce: Uint8Array) {
  const t = tempDir(prefix);
  writeFileSync(join(t.dir, 'tree.yaml'), TREE);
  const records = new Map<string, Opened<Job>>();
  const held: Held = new Map();
  const db = await openDb(join(t.dir, 'db'));
  const j = job(buyer, { nonce });
  try {
    const st = await start(t.dir, db, records, held);
    await st.admit(j);
    await st.s.stop();
  } finally {
    await closeDb(db);
  }
  return { t, records, held, j };
}

/** The buyer's selection of `o` for `j`, at address byte `a`. */
const selectionOf = (j: Opened<Job>, o: { address: string }, a: string): Opened<Selection> =>
  ({ signer: buyer.did, address: 'sha256:' + a.repeat(32), record: { job: j.address, winner: o.address, considered: [{ provider: provider.did, offer: o.address }] } }) as unknown as Opened<Selection>;

describe('a steward catches up on what it did not hear', () => {
  it('a selection and receipt published while it was down are asked of the buyer after the restart: released with the actual figure', async () => {
    const { t, records, held, j } = await admittedThenDown('c0-catch-up-', new Uint8Array([5, 3]));
    // while the steward is down: the buyer selects the provider, the work completes, both are gossiped to nobody
    const o = offer(provider, j, 'sha256:' + '41'.repeat(32));
    records.set(o.address, o as never); // the steward holds the winning offer (it came to it)
    held.set(buyer.did, { selection: [selectionOf(j, o, '42')], receipt: [receipt(provider, buyer, o, { energy: { uj: 43_890_519, grade: 'HwShunt' } })] });
    const db = await openDb(join(t.dir, 'db'));
    try {
      const st = await start(t.dir, db, records, held, { catchUpMs: 60_000 });
      // the first round comes min(2 s, catchUpMs) after the start, not at the deadline (60 s away)
      await until(async () => (await st.released()).length === 1, 'the release');
      assert.deepEqual((await st.released())[0]!.actual, { uj: 43_890_519, grade: 'HwShunt' });
      assert.deepEqual(st.synced, [{ peer: buyer.did, kinds: ['selection', 'receipt'] }]);
      // nothing open: a round asks nobody
      await st.s.catchUp();
      assert.equal(st.synced.length, 1);
      await st.s.stop();
    } finally {
      await closeDb(db);
      t.cleanup();
    }
  });

  it('asks the party for the records naming the open claim’s job: the missed receipt comes however many older ones the party holds; a party before the op is synced live', async () => {
    const { t, records, held, j } = await admittedThenDown('c0-catch-up-jobs-', new Uint8Array([5, 4]));
    let db: Db | undefined;
    try {
      // the buyer hears the overlay's outcomes: 2 500 older selections and receipts of other jobs, then this job's
      const others = Array.from({ length: 2_500 }, (_, i) => {
        const oj = job(P(2), { nonce: new Uint8Array([i >> 8, i & 255, 1]) });
        const oo = offer(provider, oj, 'sha256:' + '51'.repeat(32));
        return { sel: { signer: P(2).did, address: 'sha256:' + i.toString(16).padStart(64, '0'), record: { job: oj.address, winner: oo.address, considered: [{ provider: provider.did, offer: oo.address }] } }, rec: receipt(provider, P(2), oo) };
      });
      const o = offer(provider, j, 'sha256:' + '41'.repeat(32));
      records.set(o.address, o as never); // the steward holds the winning offer (it came to it)
      held.set(buyer.did, { selection: [...others.map((x) => x.sel), selectionOf(j, o, '43')], receipt: [...others.map((x) => x.rec), receipt(provider, buyer, o, { energy: { uj: 43_890_520, grade: 'HwShunt' } })] });

      // a party before the op: the live sync (which here reaches only the oldest 1 024) is asked instead; nothing comes
      db = await openDb(join(t.dir, 'db'));
      let st = await start(t.dir, db, records, held, {}, 'old', 1024);
      await st.s.catchUp();
      assert.deepEqual(st.askedJobs, [{ peer: buyer.did, kinds: ['selection', 'receipt'], jobs: [j.address] }]);
      assert.deepEqual(st.synced, [{ peer: buyer.did, kinds: ['selection', 'receipt'] }]);
      assert.equal((await st.released()).length, 0);
      await st.s.stop();
      await closeDb(db);
      db = undefined;

      // a party of this version: asked for the job's records, the claim is released with the actual figure
      db = await openDb(join(t.dir, 'db'));
      st = await start(t.dir, db, records, held, {}, 'new', 1024);
      await st.s.catchUp();
      assert.deepEqual(st.askedJobs, [{ peer: buyer.did, kinds: ['selection', 'receipt'], jobs: [j.address] }]);
      assert.deepEqual(st.synced, [], 'no live sync when the party answers by job');
      assert.equal((await st.released()).length, 1);
      assert.deepEqual((await st.released())[0]!.actual, { uj: 43_890_520, grade: 'HwShunt' });
      await st.s.stop();
    } finally {
      if (db) await closeDb(db);
      t.cleanup();
    }
  });
});
