import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RecordSet, auditSelection, checkDeciderAuthority, select, signSelection, type Selected } from '../../../src/market/index.js';
import { SELECTION_MAX_BYTES } from '../../../src/market/selection.js';
import { signNonDelivery } from '../../../src/reputation/nondelivery.js';
import { open, seal, T, type Opened, type Selection } from '../../../src/records/index.js';
import { MAX_ENVELOPE_BYTES } from '../../../src/records/envelope.js';
import { reputationFromMap } from '../../../src/market/policy.js';
import { NOW, P, acceptance, advert, delegation, job, offer, receipt } from './fixtures.js';
import { codeOf } from '../../../src/errors.js';

const BUYER = P(100);
const GW = P(200);
const J = job(BUYER);
const ADS = [P(1), P(2), P(3)].map((p) => advert(p));
const OFFERS = [offer(P(1), J, ADS[0]!, { amount: '0.4' }), offer(P(2), J, ADS[1]!, { amount: '0.3' }), offer(P(3), J, ADS[2]!, { amount: '2' })];
const RECORDS = () => new RecordSet([J, ...ADS, ...OFFERS]);

function decide(policy = 'balanced'): Selected {
  const r = select({ job: J, adverts: ADS, offers: OFFERS, policy, now: NOW });
  assert.ok(r.ok);
  return r;
}

test('the buyer signs a selection naming the policy, the winner and every considered offer in DID order', () => {
  const r = decide();
  const s = signSelection({ result: r, job: J, signer: BUYER.signer });
  const back = open(s.bytes, T.selection);
  assert.equal(back.record.policy, 'balanced');
  assert.equal(back.record.winner, OFFERS[1]!.address);
  assert.equal(back.record.buyer, BUYER.did);
  assert.deepEqual(back.record.considered.map((c) => c.provider), [P(1), P(2), P(3)].map((p) => p.did).sort());
  assert.equal(back.record.considered.length, 3); // the over-price offer is named too
  const a = auditSelection({ selection: back, records: RECORDS() });
  assert.equal(a.reproduces, true, JSON.stringify(a.differences));
  assert.deepEqual(a.authority, { as: 'buyer' });
});

test('decider authority: a delegated gateway within scope; out of scope, expired, or anyone else refused with a code', () => {
  const r = decide();
  const d = delegation(BUYER, GW);
  const s = signSelection({ result: r, job: J, signer: GW.signer, delegation: d });
  assert.equal(s.record.delegation, d.address);
  const a = auditSelection({ selection: s, records: [...RECORDS().byAddress.values(), d] });
  assert.equal(a.reproduces, true);
  assert.deepEqual(a.authority, { as: 'gateway', delegation: d.address });

  assert.equal(codeOf(() => signSelection({ result: r, job: J, signer: P(300).signer })), 'DECIDER_NOT_AUTHORIZED');
  assert.equal(codeOf(() => signSelection({ result: r, job: J, signer: P(300).signer, delegation: d })), 'DELEGATION_WRONG_GATEWAY');
  assert.equal(codeOf(() => signSelection({ result: r, job: J, signer: GW.signer, delegation: delegation(BUYER, GW, { issuedAt: NOW - 100_000, expiresAt: NOW - 1 }) })), 'DELEGATION_EXPIRED');
  assert.equal(codeOf(() => signSelection({ result: r, job: J, signer: GW.signer, delegation: delegation(BUYER, GW, { scope: { workloads: ['infer.diffusion'] } }) })), 'DELEGATION_WORKLOAD_OUT_OF_SCOPE');
  assert.equal(codeOf(() => signSelection({ result: r, job: J, signer: GW.signer, delegation: delegation(BUYER, GW, { scope: { maxPrice: { amount: '0.25', currency: 'USD' } } }) })), 'DELEGATION_PRICE_OUT_OF_SCOPE');
  assert.equal(codeOf(() => signSelection({ result: r, job: J, signer: GW.signer, delegation: delegation(BUYER, GW, { scope: { maxPrice: { amount: '5', currency: 'EUR' } } }) })), 'DELEGATION_PRICE_CURRENCY');
  assert.equal(codeOf(() => signSelection({ result: r, job: J, signer: GW.signer, delegation: delegation(P(300), GW) })), 'DELEGATION_NOT_FROM_BUYER');
  // a configured steward
  const st = signSelection({ result: r, job: J, signer: P(400).signer, stewards: [P(400).did] });
  assert.deepEqual(auditSelection({ selection: st, records: RECORDS(), stewards: [P(400).did] }).authority, { as: 'steward' });
  const un = auditSelection({ selection: st, records: RECORDS() });
  assert.equal(un.reproduces, false);
  assert.deepEqual(un.differences.map((x) => x.code), ['DECIDER_NOT_AUTHORIZED']);
  assert.equal(codeOf(() => checkDeciderAuthority({ decider: BUYER.did, job: J, now: NOW })), undefined);
});

test('audit: a selection naming offers that do not exist is refused with AUDIT_MISSING_RECORD', () => {
  const fake = 'sha256:' + 'ee'.repeat(32);
  const considered = [
    { provider: P(1).did, offer: OFFERS[0]!.address },
    { provider: P(2).did, offer: fake },
  ].sort((a, b) => (a.provider < b.provider ? -1 : 1));
  const s = seal(T.selection, { job: J.address, buyer: BUYER.did, policy: 'balanced', winner: fake, considered, decidedAt: NOW } as Selection, BUYER.signer);
  const a = auditSelection({ selection: s, records: RECORDS() });
  assert.equal(a.reproduces, false);
  assert.ok(a.differences.some((d) => d.code === 'AUDIT_MISSING_RECORD' && d.address === fake));
  assert.ok(a.differences.some((d) => d.code === 'AUDIT_DIFFERENT_WINNER'));
});

test('audit: a different winner is named; a missing advert is named; a winner that is ineligible is named', () => {
  const r = decide('cheapest');
  // claim the dearer eligible offer won
  const rec = signSelection({ result: r, job: J, signer: BUYER.signer }).record;
  const lie = seal(T.selection, { ...rec, winner: OFFERS[0]!.address }, BUYER.signer);
  const a = auditSelection({ selection: lie, records: RECORDS() });
  assert.deepEqual(a.differences.map((d) => d.code), ['AUDIT_DIFFERENT_WINNER']);
  assert.equal(a.recomputedWinner, OFFERS[1]!.address);
  // claim the over-price offer won
  const lie2 = seal(T.selection, { ...rec, winner: OFFERS[2]!.address }, BUYER.signer);
  assert.deepEqual(auditSelection({ selection: lie2, records: RECORDS() }).differences.map((d) => d.code), ['AUDIT_WINNER_INELIGIBLE', 'AUDIT_DIFFERENT_WINNER']);
  // records without the winner's advert
  const rs = new RecordSet([J, ADS[0]!, ADS[2]!, ...OFFERS]);
  const m = auditSelection({ selection: signSelection({ result: r, job: J, signer: BUYER.signer }), records: rs });
  assert.ok(m.differences.some((d) => d.code === 'AUDIT_MISSING_RECORD' && d.address === ADS[1]!.address));
  // and without the job
  assert.deepEqual(auditSelection({ selection: lie, records: [] }).differences.map((d) => d.code), ['AUDIT_MISSING_RECORD']);
  assert.throws(() => auditSelection({ selection: J as never, records: [] }), { code: 'AUDIT_NOT_A_SELECTION' });
});

test('audit recomputes reputation from the records as of the decision time', () => {
  // P(1) dearer but with a record of successes; P(2) cheaper with disputes
  const a1 = ADS[0]!;
  const a2 = ADS[1]!;
  const history = [];
  for (let i = 0; i < 4; i++) {
    const jj = job(BUYER, { nonce: new Uint8Array([50 + i]) });
    const o1 = offer(P(1), jj, a1);
    const o2 = offer(P(2), jj, a2);
    const r1 = receipt(P(1), BUYER, o1, { startedAt: NOW - 100_000, completedAt: NOW - 90_000 });
    const r2 = receipt(P(2), BUYER, o2, { startedAt: NOW - 100_000, completedAt: NOW - 90_000 });
    history.push(jj, o1, o2, r1, r2, acceptance(BUYER, r1, 'accepted', { signedAt: NOW - 80_000 }), acceptance(BUYER, r2, 'disputed', { signedAt: NOW - 80_000 }));
  }
  const rs = new RecordSet([J, ...ADS, OFFERS[0]!, OFFERS[1]!, ...history]);
  const rep = (): Selected => {
    const r = select({ job: J, adverts: ADS, offers: [OFFERS[0]!, OFFERS[1]!], now: NOW, reputation: auditRep(rs) });
    assert.ok(r.ok);
    return r;
  };
  const r = rep();
  assert.equal(r.winner.provider, P(1).did);
  const s = signSelection({ result: r, job: J, signer: BUYER.signer });
  assert.equal(auditSelection({ selection: s, records: rs }).reproduces, true);
  // without the history the cheaper provider would have won: the audit says the winner differs
  const bare = auditSelection({ selection: s, records: RECORDS() });
  assert.deepEqual(bare.differences.map((d) => d.code), ['AUDIT_DIFFERENT_WINNER']);
});

import { deriveReputation } from '../../../src/reputation/index.js';
function auditRep(rs: RecordSet) {
  return deriveReputation({ receipts: rs.receipts, acceptances: rs.acceptances, offers: rs.offers }, { self: BUYER.did, asOf: NOW });
}

test('failover: a selection of the runner-up leaves out the provider tried, and its audit reproduces', () => {
  const r = decide();
  assert.ok(r.ranked.length >= 2);
  const [first, second] = r.ranked as [Selected['ranked'][number], Selected['ranked'][number]];
  const s = signSelection({ result: r, job: J, signer: BUYER.signer, winner: second.offer, excluded: new Set([first.provider]), decidedAt: NOW + 1 });
  assert.equal(s.record.winner, second.offer);
  assert.equal(s.record.decidedAt, NOW + 1);
  assert.ok(!s.record.considered.some((c) => c.provider === first.provider), 'the provider tried is no longer considered');
  assert.equal(s.record.considered.length, 2);
  const a = auditSelection({ selection: s, records: RECORDS() });
  assert.equal(a.reproduces, true, JSON.stringify(a.differences));
  // The winner must be a ranked offer of a provider still under consideration.
  assert.equal(codeOf(() => signSelection({ result: r, job: J, signer: BUYER.signer, winner: first.offer, excluded: new Set([first.provider]) })), 'SELECTION_WINNER_NOT_CONSIDERED');
  assert.equal(codeOf(() => signSelection({ result: r, job: J, signer: BUYER.signer, winner: 'sha256:' + '00'.repeat(32) })), 'SELECTION_WINNER_NOT_CONSIDERED');
});

test('audit after a republish: the offer is judged against the advert live at the decision time, not one issued later', () => {
  // P(1)'s offer cites seq 1, expired by NOW; seq 2 was live at NOW; seq 3 is published an hour later
  const a1 = advert(P(1), { seq: 1, issuedAt: NOW - 7_200_000, expiresAt: NOW - 1000 });
  const a2 = advert(P(1), { seq: 2, issuedAt: NOW - 500, expiresAt: NOW + 1_800_000 });
  const a3 = advert(P(1), { seq: 3, issuedAt: NOW + 3_600_000, expiresAt: NOW + 7_200_000 });
  const b = advert(P(2));
  const o1 = offer(P(1), J, a1, { amount: '0.2' });
  const o2 = offer(P(2), J, b, { amount: '0.4' });
  const r = select({ job: J, adverts: [a1, a2, b], offers: [o1, o2], policy: 'cheapest', now: NOW });
  assert.ok(r.ok);
  assert.equal(r.winner.offer, o1.address);
  assert.equal(r.winner.advert, a2.address);
  const s = signSelection({ result: r, job: J, signer: BUYER.signer });
  // the records now also hold the republished advert
  const all = [J, a1, a2, a3, b, o1, o2];
  const a = auditSelection({ selection: s, records: all });
  assert.equal(a.reproduces, true, JSON.stringify(a.differences));
  const again = select({ job: J, adverts: [a1, a2, a3, b], offers: [o1, o2], policy: 'cheapest', now: NOW });
  assert.ok(again.ok);
  assert.equal(again.winner.offer, o1.address);
});

test('audit notes a better signed offer of a considered provider that the selection left out', () => {
  const worse = offer(P(2), J, ADS[1]!, { amount: '0.07' });
  const better = offer(P(2), J, ADS[1]!, { amount: '0.05' });
  const r = select({ job: J, adverts: ADS, offers: [OFFERS[0]!, worse, OFFERS[2]!], policy: 'cheapest', now: NOW });
  assert.ok(r.ok);
  const s = signSelection({ result: r, job: J, signer: BUYER.signer });
  const a = auditSelection({ selection: s, records: [J, ...ADS, ...OFFERS, worse, better] });
  // the decision reproduces from the offers it named, but the better one is reported
  assert.equal(a.reproduces, true, JSON.stringify(a.differences));
  const note = a.notes.find((n) => n.includes(better.address));
  assert.ok(note, a.notes.join(' | '));
  assert.match(note, /0\.05 USD/);
  assert.match(note, /0\.07 USD/);
  // the offer OFFERS[1] (0.3) of the same provider is worse than 0.07: not reported
  assert.ok(!a.notes.some((n) => n.includes(OFFERS[1]!.address)));
});

test('a selection too large for one envelope names the winner, the best price and duration, then the best ranked: it opens and audits', () => {
  // 700 providers, 400 of them priced over the job's maximum (what a flood of junk offers does to a buyer's book)
  const ps = Array.from({ length: 700 }, (_, i) => P(3000 + i));
  const ads = ps.map((p) => advert(p));
  const cheapest = ps[1]!;
  const fastest = ps[2]!;
  const winner = ps[3]!; // neither the cheapest nor the fastest: its reputation carries it
  const offers = ps.map((p, i) =>
    offer(p, J, ads[i]!, {
      amount: i >= 300 ? '5' : p === cheapest ? '0.1' : p === winner ? '0.3' : '0.5',
      durationMs: p === fastest ? 10_000 : 60_000,
    }),
  );
  const reputation = reputationFromMap(new Map(ps.map((p) => [p.did, p === winner ? 1 : 0])));
  const r = select({ job: J, adverts: ads, offers, policy: 'balanced', reputation, now: NOW });
  assert.ok(r.ok && r.winner.provider === winner.did && r.ranked.length === 300 && r.ineligible.length === 400);
  const s = signSelection({ result: r, job: J, signer: BUYER.signer });
  assert.ok(s.bytes.length <= SELECTION_MAX_BYTES && SELECTION_MAX_BYTES < MAX_ENVELOPE_BYTES, `${s.bytes.length} bytes`);
  assert.equal(open(s.bytes, T.selection).address, s.address, 'it opens: the winner can run it, and it can be gossiped');
  const named = new Set(s.record.considered.map((c) => c.provider));
  for (const p of [winner, cheapest, fastest]) assert.ok(named.has(p.did));
  assert.ok(s.record.considered.length > 300 && s.record.considered.length < 700, `${s.record.considered.length} named`);
  // small enough for a non-delivery's proof: the buyer can still prove the winner did not deliver
  const chosen = offers.find((o) => o.address === s.record.winner)!;
  assert.equal(signNonDelivery({ job: J, selection: s, offer: chosen, reason: 'unreachable', signedAt: NOW, signer: BUYER.signer }).type, T.nondelivery);
  assert.ok(
    r.ranked.every((x) => named.has(x.provider)),
    'every eligible offer fits here, so only ineligible ones were left out',
  );
  const dids = s.record.considered.map((c) => c.provider);
  assert.deepEqual(dids, [...dids].sort(), 'DID order');
  const a = auditSelection({ selection: s, records: new RecordSet([J, ...ads, ...offers]), reputation });
  assert.equal(a.reproduces, true, JSON.stringify(a.differences));
  assert.ok(a.notes.some((n) => /did not consider/.test(n)), 'the offers left out show as a note');

  // more eligible offers than fit: the ones kept still score as before, so the recomputed winner is the same
  const many = ps.map((p, i) => offer(p, J, ads[i]!, { amount: p === cheapest ? '0.1' : p === winner ? '0.3' : '0.5', durationMs: p === fastest ? 10_000 : 60_000 }));
  const r2 = select({ job: J, adverts: ads, offers: many, policy: 'balanced', reputation, now: NOW });
  assert.ok(r2.ok && r2.ranked.length === 700);
  const s2 = signSelection({ result: r2, job: J, signer: BUYER.signer });
  assert.ok(s2.bytes.length <= SELECTION_MAX_BYTES && s2.record.considered.length < 700);
  const a2 = auditSelection({ selection: s2, records: new RecordSet([J, ...ads, ...many]), reputation });
  assert.equal(a2.reproduces, true, JSON.stringify(a2.differences));
  assert.equal(a2.recomputedWinner, r2.winner.offer);
});

test('audit of a failover selection: the provider an earlier attempt chose is left out as tried, not as "may not have had"', () => {
  // attempt 1 chose P(2) (cheapest); it failed; attempt 2 decides again without it, as the buyer's failover does (§6)
  const first = signSelection({ result: decide(), job: J, signer: BUYER.signer });
  const tried = OFFERS.find((o) => o.address === first.record.winner)!;
  const again = select({ job: J, adverts: ADS, offers: OFFERS.filter((o) => o.signer !== tried.signer), policy: 'balanced', now: NOW + 1 });
  assert.ok(again.ok);
  const second = signSelection({ result: again, job: J, signer: BUYER.signer });
  const strayAd = advert(P(4));
  const stray = offer(P(4), J, strayAd, { amount: '0.2' });
  const audit = (extra: Opened[]) => auditSelection({ selection: second, records: [...RECORDS().byAddress.values(), ...extra] });

  const a = audit([first]);
  assert.equal(a.reproduces, true, JSON.stringify(a.differences));
  assert.deepEqual(a.notes, [`1 provider with a live offer for this job was left out as tried in an earlier attempt (the winner of the decider's earlier selection ${first.address})`]);
  // an offer of a provider nobody tried is still one the decider may not have had
  const b = audit([first, stray, strayAd]);
  assert.deepEqual(b.notes.slice().sort(), [a.notes[0]!, 'the records hold 1 live offer for this job from providers the selection did not consider (the decider may not have had them)'].sort());

  // what does not count as tried: no earlier selection, one signed by someone else, one dated after, one of another job
  const mayNot = 'the records hold 1 live offer for this job from providers the selection did not consider (the decider may not have had them)';
  assert.deepEqual(audit([]).notes, [mayNot]);
  const other = seal(T.selection, { ...first.record }, P(300).signer);
  assert.deepEqual(audit([other]).notes, [mayNot]);
  const later = seal(T.selection, { ...first.record, decidedAt: NOW + 2 }, BUYER.signer);
  assert.deepEqual(audit([later]).notes, [mayNot]);
  const otherJob = seal(T.selection, { ...first.record, job: 'sha256:' + 'cd'.repeat(32) }, BUYER.signer);
  assert.deepEqual(audit([otherJob]).notes, [mayNot]);
});
