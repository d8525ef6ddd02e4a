/**
 * `npm run bench -- batch`: planning a batch of 10k lines over 1k live
 * providers (issue #12 "Speed"; docs/matching.md "Batch plans"), beside
 * sorting 10k floats in the same run. Providers ask at five price levels, so
 * most of the plan is equal prices taking turns.
 */
import { Ed25519Signer, didFromPublicKey, seal, T, type Advert, type Presence } from '../../src/records/index.js';
import { seededRandom } from '../../src/net/faults.js';
import { planBatch, type Batch } from '../../src/matching/batch-plan.js';
import type { LiveProvider } from '../../src/matching/types.js';
import { settle, table, timeMs, type BenchResult } from './lib.js';

const NOW = 1_800_000_000_000;
const WL = 'builtin.sha256';

function fixture(providers: number): { live: LiveProvider[]; rep: Map<string, number> } {
  const rnd = seededRandom(12);
  const live: LiveProvider[] = [];
  const rep = new Map<string, number>();
  for (let i = 0; i < providers; i++) {
    const seed = new Uint8Array(32);
    seed[0] = i & 0xff;
    seed[1] = (i >> 8) & 0xff;
    seed[31] = 0x12;
    const signer = new Ed25519Signer(seed);
    const did = didFromPublicKey(signer.publicKey);
    const price = ['0.010', '0.011', '0.012', '0.015', '0.02'][Math.floor(rnd() * 5)]!;
    const a: Advert = { seq: 1, issuedAt: NOW - 60_000, expiresAt: NOW + 3_600_000, workloads: [WL], tier: 'standard', hardware: { cpuCores: 8, memoryMiB: 16_384 }, prices: [{ workload: WL, unit: 'job', price: { amount: price, currency: 'USD' } }] };
    const freeSlots = 1 + Math.floor(rnd() * 8);
    const pr: Presence = { workloads: [WL], freeSlots, issuedAt: NOW - 1000, windowMs: 15_000 };
    live.push({ did, advert: seal(T.advert, a, signer), presence: seal(T.presence, pr, signer), workloads: [WL], freeSlots, liveUntil: NOW + 14_000 });
    rep.set(did, 0.5 + rnd() / 2);
  }
  return { live, rep };
}

export async function run(): Promise<BenchResult> {
  const providers = 1_000;
  const lines = 10_000;
  const { live, rep } = fixture(providers);
  const batch: Batch = { windowMs: 60_000, workloads: [{ workload: WL, lines, units: {}, lineMs: 10_000, maxPrice: { amount: '0.05', currency: 'USD' } }] };
  const plan = () => planBatch({ batch, live, now: NOW, reputation: (d) => rep.get(d)!, ceiling: 64 });
  const p = plan();
  if (p.lines !== lines) throw new Error(`bench fixture: planned ${p.lines} of ${lines} lines`);
  const floats = Array.from({ length: lines }, (_, i) => Math.sin(i) * 1e6);
  settle();
  const sortOnce = () => floats.slice().sort((a, b) => a - b);
  const base1 = timeMs(sortOnce, 31);
  const ms = timeMs(plan, 31);
  const base2 = timeMs(sortOnce, 31);
  const base = Math.min(base1, base2);
  const ratio = ms / base;
  const rows = [{ what: `plan ${lines} lines over ${providers} providers`, ms: ms.toFixed(2), 'sort 10k floats ms': base.toFixed(2), ratio: ratio.toFixed(2), 'providers used': p.providers.length }];
  return { report: table(rows), targets: [{ name: `batch plan of ${lines} lines over ${providers} providers / sort of ${lines} floats`, ratio, target: 10, met: ratio <= 10 }] };
}
