/**
 * The steward's proof of admission (docs/overlays.md "Providers run only admitted work"; pool/1 §1.1, §2.1): an
 * `admitted` answer carries the claim's signed `Admitted` ledger entry (`admission`), which a provider checks before it
 * runs the job (src/roles/provider/admission-proof.ts), and `admission` {job} gives it to a provider whose buyer sent
 * none — across a restart too, and not once the claim is released. The whole Steward over a real Ledger and LevelDB in
 * a temp dir; the overlay's network is a stub.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CborValue } from '../../../src/records/cbor.js';
import type { Opened } from '../../../src/records/envelope.js';
import type { Job, Selection } from '../../../src/records/kinds.js';
import { didFromPublicKey } from '../../../src/records/index.js';
import { openDb, closeDb, sub, type Db } from '../../../src/store/db.js';
import { Steward, STEWARD_PROTOCOL, type StewardPorts } from '../../../src/roles/steward.js';
import { checkAdmission } from '../../../src/roles/provider/admission-proof.js';
import { peerIdFromDid } from '../../../src/node/peer-id.js';
import { fakeClock } from '../../../src/util/clock.js';
import { silentLogger } from '../../../src/util/log.js';
import { steward as stewardKey, tempDir } from '../ledger/helpers.js';
import { NOW, P, job, offer, receipt } from '../market/fixtures.js';

const TREE = `entitlements:
  - { id: lab, guarantee_uj: 100000000, guarantee_devices: 4, over_quota_weight: 0, priority: 0 }
  - { id: ml, parent: lab, guarantee_uj: 50000000, guarantee_devices: 2, over_quota_weight: 0, priority: 1 }
`;
const buyer = P(1);
const provider = P(21);
const stewardDid = didFromPublicKey(stewardKey.publicKey);

const same = (a: unknown, b: unknown) => a instanceof Uint8Array && b instanceof Uint8Array && Buffer.from(a).equals(Buffer.from(b));

async function start(dir: string, db: Db, records: Map<string, Opened<Job>>) {
  const handlers = new Map<string, (frames: CborValue[], ctx: unknown) => Promise<void>>();
  const subs = new Map<string, (rec: unknown) => Promise<void> | void>();
  const ports = {
    name: 't',
    clock: fakeClock(NOW),
    log: silentLogger(),
    net: {
      handle: async (p: string, h: never) => void handlers.set(p, h),
      subscribe: (k: string, h: never) => {
        subs.set(k, h);
        return () => {};
      },
      publish: async () => {},
      request: async () => [],
    },
    records: { get: async (a: string) => records.get(a), put: async (j: Opened<Job>) => void records.set(j.address, j) },
    market: { decide: async () => ({}), signSelection: () => ({}), adverts: { latest: new Map() } },
    sub: (n: string) => sub(db, n),
  } as unknown as StewardPorts;
  const s = await Steward.start(ports, dir, { treeFile: join(dir, 'tree.yaml'), managed: false, requiredEvidence: 3, preempt: false }, { did: stewardDid, signer: stewardKey });
  /** One request on /c0mpute/steward/1 from `from`: the frames answered. */
  const ask = async (req: Record<string, unknown>, from = buyer.did) => {
    const frames: Array<Record<string, unknown>> = [];
    await handlers.get(STEWARD_PROTOCOL)!([req as never], { peer: peerIdFromDid(from), signal: new AbortController().signal, send: async (f: CborValue) => void frames.push(f as Record<string, unknown>) });
    return frames;
  };
  const admit = (j: Opened<Job>) => ask({ op: 'admit', job: j.bytes, entitlement: 'ml', estimate: { uj: 10_000_000, grade: 'Estimator' } });
  const hear = (kind: string, rec: unknown) => subs.get(kind)!(rec);
  return { s, ask, admit, hear };
}

describe('the steward’s proof of admission', () => {
  it('an admitted answer carries the Admitted entry; `admission` gives it to a provider, after a restart too, and not once released', async () => {
    const t = tempDir('c0-admission-proof-');
    writeFileSync(join(t.dir, 'tree.yaml'), TREE);
    const records = new Map<string, Opened<Job>>();
    let db = await openDb(join(t.dir, 'db'));
    try {
      let st = await start(t.dir, db, records);
      const j = job(buyer, { nonce: new Uint8Array([7, 1]) });
      const [first] = await st.admit(j);
      assert.equal(first!.t, 'admitted');
      assert.ok(first!.admission instanceof Uint8Array, 'the answer carries the entry');
      checkAdmission(j, first!.admission as Uint8Array, stewardDid);
      // asked again (the first answer lost): the same proof
      const [again] = await st.admit(j);
      assert.ok(same(again!.admission, first!.admission));
      // a provider whose buyer sent no proof asks the steward (any key may: ledger entries are public)
      const [given] = await st.ask({ op: 'admission', job: j.address }, provider.did);
      assert.equal(given!.t, 'admission');
      assert.ok(same(given!.entry, first!.admission));
      await assert.rejects(st.ask({ op: 'admission', job: job(buyer, { nonce: new Uint8Array([7, 2]) }).address }, provider.did), (e: Error & { code?: string }) => e.code === 'STEWARD_NOT_ADMITTED');
      await st.s.stop();
      await closeDb(db);

      db = await openDb(join(t.dir, 'db'));
      st = await start(t.dir, db, records);
      // the open claim's entry is read back from the ledger at the start
      assert.ok(same((await st.ask({ op: 'admission', job: j.address }, provider.did))[0]!.entry, first!.admission));
      // released: no proof any more
      const o = offer(provider, j, 'sha256:' + '31'.repeat(32));
      const sel = { signer: buyer.did, record: { job: j.address, winner: o.address, considered: [{ provider: provider.did, offer: o.address }] } } as unknown as Opened<Selection>;
      await st.hear('selection', sel);
      await st.hear('receipt', receipt(provider, buyer, o, { energy: { uj: 4_000_000, grade: 'HwShunt' } }));
      assert.equal((await st.s.ledger.records(0)).filter((e) => e.event === 'Released').length, 1);
      await assert.rejects(st.ask({ op: 'admission', job: j.address }, provider.did), (e: Error & { code?: string }) => e.code === 'STEWARD_NOT_ADMITTED');
      await st.s.stop();
    } finally {
      await closeDb(db);
      t.cleanup();
    }
  });
});
