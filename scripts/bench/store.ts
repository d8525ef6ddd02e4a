/**
 * `npm run bench -- store`: the node's database wrapper (src/store/db.ts) against bare LevelDB.
 *
 * Concurrent synced writes per second: many stores writing at once (records from gossip, receipts, the quoted
 * jobs' group commit) through the wrapper that poisons the handle after a failed write (docs/node.md "When a
 * write fails"), against a bare `Level` in the same run on the same disk. The wrapper writes one group at a time;
 * the writes that queue meanwhile go as one batch, so it keeps LevelDB's group commit (issued one at a time, it
 * kept about a sixth: ~900/s against ~5,000/s). Interleaved rounds, the median of each (the shared disk's synced
 * write rate drifts).
 */
import { join } from 'node:path';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { Level } from 'level';
import { closeDb, openDb, sub } from '../../src/store/db.js';
import { median, type BenchResult } from './lib.js';

async function burst(db: { batch: (ops: never, o: never) => Promise<void> }, n: number, tag: string): Promise<number> {
  const value = new Uint8Array(600).fill(7);
  const t0 = performance.now();
  await Promise.all(Array.from({ length: n }, (_, i) => db.batch([{ type: 'put', key: `${tag}-${i}`, value }] as never, { sync: true } as never)));
  return n / ((performance.now() - t0) / 1000);
}

export async function run(n = 1000, rounds = 8): Promise<BenchResult> {
  const dir = mkdtempSync(join(tmpdir(), 'c0-bench-store-'));
  const raw = new Level<string, Uint8Array>(join(dir, 'raw'), { valueEncoding: 'view' });
  await raw.open();
  const db = await openDb(join(dir, 'node'));
  const s = sub(db, 'records');
  try {
    const rr: number[] = [];
    const wr: number[] = [];
    for (let r = 0; r < rounds; r++) {
      rr.push(await burst(raw as never, n, `r${r}`));
      wr.push(await burst(s as never, n, `r${r}`));
    }
    const ratio = median(wr) / median(rr);
    return {
      report: `store: ${n} concurrent synced one-record batches, ${rounds} interleaved rounds: node database ${median(wr).toFixed(0)}/s, bare LevelDB ${median(rr).toFixed(0)}/s; ratio ${ratio.toFixed(2)}`,
      targets: [{ name: 'concurrent synced writes, node database vs bare LevelDB (≥ 0.8)', ratio, target: 0.8, met: ratio >= 0.8 }],
    };
  } finally {
    await raw.close();
    await closeDb(db);
    rmSync(dir, { recursive: true, force: true });
  }
}
