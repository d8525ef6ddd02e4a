/**
 * `npm run bench -- pools` (docs/pools.md "Figures"; issue #13 "Speed"):
 * 1. The walk's latency through a pool (3 member processes) beside a single
 *    provider on the same loopback network, in the same run: jobs alternate,
 *    each pinned by the job's allowlist to the pool's members or to the single
 *    provider. The ratio of the pool's exec phase (select → countersigned
 *    receipt) to the single provider's is what the extra hop and the dispatch
 *    record cost.
 * 2. Dispatch records made durable per second (sign + synced LevelDB batch, one
 *    at a time as the coordinator does), against a bare synced put of the same
 *    size in the same run (the provider's run marker).
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { Devnet } from '../../src/devnet/devnet.js';
import { startPoolNet } from '../../src/devnet/pool-scenario.js';
import { compareDids } from '../../src/records/did.js';
import { seal } from '../../src/records/envelope.js';
import { T } from '../../src/records/kinds.js';
import { Ed25519Signer } from '../../src/records/ed25519.js';
import { didFromPublicKey } from '../../src/records/did.js';
import { closeDb, openDb, sub } from '../../src/store/db.js';
import { DispatchTrail } from '../../src/pools/trail.js';
import { median, percentile, table, type BenchResult } from './lib.js';

const BIN = join(fileURLToPath(new URL('.', import.meta.url)), '..', '..', '..', 'bin', 'c0mpute.js');

async function walk(jobs: number): Promise<{ pool: number[]; solo: number[] }> {
  const net = new Devnet({ providers: 0, policy: 'cheapest', jobs: 0, keep: false, bin: BIN, print: () => {} });
  const pool: number[] = [];
  const solo: number[] = [];
  try {
    const p = await startPoolNet(net, () => {});
    const members = ['m1', 'm2', 'm3'].map((n) => p.ids[n]!.did).sort(compareDids);
    for (let i = 0; i < 2 * jobs; i++) {
      const toPool = i % 2 === 0;
      const r = await net.runJob(
        p.bapi,
        {
          workload: 'builtin.sha256',
          params: '1',
          maxPrice: { amount: '0.01', currency: 'USD' },
          deadlineMs: 30_000,
          requirements: { allowlist: toPool ? members : [p.ids.solo1!.did] },
          input: Buffer.from(`pools bench ${i} ${Date.now()}`).toString('base64'),
        },
        () => {},
      );
      if (r.status !== 'completed') throw new Error(`job ${i} ended ${String(r.status)}`);
      (toPool ? pool : solo).push((r.timings as { restMs: number }).restMs);
    }
  } finally {
    await net.stop();
  }
  return { pool, solo };
}

async function durable(n: number): Promise<{ dispatch: number; bare: number; entries: number; openRead: number; wholeRead: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'c0-bench-pools-'));
  const db = await openDb(dir);
  try {
    const signer = new Ed25519Signer(new Uint8Array(32).fill(9));
    const me = didFromPublicKey(signer.publicKey);
    const trail = await DispatchTrail.open(sub(db, 'trail'), () => Date.now());
    const bare = sub(db, 'bare');
    const job = new Uint8Array(600).fill(1);
    const offer = new Uint8Array(300).fill(2);
    const addr = (i: number) => 'sha256:' + i.toString(16).padStart(64, '0');
    const value = new Uint8Array(1200).fill(3);
    // Interleaved rounds (the shared disk's synced-write rate drifts): the median round of each.
    const rounds = 10;
    const per = Math.ceil(n / rounds);
    const dr: number[] = [];
    const br: number[] = [];
    let k = 0;
    for (let r = 0; r < rounds; r++) {
      let t0 = performance.now();
      for (let i = 0; i < per; i++, k++) {
        const d = seal(T.poolDispatch, { pool: me, roster: addr(0), job: addr(k + 1), offer: addr(k + 1e6), member: me, coordinator: me, epoch: 1, issuedAt: 1_800_000_000_000 + k }, signer);
        await trail.record(addr(k + 1), me, { dispatch: d.bytes, job, offer }, 1_800_000_060_000 + k);
      }
      dr.push(per / ((performance.now() - t0) / 1000));
      t0 = performance.now();
      for (let i = 0; i < per; i++) await bare.batch([{ type: 'put', key: addr(k + i + 1), value }], { sync: true } as never);
      br.push(per / ((performance.now() - t0) / 1000));
    }
    const dispatch = median(dr);
    const b = median(br);
    // The elected coordinator's recovery tick (every livenessMs) reads the dispatches not yet closed: through the open
    // index now; the whole trail before. All but 10 closed, as on a pool that has run for a while.
    const receipt = new Uint8Array(400).fill(4);
    for (let i = 10; i < k; i++) await trail.close(addr(i + 1), me, 'completed', receipt);
    const time = async (f: () => Promise<unknown>) => {
      const xs: number[] = [];
      for (let i = 0; i < 15; i++) {
        const t0 = performance.now();
        await f();
        xs.push(performance.now() - t0);
      }
      return median(xs);
    };
    const openRead = await time(() => trail.pending());
    const wholeRead = await time(async () => (await trail.all()).filter((x) => x.entry.state === 'dispatched'));
    return { dispatch, bare: b, entries: k, openRead, wholeRead };
  } finally {
    await closeDb(db);
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function run(jobs = 8, records = 2000): Promise<BenchResult> {
  const d = await durable(records);
  const w = await walk(jobs);
  const row = (what: string, xs: number[]) => ({ what, 'p50 ms': median(xs).toFixed(1), 'p90 ms': percentile(xs, 90).toFixed(1), 'max ms': Math.max(...xs).toFixed(1) });
  const ratio = median(w.pool) / median(w.solo);
  const report = [
    `pools: ${jobs} trivial jobs each through a pool of 3 member processes and through a single provider process (alternating, same loopback network, 1 buyer); exec phase = selection → countersigned receipt`,
    table([row('single provider', w.solo), row('pool (coordinator → member by hash)', w.pool)]),
    `pool / single provider, p50 exec phase: ${ratio.toFixed(2)}×`,
    '',
    `dispatch records made durable (sign + synced batch, one at a time): ${d.dispatch.toFixed(0)}/s; bare synced put of the same size: ${d.bare.toFixed(0)}/s; ratio ${(d.dispatch / d.bare).toFixed(2)}`,
    `the coordinator's recovery read (every livenessMs), ${d.entries} entries of which 10 open: ${d.openRead.toFixed(2)} ms through the open index; ${d.wholeRead.toFixed(1)} ms reading the whole trail (before this round; it grows with every pool job kept)`,
  ].join('\n');
  return {
    report,
    targets: [
      { name: 'pool walk exec phase vs single provider (p50, ≤ 3×)', ratio, target: 3, met: ratio <= 3 },
      { name: 'durable dispatch records vs bare synced put (≥ 0.5)', ratio: d.dispatch / d.bare, target: 0.5, met: d.dispatch / d.bare >= 0.5 },
    ],
  };
}
