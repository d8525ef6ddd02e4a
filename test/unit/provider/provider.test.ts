/**
 * The provider role with fake dependencies (fake clock, silent logger, in-memory
 * state, a recording publish) and real records, real executors and a real meter.
 */
import { describe, test, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import { createHash } from 'node:crypto';
import { Ed25519Signer } from '../../../src/records/ed25519.js';
import { open, seal, type Opened } from '../../../src/records/envelope.js';
import { didFromPublicKey } from '../../../src/records/did.js';
import { peerIdFromDid } from '../../../src/node/peer-id.js';
import { hashHex } from '../../../src/records/address.js';
import { T, type Advert, type Job, type Offer, type Receipt, type Selection } from '../../../src/records/kinds.js';
import { fakeClock } from '../../../src/util/clock.js';
import { silentLogger, type Logger } from '../../../src/util/log.js';
import { pino } from 'pino';
import { FloodGuard } from '../../../src/net/flood-limits.js';
import { AbusePolicy, AbuseReports } from '../../../src/net/peer-abuse.js';
import { generateBoxKeyPair, seal as sealBox } from '../../../src/crypto/sealed-box.js';
import type { ExecIO } from '../../../src/roles/provider/exec-input.js';
import { parseConfig } from '../../../src/node/config.js';
import { EstimatorMeter } from '../../../src/roles/provider/meters.js';
import { StallWatch } from '../../../src/util/stall-watch.js';
import { Provider, type EligibilityFailure, type ProviderDeps } from '../../../src/roles/provider/provider.js';
import type { ExecFrame } from '../../../src/roles/exec-protocol.js';
import type { ProviderPoolHooks } from '../../../src/roles/pool-member/hooks.js';
import { ProcessRegistry, type GroupRecord } from '../../../src/roles/provider/orphans.js';
import { createExecutor } from '../../../src/roles/provider/executors.js';
import { sealEntries } from '../../../src/ledger/entry.js';
import type { PoolEvent } from '../../../src/pool/usage.js';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { Rig as PoolRig, MEMBERS as POOL_MEMBERS, keyOf as poolKeyOf } from '../pools/member-rig.js';
import { watchTimers } from '../util/timer-watch.js';
import { DirectProtocols, type StreamHost } from '../../../src/net/protocols.js';
import { createNetMetrics } from '../../../src/net/metrics.js';
import { decodeFrame, encodeFrame } from '../../../src/net/frames.js';
import { EXEC_PROTOCOL } from '../../../src/roles/exec-protocol.js';

const NOW = 1_800_000_000_000;
const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);

interface Published {
  kind: 'advert' | 'offer' | 'receipt';
  env: Opened;
  withAdvert: Opened<Advert> | undefined;
}

const live: Provider[] = [];
afterEach(async () => {
  for (const p of live.splice(0)) await p.stop();
});

function setup(opts: { eligibility?: EligibilityFailure[]; slots?: number; loadSeq?: number; liveInMarket?: () => number; rankAhead?: ProviderDeps['rankAhead']; offerRank?: number; pool?: ProviderPoolHooks; onReceipt?: ProviderDeps['onReceipt']; processes?: ProcessRegistry; signer?: Ed25519Signer; bars?: Map<string, { code: 'EXEC_PREEMPTED' | 'EXEC_IDLE_RECLAIMED'; until: number }>; steward?: ProviderDeps['steward']; log?: Logger; strike?: ProviderDeps['strike']; deliver?: ProviderDeps['deliver']; receiptAckMs?: number; keepaliveMs?: number; stalls?: StallWatch; reached?: () => number } = {}) {
  const signer = opts.signer ?? Ed25519Signer.generate();
  const did = didFromPublicKey(signer.publicKey);
  const clock = fakeClock(NOW);
  const mono = fakeClock(0);
  const box = generateBoxKeyPair();
  const published: Published[] = [];
  const receipts: Array<Opened<Receipt>> = [];
  const outcomes: string[] = [];
  const seqs: number[] = [];
  let seq = opts.loadSeq ?? 0;
  const eligibilityCalls: Array<{ job: string; advert: string; now: number }> = [];
  const config = parseConfig({
    roles: ['provider'],
    provider: {
      region: 'eu-west',
      tier: 'standard',
      slots: opts.slots ?? 1,
      ...(opts.offerRank === undefined ? {} : { offerRank: opts.offerRank }),
      workloads: {
        'builtin.sha256': { executor: { type: 'builtin', name: 'builtin.sha256' }, price: { amount: '0.001', currency: 'USD' }, duration: { baseMs: 1000, perInputMiBMs: 0 } },
        'builtin.sleep': { executor: { type: 'builtin', name: 'builtin.sleep' }, price: { amount: '0.002', currency: 'USD' }, unit: 'second' },
        // a command whose params are its own business (a gang member job's cite the claim): quoted whatever they are
        'acme.cat': { executor: { type: 'exec', command: ['sh', '-c', 'cat'] }, price: { amount: '0.001', currency: 'USD' }, duration: { baseMs: 1000, perInputMiBMs: 0 } },
      },
    },
  }).provider!;
  const deps: ProviderDeps = {
    signer,
    did,
    config,
    hardware: { cpuCores: 4, memoryMiB: 8192 },
    meter: new EstimatorMeter(50, clock),
    box,
    clock,
    monoClock: mono,
    log: opts.log ?? silentLogger(),
    eligibility: (job, advert, now) => {
      eligibilityCalls.push({ job: job.address, advert: advert.address, now });
      return opts.eligibility ?? [];
    },
    publish: async (kind, env, withAdvert) => {
      published.push({ kind, env, withAdvert });
      return opts.reached?.() ?? 1;
    },
    state: {
      loadSeq: async () => seq,
      saveSeq: async (s) => {
        seq = s;
        seqs.push(s);
      },
      hasReceiptFor: async (job) => receipts.some((r) => r.record.job === job),
      ...(opts.bars
        ? {
            saveBar: async (job: string, code: 'EXEC_PREEMPTED' | 'EXEC_IDLE_RECLAIMED', until: number) => void opts.bars!.set(job, { code, until }),
            barOf: async (job: string) => opts.bars!.get(job),
          }
        : {}),
    },
    onReceipt: async (r, o, j) => {
      await opts.onReceipt?.(r, o, j);
      receipts.push(r);
    },
    onOutcome: (status, workload) => outcomes.push(`${status}:${workload}`),
    ...(opts.pool ? { pool: opts.pool } : {}),
    ...(opts.processes ? { processes: opts.processes } : {}),
    ...(opts.liveInMarket ? { liveInMarket: opts.liveInMarket } : {}),
    ...(opts.rankAhead ? { rankAhead: opts.rankAhead } : {}),
    ...(opts.steward ? { steward: opts.steward } : {}),
    ...(opts.strike ? { strike: opts.strike } : {}),
    ...(opts.deliver ? { deliver: opts.deliver } : {}),
    ...(opts.receiptAckMs === undefined ? {} : { receiptAckMs: opts.receiptAckMs }),
    ...(opts.keepaliveMs === undefined ? {} : { keepaliveMs: opts.keepaliveMs }),
    ...(opts.stalls ? { stalls: opts.stalls } : {}),
  };
  const provider = new Provider(deps);
  live.push(provider);
  return { provider, signer, did, clock, mono, box, published, receipts, outcomes, seqs, eligibilityCalls, config };
}

const buyer = Ed25519Signer.generate();
const buyerDid = didFromPublicKey(buyer.publicKey);
/** The buyer's PeerId (its DID's key): only it may open its jobs' exec streams (EXEC_NOT_BUYER). */
const buyerPeer = peerIdFromDid(buyerDid).toString();
let nonce = 0;

function makeJob(over: Partial<Job> = {}, input = utf8('job input'), signer = buyer): Opened<Job> {
  return seal(
    T.job,
    {
      workload: 'builtin.sha256',
      requirements: {},
      maxPrice: { amount: '0.01', currency: 'USD' },
      announcedAt: NOW,
      deadline: NOW + 60_000,
      timeoutMs: 10_000,
      input: { hash: hashHex(input), size: input.length },
      inputSealed: 'no',
      nonce: Uint8Array.of(nonce++ & 0xff, (nonce >> 8) & 0xff),
      ...over,
    },
    signer,
  );
}

function makeSelection(job: Opened<Job>, offer: Opened<Offer>, signer = buyer, buyerField = buyerDid): Opened<Selection> {
  return seal(T.selection, { job: job.address, buyer: buyerField, policy: 'balanced', winner: offer.address, considered: [{ provider: offer.signer, offer: offer.address }], decidedAt: NOW }, signer);
}

function frame(job: Opened<Job>, offer: Opened<Offer>, selection: Opened<Selection>, input: Uint8Array) {
  return { t: 'exec', selection: selection.bytes, job: job.bytes, offer: offer.bytes, input };
}

/** An exec stream whose request is `requests` (then the caller's end). */
function execIO(requests: unknown[], send: (f: ExecFrame) => Promise<void>, signal: AbortSignal): ExecIO {
  const queue = [...requests];
  return { next: async () => queue.shift(), send, signal, reserve: () => {}, setDeadline: () => {} };
}

async function exec(provider: Provider, f: unknown, signal = new AbortController().signal): Promise<ExecFrame[]> {
  const frames: ExecFrame[] = [];
  await provider.handleExec(execIO([f], async (x) => void frames.push(x), signal));
  return frames;
}

/** Start, hear a job, return the offer the provider made for it. */
async function offered(s: ReturnType<typeof setup>, job: Opened<Job>): Promise<Opened<Offer>> {
  if (!s.provider.advert) await s.provider.start();
  const o = await s.provider.onJob(job);
  assert.ok(o, 'the provider offers on the job');
  return o;
}

function refusal(frames: ExecFrame[]): string | undefined {
  assert.equal(frames.length, 1, `expected a single refused frame, got ${frames.map((f) => f.t).join(',')}`);
  const f = frames[0]!;
  assert.equal(f.t, 'refused');
  return f.t === 'refused' ? f.code : undefined;
}

describe('Provider: its workloads', () => {
  test('an executor its config cannot make stops the provider at start, naming the workload\'s key', () => {
    const config = parseConfig({
      roles: ['provider'],
      provider: { workloads: { 'acme.render': { executor: { type: 'exec', command: ['render'], cwd: '/nonexistent/c0mpute-test' }, price: { amount: '0.001', currency: 'USD' } } } },
    }).provider!;
    assert.throws(
      () => new Provider({ config } as unknown as ProviderDeps),
      (e: unknown) => e instanceof C0Error && e.code === 'CONFIG_INVALID' && e.field === 'provider.workloads.acme.render.executor.cwd' && /^provider\.workloads\.acme\.render\.executor: exec executor's cwd \/nonexistent/.test(e.message),
    );
  });
});

describe('Provider: advert', () => {
  test('start() publishes an advert with the configured workloads, prices, hardware and box key', async () => {
    const s = setup();
    await s.provider.start();
    assert.equal(s.published.length, 1);
    const { kind, env } = s.published[0]!;
    assert.equal(kind, 'advert');
    const a = open(env.bytes, T.advert);
    assert.equal(a.signer, s.did);
    assert.deepEqual(a.record.workloads, ['acme.cat', 'builtin.sha256', 'builtin.sleep']);
    assert.deepEqual(a.record.prices, [
      { workload: 'acme.cat', unit: 'job', price: { amount: '0.001', currency: 'USD' } },
      { workload: 'builtin.sha256', unit: 'job', price: { amount: '0.001', currency: 'USD' } },
      { workload: 'builtin.sleep', unit: 'second', price: { amount: '0.002', currency: 'USD' } },
    ]);
    assert.deepEqual(a.record.boxKey, s.box.publicKey);
    assert.deepEqual(a.record.hardware, { cpuCores: 4, memoryMiB: 8192 });
    assert.equal(a.record.tier, 'standard');
    assert.equal(a.record.region, 'eu-west');
    assert.equal(a.record.issuedAt, NOW);
    assert.equal(a.record.expiresAt, NOW + s.config.advertLifetimeMs);
    assert.equal(s.provider.advert?.address, a.address);
  });

  test('in a large market the advert lives longer and is republished less often (advert-rate.ts); a small one keeps the configured lifetime', async (t) => {
    let live = 40;
    const s = setup({ liveInMarket: () => live });
    const small = await s.provider.publishAdvert();
    assert.equal(small.record.expiresAt - small.record.issuedAt, s.config.advertLifetimeMs, 'a small market: as configured');
    live = 1_250; // 10k providers over 16 markets, half of them in two
    const delays: number[] = [];
    t.mock.method(globalThis, 'setTimeout', (fn: () => void, ms: number) => {
      delays.push(ms);
      return { unref() {}, ref() {}, hasRef: () => false, refresh() {}, [Symbol.toPrimitive]: () => 0 } as unknown as NodeJS.Timeout;
    });
    const large = await s.provider.publishAdvert();
    assert.equal(large.record.expiresAt - large.record.issuedAt, 2_500_000, 'lifetime 2 × 1,250 s: the market carries one advert a second');
    assert.deepEqual(delays, [1_250_000], 'republished at half the lifetime');
    await s.provider.stop();
  });

  test('an advert no peer heard is said once at info; its retries are at debug, until one is heard (QA qaOps F10)', async (t) => {
    let reached = 0;
    const lines: Array<{ level: number; msg: string }> = [];
    const s = setup({ reached: () => reached, log: pino({ level: 'debug' }, { write: (l: string) => void lines.push(JSON.parse(l) as never) }) });
    t.mock.method(globalThis, 'setTimeout', () => ({ unref() {}, ref() {}, hasRef: () => false, refresh() {}, [Symbol.toPrimitive]: () => 0 }) as unknown as NodeJS.Timeout);
    for (let i = 0; i < 5; i++) await s.provider.publishAdvert();
    reached = 2;
    await s.provider.publishAdvert();
    reached = 0;
    await s.provider.publishAdvert();
    const said = lines.filter((l) => /^advert published/.test(l.msg)).map((l) => [l.level, l.msg.split(';')[0]!.split(':')[0]]);
    assert.deepEqual(said, [
      [30, 'advert published'],
      [20, 'advert published again'],
      [20, 'advert published again'],
      [20, 'advert published again'],
      [20, 'advert published again'],
      [30, 'advert published'],
      [30, 'advert published'],
    ]);
    await s.provider.stop();
  });

  test('the seq is persisted and increases with every advert, also across a restart with a stored seq', async () => {
    const s = setup();
    const a1 = await s.provider.publishAdvert();
    const a2 = await s.provider.publishAdvert(); // same clock reading: still a higher seq
    s.clock.advance(10);
    const a3 = await s.provider.publishAdvert();
    assert.ok(a1.record.seq < a2.record.seq && a2.record.seq < a3.record.seq);
    assert.deepEqual(s.seqs, [a1.record.seq, a2.record.seq, a3.record.seq]);

    // A stored seq ahead of the clock (clock stepped back) is still exceeded.
    const ahead = setup({ loadSeq: NOW + 1_000_000 });
    const a = await ahead.provider.publishAdvert();
    assert.equal(a.record.seq, NOW + 1_000_001);
    assert.deepEqual(ahead.seqs, [NOW + 1_000_001]);
  });
});

describe('Provider: offers', () => {
  test('an eligible job priced within maxPrice gets an offer, published with the advert it cites', async () => {
    const s = setup();
    await s.provider.start();
    const job = makeJob();
    const o = await s.provider.onJob(job);
    assert.ok(o);
    const last = s.published.at(-1)!;
    assert.equal(last.kind, 'offer');
    assert.equal(last.withAdvert?.address, s.provider.advert!.address);
    const opened = open(last.env.bytes, T.offer);
    assert.equal(opened.signer, s.did);
    assert.equal(opened.record.job, job.address);
    assert.equal(opened.record.advert, s.provider.advert!.address);
    assert.deepEqual(opened.record.price, { amount: '0.001', currency: 'USD' });
    assert.equal(opened.record.durationMs, 1000);
    assert.equal(opened.record.issuedAt, NOW);
    assert.ok(opened.record.startBy + opened.record.durationMs <= job.record.deadline);
    assert.deepEqual(s.eligibilityCalls, [{ job: job.address, advert: s.provider.advert!.address, now: NOW }]);
    // Once per job.
    assert.equal(await s.provider.onJob(job), undefined);
  });

  test('a price exactly at maxPrice is offered', async () => {
    const s = setup();
    await s.provider.start();
    assert.ok(await s.provider.onJob(makeJob({ maxPrice: { amount: '0.0010', currency: 'USD' } })));
  });

  test('no offer when not eligible, too expensive, in another currency, unable to finish by the deadline, or for its own job', async () => {
    const notEligible = setup({ eligibility: [{ code: 'ELIG_GPU_COUNT' }, { code: 'ELIG_REGION' }] });
    await notEligible.provider.start();
    assert.equal(await notEligible.provider.onJob(makeJob()), undefined);

    const s = setup();
    assert.equal(await s.provider.onJob(makeJob()), undefined, 'no advert yet: no offer');
    await s.provider.start();
    assert.equal(await s.provider.onJob(makeJob({ maxPrice: { amount: '0.000999', currency: 'USD' } })), undefined, 'too expensive');
    assert.equal(await s.provider.onJob(makeJob({ maxPrice: { amount: '1', currency: 'EUR' } })), undefined, 'other currency');
    assert.equal(await s.provider.onJob(makeJob({ deadline: NOW + 999 })), undefined, 'cannot finish before the deadline');
    assert.equal(await s.provider.onJob(makeJob({ deadline: NOW + 1000 })), undefined, 'would have to start right now');
    assert.equal(await s.provider.onJob(makeJob({ workload: 'infer.llm' })), undefined, 'workload not run here');
    assert.equal(await s.provider.onJob(makeJob({}, utf8('x'), s.signer)), undefined, 'its own job');
    assert.equal(s.published.filter((p) => p.kind === 'offer').length, 0);
    // The same provider does offer on a fitting job (the refusals above were for their reasons).
    assert.ok(await s.provider.onJob(makeJob()));
  });

  test('offers per job: outranked on price, a gossiped job gets no offer; the buyer pushing it, or naming providers, gets one', async () => {
    let ahead = 8;
    const asked: Array<{ job: string; limit: number }> = [];
    const s = setup({ rankAhead: (job, _advert, limit) => (asked.push({ job: job.address, limit }), ahead) });
    await s.provider.start();
    const job = makeJob();
    assert.equal(await s.provider.onJob(job), undefined, 'eight providers ask less (the default offerRank): no offer');
    assert.deepEqual(asked, [{ job: job.address, limit: 8 }]);
    // The same job again (a sync brings it later, when the view may say otherwise): decided, not ranked again.
    ahead = 0;
    assert.equal(await s.provider.onJob(job), undefined);
    assert.equal(asked.length, 1);
    ahead = 8;
    // The buyer pushed it (job-push/1): quoted whatever the rank.
    assert.ok(await s.provider.onJob(job, { invited: true }));
    // A job naming its providers (an allowlist): the buyer chose; no rank is asked.
    const named = makeJob({ requirements: { allowlist: [s.did] } });
    assert.ok(await s.provider.onJob(named));
    assert.equal(asked.length, 1);
    // Seven ahead: within the rank.
    ahead = 7;
    assert.ok(await s.provider.onJob(makeJob()));
    // offerRank 0: every fitting job is quoted, the rank never asked.
    let never = 0;
    const all = setup({ offerRank: 0, rankAhead: () => (never++, 100) });
    await all.provider.start();
    assert.ok(await all.provider.onJob(makeJob()));
    assert.equal(never, 0);
  });

  test('an offer near the deadline expires early enough to finish by it', async () => {
    const s = setup();
    await s.provider.start();
    const o = await s.provider.onJob(makeJob({ deadline: NOW + 5000 }));
    assert.ok(o);
    assert.equal(o.record.startBy, NOW + 4000);
    assert.ok(o.record.expiresAt <= o.record.startBy);
  });
});

describe('Provider: execution', () => {
  test('a valid request: accepted → output → receipt, completed, signed, linked and priced as offered', async () => {
    const s = setup();
    const input = utf8('hash me');
    const job = makeJob({}, input);
    const offer = await offered(s, job);
    const frames = await exec(s.provider, frame(job, offer, makeSelection(job, offer), input));
    const kinds = frames.map((f) => f.t).filter((t) => t !== 'progress');
    assert.deepEqual(kinds, ['accepted', 'output', 'receipt']);
    const out = frames.find((f) => f.t === 'output');
    assert.ok(out && out.t === 'output');
    assert.equal(Buffer.from(out.data).toString(), createHash('sha256').update(input).digest('hex'));
    const rf = frames.at(-1)!;
    assert.ok(rf.t === 'receipt');
    const r = open(rf.receipt, T.receipt);
    assert.equal(r.signer, s.did);
    assert.equal(r.record.status, 'completed');
    assert.equal(r.record.provider, s.did);
    assert.equal(r.record.buyer, buyerDid);
    assert.equal(r.record.job, job.address);
    assert.equal(r.record.offer, offer.address);
    assert.equal(r.record.workload, 'builtin.sha256');
    assert.equal(r.record.outputHash, hashHex(out.data));
    assert.equal(r.record.outputSize, out.data.length);
    assert.equal(r.record.inputHash, job.record.input.hash);
    assert.deepEqual(r.record.price, offer.record.price);
    assert.equal(r.record.failure, undefined);
    assert.equal(r.record.energy.grade, 'Estimator');
    assert.ok(r.record.completedAt >= r.record.startedAt);
    // Stored, counted and gossiped.
    assert.deepEqual(
      s.receipts.map((x) => x.address),
      [r.address],
    );
    assert.deepEqual(s.outcomes, ['completed:builtin.sha256']);
    assert.equal(s.published.at(-1)!.kind, 'receipt');
    assert.equal(s.published.at(-1)!.env.address, r.address);
    assert.equal(s.provider.running, 0);
    // Finished, it still counts as started: an open order's won claim must not keep a slot for a job that already ran.
    assert.equal(s.provider.runs(job.address), true);
    // The same job does not run twice.
    assert.equal(refusal(await exec(s.provider, frame(job, offer, makeSelection(job, offer), input))), 'EXEC_ALREADY_RUN');
  });

  test('a job’s timeout timer ends with its run: a huge timeoutMs and a deadline months away leave no timer (nor its AbortController) behind once the receipt is signed', async () => {
    // count the long timers set and not yet fired or cleared (they are unref'd: process.getActiveResourcesInfo misses them)
    const { pending, restore } = watchTimers(3_600_000);
    try {
      const s = setup();
      for (const [timeoutMs, days] of [
        [2 ** 53 - 1, 89], // past the longest Node timer (24.8 days): a chain of timers holding the run's AbortController for up to 89 days
        [86_400_000, 2],
      ] as const) {
        const input = utf8(`hash me ${days}`);
        const job = makeJob({ timeoutMs, deadline: NOW + days * 86_400_000 }, input);
        const offer = await offered(s, job);
        pending.clear();
        const frames = await exec(s.provider, frame(job, offer, makeSelection(job, offer), input));
        assert.equal(frames.at(-1)!.t, 'receipt');
        assert.equal(pending.size, 0, `no timer outlives the run (timeoutMs ${timeoutMs}, deadline in ${days} days)`);
      }
    } finally {
      restore();
    }
  });

  test('a sealed input opens with the provider’s box key and runs', async () => {
    const s = setup();
    const plain = utf8('secret input');
    const job = makeJob({ inputSealed: 'yes' }, plain);
    const offer = await offered(s, job);
    const frames = await exec(s.provider, frame(job, offer, makeSelection(job, offer), sealBox(plain, s.box.publicKey)));
    const out = frames.find((f) => f.t === 'output');
    assert.ok(out && out.t === 'output');
    assert.equal(Buffer.from(out.data).toString(), createHash('sha256').update(plain).digest('hex'));
    const rf = frames.at(-1)!;
    assert.ok(rf.t === 'receipt');
    assert.equal(open(rf.receipt, T.receipt).record.status, 'completed');
  });

  test('a sealed input for another key is refused and nothing runs', async () => {
    const s = setup();
    const plain = utf8('secret input');
    const job = makeJob({ inputSealed: 'yes' }, plain);
    const offer = await offered(s, job);
    const frames = await exec(s.provider, frame(job, offer, makeSelection(job, offer), sealBox(plain, generateBoxKeyPair().publicKey)));
    assert.equal(refusal(frames), 'BOX_OPEN_FAILED');
    assert.equal(s.receipts.length, 0);
  });

  test('refusals: selection not signed by the buyer, another provider’s offer, input mismatch, not the winner', async () => {
    const s = setup();
    const input = utf8('the input');
    const job = makeJob({}, input);
    const offer = await offered(s, job);

    const stranger = Ed25519Signer.generate();
    assert.equal(refusal(await exec(s.provider, frame(job, offer, makeSelection(job, offer, stranger), input))), 'EXEC_SELECTION_UNAUTHORISED');
    // Signed by the buyer but naming someone else as the buyer.
    assert.equal(refusal(await exec(s.provider, frame(job, offer, makeSelection(job, offer, buyer, didFromPublicKey(stranger.publicKey)), input))), 'EXEC_SELECTION_UNAUTHORISED');

    const other = Ed25519Signer.generate();
    const otherOffer = seal(T.offer, { ...offer.record }, other);
    assert.equal(refusal(await exec(s.provider, frame(job, otherOffer, makeSelection(job, otherOffer), input))), 'EXEC_NOT_MY_OFFER');

    assert.equal(refusal(await exec(s.provider, frame(job, offer, makeSelection(job, offer), utf8('the inpuT')))), 'EXEC_INPUT_MISMATCH');
    assert.equal(refusal(await exec(s.provider, frame(job, offer, makeSelection(job, offer), utf8('the input!')))), 'EXEC_INPUT_MISMATCH');

    // A selection of another job, or naming another winner.
    const job2 = makeJob({}, input);
    assert.equal(refusal(await exec(s.provider, frame(job, offer, makeSelection(job2, offer), input))), 'EXEC_NOT_SELECTED');
    const offer2 = await offered(s, job2);
    assert.equal(refusal(await exec(s.provider, frame(job2, offer2, makeSelection(job2, offer), input))), 'EXEC_NOT_SELECTED');
    // The offer answers another job.
    assert.equal(refusal(await exec(s.provider, frame(job2, offer, makeSelection(job2, offer), input))), 'EXEC_OFFER_MISMATCH');

    assert.equal(refusal(await exec(s.provider, { t: 'exec', job: job.bytes })), 'EXEC_BAD_REQUEST');

    // None of these ran anything or signed anything.
    assert.equal(s.receipts.length, 0);
    assert.equal(s.published.filter((p) => p.kind === 'receipt').length, 0);
    // And the genuine request still runs afterwards.
    const ok = await exec(s.provider, frame(job, offer, makeSelection(job, offer), input));
    assert.equal(ok.at(-1)!.t, 'receipt');
  });

  test('a refused exec stream: an invalid request costs its sender abuse points, one an honest buyer meets does not; the log gets a line per peer and code, not per stream', async () => {
    const lines: Array<{ msg: string; peer?: string; code?: string }> = [];
    const struck: string[] = [];
    const s = setup({ log: pino({ level: 'info' }, { write: (l: string) => void lines.push(JSON.parse(l) as never) }), strike: (peer) => void struck.push(peer) });
    const input = utf8('late');
    const job = makeJob({ deadline: NOW + 10_000 }, input);
    const offer = await offered(s, job);
    const from = async (peer: string, f: unknown): Promise<string | undefined> => {
      const frames: ExecFrame[] = [];
      await s.provider.handleExec({ ...execIO([f], async (x) => void frames.push(x), new AbortController().signal), peer });
      return refusal(frames);
    };
    for (let i = 0; i < 50; i++) assert.equal(await from('peerA', { t: 'nope' }), 'EXEC_BAD_REQUEST');
    for (let i = 0; i < 50; i++) assert.equal(await from('peerA', { ...frame(job, offer, makeSelection(job, offer), input), job: Uint8Array.of(1) }), 'ENVELOPE_MALFORMED');
    // a selection another key signed: forged, not a mistake
    assert.equal(await from('peerB', frame(job, offer, makeSelection(job, offer, Ed25519Signer.generate()), input)), 'EXEC_SELECTION_UNAUTHORISED');
    // an honest buyer that came too late is not charged
    s.clock.set(offer.record.startBy + 1);
    for (let i = 0; i < 5; i++) assert.equal(await from(buyerPeer, frame(job, offer, makeSelection(job, offer), input)), 'EXEC_OFFER_LAPSED');
    assert.deepEqual(struck, [...Array<string>(100).fill('peerA'), 'peerB']);
    const refused = lines.filter((l) => l.msg.startsWith('exec request refused'));
    assert.deepEqual(refused.map((l) => `${l.peer} ${l.code}`), ['peerA EXEC_BAD_REQUEST', 'peerA ENVELOPE_MALFORMED', 'peerB EXEC_SELECTION_UNAUTHORISED', `${buyerPeer} EXEC_OFFER_LAPSED`]);
  });

  test('a peer flooding exec/1 with bad frames is charged on the network’s abuse score (abusePerInvalid) and hung up on at disconnectAt', async () => {
    const reports = new AbuseReports();
    const c = fakeClock(NOW);
    const guard = new FloodGuard({ abuseHalfLifeMs: 60_000, abusePerInvalid: 10 }, c);
    const hung: string[] = [];
    const policy = new AbusePolicy(guard, { disconnectAt: 400, reports }, c, silentLogger(), (p) => void hung.push(p));
    const s = setup({ strike: reports.invalid });
    const bad = async (peer: string) => {
      const frames: ExecFrame[] = [];
      await s.provider.handleExec({ ...execIO([{ t: 'exec', job: 1 }], async (x) => void frames.push(x), new AbortController().signal), peer });
      assert.equal(refusal(frames), 'EXEC_BAD_REQUEST');
    };
    await bad('honest');
    for (let i = 0; i < 39; i++) await bad('flooder');
    assert.equal(policy.appSpecificScore('flooder'), -390);
    assert.equal(policy.appSpecificScore('honest'), -10, 'one bad frame: 10 points, far from a ban');
    assert.deepEqual(hung, []);
    await bad('flooder');
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(hung, ['flooder'], 'the 40th bad frame reaches disconnectAt');
    assert.equal(policy.denied('flooder'), true);
  });

  test('a lapsed offer (past its startBy) is refused', async () => {
    const s = setup();
    const input = utf8('late');
    const job = makeJob({ deadline: NOW + 10_000 }, input);
    const offer = await offered(s, job);
    s.clock.set(offer.record.startBy + 1);
    assert.equal(refusal(await exec(s.provider, frame(job, offer, makeSelection(job, offer), input))), 'EXEC_OFFER_LAPSED');
  });

  test('a failing executor (deadline) yields a signed failed receipt with EXEC_TIMEOUT and no output', async () => {
    const s = setup();
    const input = utf8('slow');
    const job = makeJob({ workload: 'builtin.sleep', params: '60000', timeoutMs: 30 }, input);
    const offer = await offered(s, job);
    const frames = await exec(s.provider, frame(job, offer, makeSelection(job, offer), input));
    assert.deepEqual(
      frames.map((f) => f.t).filter((t) => t !== 'progress'),
      ['accepted', 'receipt'],
    );
    const rf = frames.at(-1)!;
    assert.ok(rf.t === 'receipt');
    const r = open(rf.receipt, T.receipt);
    assert.equal(r.signer, s.did);
    assert.equal(r.record.status, 'failed');
    assert.equal(r.record.failure?.code, 'EXEC_TIMEOUT');
    assert.equal(r.record.outputHash, undefined);
    assert.deepEqual(r.record.price, offer.record.price);
    assert.deepEqual(s.outcomes, ['failed:builtin.sleep']);
    assert.equal(s.receipts.length, 1);
    assert.equal(s.provider.running, 0);
  });

  test('the buyer going away stops the work with a signed failed receipt', async () => {
    const s = setup();
    const input = utf8('bye');
    const job = makeJob({ workload: 'builtin.sleep', params: '60000', timeoutMs: 60_000 }, input);
    const offer = await offered(s, job);
    const gone = new AbortController();
    const frames: ExecFrame[] = [];
    const run = s.provider.handleExec(
      execIO(
        [frame(job, offer, makeSelection(job, offer), input)],
        async (f) => {
          frames.push(f);
          if (f.t === 'accepted') setImmediate(() => gone.abort());
        },
        gone.signal,
      ),
    );
    await run;
    const r = s.receipts[0];
    assert.ok(r);
    assert.equal(r.record.status, 'failed');
    assert.equal(r.record.failure?.code, 'EXEC_BUYER_GONE');
  });

  /**
   * Run a 60 s sleep on a provider whose freezes are read off a clock the test moves: once the work is accepted, the
   * process is frozen `frozenMs` (no tick of the watch meanwhile) and the buyer closes the stream.
   */
  async function frozenThenGone(frozenMs: number, pool?: ProviderPoolHooks): Promise<ReturnType<typeof setup>> {
    let t = 0;
    const stalls = new StallWatch({ now: () => t, every: () => () => {} });
    const s = setup({ stalls, ...(pool ? { pool } : {}) });
    const input = utf8(`frozen ${frozenMs}`);
    const job = makeJob({ workload: 'builtin.sleep', params: '60000', timeoutMs: 60_000 }, input);
    const offer = await offered(s, job);
    const gone = new AbortController();
    await s.provider.handleExec(
      execIO(
        [frame(job, offer, makeSelection(job, offer), input)],
        async (f) => {
          if (f.t === 'accepted')
            setImmediate(() => {
              t += frozenMs;
              gone.abort();
            });
        },
        gone.signal,
      ),
    );
    return s;
  }

  test('a buyer that gave up while this provider was frozen: EXEC_PROVIDER_STALLED, not EXEC_BUYER_GONE (QA qaMatch F10)', async () => {
    // 40 s without a tick (past the tick due after 1 s), past the 30 s a buyer without keepalives waits
    const s = await frozenThenGone(41_000);
    const r = s.receipts[0]!;
    assert.equal(r.record.status, 'failed');
    assert.equal(r.record.failure?.code, 'EXEC_PROVIDER_STALLED');
    assert.match(r.record.failure!.message, /did not run for 40 s while the work ran/);
  });

  test('the work itself is stopped with the code its receipt carries: EXEC_PROVIDER_STALLED when frozen past what the buyer waits, else EXEC_BUYER_GONE (QA ffGang F6)', async () => {
    // a gang member's run records the reason its work was stopped (member-job.ts): it must not blame the buyer
    for (const [frozenMs, want] of [
      [41_000, 'EXEC_PROVIDER_STALLED'],
      [0, 'EXEC_BUYER_GONE'],
    ] as const) {
      const seen: string[] = [];
      const s = await frozenThenGone(frozenMs, {
        advert: (a) => a,
        receipt: (r) => r,
        mayQuote: () => true,
        run: (_j, _o, c) =>
          new Promise((_r, reject) => {
            const stop = () => {
              seen.push((c.signal.reason as C0Error).code);
              reject(c.signal.reason);
            };
            if (c.signal.aborted) stop();
            else c.signal.addEventListener('abort', stop, { once: true });
          }),
        closed: async () => {},
        abandoned: () => {},
      });
      assert.deepEqual(seen, [want], `frozen ${frozenMs} ms: the work's own stop`);
      assert.equal(s.receipts[0]!.record.failure?.code, want, `frozen ${frozenMs} ms: the receipt`);
    }
  });

  test('work that finished during such a freeze is EXEC_PROVIDER_STALLED too, its output not delivered; an unfrozen run still completes (QA qaOrd F4)', async () => {
    // (without keepalives, a buyer that closed the stream during the freeze: the test above, EXEC_BUYER_GONE turned)
    for (const [name, keepalive, frozen, want] of [
      ['keepalives asked, frozen past their silence limit, the end not yet read', true, 41_000, 'EXEC_PROVIDER_STALLED'],
      ['no keepalives, frozen, the stream still open: the buyer may still be there', false, 41_000, undefined],
      ['keepalives asked, not frozen', true, 0, undefined],
    ] as const) {
      let t = 0;
      const stalls = new StallWatch({ now: () => t, every: () => () => {} });
      const s = setup({ stalls });
      const input = utf8(`finished ${name}`);
      const job = makeJob({ workload: 'builtin.sleep', params: '20', timeoutMs: 60_000 }, input);
      const offer = await offered(s, job);
      const gone = new AbortController();
      await s.provider.handleExec(
        execIO(
          [{ ...frame(job, offer, makeSelection(job, offer), input), ...(keepalive ? { keepalive: 'yes' } : {}) }],
          async (f) => {
            // the freeze while the 20 ms of work runs; the buyer's end is not read before the work returns
            if (f.t === 'accepted') t += frozen;
          },
          gone.signal,
        ),
      );
      const r = s.receipts[0]!;
      assert.equal(r.record.failure?.code, want, name);
      assert.equal(r.record.status, want ? 'failed' : 'completed', name);
      if (want) assert.match(r.record.failure!.message, /the work finished, but its output was not delivered/, name);
    }
  });

  test('a failure message cut through an emoji: the failed receipt is signed, and the slot is free for the next job', async () => {
    const s = setup({ slots: 1 });
    const input = utf8('emoji');
    // 41 code units ending in a surrogate pair: EXEC_BAD_PARAMS quotes the first 40 without splitting the pair. Such
    // params are not quoted at all (bad-params), so the refusal's text is only a log line, still well formed.
    const params = 'a'.repeat(39) + '\u{1F600}';
    assert.equal(await s.provider.onJob(makeJob({ workload: 'builtin.sleep', params }, input)), undefined);
    const refused = s.provider.paramsRefusal(makeJob({ workload: 'builtin.sleep', params }, input));
    assert.equal(refused?.code, 'EXEC_BAD_PARAMS');
    assert.doesNotMatch(refused.message, /[\uD800-\uDBFF](?![\uDC00-\uDFFF])/, 'no lone high surrogate');
    // A long message (an exec command's stderr line) cut at 1000 through a pair: signed too.
    const long = setup({ slots: 1, pool: { advert: (a) => a, receipt: (x) => x, mayQuote: () => true, run: async () => { throw new C0Error('EXEC_FAILED', 'x'.repeat(999) + '\u{1F600}'); }, closed: async () => {}, abandoned: () => {} } });
    const j3 = makeJob({}, input);
    const o3 = await offered(long, j3);
    const f3 = await exec(long.provider, frame(j3, o3, makeSelection(j3, o3), input));
    const r3 = f3.at(-1)!;
    assert.ok(r3.t === 'receipt', `frames: ${f3.map((f) => f.t).join(',')}`);
    assert.equal(open(r3.receipt, T.receipt).record.failure?.message, 'x'.repeat(999));
    assert.equal(long.provider.running, 0);
    // The refused params took no slot: the next job runs on the one slot.
    const i2 = utf8('next');
    const j2 = makeJob({}, i2);
    const o2 = await offered(s, j2);
    const f2 = await exec(s.provider, frame(j2, o2, makeSelection(j2, o2), i2));
    assert.equal(f2.at(-1)?.t, 'receipt');
    assert.equal(s.receipts.length, 1);
  });

  test('canTake (the claimer\'s canRun) answers as the quote path does: a priced workload, an input within bounds, params it takes', async () => {
    const input = utf8('take');
    const cases: Array<[string, Opened<Job>]> = [
      ['takes', makeJob({}, input)],
      ['input too large', makeJob({ input: { hash: hashHex(input), size: setup().config.maxInputBytes + 1 } }, input)],
      ['bad params', makeJob({ workload: 'builtin.sleep', params: 'not a count' }, input)],
      ['workload not priced', makeJob({ workload: 'acme.unpriced' }, input)],
    ];
    for (const [name, job] of cases) {
      const s = setup();
      await s.provider.start();
      assert.equal(s.provider.canTake(job), name === 'takes', name);
      assert.equal((await s.provider.onJob(job)) !== undefined, name === 'takes', name);
    }
  });

  test('a receipt that cannot be signed frees the slot anyway, and is logged', async () => {
    const lines: string[] = [];
    const log = pino({ level: 'error' }, { write: (l: string) => void lines.push(l) });
    const calls: string[] = [];
    // A pool's shaping that yields a receipt the schema refuses stands in for any failure to sign.
    const s = setup({ slots: 1, log, pool: { advert: (a) => a, receipt: (r) => ({ ...r, failure: { code: 'bad code', message: '' } }), mayQuote: () => true, run: async () => utf8('out'), closed: async () => void calls.push('closed'), abandoned: (j) => void calls.push(`abandoned:${j}`) } });
    const input = utf8('unsignable');
    const job = makeJob({}, input);
    const offer = await offered(s, job);
    await assert.rejects(exec(s.provider, frame(job, offer, makeSelection(job, offer), input)), (e: unknown) => e instanceof C0Error && e.code.startsWith('RECORD_'));
    assert.equal(s.provider.running, 0);
    assert.deepEqual(calls, [`abandoned:${job.address}`]);
    assert.equal(s.receipts.length, 0);
    assert.ok(lines.some((l) => l.includes('the receipt could not be signed') && l.includes(job.address)), lines.join(''));
  });

  test('two requests for the same job at once: it runs once', async () => {
    const s = setup({ slots: 2 });
    const input = utf8('once');
    const job = makeJob({ workload: 'builtin.sleep', params: '50' }, input);
    const offer = await offered(s, job);
    const f = frame(job, offer, makeSelection(job, offer), input);
    const [a, b] = await Promise.all([exec(s.provider, f), exec(s.provider, f)]);
    const ends = [a.at(-1)!.t, b.at(-1)!.t].sort();
    assert.deepEqual(ends, ['receipt', 'refused']);
    const refused = [a, b].find((x) => x.at(-1)!.t === 'refused')!;
    assert.equal(refusal(refused), 'EXEC_ALREADY_RUN');
    assert.equal(s.receipts.length, 1);
  });

  test('requests beyond the slots at once: the extra one is refused EXEC_BUSY', async () => {
    const s = setup({ slots: 1 });
    const i1 = utf8('one');
    const i2 = utf8('two');
    const j1 = makeJob({ workload: 'builtin.sleep', params: '50' }, i1);
    const j2 = makeJob({ workload: 'builtin.sleep', params: '50' }, i2);
    const o1 = await offered(s, j1);
    const o2 = await offered(s, j2);
    const [a, b] = await Promise.all([exec(s.provider, frame(j1, o1, makeSelection(j1, o1), i1)), exec(s.provider, frame(j2, o2, makeSelection(j2, o2), i2))]);
    const ends = [a.at(-1)!, b.at(-1)!];
    assert.equal(ends.filter((f) => f.t === 'receipt').length, 1);
    const refused = ends.find((f) => f.t === 'refused');
    assert.ok(refused && refused.t === 'refused');
    assert.equal(refused.code, 'EXEC_BUSY');
  });
});

describe('Provider: only admitted work on an overlay with a steward (pool/1 §1.1, §2.1)', () => {
  const stewardKey = Ed25519Signer.generate();
  const stewardDid = didFromPublicKey(stewardKey.publicKey);
  const admitted = (claim: string, signer = stewardKey): Uint8Array => sealEntries([{ event: 'Admitted', claim, entitlement: 'ml', reserved: { uj: 1_000_000, grade: 'Estimator' }, devices: 1, borrowed_uj: 0 }], signer)[0]!.bytes;
  const released = (claim: string): Uint8Array =>
    sealEntries([{ event: 'Admitted', claim, entitlement: 'ml', reserved: { uj: 1_000_000, grade: 'Estimator' }, devices: 1, borrowed_uj: 0 }, { event: 'Released', claim, actual: { uj: 5, grade: 'Estimator' } }] as PoolEvent[], stewardKey)[1]!.bytes;
  const withProof = (f: ReturnType<typeof frame>, admission?: Uint8Array) => ({ ...f, ...(admission ? { admission } : {}) });

  test('an exec without the steward’s Admitted entry is refused EXEC_NOT_ADMITTED before a slot is taken; nothing runs or is signed', async () => {
    const asked: string[] = [];
    const s = setup({ steward: { did: stewardDid, admissionOf: async (j) => void asked.push(j.address) } });
    const input = utf8('unadmitted');
    const job = makeJob({}, input);
    const offer = await offered(s, job);
    const frames = await exec(s.provider, frame(job, offer, makeSelection(job, offer), input));
    assert.equal(refusal(frames), 'EXEC_NOT_ADMITTED');
    assert.match((frames[0] as { message: string }).message, new RegExp(stewardDid));
    // a buyer that sent no proof (one before this version) has the steward asked: it had none
    assert.deepEqual(asked, [job.address]);
    assert.equal(s.receipts.length, 0);
    assert.equal(s.provider.running, 0);
  });

  test('a proof that does not bind is refused: another job’s claim, another key, a Released entry, bytes that are not an entry', async () => {
    const s = setup({ steward: { did: stewardDid } });
    const input = utf8('forged');
    const job = makeJob({}, input);
    const offer = await offered(s, job);
    const f = frame(job, offer, makeSelection(job, offer), input);
    for (const proof of [admitted(makeJob().address), admitted(job.address, Ed25519Signer.generate()), released(job.address), job.bytes]) {
      assert.equal(refusal(await exec(s.provider, withProof(f, proof))), 'EXEC_NOT_ADMITTED');
    }
    assert.equal(s.receipts.length, 0);
    assert.equal(s.provider.running, 0);
  });

  test('the steward’s Admitted entry for the job runs it; a gang member job runs on the gang’s entry the steward gives for it; a buyer without one runs on the entry the steward gives', async () => {
    const gang = 'sha256:' + 'ab'.repeat(32);
    const asked: string[] = [];
    // the steward: a job's own claim for the plain jobs of 3 bytes, the gang's entry for the job it bound to the gang
    let bound = '';
    const s = setup({
      slots: 3,
      steward: {
        did: stewardDid,
        admissionOf: async (j) => {
          asked.push(j.address);
          if (j.address === bound) return admitted(gang);
          return j.record.params === undefined && j.record.input.size === 3 ? admitted(j.address) : undefined;
        },
      },
    });
    const input = utf8('admitted');
    const job = makeJob({}, input);
    const offer = await offered(s, job);
    const frames = await exec(s.provider, withProof(frame(job, offer, makeSelection(job, offer), input), admitted(job.address)));
    assert.equal(frames.at(-1)?.t, 'receipt');
    assert.deepEqual(asked, [], 'the buyer’s proof of the job’s own claim settles it');
    const member = makeJob({ workload: 'acme.cat', params: JSON.stringify({ claim: gang, member: 0 }) }, input);
    const mo = await offered(s, member);
    const mf = frame(member, mo, makeSelection(member, mo), input);
    // the buyer's gang entry proves nothing (any entry is public): the steward has not bound this job
    assert.equal(refusal(await exec(s.provider, withProof(mf, admitted(gang)))), 'EXEC_NOT_ADMITTED');
    bound = member.address;
    assert.equal((await exec(s.provider, withProof(mf, admitted(gang)))).at(-1)?.t, 'receipt');
    assert.deepEqual(asked, [member.address, member.address]);
    const old = utf8('old');
    const plain = makeJob({}, old);
    const po = await offered(s, plain);
    assert.equal((await exec(s.provider, frame(plain, po, makeSelection(plain, po), old))).at(-1)?.t, 'receipt');
    // every one ran (the member job's params are a citation its command takes)
    assert.deepEqual(s.receipts.map((r) => r.record.failure?.code ?? r.record.status), ['completed', 'completed', 'completed']);
  });

  test('a job’s params cannot choose the claim: a public entry of another claim (a released single job’s, an open gang’s) cited in the params admits nothing unless the steward bound the job', async () => {
    const other = makeJob({}, utf8('alice'));
    const openGang = 'sha256:' + 'cd'.repeat(32);
    // the steward gives the entry of a claim the job does not cite (a wrong answer): refused too
    const s = setup({ slots: 3, steward: { did: stewardDid, admissionOf: async (j) => (j.record.input.size === 5 ? admitted(openGang) : undefined) } });
    for (const [claim, proof] of [
      [other.address, admitted(other.address)],
      [other.address, released(other.address)],
      [openGang, admitted(openGang)],
    ] as const) {
      for (const member of [0, 7]) {
        const input = utf8(`rogue ${member} ${proof.length}`);
        const job = makeJob({ workload: 'acme.cat', params: JSON.stringify({ prompt: 'anything', claim, member }) }, input);
        const offer = await offered(s, job);
        assert.equal(refusal(await exec(s.provider, withProof(frame(job, offer, makeSelection(job, offer), input), proof))), 'EXEC_NOT_ADMITTED');
      }
    }
    const input = utf8('wrong');
    const job = makeJob({ workload: 'acme.cat', params: JSON.stringify({ claim: other.address, member: 0 }) }, input);
    const offer = await offered(s, job);
    assert.equal(refusal(await exec(s.provider, frame(job, offer, makeSelection(job, offer), input))), 'EXEC_NOT_ADMITTED');
    assert.equal(s.receipts.length, 0);
    assert.equal(s.provider.running, 0);
  });
});

describe('Provider: the steward’s stop (preemption, pool/1 §5)', () => {
  test('running work stops with a signed failed receipt EXEC_PREEMPTED, and the job does not run again', async () => {
    const s = setup();
    const input = utf8('long');
    const job = makeJob({ workload: 'builtin.sleep', params: '60000', timeoutMs: 60_000 }, input);
    const offer = await offered(s, job);
    const frames: ExecFrame[] = [];
    let accepted: () => void = () => {};
    const started = new Promise<void>((r) => (accepted = r));
    const run = s.provider.handleExec(
      execIO(
        [frame(job, offer, makeSelection(job, offer), input)],
        async (f) => {
          frames.push(f);
          if (f.t === 'accepted') accepted();
        },
        new AbortController().signal,
      ),
    );
    await started;
    const r = await s.provider.preempt(job.address);
    await run;
    assert.ok(r);
    assert.equal(r.record.status, 'failed');
    assert.equal(r.record.failure?.code, 'EXEC_PREEMPTED');
    assert.equal(s.provider.running, 0);
    assert.equal(refusal(await exec(s.provider, frame(job, offer, makeSelection(job, offer), input))), 'EXEC_ALREADY_RUN');
  });

  test('a stop asked again while the first is under way (a steward restarted mid-request asks again): both end, with the one receipt', async () => {
    const s = setup();
    const input = utf8('long');
    const job = makeJob({ workload: 'builtin.sleep', params: '60000', timeoutMs: 60_000 }, input);
    const offer = await offered(s, job);
    let accepted: () => void = () => {};
    const started = new Promise<void>((r) => (accepted = r));
    const run = s.provider.handleExec(execIO([frame(job, offer, makeSelection(job, offer), input)], async (f) => void (f.t === 'accepted' && accepted()), new AbortController().signal));
    await started;
    const [r1, r2] = await Promise.all([s.provider.preempt(job.address, 'priority', job.record.deadline), s.provider.preempt(job.address, 'priority', job.record.deadline)]);
    await run;
    assert.ok(r1 && r2, 'both stops answered with the stop receipt');
    assert.equal(r1.address, r2.address);
    assert.equal(s.receipts.length, 1);
    // asked once more after it stopped: barred, nothing run or signed
    assert.equal(await s.provider.preempt(job.address, 'priority', job.record.deadline), undefined);
    assert.equal(s.receipts.length, 1);
    assert.equal(s.provider.running, 0);
  });

  test('running work whose receipt cannot be signed: the preemption still ends, and the job is barred', async () => {
    // A pool's shaping that yields a receipt the schema refuses stands in for any failure to sign.
    const s = setup({ pool: { advert: (a) => a, receipt: (r) => ({ ...r, failure: { code: 'bad code', message: '' } }), mayQuote: () => true, run: (_j, _o, c) => new Promise((_r, reject) => (c.signal.aborted ? reject(c.signal.reason) : c.signal.addEventListener('abort', () => reject(c.signal.reason)))), closed: async () => {}, abandoned: () => {} } });
    const input = utf8('long');
    const job = makeJob({}, input);
    const offer = await offered(s, job);
    let accepted: () => void = () => {};
    const started = new Promise<void>((r) => (accepted = r));
    const run = s.provider.handleExec(execIO([frame(job, offer, makeSelection(job, offer), input)], async (f) => void (f.t === 'accepted' && accepted()), new AbortController().signal));
    const failed = assert.rejects(run, (e: unknown) => e instanceof C0Error && e.code.startsWith('RECORD_'));
    await started;
    assert.equal(await s.provider.preempt(job.address, 'priority', job.record.deadline), undefined);
    await failed;
    assert.equal(s.provider.running, 0);
    assert.equal(refusal(await exec(s.provider, frame(job, offer, makeSelection(job, offer), input))), 'EXEC_PREEMPTED');
  });

  test('a job not running here is barred: its exec is refused EXEC_PREEMPTED, nothing runs or is signed, the slot stays free', async () => {
    const s = setup();
    const input = utf8('not yet sent');
    const job = makeJob({}, input);
    const offer = await offered(s, job);
    // the buyer was admitted and selected this provider, but its exec has not come yet
    assert.equal(await s.provider.preempt(job.address, 'priority', job.record.deadline), undefined);
    const frames = await exec(s.provider, frame(job, offer, makeSelection(job, offer), input));
    assert.equal(refusal(frames), 'EXEC_PREEMPTED');
    assert.equal(s.receipts.length, 0);
    assert.equal(s.published.filter((p) => p.kind === 'receipt').length, 0);
    assert.equal(s.provider.running, 0);
    assert.equal(s.provider.runs(job.address), false);
    // another job is not affected
    const other = makeJob({}, input);
    const otherOffer = await offered(s, other);
    assert.equal((await exec(s.provider, frame(other, otherOffer, makeSelection(other, otherOffer), input))).at(-1)!.t, 'receipt');
  });

  test('a job reclaimed as idle while not running here is refused EXEC_IDLE_RECLAIMED', async () => {
    const s = setup();
    const input = utf8('idle');
    const job = makeJob({}, input);
    const offer = await offered(s, job);
    assert.equal(await s.provider.preempt(job.address, 'idle', job.record.deadline), undefined);
    assert.equal(refusal(await exec(s.provider, frame(job, offer, makeSelection(job, offer), input))), 'EXEC_IDLE_RECLAIMED');
  });

  test('a bar is kept durably: the provider restarted before the exec still refuses it EXEC_PREEMPTED, until the time given', async () => {
    const bars = new Map<string, { code: 'EXEC_PREEMPTED' | 'EXEC_IDLE_RECLAIMED'; until: number }>();
    const s = setup({ bars });
    const input = utf8('restarted');
    const job = makeJob({}, input);
    const offer = await offered(s, job);
    assert.equal(await s.provider.preempt(job.address, 'priority', NOW + 30_000), undefined);
    assert.deepEqual(bars.get(job.address), { code: 'EXEC_PREEMPTED', until: NOW + 30_000 }, 'kept before the steward hears barred');
    await s.provider.stop();
    // the same provider (its key, its kept state) after a restart: nothing in memory
    const again = setup({ bars, signer: s.signer });
    await again.provider.start();
    assert.equal(refusal(await exec(again.provider, frame(job, offer, makeSelection(job, offer), input))), 'EXEC_PREEMPTED');
    assert.equal(again.receipts.length, 0);
    assert.equal(again.provider.running, 0);
    // past the time the steward gave, the job may run
    again.clock.set(NOW + 30_000);
    assert.equal((await exec(again.provider, frame(job, offer, makeSelection(job, offer), input))).at(-1)!.t, 'receipt');
  });

  test('the bar lasts until the time the steward gave (the job’s deadline), no longer', async () => {
    const s = setup();
    const input = utf8('bar ends');
    const job = makeJob({}, input);
    const offer = await offered(s, job);
    await s.provider.preempt(job.address, 'priority', NOW + 1000);
    s.clock.set(NOW + 1000);
    assert.equal((await exec(s.provider, frame(job, offer, makeSelection(job, offer), input))).at(-1)!.t, 'receipt');
  });
});

describe('Provider: chunked exec/1 requests', () => {
  /** A header without inline input, then `chunks` as input frames; counts what the provider read. */
  function chunkedIO(header: Record<string, unknown>, chunks: Uint8Array[], out: ExecFrame[]) {
    const reads = { n: 0, reserved: 0, deadlines: [] as string[] };
    const queue: unknown[] = [{ ...header, input: undefined }, ...chunks.map((data) => ({ t: 'input', data }))];
    delete (queue[0] as Record<string, unknown>).input;
    const io: ExecIO = {
      next: async () => {
        reads.n++;
        return queue.shift();
      },
      send: async (f) => void out.push(f),
      signal: new AbortController().signal,
      reserve: (n) => void (reads.reserved += n),
      setDeadline: (_ms, what) => void reads.deadlines.push(what),
    };
    return { io, reads };
  }

  test('records that do not check out are refused on the header: no input is read or reserved', async () => {
    const s = setup();
    const input = new Uint8Array(300 * 1024).fill(3);
    const job = makeJob({}, input);
    const offer = await offered(s, job);
    const out: ExecFrame[] = [];
    const { io, reads } = chunkedIO(frame(job, offer, makeSelection(job, offer, Ed25519Signer.generate()), input), [input.subarray(0, 256 * 1024), input.subarray(256 * 1024)], out);
    await s.provider.handleExec(io);
    assert.equal(refusal(out), 'EXEC_SELECTION_UNAUTHORISED');
    assert.equal(reads.n, 1, 'only the header was read');
    assert.equal(reads.reserved, 0);
    assert.equal(s.receipts.length, 0);
  });

  test('a valid header: ready, the input in chunks within its reservation, then the run under its own deadline', async () => {
    const s = setup();
    const input = new Uint8Array(300 * 1024).fill(5);
    const job = makeJob({}, input);
    const offer = await offered(s, job);
    const out: ExecFrame[] = [];
    const { io, reads } = chunkedIO(frame(job, offer, makeSelection(job, offer), input), [input.subarray(0, 256 * 1024), input.subarray(256 * 1024)], out);
    await s.provider.handleExec(io);
    assert.deepEqual(
      out.map((f) => f.t),
      ['ready', 'accepted', 'progress', 'output', 'receipt'].filter((t) => out.some((f) => f.t === t)),
    );
    assert.equal(out[0]!.t, 'ready');
    assert.equal(reads.reserved, input.length);
    // the input phase's deadline is set at `ready` and moved with each chunk (exec-input.ts inputDeadlineMs)
    assert.deepEqual(reads.deadlines, ['input', 'input', 'input', 'run']);
    assert.equal(s.receipts[0]?.record.status, 'completed');
  });

  test('a job whose declared input exceeds maxInputBytes is refused on the header', async () => {
    const s = setup();
    const input = utf8('small');
    const job = makeJob({ input: { hash: hashHex(input), size: s.config.maxInputBytes + 1 } }, input);
    const offer = seal(T.offer, { job: job.address, advert: 'sha256:' + '00'.repeat(32), price: { amount: '0.001', currency: 'USD' }, durationMs: 1000, issuedAt: NOW, startBy: NOW + 30_000, expiresAt: NOW + 30_000 }, s.signer);
    const out: ExecFrame[] = [];
    const { io, reads } = chunkedIO(frame(job, offer, makeSelection(job, offer), input), [input], out);
    await s.provider.handleExec(io);
    assert.equal(refusal(out), 'EXEC_INPUT_TOO_LARGE');
    assert.equal(reads.n, 1);
  });
});

describe('Provider: a pool member’s hooks', () => {
  /** Pool hooks that run the work here (as a coordinator choosing itself would) and record what the provider calls. */
  function poolHooks(calls: string[], run: ProviderPoolHooks['run'] = async (_j, _o, c) => utf8(`ran ${c.input.length}`)): ProviderPoolHooks {
    return {
      advert: (a) => a,
      receipt: (r) => r,
      mayQuote: () => true,
      run: async (j, o, c) => {
        calls.push('run');
        return run(j, o, c);
      },
      closed: async (r) => void calls.push(`closed:${r.record.status}`),
      abandoned: (job) => void calls.push(`abandoned:${job}`),
    };
  }

  test('the pool is told how the run ended: `closed` once the receipt is stored, `abandoned` when it could not be', async () => {
    const calls: string[] = [];
    const s = setup({ pool: poolHooks(calls) });
    const input = utf8('pooled');
    const job = makeJob({}, input);
    const offer = await offered(s, job);
    const frames = await exec(s.provider, frame(job, offer, makeSelection(job, offer), input));
    assert.equal(frames.at(-1)?.t, 'receipt');
    assert.deepEqual(calls, ['run', 'closed:completed']);
    // The receipt store fails: no `closed` can follow, so the pool must not keep the job in flight.
    calls.length = 0;
    const bad = setup({ pool: poolHooks(calls), onReceipt: async () => { throw new C0Error('STORE_FAILED', 'disk full'); } });
    const j2 = makeJob({}, input);
    const o2 = await offered(bad, j2);
    await assert.rejects(exec(bad.provider, frame(j2, o2, makeSelection(j2, o2), input)), /disk full/);
    assert.deepEqual(calls, ['run', `abandoned:${j2.address}`]);
    assert.equal(bad.provider.running, 0);
  });

  test('the progress events’ throttle (one per 100 ms) is on the monotonic clock: a wall clock stepped back or forward 10 min changes nothing', async () => {
    // Before, it read the wall clock: stepped back 10 min, no progress reached the buyer for 10 min; stepped forward,
    // the throttle let one through at once.
    const s = setup({
      pool: poolHooks([], async (_j, _o, c) => {
        c.onProgress({ fraction: 0.1, message: 'p' });
        s.clock.advance(-10 * 60_000);
        s.mono.advance(150);
        c.onProgress({ fraction: 0.2, message: 'p' }); // 150 ms after the last on the monotonic clock: sent
        s.clock.advance(20 * 60_000);
        s.mono.advance(50);
        c.onProgress({ fraction: 0.3, message: 'p' }); // 50 ms after: throttled
        s.mono.advance(60);
        c.onProgress({ fraction: 0.4, message: 'p' }); // 110 ms after: sent
        return utf8('done');
      }),
    });
    const input = utf8('pooled');
    const job = makeJob({}, input);
    const offer = await offered(s, job);
    const frames = await exec(s.provider, frame(job, offer, makeSelection(job, offer), input));
    assert.equal(frames.at(-1)?.t, 'receipt');
    assert.deepEqual(
      frames.filter((f) => f.t === 'progress').map((f) => (f as { permille?: number }).permille),
      [100, 200, 400],
    );
  });

  /** A registry in a fresh directory that remembers what was recorded. */
  function registry(): { reg: ProcessRegistry; added: GroupRecord[]; files: () => string[] } {
    const dir = mkdtempSync(join(tmpdir(), 'c0-groups-'));
    after(() => rmSync(dir, { recursive: true, force: true }));
    const added: GroupRecord[] = [];
    const reg = new (class extends ProcessRegistry {
      override add(rec: GroupRecord): void {
        added.push(rec);
        super.add(rec);
      }
    })(dir);
    return { reg, added, files: () => readdirSync(dir) };
  }

  test('a slot taken for pooled work: its exec group is recorded (no envelopes: the pool fails its work) and removed, and stop() ends the run', async () => {
    const { reg, added, files } = registry();
    const s = setup({ processes: reg, slots: 2 });
    const job = makeJob();
    const slot = s.provider.takeSlot(job.address);
    assert.ok(slot);
    assert.equal(s.provider.running, 1);
    const cat = createExecutor({ type: 'exec', command: ['sh', '-c', 'cat'] });
    const out = await cat.run({ input: utf8('in a slot'), ...slot, onProgress: () => {}, maxOutputBytes: 1024 });
    assert.equal(Buffer.from(out).toString(), 'in a slot');
    assert.equal(added.length, 1);
    assert.equal(added[0]!.job, job.address);
    assert.equal(added[0]!.jobEnvelope, undefined, 'a restart ends the group but signs nothing: the pool’s trail fails the job');
    assert.deepEqual(files(), [], 'removed when the group exited');
    s.provider.giveSlot(job.address);
    // stop() (the daemon shutting down) ends a run in a slot as it ends one on an exec stream
    const j2 = makeJob();
    const slot2 = s.provider.takeSlot(j2.address)!;
    const sleeper = createExecutor({ type: 'exec', command: ['sh', '-c', 'sleep 30; echo late'] });
    const t0 = Date.now();
    const run = sleeper.run({ input: utf8('z'), ...slot2, onProgress: () => {}, maxOutputBytes: 1024 });
    while (added.length < 2) await new Promise((res) => setTimeout(res, 5));
    await s.provider.stop();
    await assert.rejects(run, (e: unknown) => e instanceof C0Error && e.code === 'EXEC_ABORTED');
    assert.ok(Date.now() - t0 < 10_000);
    assert.deepEqual(files(), []);
    assert.equal(s.provider.takeSlot(makeJob().address), undefined, 'no slot once stopped');
  });

  test('the coordinator’s own exec stream records the group the pool runs here, without envelopes (one failed receipt after a crash: the pool’s)', async () => {
    const { reg, added } = registry();
    const cat = createExecutor({ type: 'exec', command: ['sh', '-c', 'cat'] });
    const s = setup({ processes: reg, pool: poolHooks([], (_j, _o, c) => cat.run(c)) });
    const input = utf8('pooled exec');
    const job = makeJob({}, input);
    const offer = await offered(s, job);
    const frames = await exec(s.provider, frame(job, offer, makeSelection(job, offer), input));
    assert.equal(frames.at(-1)?.t, 'receipt');
    assert.equal(added.length, 1);
    assert.equal(added[0]!.job, job.address);
    assert.equal(added[0]!.jobEnvelope, undefined);
  });
});

describe('Provider: a pool’s admission gates on jobs heard', () => {
  const rig = new PoolRig();
  after(() => rig.close());

  test('only a job the pool could serve meets the gates: counted by gate and logged at debug, never at info; a job for a workload it does not run is neither', async () => {
    const regs = new Map<string, Registry>();
    const memberLines: Array<{ level: number; msg: string }> = [];
    const memberLog = pino({ level: 'info' }, { write: (l: string) => void memberLines.push(JSON.parse(l) as never) });
    const w = await rig.world('gates-heard', { options: { minPrice: { amount: '0.005', currency: 'USD' } }, extra: (did) => ({ log: memberLog, registry: regs.set(did, new Registry()).get(did)! }) });
    const coordinator = w.members.get(POOL_MEMBERS[0]!)!.elected().coordinator!;
    const m = w.members.get(coordinator)!;
    const reg = regs.get(coordinator)!;
    const providerLines: string[] = [];
    const s = setup({ pool: m.hooks(), signer: poolKeyOf(coordinator), log: pino({ level: 'info' }, { write: (l: string) => void providerLines.push(l) }) });
    await s.provider.start();
    memberLines.length = 0;
    providerLines.length = 0;
    const refusals = async () => (await reg.getSingleMetric('c0mpute_pool_refusals_total')!.get()).values.reduce((n, v) => n + v.value, 0);
    // A flood of jobs for a workload this provider does not run, paying under the pool's minimum, from fresh keys.
    for (let i = 0; i < 50; i++) assert.equal(await s.provider.onJob(makeJob({ workload: 'someone.elses', maxPrice: { amount: '0.001', currency: 'USD' } }, utf8(`j${i}`), Ed25519Signer.generate())), undefined);
    assert.equal(await refusals(), 0, 'not counted: the pool would never have quoted them');
    // One it runs, whose price (0.001 USD) is under the pool's minimum: the gate refuses it, counted once.
    assert.equal(await s.provider.onJob(makeJob({ maxPrice: { amount: '0.004', currency: 'USD' } })), undefined);
    assert.equal(await refusals(), 1);
    assert.deepEqual(memberLines.filter((l) => l.level >= 30), [], 'nothing at info: a peer can send such jobs at will');
    assert.equal(providerLines.length, 0);
  });
});

/**
 * exec/1 served as the node serves it (DirectProtocols.serveStream), over a fake libp2p stream whose writes always
 * succeed: what the provider writes lands in local buffers, as it does on a half-open link (both sockets open,
 * nothing forwarded). `buyerAfterReceipt` is what the buyer does once the receipt frame is written.
 */
class ExecFakeStream extends EventTarget {
  status = 'open';
  readStatus = 'readable';
  writeStatus = 'writable';
  remoteWriteStatus = 'writable';
  readBufferLength = 0;
  readonly written: unknown[] = [];
  constructor(private readonly onWrite: (v: unknown) => void) {
    super();
  }
  pause(): void {
    if (this.readStatus === 'readable') this.readStatus = 'paused';
  }
  resume(): void {
    if (this.readStatus === 'paused') this.readStatus = 'readable';
  }
  push(bytes: Uint8Array): void {
    this.dispatchEvent(Object.assign(new Event('message'), { data: { subarray: () => bytes } }));
  }
  send(buf: Uint8Array): boolean {
    let len = 0;
    let shift = 0;
    let i = 0;
    for (; ; i++) {
      len += (buf[i]! & 0x7f) * 2 ** shift;
      shift += 7;
      if (buf[i]! < 0x80) break;
    }
    const f = decodeFrame(buf.subarray(i + 1, i + 1 + len));
    const v = f.t === 'data' ? f.v : f;
    this.written.push(v);
    this.onWrite(v);
    return true;
  }
  async onDrain(): Promise<void> {}
  async closeRead(): Promise<void> {
    this.readStatus = 'closed';
  }
  async close(): Promise<void> {
    this.writeStatus = 'closed';
  }
  #end(local: boolean, error?: Error): void {
    if (this.status !== 'open') return;
    this.status = local ? 'aborted' : 'reset';
    this.readStatus = 'closed';
    this.writeStatus = 'closed';
    this.remoteWriteStatus = 'closed';
    this.dispatchEvent(Object.assign(new Event('close'), { local, error }));
  }
  /** This node aborts the stream (its connection died under it, or a deadline). */
  abort(err: Error): void {
    this.#end(true, err);
  }
  /** The buyer resets the stream (what a buyer does once it has read the receipt). */
  remoteReset(): void {
    this.#end(false, Object.assign(new Error('stream reset'), { name: 'StreamResetError' }));
  }
  /** The buyer closes its writing side. */
  remoteCloseWrite(): void {
    this.remoteWriteStatus = 'closed';
    this.dispatchEvent(new Event('remoteCloseWrite'));
  }
}

function lp(bytes: Uint8Array): Uint8Array {
  const prefix: number[] = [];
  let n = bytes.length;
  while (n >= 0x80) {
    prefix.push((n % 0x80) | 0x80);
    n = Math.floor(n / 0x80);
  }
  prefix.push(n);
  return Uint8Array.from([...prefix, ...bytes]);
}

describe('Provider: a receipt counts as delivered only once the buyer shows it got it (exec/1 over a stream whose writes succeed)', () => {
  async function serveOne(buyerAfterReceipt: (s: ExecFakeStream) => void, receiptAckMs: number, keepalive = false) {
    const delivered: Array<Opened<Receipt>> = [];
    const s = setup({ deliver: (r) => void delivered.push(r), receiptAckMs });
    const input = utf8('half-open');
    const job = makeJob({}, input);
    const offer = await offered(s, job);
    let handler: ((stream: never, conn: never) => Promise<void>) | undefined;
    const host = {
      handle: async (_p: string, h: (stream: never, conn: never) => Promise<void>) => void (handler = h),
      unhandle: async () => {},
      dialProtocol: async () => {
        throw new Error('not used');
      },
    };
    const direct = new DirectProtocols(host as unknown as StreamHost, createNetMetrics(new Registry()), silentLogger());
    await direct.serveStream(EXEC_PROTOCOL, (ctx) => s.provider.handleExec({ ...ctx, send: (f) => ctx.send(f as never), peer: ctx.peer.toString() }), { answerLingerMs: 50 });
    const stream: ExecFakeStream = new ExecFakeStream((v) => {
      if ((v as { t?: unknown }).t === 'receipt') setImmediate(() => buyerAfterReceipt(stream));
    });
    const served = handler!(stream as never, { id: 'c1', remotePeer: { toString: () => buyerPeer } } as never);
    stream.push(lp(encodeFrame({ t: 'data', v: { ...frame(job, offer, makeSelection(job, offer), input), ...(keepalive ? { keepalive: 'yes' } : {}) } as never })));
    stream.push(lp(encodeFrame({ t: 'end' })));
    const t0 = Date.now();
    await served;
    const rf = stream.written.find((v) => (v as { t?: unknown }).t === 'receipt') as { receipt: Uint8Array } | undefined;
    assert.ok(rf, 'the receipt frame was written');
    return { delivered, receipt: open(rf.receipt, T.receipt), ms: Date.now() - t0, s };
  }

  test('the buyer never closes (a half-open link): the receipt goes to the re-delivery path once the wait for the buyer runs out', async () => {
    const r = await serveOne(() => {}, 300);
    assert.deepEqual(
      r.delivered.map((x) => x.address),
      [r.receipt.address],
    );
    // gossiped as before
    assert.ok(r.s.published.some((p) => p.kind === 'receipt' && p.env.address === r.receipt.address));
  });

  test('the connection dies under the stream after the receipt was written: re-delivered at once, not after the wait', async () => {
    const r = await serveOne((st) => st.abort(Object.assign(new Error('ping timeout'), { name: 'AbortError' })), 60_000);
    assert.deepEqual(
      r.delivered.map((x) => x.address),
      [r.receipt.address],
    );
    assert.ok(r.ms < 10_000, `took ${r.ms} ms`);
  });

  test('a buyer that asked for keepalives acknowledges by closing its side: delivered, nothing re-sent', async () => {
    const closed = await serveOne((st) => st.remoteCloseWrite(), 60_000, true);
    assert.deepEqual(closed.delivered, []);
    assert.ok(closed.ms < 10_000, `took ${closed.ms} ms`);
  });

  test('a buyer that asked for keepalives resets the stream without closing its side (it gave up before reading the receipt: its silence watch, its budget): re-delivered at once', async () => {
    const reset = await serveOne((st) => st.remoteReset(), 60_000, true);
    assert.deepEqual(
      reset.delivered.map((x) => x.address),
      [reset.receipt.address],
    );
    assert.ok(reset.ms < 10_000, `took ${reset.ms} ms`);
  });

  test('a buyer before explicit acknowledgements (no keepalive key) resets the stream after the receipt, or closes its side: delivered, nothing re-sent', async () => {
    const reset = await serveOne((st) => st.remoteReset(), 60_000);
    assert.deepEqual(reset.delivered, []);
    assert.ok(reset.ms < 10_000, `took ${reset.ms} ms`);
    const closed = await serveOne((st) => st.remoteCloseWrite(), 60_000);
    assert.deepEqual(closed.delivered, []);
    assert.ok(closed.ms < 10_000, `took ${closed.ms} ms`);
  });
});

describe('Provider: keepalives while the work runs (a buyer tells a stalled link from a long silent run)', () => {
  async function run(askKeepalive: boolean) {
    const s = setup({ keepaliveMs: 100 });
    const input = utf8('tick');
    const job = makeJob({ workload: 'builtin.sleep', params: '550', timeoutMs: 10_000 }, input);
    const offer = await offered(s, job);
    const frames = await exec(s.provider, { ...frame(job, offer, makeSelection(job, offer), input), ...(askKeepalive ? { keepalive: 'yes' } : {}) });
    return frames;
  }

  test('a buyer that asked: `accepted` says how often, then a keepalive at that pace until the work ends, none after the receipt', async () => {
    const frames = await run(true);
    const accepted = frames[0]!;
    assert.ok(accepted.t === 'accepted');
    assert.equal((accepted as { keepaliveMs?: number }).keepaliveMs, 100);
    // at least one beat (a loaded machine may skip ticks: setInterval does not catch up), at most one per interval
    const beats = frames.filter((f) => (f.t as string) === 'keepalive' && (f as { last?: string }).last === undefined).length;
    assert.ok(beats >= 1 && beats <= 6, `${beats} keepalives over a 550 ms run`);
    assert.equal(frames.at(-1)!.t, 'receipt');
    // once the work ended, the last keepalive says so before the output (the buyer stops its silence watch there)
    const last = frames.findIndex((f) => (f.t as string) === 'keepalive' && (f as { last?: string }).last === 'yes');
    const output = frames.findIndex((f) => f.t === 'output');
    assert.ok(last > 0 && output > last, `the last keepalive (${last}) before the output (${output})`);
    assert.ok(frames.slice(1, last).every((f) => f.t === 'keepalive' || f.t === 'progress'), 'only keepalives and progress while the work runs');
    const before = frames.length;
    await new Promise((r) => setTimeout(r, 250));
    assert.equal(frames.length, before, 'nothing is sent once the run ended');
  });

  test('a buyer that did not ask (one before keepalives) gets none, and no keepaliveMs: nothing it cannot read', async () => {
    const frames = await run(false);
    assert.equal((frames[0] as { keepaliveMs?: number }).keepaliveMs, undefined);
    assert.deepEqual(frames.filter((f) => (f.t as string) === 'keepalive'), []);
  });

  test("a header whose keepalive is not 'yes' or 'no' is refused EXEC_BAD_REQUEST", async () => {
    const s = setup();
    const input = utf8('x');
    const job = makeJob({}, input);
    const offer = await offered(s, job);
    assert.equal(refusal(await exec(s.provider, { ...frame(job, offer, makeSelection(job, offer), input), keepalive: true })), 'EXEC_BAD_REQUEST');
  });
});
