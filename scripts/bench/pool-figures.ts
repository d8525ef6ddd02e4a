/**
 * `npm run bench -- pool-figures` (docs/pools.md "Figures"): what the operator's
 * `pool-provider status` costs a member with a month of history in its dispatch
 * trail (src/roles/pool-member/status.ts TrailFigures), against a member with a
 * day's, in the same run:
 * - a status once the figures are built: it reads no entry, so its time must not
 *   grow with the history (target: at 20,000 entries ≤ 2× at 200);
 * - building them (once, in the background after the start or at the first
 *   status): how long the event loop is held at a time meanwhile (the median of
 *   the waits between two of its turns longer than 1 ms: the build's slices)
 *   must not grow with the history either (target ≤ 2×), however long the
 *   build takes in all. The longest wait is shown, not targeted: on a shared
 *   machine it is a garbage collection's or the scheduler's;
 * - for scale, a status as it was computed before: the trail read whole, then
 *   each job's outcome checked three times (figures, failure codes, disputes)
 *   in one go, the event loop held all along.
 * The trail holds real signed envelopes (pool-trail-fixture.ts, a realistic
 * mix), some distinct jobs copied under new keys up to the size wanted (the
 * cost of a job's figure is the same).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { closeDb, openDb, sub, type Db } from '../../src/store/db.js';
import { DispatchTrail } from '../../src/pools/trail.js';
import { jobFigure, TrailFigures, type FiguresContext } from '../../src/roles/pool-member/status.js';
import { FIXTURE_NOW, PoolFixture, REALISTIC, drawShape, prng } from './pool-trail-fixture.js';
import { median, settle, table, type BenchResult } from './lib.js';

/** Watch the event loop while `f` runs: the gaps between two turns (a setImmediate chain) longer than 1 ms. */
async function loopWaits(f: () => Promise<unknown>): Promise<{ ms: number; waits: number[] }> {
  let last = performance.now();
  const waits: number[] = [];
  let done = false;
  const tick = () => {
    const now = performance.now();
    if (now - last > 1) waits.push(now - last);
    last = now;
    if (!done) setImmediate(tick);
  };
  setImmediate(tick);
  const t0 = performance.now();
  await f();
  const ms = performance.now() - t0;
  done = true;
  waits.push(performance.now() - last);
  return { ms, waits };
}

interface Side {
  entries: number;
  buildMs: number;
  heldP50: number;
  waitMax: number;
  heapMiB: number;
  readUs: number;
  beforeMs: number;
}

async function side(db: Db, name: string, source: Array<[string, Uint8Array]>, entries: number, fx: PoolFixture): Promise<Side> {
  const s = sub(db, name);
  const trail = await DispatchTrail.open(s, () => FIXTURE_NOW);
  // copies of the distinct jobs' entries under new job keys (the first copy is the jobs themselves)
  for (let copy = 0, n = 0; n < entries; copy++) {
    const ops = [];
    for (const [k, v] of source) {
      if (n++ >= entries) break;
      ops.push({ type: 'put' as const, key: copy ? k.replace('sha256:', `sha256:${copy.toString(16).padStart(4, '0')}`) : k, value: v });
    }
    await s.batch(ops);
  }
  const ctx: FiguresContext = { pool: fx.pool, roster: (a) => (a === fx.r.address ? fx.r : undefined) ?? trail.rosterOf(a), view: () => fx.r.address };
  settle();
  const heap0 = process.memoryUsage().heapUsed;
  const figures = new TrailFigures(trail, ctx);
  const build = await loopWaits(() => figures.read());
  settle();
  const heapMiB = (process.memoryUsage().heapUsed - heap0) / 2 ** 20;
  const reads: number[] = [];
  for (let i = 0; i < 200; i++) {
    const t0 = performance.now();
    const f = await figures.read();
    for (const m of fx.members) f.member(m);
    reads.push((performance.now() - t0) * 1000);
  }
  // before: read whole, then three passes of outcome checks in one go
  const t0 = performance.now();
  const all = await trail.all();
  const jobs = new Map<string, typeof all>();
  for (const x of all) jobs.set(x.job, [...(jobs.get(x.job) ?? []), x]);
  for (let pass = 0; pass < 3; pass++) for (const list of jobs.values()) jobFigure(list.map((x) => x.entry), ctx);
  const beforeMs = performance.now() - t0;
  return { entries, buildMs: build.ms, heldP50: median(build.waits), waitMax: build.waits.reduce((m, x) => Math.max(m, x), 0), heapMiB, readUs: median(reads.slice(20)), beforeMs };
}

export async function run(o: { entries?: number; baseline?: number; distinct?: number } = {}): Promise<BenchResult> {
  const big = o.entries ?? 20_000;
  const small = o.baseline ?? 200;
  const distinct = o.distinct ?? 1000;
  const dir = mkdtempSync(join(tmpdir(), 'c0-bench-figures-'));
  const db = await openDb(dir);
  try {
    const fx = new PoolFixture();
    const src = sub(db, 'source');
    const trail = await DispatchTrail.open(src, () => FIXTURE_NOW);
    const rnd = prng(1);
    for (let i = 0; i < distinct; i++) await fx.write(trail, drawShape(REALISTIC, rnd), rnd, FIXTURE_NOW + 30 * 24 * 3600_000);
    const source: Array<[string, Uint8Array]> = [];
    for await (const [k, v] of src.iterator({ lt: '~' })) source.push([k, v]);
    const rosters: Array<[string, Uint8Array]> = [];
    for await (const [k, v] of src.iterator({ gt: '~r!', lt: '~r!\uffff' })) rosters.push([k, v]);
    const withRosters = async (name: string) => {
      await sub(db, name).batch(rosters.map(([k, v]) => ({ type: 'put' as const, key: k, value: v })));
      return name;
    };
    const a = await side(db, await withRosters('small'), source, small, fx);
    const b = await side(db, await withRosters('big'), source, big, fx);
    const row = (x: Side) => ({
      entries: x.entries,
      'status, built (µs, median)': x.readUs.toFixed(1),
      'build (ms)': x.buildMs.toFixed(0),
      'build: loop held, median / longest (ms)': `${x.heldP50.toFixed(1)} / ${x.waitMax.toFixed(1)}`,
      'figures held (MiB)': x.heapMiB.toFixed(2),
      'status before (ms, loop held)': x.beforeMs.toFixed(0),
    });
    const readRatio = b.readUs / a.readUs;
    const waitRatio = b.heldP50 / a.heldP50;
    const report = [
      `pool-figures: the operator's status over a dispatch trail of ${small} and ${big} entries (${distinct} distinct signed jobs, a realistic mix, copied to size)`,
      table([row(a), row(b)]),
      `status once built, ${big} vs ${small} entries: ${readRatio.toFixed(2)}×; the loop held at a time while building (median): ${waitRatio.toFixed(2)}×; before, a status held the loop ${b.beforeMs.toFixed(0)} ms at ${big} entries`,
    ].join('\n');
    return {
      report,
      targets: [
        { name: `pool status once built, ${big} vs ${small} entries (≤ 2×)`, ratio: readRatio, target: 2, met: readRatio <= 2 },
        { name: `event loop held at a time while the figures build (median), ${big} vs ${small} entries (≤ 2×)`, ratio: waitRatio, target: 2, met: waitRatio <= 2 },
      ],
    };
  } finally {
    await closeDb(db);
    rmSync(dir, { recursive: true, force: true });
  }
}
