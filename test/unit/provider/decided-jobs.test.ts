/**
 * A provider does not quote a job whose outcome is already decided in what it holds, and such a job spends none of
 * its quoting budget (docs/market.md "Jobs already decided"). The case found in review: a restarted provider is
 * handed the buyer's earlier jobs by anti-entropy (selections first, then jobs); it quoted every one, filled the
 * buyer's budget (8 live offers) with offers on work already done, and skipped that buyer's new jobs `buyer-budget`
 * for the offers' 30 s. A job still open, learned the same way, is still quoted.
 */
import { describe, test, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { Ed25519Signer } from '../../../src/records/ed25519.js';
import { seal, type Opened } from '../../../src/records/envelope.js';
import { didFromPublicKey } from '../../../src/records/did.js';
import { hashHex } from '../../../src/records/address.js';
import { T, type Job, type Offer, type Selection } from '../../../src/records/kinds.js';
import { fakeClock } from '../../../src/util/clock.js';
import { silentLogger } from '../../../src/util/log.js';
import { generateBoxKeyPair } from '../../../src/crypto/sealed-box.js';
import { parseConfig } from '../../../src/node/config.js';
import { EstimatorMeter } from '../../../src/roles/provider/meters.js';
import { QuoteBudget } from '../../../src/roles/provider/quote-budget.js';
import { DECIDED_MAX, Provider, type ProviderDeps } from '../../../src/roles/provider/provider.js';

const NOW = 1_800_000_000_000;
const buyer = Ed25519Signer.generate();
const buyerDid = didFromPublicKey(buyer.publicKey);
const input = new TextEncoder().encode('job input');
let nonce = 0;

const live: Provider[] = [];
afterEach(async () => {
  for (const p of live.splice(0)) await p.stop();
});

/** The deps a ProviderDeps takes beyond the ones set here (`held` as the daemon wires it: docs/market.md). */
type Extra = Partial<Pick<ProviderDeps, 'held' | 'selectionAuthority'>>;

async function setup(extra: Extra = {}) {
  const signer = Ed25519Signer.generate();
  const clock = fakeClock(NOW);
  const registry = new Registry();
  const offers: Array<Opened<Offer>> = [];
  const config = parseConfig({
    roles: ['provider'],
    provider: {
      tier: 'standard',
      slots: 4,
      workloads: { 'builtin.sha256': { executor: { type: 'builtin', name: 'builtin.sha256' }, price: { amount: '0.001', currency: 'USD' }, duration: { baseMs: 1000, perInputMiBMs: 0 } } },
    },
  }).provider!;
  const budget = new QuoteBudget<Opened<Offer>>({ ...config.quoteBudget, windowMs: config.offerLifetimeMs, registry, clock });
  const deps: ProviderDeps = {
    signer,
    did: didFromPublicKey(signer.publicKey),
    config,
    hardware: { cpuCores: 4, memoryMiB: 8192 },
    meter: new EstimatorMeter(50, clock),
    box: generateBoxKeyPair(),
    clock,
    log: silentLogger(),
    eligibility: () => [],
    publish: async (kind, env) => {
      if (kind === 'offer') offers.push(env as Opened<Offer>);
      return 1;
    },
    state: { loadSeq: async () => 0, saveSeq: async () => {}, hasReceiptFor: async () => false },
    onReceipt: async () => {},
    quoteBudget: budget,
    ...extra,
  };
  const provider = new Provider(deps);
  live.push(provider);
  await provider.start();
  return { provider, budget, registry, offers, clock };
}

function makeJob(signer = buyer): Opened<Job> {
  return seal(
    T.job,
    {
      workload: 'builtin.sha256',
      requirements: {},
      maxPrice: { amount: '0.01', currency: 'USD' },
      announcedAt: NOW - 5_000,
      deadline: NOW + 60_000,
      timeoutMs: 10_000,
      input: { hash: hashHex(input), size: input.length },
      inputSealed: 'no',
      nonce: Uint8Array.of(nonce & 0xff, (nonce++ >> 8) & 0xff),
    },
    signer,
  );
}

/** The buyer's selection of `job` (the winner's offer is another provider's: what this provider holds names it only). */
function selectionOf(job: Opened<Job>, signer = buyer): Opened<Selection> {
  const other = `sha256:${'ab'.repeat(32)}`;
  return seal(T.selection, { job: job.address, buyer: buyerDid, policy: 'balanced', winner: other, considered: [{ provider: 'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK', offer: other }], decidedAt: NOW - 4_000 }, signer);
}

async function skipped(reg: Registry, reason: string): Promise<number> {
  const m = await reg.getSingleMetric('c0mpute_provider_quotes_skipped_total')?.get();
  return m?.values.find((v) => v.labels.reason === reason)?.value ?? 0;
}

describe('Provider: jobs already decided', () => {
  test('after a restart, anti-entropy hands over 8 decided jobs (selections first) and an open one: only the open one is quoted, and the budget holds no offer on decided work', async () => {
    const s = await setup();
    const decided = Array.from({ length: s.budget.maxLiveOffersPerBuyer }, () => makeJob());
    // the order of anti-entropy (antiEntropyKinds): the selections, then the jobs
    for (const j of decided) s.provider.onSelection(selectionOf(j));
    for (const j of decided) assert.equal(await s.provider.onJob(j), undefined, 'a job its buyer selected for already gets no offer');
    assert.equal(s.budget.liveFor(buyerDid, NOW), 0, 'no quoting budget spent on decided jobs');
    assert.equal(await skipped(s.registry, 'decided'), decided.length, 'each counted c0mpute_provider_quotes_skipped_total{reason="decided"}');
    const open = makeJob();
    const offer = await s.provider.onJob(open);
    assert.ok(offer, 'the buyer’s open job is quoted, not skipped buyer-budget');
    assert.equal(offer.record.job, open.address);
    assert.equal(await skipped(s.registry, 'buyer-budget'), 0);
    assert.deepEqual(s.offers.map((o) => o.record.job), [open.address]);
  });

  test('a selection signed by neither the job’s buyer nor an authorised decider does not stop the quote; one by the authority does', async () => {
    const stranger = Ed25519Signer.generate();
    const steward = Ed25519Signer.generate();
    const stewardDid = didFromPublicKey(steward.publicKey);
    const s = await setup({ selectionAuthority: (signer) => signer === stewardDid });
    const j1 = makeJob();
    s.provider.onSelection(selectionOf(j1, stranger));
    assert.ok(await s.provider.onJob(j1), 'anyone can sign a selection naming any job: a stranger’s decides nothing');
    const j2 = makeJob();
    s.provider.onSelection(selectionOf(j2, steward));
    assert.equal(await s.provider.onJob(j2), undefined, 'the overlay’s steward decides for the buyer');
  });

  test('a job skipped as decided stays decided: a flood of selections that pushes the buyer’s out of memory does not make a later copy of the job quotable (second-round review)', async () => {
    const s = await setup();
    const j = makeJob();
    s.provider.onSelection(selectionOf(j));
    assert.equal(await s.provider.onJob(j), undefined, 'decided');
    // eight strangers sign selections naming the job (the buyer's signature was the oldest of the job's eight), and
    // made-up selections from one key fill the jobs remembered (DECIDED_MAX)
    const stranger = Ed25519Signer.generate();
    for (let i = 0; i < 8; i++) s.provider.onSelection(selectionOf(j, Ed25519Signer.generate()));
    const base = selectionOf(makeJob(), stranger);
    for (let i = 0; i < DECIDED_MAX; i++) s.provider.onSelection({ ...base, record: { ...base.record, job: `sha256:${i.toString(16).padStart(64, '0')}` } } as Opened<Selection>);
    assert.equal(await s.provider.onJob(j), undefined, 'the job replayed later is still not quoted');
    assert.deepEqual(s.offers, []);
    assert.ok(await s.provider.onJob(j, { invited: true }), 'its buyer can still push it');
  });

  test('a job its buyer pushes is quoted though its selection was heard (job-push/1 asks for an offer now)', async () => {
    const s = await setup({ held: async () => 'receipt' });
    const j = makeJob();
    s.provider.onSelection(selectionOf(j));
    assert.equal(await s.provider.onJob(j), undefined, 'heard on gossip or sync: decided');
    assert.ok(await s.provider.onJob(j, { invited: true }), 'pushed by its buyer: quoted');
  });

  test('a job quoted once is quoted again when its buyer pushes it after that offer lapsed, never while it is live or when heard again (second-round review: a rescue got no offer from the runner-up)', async () => {
    const s = await setup();
    const j = makeJob();
    const first = await s.provider.onJob(j);
    assert.ok(first);
    assert.equal(await s.provider.onJob(j, { invited: true }), undefined, 'its offer is live: the push is answered with it (offerFor), no second one');
    assert.equal(s.provider.offerFor(j.address)?.address, first.address);
    s.clock.advance(first.record.expiresAt - NOW + 1);
    assert.equal(s.provider.offerFor(j.address), undefined, 'lapsed');
    assert.equal(await s.provider.onJob(j), undefined, 'heard again on gossip or sync: quoted once');
    const again = await s.provider.onJob(j, { invited: true });
    assert.ok(again, 'pushed by its buyer after its offer lapsed: a fresh offer');
    assert.ok(again.record.expiresAt > first.record.expiresAt && again.record.issuedAt > first.record.issuedAt);
    assert.equal(s.provider.offerFor(j.address)?.address, again.address);
  });

  test('what the node holds (`held`): a receipt or the buyer’s acceptance is decided; a job quoted before a restart is not quoted again unless its buyer pushes it; an open one is quoted', async () => {
    const held = new Map<string, 'selection' | 'receipt' | 'acceptance' | 'quoted'>();
    const asked: string[] = [];
    const s = await setup({
      held: async (job) => {
        asked.push(job.address);
        return held.get(job.address);
      },
    });
    const [r, a, sel, q, open] = [makeJob(), makeJob(), makeJob(), makeJob(), makeJob()];
    held.set(r.address, 'receipt');
    held.set(a.address, 'acceptance');
    held.set(sel.address, 'selection');
    held.set(q.address, 'quoted');
    for (const j of [r, a, sel]) assert.equal(await s.provider.onJob(j), undefined);
    assert.equal(await skipped(s.registry, 'decided'), 3);
    assert.equal(await s.provider.onJob(q), undefined, 'quoted before: the offer is already the buyer’s');
    assert.equal(await skipped(s.registry, 'already-quoted'), 1);
    assert.equal(s.budget.liveFor(buyerDid, NOW), 0, 'none of them spent budget');
    assert.ok(await s.provider.onJob(q, { invited: true }), 'its buyer pushed it: it asks for an offer now');
    assert.ok(await s.provider.onJob(open), 'an open job is quoted');
    assert.equal(s.budget.liveFor(buyerDid, NOW), 2);
    assert.ok(asked.includes(open.address), 'the open job was looked up too');
  });

  test('over budget the lookup is not made (a flood pays for the budget check only), and copies of one job heard together are quoted once', async () => {
    let lookups = 0;
    const s = await setup({
      held: async () => {
        lookups++;
        await new Promise((r) => setImmediate(r));
        return undefined;
      },
    });
    const j = makeJob();
    const both = await Promise.all([s.provider.onJob(j), s.provider.onJob(j)]);
    assert.equal(both.filter(Boolean).length, 1, 'one offer for two copies heard at once');
    for (let i = 1; i < s.budget.maxLiveOffersPerBuyer; i++) assert.ok(await s.provider.onJob(makeJob()));
    const before = lookups;
    assert.equal(await s.provider.onJob(makeJob()), undefined);
    assert.equal(lookups, before, 'a job over budget is skipped before the lookup');
    assert.equal(await skipped(s.registry, 'buyer-budget'), 1);
  });
});
