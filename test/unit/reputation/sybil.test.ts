/**
 * Reputation that fake identities cannot buy (docs/market.md "Reputation and
 * its threat model"): a clique of fresh keys vouching for each other moves no
 * score; first-hand and trusted second-hand history still counts; signed
 * non-deliveries that link count against the provider, once.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { DEFAULT_SECOND_HAND_WEIGHT, EvidenceStore, deriveReputation, linkNonDelivery, signNonDelivery, type DeriveOptions, type Evidence, type Figures } from '../../../src/reputation/index.js';
import { seal, T, type NonDelivery, type Opened, type Selection, type Job, type Offer } from '../../../src/records/index.js';
import { closeDb, openDb } from '../../../src/store/db.js';
import { codeOf } from '../../../src/errors.js';
import { NOW, P, acceptance, advert, job, offer, receipt, shuffle, type Party } from '../market/fixtures.js';

const SELF = P(100); // the node deriving
const TRUSTED = P(101); // a buyer it trusts
const HONEST = P(1); // an honest provider
const ATTACKER = P(2); // the clique's provider
const W = DEFAULT_SECOND_HAND_WEIGHT;

let nonce = 0;
const nextNonce = () => new Uint8Array([nonce & 0xff, (nonce >> 8) & 0xff, (nonce++ >> 16) & 0xff]);

interface Bag {
  receipts: Opened[];
  acceptances: Opened[];
  offers: Opened[];
  nondeliveries: Opened[];
}
const bag = (): Bag => ({ receipts: [], acceptances: [], offers: [], nondeliveries: [] });
const evidence = (...bs: Bag[]): Evidence => ({
  receipts: bs.flatMap((b) => b.receipts),
  acceptances: bs.flatMap((b) => b.acceptances),
  offers: bs.flatMap((b) => b.offers),
  nondeliveries: bs.flatMap((b) => b.nondeliveries),
}) as Evidence;

/** One job bought by `buyer` from `provider`: job, offer, receipt, and the buyer's verdict (when `verdict` is given). */
function deal(b: Bag, provider: Party, buyer: Party, o: { status?: 'completed' | 'failed'; verdict?: 'accepted' | 'disputed'; acceptedBy?: Party; buyerField?: Party } = {}): void {
  const j = job(buyer, { nonce: nextNonce() });
  const of = offer(provider, j, advert(provider), { durationMs: 60_000 });
  const r = receipt(provider, o.buyerField ?? buyer, of, { status: o.status ?? 'completed' });
  b.offers.push(of);
  b.receipts.push(r);
  if (o.verdict) b.acceptances.push(acceptance(o.acceptedBy ?? buyer, r, o.verdict));
}

/** A selection by `buyer` of `provider`'s offer on the buyer's job, and the signed non-delivery. */
function selected(buyer: Party, provider: Party, at = NOW): { j: Opened<Job>; o: Opened<Offer>; s: Opened<Selection> } {
  const j = job(buyer, { nonce: nextNonce() });
  const o = offer(provider, j, advert(provider));
  const s = seal(T.selection, { job: j.address, buyer: buyer.did, policy: 'trusted', winner: o.address, considered: [{ provider: provider.did, offer: o.address }], decidedAt: at }, buyer.signer) as Opened<Selection>;
  return { j, o, s };
}
function nondelivery(buyer: Party, provider: Party, reason: NonDelivery['reason'] = 'unreachable'): Opened<NonDelivery> {
  const { j, o, s } = selected(buyer, provider);
  return signNonDelivery({ job: j, selection: s, offer: o, reason, signedAt: NOW + 1000, signer: buyer.signer });
}

const view = (over: Partial<DeriveOptions> = {}): DeriveOptions => ({ self: SELF.did, trust: { trustedBuyers: [TRUSTED.did] }, ...over });
const figs = (e: Evidence, did: string, v = view()): Figures => deriveReputation(e, v).get(did);

/**
 * The clique: `n` receipts by fresh provider keys and the attacker's provider,
 * each countersigned `accepted` by fresh buyer keys (or claiming SELF/TRUSTED
 * as buyer, countersigned by a fresh key), plus fresh buyers' non-deliveries
 * against the honest provider. `arrange` picks who signs what.
 */
function clique(n: number, arrange: (i: number) => { provider: number; buyer: number; claim: 'own' | 'self' | 'trusted'; status: 'completed' | 'failed' }, badmouth: number): Bag {
  const b = bag();
  const party = (k: number) => (k === 0 ? ATTACKER : P(1000 + k));
  for (let i = 0; i < n; i++) {
    const a = arrange(i);
    const buyer = P(5000 + a.buyer);
    const claimed = a.claim === 'self' ? SELF : a.claim === 'trusted' ? TRUSTED : buyer;
    deal(b, party(a.provider), buyer, { status: a.status, verdict: 'accepted', acceptedBy: buyer, buyerField: claimed });
  }
  for (let i = 0; i < badmouth; i++) b.nondeliveries.push(nondelivery(P(6000 + i), HONEST, 'timeout'));
  return b;
}

/** Honest history: first-hand jobs of SELF and second-hand jobs of TRUSTED with the honest provider. */
function honestHistory(first: number, second: number): Bag {
  const b = bag();
  for (let i = 0; i < first; i++) deal(b, HONEST, SELF, { verdict: 'accepted' });
  for (let i = 0; i < second; i++) deal(b, HONEST, TRUSTED, { verdict: 'accepted' });
  return b;
}

test('first-hand evidence counts fully, a trusted buyer’s at the second-hand weight, anyone else’s not at all', () => {
  const h = honestHistory(3, 10);
  const f = figs(evidence(h), HONEST.did);
  assert.equal(f.firstHand, 3);
  assert.equal(f.successes, 3 + 10 * W);
  assert.equal(f.secondHand, 10 * W);
  assert.equal(f.score, (1 + 3 + 10 * W) / (2 + 3 + 10 * W));
  // the same history seen by a node that trusts nobody: first-hand only
  assert.equal(figs(evidence(h), HONEST.did, { self: SELF.did }).successes, 3);
  // and by a stranger: nothing counts, all of it is held as untrusted
  const stranger = figs(evidence(h), HONEST.did, { self: P(999).did });
  assert.equal(stranger.score, 0.5);
  assert.equal(stranger.untrusted, 13);
  // the weight is the operator's to set
  assert.equal(figs(evidence(h), HONEST.did, view({ trust: { trustedBuyers: [TRUSTED.did], secondHandWeight: 1 } })).successes, 13);
  // a trusted buyer's dispute and a first-hand failure count against it
  const bad = bag();
  deal(bad, HONEST, TRUSTED, { verdict: 'disputed' });
  deal(bad, HONEST, SELF, { status: 'failed', verdict: 'accepted' });
  const g = figs(evidence(h, bad), HONEST.did);
  assert.deepEqual([g.disputes, g.failures], [W, 1]);
  assert.ok(g.score < f.score);
});

test('Sybil bound: a clique of 1,000 receipts from fresh keys moves no score (Δ = 0), whoever it claims as buyer', () => {
  const history = honestHistory(2, 4);
  const attack = clique(1000, (i) => ({ provider: i % 7 === 0 ? 1 + (i % 13) : 0, buyer: i % 50, claim: i % 10 === 3 ? 'self' : i % 10 === 4 ? 'trusted' : 'own', status: 'completed' }), 20);
  const before = deriveReputation(evidence(history), view());
  const after = deriveReputation(evidence(history, attack), view());
  // the clique provider stays at the prior, exactly
  assert.equal(after.scoreOf(ATTACKER.did), 0.5);
  const a = after.get(ATTACKER.did);
  assert.deepEqual([a.jobs, a.successes, a.firstHand, a.secondHand], [0, 0, 0, 0]);
  assert.ok(a.untrusted > 600, `held but not counted: ${a.untrusted}`); // the rest claim SELF or TRUSTED as buyer, whose countersignature they lack: not even an outcome
  // the honest provider's figures do not move either (the clique's non-deliveries against it weigh nothing)
  assert.deepEqual({ ...after.get(HONEST.did), untrusted: 0 }, { ...before.get(HONEST.did), untrusted: 0 });
  assert.equal(after.get(HONEST.did).untrusted, 20);
  // and the honest provider still outranks the attacker (the attack that won before: 0.984 vs 0.667)
  assert.ok(after.scoreOf(HONEST.did) > after.scoreOf(ATTACKER.did));
  // every clique provider key: at the prior
  for (const f of after.all()) if (f.did !== HONEST.did) assert.equal(f.score, 0.5, f.did);
});

test('property: any arrangement of a clique of fresh keys raises no score (Δ ≤ 0) and leaves the honest provider where it was', () => {
  const history = honestHistory(2, 3);
  const before = JSON.stringify(deriveReputation(evidence(history), view()).all().map((f) => ({ ...f, untrusted: 0 })));
  fc.assert(
    fc.property(
      fc.array(fc.record({ provider: fc.integer({ min: 0, max: 4 }), buyer: fc.integer({ min: 0, max: 9 }), claim: fc.constantFrom('own' as const, 'self' as const, 'trusted' as const), status: fc.constantFrom('completed' as const, 'failed' as const) }), { minLength: 1, maxLength: 25 }),
      fc.integer({ min: 0, max: 3 }),
      (arr, badmouth) => {
        const attack = clique(arr.length, (i) => arr[i]!, badmouth);
        const t = deriveReputation(evidence(history, attack), view());
        const got = JSON.stringify(t.all().filter((f) => f.did === HONEST.did).map((f) => ({ ...f, untrusted: 0 })));
        assert.equal(got, before);
        // a clique key can only lose: a failed receipt it signs naming SELF as buyer is its own admission
        for (const f of t.all()) if (f.did !== HONEST.did) assert.ok(f.score <= 0.5, `${f.score}`);
      },
    ),
    { numRuns: 30 },
  );
});

test('dealt-with buyers (opt-in): the clique gains at most w × K, K = the jobs this node ran for its keys and they accepted', () => {
  // SELF, as a provider, ran K = 3 jobs for two of the clique's buyer keys, and they accepted them.
  const dealt = bag();
  for (const k of [0, 0, 1]) deal(dealt, SELF, P(5000 + k), { verdict: 'accepted' });
  const attack = clique(1000, (i) => ({ provider: 0, buyer: i % 5, claim: 'own', status: 'completed' }), 0);
  const off = deriveReputation(evidence(dealt, attack), view());
  assert.equal(off.scoreOf(ATTACKER.did), 0.5, 'off by default');
  const on = deriveReputation(evidence(dealt, attack), view({ trust: { trustedBuyers: [TRUSTED.did], dealtWith: true } }));
  const a = on.get(ATTACKER.did);
  const K = 3;
  assert.ok(Math.abs(a.successes - W * K) < 1e-9, `successes ${a.successes} = w × K`);
  assert.ok(a.score <= (1 + W * K) / (2 + W * K) + 1e-12);
  // and a dealt-with buyer's word about the honest provider counts within the same cap
  const word = bag();
  deal(word, HONEST, P(5000), { verdict: 'accepted' });
  assert.equal(deriveReputation(evidence(dealt, word), view({ trust: { dealtWith: true } })).get(HONEST.did).successes, W);
});

test('non-delivery: a linked record from the buyer lowers the score; duplicates count once; what does not link does not count', () => {
  const nd = nondelivery(SELF, ATTACKER);
  const e = (...nds: Opened[]) => ({ receipts: [], acceptances: [], offers: [], nondeliveries: nds }) as Evidence;
  const f = figs(e(nd), ATTACKER.did);
  assert.equal(f.nonDeliveries, 1);
  assert.equal(f.score, 1 / (2 + 2));
  // the same record twice, and a second record for the same job and provider: once
  const again = signNonDelivery({ ...reopen(nd), reason: 'timeout', signedAt: NOW + 2000, signer: SELF.signer });
  assert.notEqual(again.address, nd.address);
  assert.equal(figs(e(nd, nd, again), ATTACKER.did).nonDeliveries, 1);
  // two jobs: twice
  assert.equal(figs(e(nd, nondelivery(SELF, ATTACKER)), ATTACKER.did).nonDeliveries, 2);
  // a trusted buyer's counts at the second-hand weight; a stranger's not at all
  assert.equal(figs(e(nondelivery(TRUSTED, ATTACKER)), ATTACKER.did).nonDeliveries, W);
  assert.equal(figs(e(nondelivery(P(777), ATTACKER)), ATTACKER.did).score, 0.5);
  // Unlinked records (sealed directly, bypassing signNonDelivery's check):
  const { j, o, s } = selected(SELF, ATTACKER);
  const base = { job: j.address, selection: s.address, offer: o.address, provider: ATTACKER.did, reason: 'unreachable' as const, signedAt: NOW + 1000, proof: { job: j.bytes, selection: s.bytes, offer: o.bytes } };
  const otherJob = job(P(300), { nonce: nextNonce() }); // someone else's job
  const otherOffer = offer(HONEST, j, advert(HONEST)); // another provider's offer
  const sOther = seal(T.selection, { job: j.address, buyer: SELF.did, policy: 'trusted', winner: otherOffer.address, considered: [{ provider: HONEST.did, offer: otherOffer.address }], decidedAt: NOW }, SELF.signer) as Opened<Selection>;
  // a selection that names the attacker with another provider's offer
  const sLie = seal(T.selection, { job: j.address, buyer: SELF.did, policy: 'trusted', winner: otherOffer.address, considered: [{ provider: ATTACKER.did, offer: otherOffer.address }], decidedAt: NOW }, SELF.signer) as Opened<Selection>;
  const unlinked: Array<[string, Opened<NonDelivery>]> = [
    ['NONDELIVERY_NOT_BUYER', seal(T.nondelivery, { ...base, job: otherJob.address, proof: { ...base.proof, job: otherJob.bytes } }, SELF.signer) as Opened<NonDelivery>],
    ['NONDELIVERY_NOT_BUYER', seal(T.nondelivery, base, TRUSTED.signer) as Opened<NonDelivery>], // not the job's buyer
    ['NONDELIVERY_OFFER_MISMATCH', seal(T.nondelivery, { ...base, offer: otherOffer.address, selection: sLie.address, proof: { ...base.proof, selection: sLie.bytes, offer: otherOffer.bytes } }, SELF.signer) as Opened<NonDelivery>],
    ['NONDELIVERY_SELECTION_MISMATCH', seal(T.nondelivery, { ...base, selection: sOther.address, proof: { ...base.proof, selection: sOther.bytes } }, SELF.signer) as Opened<NonDelivery>],
    ['NONDELIVERY_JOB_MISMATCH', seal(T.nondelivery, { ...base, job: otherJob.address }, SELF.signer) as Opened<NonDelivery>],
    ['NONDELIVERY_BEFORE_SELECTION', seal(T.nondelivery, { ...base, signedAt: NOW - 1 }, SELF.signer) as Opened<NonDelivery>],
    ['NONDELIVERY_PROOF_INVALID', seal(T.nondelivery, { ...base, proof: { ...base.proof, offer: Uint8Array.from(o.bytes).fill(1, 40, 41) } }, SELF.signer) as Opened<NonDelivery>],
  ];
  for (const [code, u] of unlinked) {
    assert.equal(codeOf(() => linkNonDelivery(u)), code);
    assert.equal(figs(e(u), ATTACKER.did).nonDeliveries, 0, code);
  }
  // the record layer refuses a buyer reporting itself
  assert.equal(codeOf(() => seal(T.nondelivery, { ...base, provider: SELF.did }, SELF.signer)), 'NONDELIVERY_SELF');
  // signNonDelivery refuses a selection that does not name the provider
  assert.equal(codeOf(() => signNonDelivery({ job: j, selection: sOther, offer: o, reason: 'timeout', signedAt: NOW + 1, signer: SELF.signer })), 'NONDELIVERY_SELECTION_MISMATCH');
});

function reopen(nd: Opened<NonDelivery>) {
  const { j, o, s } = { j: { address: nd.record.job, bytes: nd.record.proof.job }, o: { address: nd.record.offer, bytes: nd.record.proof.offer }, s: { address: nd.record.selection, bytes: nd.record.proof.selection } };
  return { job: j as Opened<Job>, offer: { ...o, signer: nd.record.provider } as Opened<Offer>, selection: s as Opened<Selection> };
}

test('property: evidence with non-deliveries in any order, duplicated, gives the same figures', () => {
  const h = honestHistory(2, 2);
  const nds = [nondelivery(SELF, ATTACKER), nondelivery(TRUSTED, HONEST), nondelivery(P(778), HONEST)];
  const all = evidence(h, { ...bag(), nondeliveries: nds });
  const ref = JSON.stringify(deriveReputation(all, view()).all());
  fc.assert(
    fc.property(fc.integer(), (seed) => {
      const e = { receipts: shuffle([...all.receipts, ...all.receipts] as Opened[], seed), acceptances: shuffle([...all.acceptances] as Opened[], seed + 1), offers: shuffle([...all.offers] as Opened[], seed + 2), nondeliveries: shuffle([...nds, ...nds], seed + 3) } as Evidence;
      assert.equal(JSON.stringify(deriveReputation(e, view()).all()), ref);
    }),
    { numRuns: 50 },
  );
});

test('the evidence store keeps linked non-deliveries across a restart and refuses unlinked ones with a code, changing nothing', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-rep-nd-'));
  try {
    let db = await openDb(dir);
    const s = await EvidenceStore.open(db);
    const nd = nondelivery(SELF, ATTACKER);
    assert.equal(await s.add(nd), 1);
    assert.equal(await s.add(nd), 0);
    const { j, o, s: sel } = selected(SELF, ATTACKER);
    const forged = seal(T.nondelivery, { job: j.address, selection: sel.address, offer: o.address, provider: ATTACKER.did, reason: 'timeout', signedAt: NOW + 1, proof: { job: j.bytes, selection: sel.bytes, offer: o.bytes } }, TRUSTED.signer) as Opened<NonDelivery>;
    await assert.rejects(s.add(nondelivery(SELF, HONEST), forged), { code: 'NONDELIVERY_NOT_BUYER' });
    assert.equal(s.size, 1);
    assert.equal(s.derive(view()).get(ATTACKER.did).nonDeliveries, 1);
    await closeDb(db);
    db = await openDb(dir);
    const s2 = await EvidenceStore.open(db);
    assert.equal(s2.size, 1);
    assert.equal(s2.derive(view()).get(ATTACKER.did).nonDeliveries, 1);
    assert.deepEqual(new Uint8Array(s2.getBytes(nd.address)!), new Uint8Array(nd.bytes));
    await closeDb(db);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
