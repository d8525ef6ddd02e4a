/**
 * The answers a member keeps of its runs for other coordinators (src/roles/pool-member/results.ts; docs/pools.md "A
 * stream that breaks after the work"): to the caller that sent the run only, a run still going awaited, the first
 * run's answer never replaced by a refused second `run`, and bounded in time and count.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RunResults, RESULT_GRACE_MS } from '../../../src/roles/pool-member/results.js';

test('kept for its caller, awaited while running, the first answer kept, dropped after its budget and grace, bounded in count', async () => {
  let now = 0;
  const r = new RunResults(() => now, 2);
  const settle = r.begin('d1', 'A', 'j1', 1000);
  const waiting = r.get('d1', 'A')!;
  assert.equal(r.get('d1', 'B'), undefined, 'another member gets nothing');
  settle({ ok: 'yes', output: new Uint8Array([1, 2]) });
  assert.deepEqual((await waiting).output, new Uint8Array([1, 2]));
  r.begin('d1', 'A', 'j1', 1000)({ code: 'POOL_ALREADY_RUN', message: 'ran' });
  assert.equal((await r.get('d1', 'A')!).ok, 'yes', 'a refused second run does not replace the output');
  now += 1000 + RESULT_GRACE_MS;
  assert.equal(r.get('d1', 'A'), undefined, 'gone after the budget and the grace');
  for (const d of ['d2', 'd3', 'd4']) r.begin(d, 'A', d, 1000)({ ok: 'yes', output: new Uint8Array(1) });
  assert.equal(r.size, 2);
  assert.equal(r.get('d2', 'A'), undefined, 'the oldest finished answer went first');
});
