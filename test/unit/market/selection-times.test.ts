/**
 * A selection's decision time must be possible (docs/market.md §7): not before its job was announced
 * (AUDIT_DECIDED_BEFORE_JOB; a gateway or steward gets the clock-skew window, the buyer none: the job's time is its
 * own clock's), and not before an offer it names was issued, beyond the clock-skew window
 * (AUDIT_OFFER_AFTER_DECISION). Before, a buyer could date its selection before a dispute that sank its favourite, and
 * the audit reproduced it. signSelection refuses the same cases (SELECTION_DECIDED_BEFORE_JOB,
 * SELECTION_OFFER_AFTER_DECISION).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { auditSelection, select, signSelection } from '../../../src/market/index.js';
import { deriveReputation } from '../../../src/reputation/index.js';
import { seal, T, type Offer, type Opened, type Selection } from '../../../src/records/index.js';
import { codeOf } from '../../../src/errors.js';
import { NOW, P, acceptance, advert, job, offer, receipt } from './fixtures.js';

const ME = P(930);
let [FAV, HON] = [P(931), P(932)];
if (FAV.did > HON.did) [FAV, HON] = [HON, FAV];
const adF = advert(FAV, { issuedAt: NOW - 3_600_000, expiresAt: NOW + 3_600_000 });
const adH = advert(HON, { issuedAt: NOW - 3_600_000, expiresAt: NOW + 3_600_000 });
// 20 minutes ago this buyer disputed FAV's output on another job
const j0 = job(ME, { announcedAt: NOW - 1_800_000, deadline: NOW + 600_000 });
const o0 = offer(FAV, j0, adF, { issuedAt: NOW - 1_790_000, expiresAt: NOW - 1_700_000, startBy: NOW - 1_700_000 });
const r0 = receipt(FAV, ME, o0, { startedAt: NOW - 1_500_000, completedAt: NOW - 1_400_000 });
const d0 = acceptance(ME, r0, 'disputed', { signedAt: NOW - 1_200_000 });
const J = job(ME); // announced NOW - 1 s
const oF = offer(FAV, J, adF, { amount: '0.45' }); // issued NOW - 0.5 s
const oH = offer(HON, J, adH, { amount: '0.5' });
const RECORDS = [j0, o0, r0, d0, J, adF, adH, oF, oH];
const EV = { receipts: [r0], acceptances: [d0], offers: [o0, oF, oH], nondeliveries: [] };

function signedAt(at: number, signer = ME): Opened<Selection> {
  const r = select({ job: J, adverts: [adF, adH], offers: [oF, oH], policy: 'balanced', reputation: deriveReputation(EV, { self: ME.did, asOf: at }), now: at });
  assert.ok(r.ok);
  const considered = [oF, oH].map((o) => ({ provider: o.signer, offer: o.address })).sort((a, b) => (a.provider < b.provider ? -1 : 1));
  return seal(T.selection, { job: J.address, buyer: ME.did, policy: 'balanced', winner: r.winner.offer, considered, decidedAt: at }, signer.signer) as Opened<Selection>;
}

test('a selection dated before its job and its offers fails its audit, naming both', () => {
  const honest = auditSelection({ selection: signedAt(NOW), records: RECORDS });
  assert.equal(honest.reproduces, true, JSON.stringify(honest.differences));
  const lie = signedAt(NOW - 1_500_000);
  assert.equal(lie.record.winner, oF.address, 'the backdated decision picks the favourite');
  const a = auditSelection({ selection: lie, records: RECORDS });
  assert.equal(a.reproduces, false);
  const codes = a.differences.map((d) => d.code);
  assert.ok(codes.includes('AUDIT_DECIDED_BEFORE_JOB'), JSON.stringify(codes));
  assert.equal(codes.filter((c) => c === 'AUDIT_OFFER_AFTER_DECISION').length, 2);
});

test('the buyer gets no slack before its own job; offers get the clock-skew window', () => {
  // a buyer's decision a moment before its own job was announced
  const early = auditSelection({ selection: signedAt(J.record.announcedAt - 1), records: RECORDS });
  assert.deepEqual(early.differences.map((d) => d.code), ['AUDIT_DECIDED_BEFORE_JOB']);
  // the offers were issued 0.5 s later than this: within the skew window, so not a difference
  assert.ok(!early.differences.some((d) => d.code === 'AUDIT_OFFER_AFTER_DECISION'));
  // a steward deciding (its clock may be behind the buyer's): within the skew window is fine
  const ST = P(933);
  const st = signedAt(J.record.announcedAt - 10_000, ST);
  const a = auditSelection({ selection: st, records: RECORDS, stewards: [ST.did] });
  assert.equal(a.reproduces, true, JSON.stringify(a.differences));
});

test('signSelection refuses a decision time before the job, or before a named offer (beyond the skew)', () => {
  const at = NOW - 1_500_000;
  const r = select({ job: J, adverts: [adF, adH], offers: [oF, oH], policy: 'balanced', now: at });
  assert.ok(r.ok);
  assert.equal(codeOf(() => signSelection({ result: r, job: J, signer: ME.signer })), 'SELECTION_DECIDED_BEFORE_JOB');
  // a job announced long ago, an offer from the future
  const J2 = job(ME, { announcedAt: NOW - 3_000_000 });
  const late = offer(FAV, J2, adF, { issuedAt: NOW + 60_000, expiresAt: NOW + 120_000 });
  const r2 = select({ job: J2, adverts: [adF], offers: [late], policy: 'balanced', now: NOW });
  assert.ok(r2.ok);
  const byAddress = new Map<string, Opened<Offer>>([[late.address, late]]);
  assert.equal(codeOf(() => signSelection({ result: r2, job: J2, signer: ME.signer, offerAt: (a) => byAddress.get(a) })), 'SELECTION_OFFER_AFTER_DECISION');
  // an honest decision signs
  const ok = select({ job: J, adverts: [adF, adH], offers: [oF, oH], policy: 'balanced', now: NOW });
  assert.ok(ok.ok);
  assert.equal(signSelection({ result: ok, job: J, signer: ME.signer, offerAt: (a) => [oF, oH].find((o) => o.address === a) }).record.decidedAt, NOW);
});
