/**
 * Where the daemon's buyer sends a job's outcome (src/node/buyer-wiring.ts #direct; docs/network.md §14 "Who hears
 * a job's outcome"), with a fake overlay: a spot job's selection to every provider that quoted (named or not) and
 * to one whose offer comes after the decision, never on gossip; an open order's or a steward overlay's selection on
 * gossip; an acceptance to its receipt's signer and on gossip.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Registry } from 'prom-client';
import { Ed25519Signer, didFromPublicKey, seal, T, type Job, type Offer, type Opened, type Receipt, type Selection } from '../../../src/records/index.js';
import { hashHex } from '../../../src/records/address.js';
import { BuyerWiring } from '../../../src/node/buyer-wiring.js';
import type { BuyerDeps } from '../../../src/roles/buyer.js';
import type { OverlayNode } from '../../../src/node/overlay.js';
import { silentLogger } from '../../../src/util/log.js';

const now = Date.now();
const buyerKey = Ed25519Signer.generate();
const buyer = didFromPublicKey(buyerKey.publicKey);
const providers = [0, 1, 2].map(() => Ed25519Signer.generate());
const [a, b, c] = providers.map((k) => didFromPublicKey(k.publicKey)) as [string, string, string];

function job(extra: Partial<Job> = {}): Opened<Job> {
  const input = randomBytes(8);
  return seal(T.job, { workload: 'builtin.sha256', requirements: {}, maxPrice: { amount: '0.01', currency: 'USD' }, announcedAt: now, deadline: now + 60_000, timeoutMs: 30_000, input: { hash: hashHex(input), size: 8 }, inputSealed: 'no', ...extra }, buyerKey) as Opened<Job>;
}
const offerOf = (j: Opened<Job>, i: number) => seal(T.offer, { job: j.address, advert: 'sha256:' + 'ab'.repeat(32), price: { amount: '0.002', currency: 'USD' }, durationMs: 1000, issuedAt: now, startBy: now + 30_000, expiresAt: now + 30_000 }, providers[i]!) as Opened<Offer>;
const selectionOf = (j: Opened<Job>, named: Array<Opened<Offer>>, policy: Selection['policy'] = 'cheapest') =>
  seal(
    T.selection,
    {
      job: j.address,
      buyer,
      policy,
      winner: named[0]!.address,
      considered: named.map((o) => ({ provider: o.signer, offer: o.address })).sort((x, y) => (x.provider < y.provider ? -1 : 1)),
      decidedAt: now,
      // a first-claim selection lists the claims that opened up to its winner
      ...(policy === 'first-claim' ? { arrivals: [{ seq: 1, receivedAt: now, provider: named[0]!.signer, claim: named[0]!.address }] } : {}),
    },
    buyerKey,
  );

/** Provider b's completed receipt for job `j` on its offer `o`. */
const receiptOf = (j: Opened<Job>, o: Opened<Offer>): Opened<Receipt> =>
  seal(T.receipt, { job: j.address, offer: o.address, buyer, provider: b, workload: 'builtin.sha256', status: 'completed', startedAt: now, completedAt: now + 10, inputHash: j.record.input.hash, outputHash: hashHex(randomBytes(4)), price: o.record.price, energy: { uj: 1, grade: 'Estimator' } }, providers[1]!) as Opened<Receipt>;

function setup(o: { steward?: string; jobs: Array<Opened<Job>>; held: Array<Opened<Offer>>; receipts?: Array<Opened<Receipt>>; unreachable?: string[]; ignored?: Record<string, string> }) {
  const direct: Array<{ kind: string; to: string[] }> = [];
  const gossip: string[] = [];
  const overlay = {
    d: { config: { buyer: { collectWindowMs: 1000, enoughOffers: 0, policy: 'cheapest', offersWanted: 8, inviteAbove: 200 }, network: {}, overlays: [] }, identity: { signer: buyerKey }, network: o.steward ? { steward: o.steward } : {} },
    did: buyer,
    name: 'public',
    clock: () => now,
    log: silentLogger(),
    registry: new Registry(),
    market: {
      earlierJobs: [],
      ownJob: (addr: string) => o.jobs.find((j) => j.address === addr),
      book: { candidates: (addr: string) => o.held.filter((x) => x.record.job === addr) },
      evidence: { receipts: new Map((o.receipts ?? []).map((r) => [r.address, r])) },
      addOffer: async () => {},
    },
    records: { advertOf: () => undefined, get: async () => undefined },
    net: {
      sendOutcome: async (kind: string, to: string[]) => {
        direct.push({ kind, to: [...to].sort() });
        return { outcomes: Object.fromEntries(to.map((d) => [d, o.unreachable?.includes(d) ? 'unreachable' : o.ignored?.[d] ? 'ignored' : 'accepted'])), address: '', codes: { ...o.ignored } };
      },
      publish: async (kind: string) => {
        gossip.push(kind);
        return { recipients: 0, address: '' };
      },
    },
  } as unknown as OverlayNode;
  const wiring = new BuyerWiring(overlay);
  const deps = (wiring.createBuyer() as unknown as { d: BuyerDeps }).d;
  return { wiring, publish: deps.publish, direct, gossip };
}

test('a spot job’s selection goes to every provider that quoted, named or not, and to one that quotes later; not on gossip', async () => {
  const j = job();
  const [oa, ob, oc] = [0, 1, 2].map((i) => offerOf(j, i)) as [Opened<Offer>, Opened<Offer>, Opened<Offer>];
  const s = setup({ jobs: [j], held: [oa, ob] });
  await s.publish('selection', selectionOf(j, [oa]));
  assert.deepEqual(s.direct, [{ kind: 'selection', to: [a, b].sort() }], 'the named provider and the one that quoted but was not considered');
  assert.deepEqual(s.gossip, []);
  // an offer after the decision gets the selection, once per provider
  await s.wiring.onOffer(oc, []);
  await s.wiring.onOffer(offerOf(j, 2), []);
  await s.wiring.onOffer(oa, []);
  assert.deepEqual(s.direct.slice(1), [{ kind: 'selection', to: [c] }]);
  // an offer for a job not decided here gets nothing
  const other = job();
  await s.wiring.onOffer(offerOf(other, 2), []);
  assert.equal(s.direct.length, 2);
  // a failover's new selection goes to no one the last one reached (each freed its budget on it)
  await s.publish('selection', selectionOf(j, [ob]));
  assert.equal(s.direct.length, 2);
});

test('a provider the selection did not reach gets it when it quotes again', async () => {
  const j = job();
  const [oa, ob] = [0, 1].map((i) => offerOf(j, i)) as [Opened<Offer>, Opened<Offer>];
  const s = setup({ jobs: [j], held: [oa, ob], unreachable: [b] });
  await s.publish('selection', selectionOf(j, [oa, ob]));
  await new Promise((r) => setImmediate(r));
  await s.wiring.onOffer(offerOf(j, 1), []);
  await s.wiring.onOffer(offerOf(j, 0), []);
  assert.deepEqual(s.direct, [{ kind: 'selection', to: [a, b].sort() }, { kind: 'selection', to: [b] }]);
  s.wiring.stop();
});

test('an open order’s selection, a first-claim one, and any on an overlay with a steward go on gossip only', async () => {
  const order = job({ order: {} });
  const spot = job();
  const s = setup({ jobs: [order, spot], held: [] });
  await s.publish('selection', selectionOf(order, [offerOf(order, 0)]));
  await s.publish('selection', selectionOf(spot, [offerOf(spot, 0)], 'first-claim'));
  assert.deepEqual([s.direct, s.gossip], [[], ['selection', 'selection']]);
  const st = setup({ steward: c, jobs: [spot], held: [] });
  await st.publish('selection', selectionOf(spot, [offerOf(spot, 0)]));
  assert.deepEqual([st.direct, st.gossip], [[], ['selection']]);
  // and a selection for a job this node did not sign (not its own): gossip, as before
  const unknown = setup({ jobs: [], held: [] });
  await unknown.publish('selection', selectionOf(spot, [offerOf(spot, 0)]));
  assert.deepEqual([unknown.direct, unknown.gossip], [[], ['selection']]);
});

test('an acceptance goes to the provider that signed its receipt, and on gossip', async () => {
  const j = job();
  const o = offerOf(j, 1);
  const receipt = receiptOf(j, o);
  const s = setup({ jobs: [j], held: [o], receipts: [receipt] });
  await s.publish('acceptance', seal(T.acceptance, { receipt: receipt.address, verdict: 'accepted', signedAt: now + 20 }, buyerKey));
  assert.deepEqual([s.direct, s.gossip], [[{ kind: 'acceptance', to: [b] }], ['acceptance']]);
});

test('an acceptance its provider could not take is tried once more 5 s later and no more; a selection is not retried; stop() makes a retry due at once', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const settle = () => new Promise((r) => setImmediate(r));
  const j = job();
  const o = offerOf(j, 1);
  const receipt = receiptOf(j, o);
  const acceptance = () => seal(T.acceptance, { receipt: receipt.address, verdict: 'accepted', signedAt: now + 20 }, buyerKey);
  const s = setup({ jobs: [j], held: [o], receipts: [receipt], unreachable: [b] });
  await s.publish('acceptance', acceptance());
  await settle();
  assert.deepEqual(s.direct, [{ kind: 'acceptance', to: [b] }]);
  t.mock.timers.tick(4_999);
  await settle();
  assert.equal(s.direct.length, 1, 'not before 5 s');
  t.mock.timers.tick(1);
  await settle();
  assert.deepEqual(s.direct, [{ kind: 'acceptance', to: [b] }, { kind: 'acceptance', to: [b] }], 'tried once more');
  t.mock.timers.tick(60_000);
  await settle();
  assert.equal(s.direct.length, 2, 'still unreachable: not a third time');
  // a selection that did not reach its provider waits for the provider to quote again (the test above), not a timer
  const sel = setup({ jobs: [j], held: [o], unreachable: [b] });
  await sel.publish('selection', selectionOf(j, [o]));
  await settle();
  t.mock.timers.tick(60_000);
  await settle();
  assert.deepEqual(sel.direct, [{ kind: 'selection', to: [b] }]);
  // stopped before the retry is due: the second try is made at once (the network is still up; outcome-drain.test.ts),
  // and no more after it
  const st = setup({ jobs: [j], held: [o], receipts: [receipt], unreachable: [b] });
  await st.publish('acceptance', acceptance());
  await settle();
  await st.wiring.stop();
  assert.equal(st.direct.length, 2);
  t.mock.timers.tick(60_000);
  await settle();
  assert.equal(st.direct.length, 2);
});

test('an acceptance its provider ignored for now (its rate limit for this node, a full queue) is tried again as one not kept; one it held already is not (QA ffRcpt F2)', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const settle = () => new Promise((r) => setImmediate(r));
  const j = job();
  const o = offerOf(j, 1);
  const receipt = receiptOf(j, o);
  for (const [code, tries] of [
    ['RATE_LIMITED', 2],
    ['QUEUE_FULL', 2],
    ['DUPLICATE', 1],
  ] as const) {
    const s = setup({ jobs: [j], held: [o], receipts: [receipt], ignored: { [b]: code } });
    await s.publish('acceptance', seal(T.acceptance, { receipt: receipt.address, verdict: 'accepted', signedAt: now + 20 }, buyerKey));
    await settle();
    t.mock.timers.tick(5_000);
    await settle();
    assert.equal(s.direct.length, tries, `ignored ${code}`);
  }
});

