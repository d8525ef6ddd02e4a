/**
 * Who selects is agreed before a claim is admitted (docs/overlays.md "Managed decisions"): the buyer's admit client
 * says its `network.managed`, and a steward that decides otherwise refuses the claim STEWARD_MANAGED_MISMATCH, naming
 * the overlay and what to set: nothing stored, queued or appended. Before, a managed buyer of an unmanaged steward was
 * admitted, reserved the claim's energy, and only then was refused its `select` (STEWARD_NOT_MANAGED). A buyer that
 * does not say (another version) is admitted as before. The buyer's real admit client (admitJob) asks a real Steward
 * over a real Ledger and LevelDB, every frame through the wire's canonical CBOR; only the overlay between them is a stub.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Opened } from '../../../src/records/envelope.js';
import type { Job } from '../../../src/records/kinds.js';
import { decodeCanonical, encodeCanonical, type CborValue } from '../../../src/records/cbor.js';
import { openDb, closeDb } from '../../../src/store/db.js';
import { admitJob } from '../../../src/roles/admission-client.js';
import { STEWARD_PROTOCOL } from '../../../src/roles/steward.js';
import type { JobSpec } from '../../../src/roles/buyer.js';
import { peerIdFromDid } from '../../../src/node/peer-id.js';
import { fakeClock } from '../../../src/util/clock.js';
import { tempDir } from '../ledger/helpers.js';
import { stewardOnStub, stubBuyer } from './steward-stub.js';
import { NOW, job } from '../market/fixtures.js';

const TREE = `entitlements:
  - { id: lab, guarantee_uj: 1000000000, guarantee_devices: 8, over_quota_weight: 0, priority: 0 }
  - { id: ml, parent: lab, guarantee_uj: 100000000, guarantee_devices: 4, over_quota_weight: 0, priority: 1 }
`;
const spec = { workload: 'w', maxPrice: { amount: '1', currency: 'USD' }, deadlineMs: 60_000, input: new Uint8Array(), entitlement: 'ml', energy: { uj: 10_000_000, grade: 'Estimator' } } as JobSpec;

async function withSteward(managed: boolean, body: (admit: (n: number, buyerManaged: boolean | undefined) => ReturnType<typeof admitJob>, st: Awaited<ReturnType<typeof stewardOnStub>>, records: Map<string, Opened<Job>>) => Promise<void>) {
  const t = tempDir('c0-managed-mismatch-');
  writeFileSync(join(t.dir, 'tree.yaml'), TREE);
  const db = await openDb(join(t.dir, 'db'));
  const records = new Map<string, Opened<Job>>();
  try {
    const st = await stewardOnStub(t.dir, db, records, { cfg: { managed } });
    const handler = st.handlers.get(STEWARD_PROTOCOL) as (frames: CborValue[], ctx: unknown) => Promise<void>;
    const admit = (n: number, buyerManaged: boolean | undefined) =>
      admitJob({
        request: async (frames, opts) => {
          const got: unknown[] = [];
          // through the wire's encoding both ways, as the stream carries them
          const wire = (v: unknown) => decodeCanonical(encodeCanonical(v));
          await handler((frames as unknown[]).map(wire), { peer: peerIdFromDid(stubBuyer.did), signal: new AbortController().signal, send: async (f: unknown) => void (got.push(wire(f)), opts?.onFrame?.(wire(f) as never)) });
          return got as never;
        },
        job: job(stubBuyer, { nonce: new Uint8Array([n]) }),
        spec,
        clock: fakeClock(NOW),
        onQueued: () => {},
        overlay: 't',
        ...(buyerManaged === undefined ? {} : { managed: buyerManaged }),
      });
    await body(admit, st, records);
    await st.s.stop();
  } finally {
    await closeDb(db);
    t.cleanup();
  }
}

const mismatch = (stewardSays: string, set: string) => (e: Error & { code?: string }) => {
  assert.equal(e.code, 'STEWARD_MANAGED_MISMATCH', e.message);
  assert.ok(e.message.includes('overlay t'), e.message);
  assert.ok(e.message.includes(stewardSays), e.message);
  assert.ok(e.message.includes(`set network.managed: ${set}`), e.message);
  return true;
};

describe('a buyer and its steward that disagree on who selects', () => {
  it('a managed buyer of an unmanaged steward is refused before admission: nothing stored, queued or appended', async () => {
    await withSteward(false, async (admit, st, records) => {
      await assert.rejects(admit(1, true), mismatch('leaves selection to its buyers (managed: false)', 'false'));
      assert.equal(st.s.ledger.head().length, 0, 'nothing appended');
      assert.deepEqual((await st.s.status()).queued, [], 'nothing queued');
      assert.equal(records.size, 0, 'the job is not even stored');
      // agreeing, or not saying (a buyer of another version), is admitted as before
      assert.equal((await admit(2, false)).verdict, 'Admit');
      assert.equal((await admit(3, undefined)).verdict, 'Admit');
      assert.equal(st.s.ledger.head().length, 2);
    });
  });

  it('an unmanaged buyer of a managed steward is refused the same way', async () => {
    await withSteward(true, async (admit, st) => {
      await assert.rejects(admit(1, false), mismatch('selects for its buyers (managed: true)', 'true'));
      assert.equal(st.s.ledger.head().length, 0);
      assert.equal((await admit(2, true)).verdict, 'Admit');
    });
  });
});
