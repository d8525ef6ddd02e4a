/**
 * The batch runner (docs/matching.md "Batch runs"; issue #12 `c0mpute batch
 * run`) with fake ports: a provider that fails is struck off and its lines are
 * re-planned over the rest; per-provider and overall concurrency hold; the
 * cost is exact; a refused first plan runs nothing; a refused re-plan or a
 * line failing everywhere is reported failed, never lost.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import type { Batch, BatchPlan } from '../../../src/matching/batch-plan.js';
import { runBatch, subBatch, type BatchRunEvent, type BatchRunPorts, type LineOutcome, type OwnLines, type RunLine } from '../../../src/matching/batch-run.js';

const WL = 'builtin.sha256';
const batchOf = (lines: number): Batch => ({ windowMs: 60_000, workloads: [{ workload: WL, lines, units: { second: '30' }, lineMs: 1000, maxPrice: { amount: '1', currency: 'USD' } }] });
const linesOf = (n: number): RunLine[] => Array.from({ length: n }, (_, i) => ({ id: `${WL}-${String(i + 1).padStart(3, '0')}`, workload: WL }));

/** A planner over `providers` (price each) minus `exclude`, equal turns, each taking at most `cap` lines less those designated to it. */
function fakePlanner(providers: Record<string, string>, cap = 1000): { plan: BatchRunPorts['plan']; calls: Array<{ lines: number; exclude: string[]; own: OwnLines }> } {
  const calls: Array<{ lines: number; exclude: string[]; own: OwnLines }> = [];
  return {
    calls,
    plan: async (b, exclude, own) => {
      const lines = b.workloads[0]!.lines;
      calls.push({ lines, exclude: [...exclude], own: structuredClone(own) });
      const share = new Map(Object.keys(providers).filter((p) => !exclude.includes(p)).sort().map((p) => [p, Math.max(0, cap - (own.designated[p] ?? 0))]));
      const got = new Map<string, number>();
      let left = lines;
      for (let turn = true; turn && left > 0; ) {
        turn = false;
        for (const [p, n] of share) {
          if (left === 0 || n === 0) continue;
          share.set(p, n - 1);
          got.set(p, (got.get(p) ?? 0) + 1);
          left--;
          turn = true;
        }
      }
      if (left > 0) throw new C0Error('BATCH_EXCEEDS_CAPACITY', `${left} of ${lines} lines unplaced`);
      const assignments = [...got].map(([provider, n]) => ({ workload: WL, provider, lines: n, ask: { amount: providers[provider]!, currency: 'USD' }, unit: 'job', cost: { amount: '0', currency: 'USD' } }));
      return { plannedAt: 0, windowMs: b.windowMs, assignments, providers: [], totals: [], lines } satisfies BatchPlan;
    },
  };
}

const tick = () => new Promise<void>((r) => setImmediate(r));

function ports(o: { plan: BatchRunPorts['plan']; run: (l: RunLine, p: string) => Promise<LineOutcome>; slots?: number; events?: BatchRunEvent[] }): BatchRunPorts & { delivered: Map<string, string> } {
  const delivered = new Map<string, string>();
  return {
    delivered,
    plan: o.plan,
    runLine: o.run,
    slots: () => o.slots ?? 1,
    deliver: async (l, out) => {
      delivered.set(l.id, Buffer.from(out).toString());
    },
    clock: () => Date.now(),
    onEvent: (e) => o.events?.push(e),
  };
}

const ok = (l: RunLine, p: string, price: string): LineOutcome => ({ status: 'completed', output: new Uint8Array(Buffer.from(`out ${l.id}`)), job: `job-${l.id}-${p}`, receipt: { address: `rc-${l.id}-${p}`, job: `job-${l.id}-${p}`, status: 'completed', provider: p, price: { amount: price, currency: 'USD' } } });

test('a provider that fails midway is struck off; its waiting lines and the failed one are re-planned over the rest, and every line completes', async () => {
  const prices: Record<string, string> = { A: '0.1', B: '0.2', C: '0.1' };
  const planner = fakePlanner(prices);
  const events: BatchRunEvent[] = [];
  let bRuns = 0;
  const p = ports({
    plan: planner.plan,
    events,
    run: async (l, prov) => {
      await tick();
      if (prov === 'B' && ++bRuns >= 3) return { status: 'failed', job: `job-${l.id}-B`, detail: 'provider unreachable or gone' };
      return ok(l, prov, prices[prov]!);
    },
  });
  const s = await runBatch({ batch: batchOf(30), lines: linesOf(30), concurrency: 3 }, p);
  assert.equal(s.done, 30);
  assert.equal(s.failed, 0);
  assert.equal(p.delivered.size, 30);
  assert.equal(p.delivered.get(`${WL}-007`), `out ${WL}-007`);
  // B took 10 in the plan, ran 2, failed its 3rd: 8 lines re-planned (its 7 waiting + the failed one) over A and C
  assert.deepEqual(s.failedProviders.map((f) => f.provider), ['B']);
  assert.equal(s.replanned, 8);
  assert.deepEqual(planner.calls.map((c) => [c.lines, c.exclude]), [[30, []], [8, ['B']]]);
  // what A and C still hold of this run counted against their shares; the slots its running lines hold given back
  const own = planner.calls[1]!.own;
  assert.deepEqual(Object.keys(own.designated), ['A', 'C']);
  assert.ok(Object.keys(own.running).every((p) => p === 'A' || p === 'C'));
  for (const l of s.perLine) assert.equal(l.status, 'done');
  assert.equal(s.perLine.filter((l) => l.provider === 'B').length, 2);
  // every line ends on a completed receipt; the failed attempt is on the line's record
  const retried = s.perLine.find((l) => l.attempts.length === 2)!;
  assert.equal(retried.attempts[0]!.provider, 'B');
  assert.notEqual(retried.provider, 'B');
  // exact cost: 2 × 0.2 + 28 × 0.1 = 3.2 (floats would say 3.2000000000000006)
  assert.deepEqual(s.cost, [{ amount: '3.2', currency: 'USD' }]);
  assert.equal(s.receipts.length, 30);
  assert.ok(events.some((e) => e.e === 'replanned' && e.lines === 8));
  const last = events.filter((e) => e.e === 'progress').at(-1)!;
  assert.deepEqual(last, { e: 'progress', total: 30, done: 30, failed: 0, replanned: 8, inFlight: 0 });
});

test('concurrency: never more lines in flight than --concurrency overall, nor than a provider’s slots', async () => {
  const planner = fakePlanner({ A: '0.1', B: '0.1', C: '0.1' });
  let now = 0;
  let max = 0;
  const at = new Map<string, number>();
  let maxAt = 0;
  const p = ports({
    plan: planner.plan,
    slots: 2,
    run: async (l, prov) => {
      now++;
      at.set(prov, (at.get(prov) ?? 0) + 1);
      max = Math.max(max, now);
      maxAt = Math.max(maxAt, at.get(prov)!);
      await tick();
      await tick();
      now--;
      at.set(prov, at.get(prov)! - 1);
      return ok(l, prov, '0.1');
    },
  });
  const s = await runBatch({ batch: batchOf(40), lines: linesOf(40), concurrency: 5 }, p);
  assert.equal(s.done, 40);
  assert.equal(max, 5);
  assert.equal(maxAt, 2);
});

test('a refused first plan runs nothing and propagates BATCH_EXCEEDS_CAPACITY', async () => {
  let runs = 0;
  const p = ports({
    plan: fakePlanner({ A: '0.1' }, 5).plan,
    run: async (l, prov) => {
      runs++;
      return ok(l, prov, '0.1');
    },
  });
  await assert.rejects(runBatch({ batch: batchOf(6), lines: linesOf(6) }, p), { code: 'BATCH_EXCEEDS_CAPACITY' });
  assert.equal(runs, 0);
  assert.equal(p.delivered.size, 0);
});

test('a refused re-plan is tried again as the run’s own lines free slots; one that stays refused fails its lines (nothing lost, the run ends)', async () => {
  // Only A and B, each able to hold 10 lines: once A fails, B takes A's lines only as its own drain.
  const planner = fakePlanner({ A: '0.1', B: '0.1' }, 10);
  const p = ports({ plan: planner.plan, run: async (l, prov) => (await tick(), prov === 'A' ? { status: 'no-offers' } : ok(l, prov, '0.1')) });
  const s = await runBatch({ batch: batchOf(20), lines: linesOf(20), concurrency: 4, replanRetryMs: 25 }, p);
  assert.equal(s.done, 20);
  assert.ok(s.replans.some((r) => r.refused?.startsWith('BATCH_EXCEEDS_CAPACITY')));
  assert.ok(s.perLine.every((l) => l.provider === 'B'));

  // A re-plan that is never placeable: refused, tried again BATCH_REPLAN_RETRIES times, then its lines fail.
  const never: BatchRunPorts['plan'] = async (b, exclude, own) => {
    if (exclude.length) throw new C0Error('BATCH_EXCEEDS_CAPACITY', 'no');
    return planner.plan(b, exclude, own);
  };
  const r = await runBatch({ batch: batchOf(20), lines: linesOf(20), concurrency: 4, replanRetryMs: 1 }, ports({ plan: never, run: p.runLine }));
  assert.equal(r.done + r.failed, 20);
  assert.equal(r.done, 10);
  assert.equal(r.failed, 10);
  assert.equal(r.replans.filter((x) => x.refused).length, 4);
  assert.ok(r.perLine.filter((l) => l.status === 'failed').every((l) => /could not be re-planned/.test(l.detail!)));
});

test('a provider struck off while a re-plan is in flight gets none of the lines that re-plan places: they are re-planned again without it, and the replanned event reports only what was placed', async () => {
  // A, B, C take 3 lines each. A fails first: its 3 lines are re-planned (excluding A only), and
  // while that plan is out B fails too. The plan lands with lines for B; they must not be queued there.
  const planner = fakePlanner({ A: '0.1', B: '0.1', C: '0.1' });
  let open: () => void = () => {};
  const gate = new Promise<void>((r) => (open = r));
  let asked: () => void = () => {};
  const secondAsked = new Promise<void>((r) => (asked = r));
  const plan: BatchRunPorts['plan'] = async (b, exclude, own) => {
    if (planner.calls.length === 1) {
      asked();
      await gate;
    }
    return planner.plan(b, exclude, own);
  };
  let bStruck = false;
  let atBAfter = 0;
  let bRuns = 0;
  const events: BatchRunEvent[] = [];
  const p = ports({
    plan,
    events,
    run: async (l, prov) => {
      if (prov === 'B' && bStruck) atBAfter++;
      await tick();
      if (prov === 'A') return { status: 'failed', detail: 'A fails' };
      if (prov === 'B' && ++bRuns === 1) {
        await secondAsked;
        bStruck = true;
        setImmediate(open);
        return { status: 'failed', detail: 'B fails while the re-plan is out' };
      }
      return ok(l, prov, '0.1');
    },
  });
  const s = await runBatch({ batch: batchOf(9), lines: linesOf(9), concurrency: 3 }, p);
  assert.deepEqual(s.failedProviders.map((f) => f.provider), ['A', 'B']);
  assert.equal(atBAfter, 0, 'no line was started at B once B was struck');
  assert.equal(s.done, 9);
  assert.ok(s.perLine.every((l) => l.status === 'done' && l.provider === 'C'));
  // The plan that landed after B was struck placed lines on B; they went to a further re-plan without B.
  assert.deepEqual(planner.calls.slice(0, 2).map((c) => c.exclude), [[], ['A']]);
  assert.ok(planner.calls.slice(2).every((c) => c.exclude.includes('A') && c.exclude.includes('B')));
  assert.ok(planner.calls.length >= 3);
  // That plan placed A's 3 lines as B 2, C 1; B's 2 went back: the event (and the summary) say 1 line re-planned, to C.
  const replannedEvents = events.filter((e) => e.e === 'replanned');
  assert.deepEqual(replannedEvents[0], { e: 'replanned', lines: 1, excluded: ['A'], assignments: [{ workload: WL, provider: 'C', lines: 1 }], deferred: 2 });
  assert.deepEqual({ ...s.replans[0], at: 0 }, { at: 0, excluded: ['A'], lines: 1, assignments: [{ workload: WL, provider: 'C', lines: 1 }], deferred: 2 });
  assert.ok(replannedEvents.every((e) => e.e === 'replanned' && e.assignments.every((a) => a.provider === 'C')), 'no replanned event lists a line for B');
  // Every re-planned line counted once, in the round that placed it.
  assert.equal(replannedEvents.reduce((n, e) => n + (e.e === 'replanned' ? e.lines : 0), 0), s.replanned);
});

test('a line failing on every attempt is reported failed', async () => {
  // Every provider fails, and there are more providers than the lines' attempts could strike
  // (2 lines × 2 attempts < 6): every re-plan can place its lines, so what ends each line is
  // the attempt limit, not a refused re-plan.
  const all = fakePlanner({ A: '0.1', B: '0.1', C: '0.1', D: '0.1', E: '0.1', F: '0.1' });
  // (an error the daemon answers about the line; not the daemon itself going away, which stops the run instead:
  // batch-run-daemon-lost.test.ts)
  const q = ports({ plan: all.plan, run: async () => { throw new C0Error('NET_STREAM_FAILED', 'gone'); } });
  const t = await runBatch({ batch: batchOf(2), lines: linesOf(2), concurrency: 2, attempts: 2, replanRetryMs: 1 }, q);
  assert.equal(t.failed, 2);
  for (const l of t.perLine) {
    assert.equal(l.status, 'failed');
    assert.equal(l.attempts.length, 2);
    assert.equal(new Set(l.attempts.map((a) => a.provider)).size, 2, 'each attempt on a different provider');
    assert.match(l.detail!, /^failed on 2 providers; last: error: NET_STREAM_FAILED/);
  }
  assert.ok(t.replans.every((r) => r.refused === undefined), 'no re-plan was refused');
  assert.equal(t.failedProviders.length, 4);
  assert.deepEqual(t.cost, []);
});

test('subBatch scales the summed units to the lines re-planned (exact, rounded up at the 30th place)', () => {
  const b = subBatch(batchOf(30), new Map([[WL, 7]]));
  assert.equal(b.workloads[0]!.lines, 7);
  assert.equal(b.workloads[0]!.units.second, '7');
  const c = subBatch({ ...batchOf(3), workloads: [{ ...batchOf(3).workloads[0]!, units: { second: '1' } }] }, new Map([[WL, 1]]));
  assert.equal(c.workloads[0]!.units.second, '0.333333333333333333333333333334');
  assert.deepEqual(subBatch(batchOf(3), new Map()).workloads, []);
});

test('a provider whose presence lapses is struck at once: its waiting lines move on while its running line still hangs', async () => {
  const planner = fakePlanner({ A: '0.1', B: '0.1' });
  let aDead = false;
  let release: () => void = () => {};
  const hung = new Promise<void>((r) => (release = r));
  const events: BatchRunEvent[] = [];
  const base = ports({
    plan: planner.plan,
    events,
    run: async (l, prov) => {
      await tick();
      if (prov === 'A' && l.id.endsWith('005')) {
        // A dies while running this line: the designated order only ends at its deadline
        aDead = true;
        await hung;
        return { status: 'unclaimed', detail: 'ORDER_NOT_CLAIMED' };
      }
      return ok(l, prov, '0.1');
    },
  });
  let doneWhileHung = -1;
  const p: BatchRunPorts = {
    ...base,
    live: async () => new Set(aDead ? ['B'] : ['A', 'B']),
    onEvent: (e) => {
      events.push(e);
      if (e.e === 'progress' && e.done === 19 && doneWhileHung < 0) {
        doneWhileHung = e.done;
        release();
      }
    },
  };
  const s = await runBatch({ batch: batchOf(20), lines: linesOf(20), concurrency: 4, livenessEveryMs: 1 }, p);
  assert.equal(s.done, 20);
  assert.equal(doneWhileHung, 19, 'every other line finished while A’s line still hung');
  assert.deepEqual(s.failedProviders, [{ provider: 'A', line: '', reason: 'gone: its presence lapsed' }]);
  assert.ok(s.perLine.filter((l) => l.provider === 'A').length < 10);
});

test('line starts are paced (token bucket): the jobs a run publishes stay under the network’s per-signer job limit', async () => {
  const starts: number[] = [];
  const p = ports({ plan: fakePlanner({ A: '0.1', B: '0.1', C: '0.1', D: '0.1' }).plan, slots: 10, run: async (l, prov) => (starts.push(Date.now()), ok(l, prov, '0.1')) });
  const t0 = Date.now();
  const s = await runBatch({ batch: batchOf(30), lines: linesOf(30), concurrency: 30, startsPerSec: 100, startBurst: 10 }, p);
  assert.equal(s.done, 30);
  // 10 at once, then 20 more at 100/s: at least ~200 ms
  assert.ok(Date.now() - t0 >= 180, `took ${Date.now() - t0} ms`);
  // never more than the burst plus what the rate allows since the start (+1 for timer rounding)
  for (const [k, t] of starts.entries()) assert.ok(k + 1 <= 10 + ((t - t0) * 100) / 1000 + 1, `start ${k + 1} at ${t - t0} ms`);
});
