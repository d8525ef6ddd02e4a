/**
 * Matching, the probe (issue #12 "Speed"): ranking the candidates of one order
 * over 1k, 10k and 100k live providers, beside sorting the same number of
 * floats (Array.prototype.sort with a numeric comparator) in the same run.
 * Target: the probe within 10× that sort at every N (it runs the eligibility
 * gates and an exact-decimal cost per provider; the sort does neither).
 * Beside it, a provider's rankAhead (docs/market.md §12), for the cheapest
 * provider and the median one: target within the probe of the same N.
 *
 * Records are fabricated as already-opened objects (a probe never verifies
 * signatures: the presence view holds verified records). Prices take 50
 * distinct values, so many providers tie and the rotation order is exercised.
 */
import { T, type Advert, type Job, type Opened, type Presence } from '../../src/records/index.js';
import { OFFER_RANK, byAskForJob, candidates, rankAhead, type CandidateOrder } from '../../src/matching/candidates.js';
import type { LiveProvider } from '../../src/matching/types.js';
import { PresenceView } from '../../src/matching/presence.js';
import { seededRandom } from '../../src/net/faults.js';
import { settle, table, timeMs, type BenchResult } from './lib.js';

const NOW = 1_800_000_000_000;

function fixture(n: number): { live: LiveProvider[]; held: Map<string, number>; marks: Map<string, number>; floats: number[]; byDid: Map<string, Opened<Advert>> } {
  const r = seededRandom(n + 7);
  const live: LiveProvider[] = [];
  const held = new Map<string, number>();
  const marks = new Map<string, number>();
  const tiers = ['standard', 'verified', 'enterprise'] as const;
  for (let i = 0; i < n; i++) {
    const did = 'did:key:z6Mk' + ((i * 2654435761) >>> 0).toString(36).padStart(8, '0') + i.toString(36);
    const advert: Opened<Advert> = {
      type: T.advert,
      signer: did,
      address: 'sha256:' + ('a' + i.toString(16)).padStart(64, '0'),
      bytes: new Uint8Array(),
      record: {
        seq: 1,
        issuedAt: NOW - 60_000,
        expiresAt: NOW + 3_600_000,
        workloads: ['infer.diffusion', 'infer.llm'],
        tier: tiers[i % 3]!,
        region: i % 2 ? 'eu-west' : 'us-east',
        hardware: { gpus: [{ model: 'A100', vramMiB: 81_920, features: ['cuda12', 'fp8'], count: 1 + (i % 4) }], cpuCores: 32, memoryMiB: 262_144 },
        prices: [{ workload: 'infer.llm', unit: i % 2 ? 'job' : 'second', price: { amount: (0.001 * (1 + Math.floor(r() * 50))).toFixed(3), currency: 'USD' } }],
        boxKey: new Uint8Array(32),
      },
    };
    const presence: Opened<Presence> = { type: T.presence, signer: did, address: 'sha256:' + ('b' + i.toString(16)).padStart(64, '0'), bytes: new Uint8Array(), record: { workloads: ['infer.llm'], freeSlots: 2, issuedAt: NOW - 1000, windowMs: 15_000 } };
    live.push({ did, presence, advert, workloads: presence.record.workloads, freeSlots: 2, liveUntil: NOW + 14_000 });
    if (i % 5 === 0) held.set(did, 1);
    if (i % 3 === 0) marks.set(did, 1 + (i % 97));
  }
  return { live, held, marks, floats: live.map(() => r()), byDid: new Map(live.map((p) => [p.did, p.advert])) };
}

/** The order as a job record, opened (never signed: rankAhead reads the record and the address). */
function fabricatedJob(o: CandidateOrder): Opened<Job> {
  const record: Job = { workload: o.workload, requirements: o.requirements, maxPrice: o.maxPrice, announcedAt: NOW - 1000, deadline: NOW + 3_600_000, timeoutMs: o.timeoutMs, input: { hash: 'sha256:' + '11'.repeat(32), size: o.inputSize }, inputSealed: o.inputSealed ? 'yes' : 'no' };
  return { type: T.job, signer: 'did:key:z6MkBuyer', address: 'sha256:' + 'c'.repeat(64), bytes: new Uint8Array(), record };
}

export async function run(): Promise<BenchResult> {
  const rows: Array<Record<string, string | number>> = [];
  const targets: BenchResult['targets'] = [];
  const order: CandidateOrder = { workload: 'infer.llm', requirements: { gpu: { count: 1, vramMiB: 24_576, features: ['cuda12'] }, cpuCores: 8, tier: 'standard' }, maxPrice: { amount: '10', currency: 'USD' }, inputSize: 1 << 20, inputSealed: true, timeoutMs: 60_000 };
  const job = fabricatedJob(order);
  for (const n of [1_000, 10_000, 100_000]) {
    const f = fixture(n);
    const rotation = { lastPicked: (d: string) => f.marks.get(d) ?? 0 };
    const check = candidates({ order, live: f.live, held: f.held, rotation, now: NOW });
    if (check.candidates.length !== n) throw new Error(`bench fixture: expected ${n} candidates, got ${check.candidates.length}: ${check.summary}`);
    settle();
    const reps = n >= 100_000 ? 7 : n >= 10_000 ? 21 : 51;
    const sortOnce = () => f.floats.slice().sort((a, b) => a - b);
    const base1 = timeMs(sortOnce, reps);
    const probe = timeMs(() => candidates({ order: { ...order }, live: f.live, held: f.held, rotation, now: NOW }), reps);
    const base = Math.min(base1, timeMs(sortOnce, reps));
    const ratio = probe / base;
    rows.push({ N: n, what: 'probe (rank every candidate)', ms: probe.toFixed(2), 'sort floats ms': base.toFixed(2), ratio: ratio.toFixed(2) });
    targets.push({ name: `probe N=${n} / sort of N floats`, ratio, target: 10, met: ratio <= 10 });
    // A provider deciding whether to quote (docs/market.md §12): its rank among the others, counted to 8. Ranked in
    // the providers' own order (equal asks by tieKey), the first has none ahead and walks every other provider (the
    // price check alone); the median one stops after 8 cheaper candidates.
    const ranked = byAskForJob(check.candidates, job.address);
    for (const [who, c] of [['the cheapest', ranked[0]!], ['the median', ranked[Math.floor(n / 2)]!]] as const) {
      const ahead = () => rankAhead({ job, live: f.live, self: c.provider, cost: c.cost.amount, limit: OFFER_RANK, now: NOW });
      const t = timeMs(ahead, reps);
      const r2 = t / probe;
      rows.push({ N: n, what: `rankAhead, ${who} provider (${ahead()} ahead)`, ms: t.toFixed(3), 'sort floats ms': base.toFixed(2), ratio: (t / base).toFixed(2) });
      targets.push({ name: `rankAhead (${who}) N=${n} / probe of the same N`, ratio: r2, target: 1, met: r2 <= 1 });
    }
    // ... and the live list it walks, rebuilt at most once a second (src/node/provider-wiring.ts): the presence view's live()
    const view = new PresenceView((did) => f.byDid.get(did));
    for (const p of f.live) view.add(p.presence, NOW);
    const rebuild = timeMs(() => view.live(NOW), reps);
    rows.push({ N: n, what: 'the presence view\u2019s live list, rebuilt', ms: rebuild.toFixed(3), 'sort floats ms': base.toFixed(2), ratio: (rebuild / base).toFixed(2) });
  }
  return { report: table(rows), targets };
}
