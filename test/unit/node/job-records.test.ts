/**
 * What `market export` gathers for a job (src/node/job-records.ts), with an in-memory record store: the job, its
 * selection, the offers it considered with their adverts, the evidence about those providers, and the job's own
 * receipt and verdict; a record a selection names that is not held is listed as missing; an unknown job is
 * JOB_NOT_FOUND naming the history's keep.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { seal, T, type Opened, type Selection } from '../../../src/records/index.js';
import { EvidenceStore } from '../../../src/reputation/store.js';
import { jobRecords } from '../../../src/node/job-records.js';
import { NOW, P, acceptance, advert, job, offer, receipt } from '../market/fixtures.js';

const BUYER = P(100);

function source(held: Opened[], selections: Array<Opened<Selection>>, ev: EvidenceStore) {
  const byAddr = new Map(held.map((r) => [r.address, r]));
  return {
    records: {
      get: async (a: string) => byAddr.get(a) as never,
      getBytes: async (a: string) => byAddr.get(a)?.bytes,
      selectionsOf: async () => selections,
    },
    evidence: ev,
    otherBytes: async (a: string) => ev.getBytes(a),
  };
}

test('the job, its selection, the considered offers and adverts, the evidence about those providers, the job’s receipt; what is not held is missing', async () => {
  const [a1, a2] = [advert(P(1)), advert(P(2))];
  // history: P(1) ran an earlier job for this buyer, accepted
  const hj = job(BUYER, { nonce: new Uint8Array([9]) });
  const ho = offer(P(1), hj, a1);
  const hr = receipt(P(1), BUYER, ho, { startedAt: NOW - 200_000, completedAt: NOW - 190_000 });
  const ha = acceptance(BUYER, hr, 'accepted', { signedAt: NOW - 180_000 });
  const j = job(BUYER);
  const o1 = offer(P(1), j, a1);
  const o2 = offer(P(2), j, a2); // considered, but this node no longer holds it
  const considered = [{ provider: P(1).did, offer: o1.address }, { provider: P(2).did, offer: o2.address }].sort((x, y) => (x.provider < y.provider ? -1 : 1));
  const sel = seal(T.selection, { job: j.address, buyer: BUYER.did, policy: 'balanced', winner: o1.address, considered, decidedAt: NOW }, BUYER.signer) as Opened<Selection>;
  const r = receipt(P(1), BUYER, o1);
  const acc = acceptance(BUYER, r, 'accepted');
  const ev = new EvidenceStore();
  await ev.add(ho, hr, ha, o1, r, acc);

  const out = await jobRecords(source([j, sel, o1, a1, a2], [sel], ev), j.address);
  const got = new Set(out.records.map((x) => x.address));
  for (const x of [j, sel, o1, a1, ho, hr, ha, r, acc]) assert.ok(got.has(x.address), `${x.type} ${x.address} exported`);
  assert.equal(got.has(a2.address), false, 'an advert only a missing offer cites is not reached');
  assert.equal(out.records[0]!.address, j.address, 'the job first');
  assert.equal(out.records.length, got.size, 'each record once');
  assert.deepEqual(out.missing.map((m) => m.address), [o2.address]);
  assert.match(out.missing[0]!.what, /offer of .* considered by selection/);

  await assert.rejects(jobRecords(source([], [], ev), j.address, 7), (e: Error & { code?: string }) => e.code === 'JOB_NOT_FOUND' && /history\.keepDays/.test(e.message));
});

test('the audit command an export prints carries the deciding node’s settings that differ from the audit’s defaults', async () => {
  const { auditFlags } = await import('../../../src/cli/commands/market-export-actions.js');
  assert.deepEqual(auditFlags({ trustedBuyers: [], dealtWith: false, secondHandWeight: 0.5, skewMs: 30_000 }), []);
  assert.deepEqual(auditFlags({ trustedBuyers: ['did:key:a', 'did:key:b'], dealtWith: false, secondHandWeight: 0.25, skewMs: 30_000 }), ['--trusted-buyers', 'did:key:a,did:key:b', '--second-hand-weight', '0.25']);
  assert.deepEqual(auditFlags({ trustedBuyers: [], dealtWith: true, secondHandWeight: 0.5, skewMs: 60_000, stewards: ['did:key:s'] }), ['--dealt-with', '--skew-ms', '60000', '--steward', 'did:key:s']);
  // a weight with nobody second-hand to weigh changes nothing: not passed
  assert.deepEqual(auditFlags({ trustedBuyers: [], dealtWith: false, secondHandWeight: 0.9, skewMs: 30_000 }), []);
});

test('an address held as another record of a job (a selection, an offer) is not a job: JOB_NOT_FOUND says what it is and names its job', async () => {
  // QA (reputation and audit pass, F12): `market export --job <a selection's address>` said only "this node holds no job"
  const j = job(BUYER, { nonce: new Uint8Array([7, 70]) });
  const o = offer(P(1), j, advert(P(1)));
  const sel = seal(T.selection, { job: j.address, buyer: BUYER.did, policy: 'balanced', winner: o.address, considered: [{ provider: P(1).did, offer: o.address }], decidedAt: NOW }, BUYER.signer) as Opened<Selection>;
  const ev = new EvidenceStore();
  const byAddr = new Map<string, Opened>([sel, j].map((r) => [r.address, r]));
  const typed = {
    records: { get: async (a: string, t: string) => (byAddr.get(a)?.type === t ? byAddr.get(a) : undefined) as never, getBytes: async (a: string) => byAddr.get(a)?.bytes, selectionsOf: async () => [] },
    evidence: ev,
    // an offer the book holds, not the record store
    otherBytes: async (a: string) => (a === o.address ? o.bytes : undefined),
  };
  const code = (x: { code?: string; message: string; detail?: unknown }) => [x.code, x.detail];
  await assert.rejects(jobRecords(typed, sel.address, 30), (e: Error & { code?: string; detail?: unknown }) => {
    assert.deepEqual(code(e), ['JOB_NOT_FOUND', { type: T.selection, job: j.address }]);
    assert.equal(e.message, `${sel.address} is not a job: this node holds it as a ${T.selection}, of job ${j.address} (export that: c0mpute market export --job ${j.address})`);
    return true;
  });
  await assert.rejects(jobRecords(typed, o.address, 30), (e: Error & { code?: string; detail?: unknown }) => code(e)[0] === 'JOB_NOT_FOUND' && e.message.includes(`as a ${T.offer}, of job ${j.address}`));
  // nothing held at all: as before, with the history's keep
  await assert.rejects(jobRecords(typed, `sha256:${'0'.repeat(64)}`, 30), (e: Error & { code?: string }) => e.code === 'JOB_NOT_FOUND' && /history\.keepDays/.test(e.message));
  assert.equal((await jobRecords(typed, j.address)).records[0]!.address, j.address, 'the job itself still exports');
});
