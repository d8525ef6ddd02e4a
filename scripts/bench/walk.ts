/**
 * The walk's latency from `run` to countersigned receipt for a trivial job,
 * across real node processes on 127.0.0.1 (3 providers, 1 buyer, the devnet
 * harness), split into the offer-collection window and everything else
 * (selection, exec round trip, verification, countersigning). The buyer ends
 * collection early once every provider has quoted, so the window measures how
 * fast offers arrive, not a fixed timer.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Devnet } from '../../src/devnet/devnet.js';
import { median, percentile, table, type BenchResult } from './lib.js';

const BIN = join(fileURLToPath(new URL('.', import.meta.url)), '..', '..', '..', 'bin', 'c0mpute.js');

export async function run(jobs = 10): Promise<BenchResult> {
  const net = new Devnet({ providers: 3, policy: 'balanced', jobs, keep: false, bin: BIN, print: () => {} });
  const collect: number[] = [];
  const rest: number[] = [];
  const total: number[] = [];
  try {
    const { api } = await net.start();
    for (let i = 0; i < jobs; i++) {
      const t0 = performance.now();
      const r = await net.runJob(
        api,
        { workload: 'builtin.sha256', params: '1', maxPrice: { amount: '0.01', currency: 'USD' }, deadlineMs: 30_000, input: Buffer.from(`walk ${i} ${Date.now()}`).toString('base64') },
        () => {},
      );
      const t = performance.now() - t0;
      if (r.status !== 'completed') throw new Error(`walk job ${i} ended ${String(r.status)}`);
      const timings = r.timings as { collectMs: number; restMs: number };
      collect.push(timings.collectMs);
      rest.push(timings.restMs);
      total.push(t);
    }
  } finally {
    await net.stop();
  }
  const row = (what: string, xs: number[]) => ({ what, 'p50 ms': median(xs).toFixed(1), 'p90 ms': percentile(xs, 90).toFixed(1), 'max ms': Math.max(...xs).toFixed(1) });
  const report = [
    `walk: ${jobs} trivial jobs (builtin.sha256, 1 round), 3 provider processes + 1 buyer process, run → countersigned receipt`,
    table([row('collection window (until all 3 offers)', collect), row('everything else (select, exec, verify, countersign)', rest), row('whole run as the API client sees it', total)]),
  ].join('\n');
  return { report, targets: [] };
}
