/**
 * Open orders beside the auction (docs/matching.md "Open orders, claims and
 * leases"; issue #12 "Speed"): across real node processes on 127.0.0.1 (the
 * devnet harness: 3 providers, 1 buyer), the time from posting an open order
 * to the first claim's arrival at the buyer, and to the decided selection,
 * measured in the same run as the auction's offer-collection window (which
 * ends early once all 3 providers quoted). Providers run the default
 * `claimMode: leased`, so the leaseholder claims. Target: the first claim
 * arrives in at most the auction's window (ratio of medians ≤ 1).
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Devnet } from '../../src/devnet/devnet.js';
import { median, percentile, table, type BenchResult } from './lib.js';

const BIN = join(fileURLToPath(new URL('.', import.meta.url)), '..', '..', '..', 'bin', 'c0mpute.js');

export async function run(jobs = 8): Promise<BenchResult> {
  const net = new Devnet({ providers: 3, policy: 'balanced', jobs, keep: false, bin: BIN, print: () => {} });
  const window: number[] = [];
  const firstClaim: number[] = [];
  const decided: number[] = [];
  try {
    const { api } = await net.start();
    const spec = (i: number, order?: Record<string, unknown>) => ({ workload: 'builtin.sha256', params: '1', maxPrice: { amount: '0.01', currency: 'USD' }, deadlineMs: 30_000, input: Buffer.from(`orders ${i} ${Date.now()}`).toString('base64'), ...(order ? { order } : {}) });
    for (let i = 0; i < jobs; i++) {
      const a = await net.runJob(api, spec(i), () => {});
      if (a.status !== 'completed') throw new Error(`auction ${i} ended ${String(a.status)}`);
      window.push((a.timings as { collectMs: number }).collectMs);
      const o = await net.runJob(api, spec(i, {}), () => {});
      if (o.status !== 'completed') throw new Error(`order ${i} ended ${String(o.status)}`);
      const announcedAt = (o.job as { record: { announcedAt: number } }).record.announcedAt;
      const claims = o.claims as Array<{ receivedAt: number }>;
      firstClaim.push(claims[0]!.receivedAt - announcedAt);
      decided.push((o.timings as { collectMs: number }).collectMs);
    }
  } finally {
    await net.stop();
  }
  const row = (what: string, xs: number[]) => ({ what, 'p50 ms': median(xs).toFixed(1), 'p90 ms': percentile(xs, 90).toFixed(1), 'max ms': Math.max(...xs).toFixed(1) });
  const ratio = median(firstClaim) / Math.max(1, median(window));
  const report = [
    `open orders: ${jobs} auctions and ${jobs} open orders alternating (builtin.sha256), 3 provider processes + 1 buyer process`,
    table([row('auction: offer window (until all 3 offers)', window), row('open order: posted → first claim at the buyer', firstClaim), row('open order: posted → selection signed', decided)]),
  ].join('\n');
  return { report, targets: [{ name: 'order→first claim / auction window (medians)', ratio, target: 1, met: ratio <= 1 }] };
}
