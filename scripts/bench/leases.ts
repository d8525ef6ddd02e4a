/**
 * `npm run bench -- leases`: coordinator-free lease computation
 * (src/matching/leases.ts; docs/matching.md "Open orders, claims and leases")
 * over 1k live providers and 10k open orders, beside the unavoidable baseline of
 * ranking 1k floats once per order (sorting 10k arrays of 1k floats).
 */
import { computeLeases, type OpenOrder } from '../../src/matching/leases.js';
import type { LiveProvider } from '../../src/matching/types.js';
import { median, table, type BenchResult } from './lib.js';

function view(np: number, no: number, slots: number): { providers: LiveProvider[]; orders: OpenOrder[]; now: number } {
  // only the fields the lease rule reads; the records themselves are not needed here
  const providers = Array.from({ length: np }, (_, i) => ({ did: `did:key:z6Mk${i.toString().padStart(8, '0')}`, presence: { address: `p${i}`, record: { issuedAt: 0 } }, workloads: ['infer.llm'], freeSlots: slots, liveUntil: Number.MAX_SAFE_INTEGER }) as unknown as LiveProvider);
  const orders = Array.from({ length: no }, (_, i) => ({ address: `sha256:${i.toString(16).padStart(64, '0')}`, buyer: 'b', announcedAt: i, workload: 'infer.llm', openBid: true }));
  return { providers, orders, now: 50_000 };
}

function time(fn: () => unknown, reps = 3): number {
  const xs: number[] = [];
  for (let r = 0; r < reps; r++) {
    const t0 = performance.now();
    fn();
    xs.push(performance.now() - t0);
  }
  return median(xs);
}

export function run(): Promise<BenchResult> {
  const np = 1_000;
  const no = 10_000;
  const v = view(np, no, 10); // 10k slots: every order is processed and leased
  const floats = Array.from({ length: no }, () => Float64Array.from({ length: np }, () => Math.random()));
  const base = time(() => {
    for (const f of floats) Float64Array.from(f).sort();
  });
  const ms = time(() => computeLeases(v));
  const full = computeLeases(v).leases.length;
  const tight = time(() => computeLeases(view(np, no, 2)));
  const ratio = ms / base;
  const rows = [
    { what: `sort ${no / 1000}k arrays of ${np / 1000}k floats (baseline)`, time: `${base.toFixed(0)} ms`, note: '' },
    { what: `leases, ${np / 1000}k providers × ${no / 1000}k orders, 10 slots each`, time: `${ms.toFixed(0)} ms`, note: `${full} leases; ×${ratio.toFixed(2)} the baseline` },
    { what: `leases, ${np / 1000}k providers × ${no / 1000}k orders, 2 slots each`, time: `${tight.toFixed(0)} ms`, note: 'stops once every slot is leased' },
  ];
  return Promise.resolve({ report: table(rows), targets: [{ name: 'leases 1k×10k vs sorting the same floats', ratio, target: 3, met: ratio <= 3 }] });
}
