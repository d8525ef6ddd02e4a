/**
 * The steward's §5.2 victims from the figures it really holds
 * (src/roles/steward-preempt.ts): receipts so far plus the running attempt's
 * sampled energy and completed units. Before, the daemon passed spentUj 0 and
 * completedUnits 0 for every claim, so the defined-cost branch never ran and
 * the lowest priority always went first.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { chooseVictims, runningWorkloads, type ClaimFigures, type PreemptInputs } from '../../../src/roles/steward-preempt.js';
import { builtinExecutor } from '../../../src/roles/provider/executors.js';
import type { OpenClaim } from '../../../src/pool/usage.js';

const claim = (id: string, entitlement: string, devices = 1): OpenClaim => ({ claim: id, entitlement, reserved: { uj: 1_000_000, grade: 'Estimator' }, devices, borrowed_uj: 0 });
const PRIORITY: Record<string, number> = { low: 0, mid: 1, top: 2 };

function inputs(open: OpenClaim[], figures: Record<string, ClaimFigures>, providers = new Set(open.map((c) => c.claim))): PreemptInputs {
  return { open, priority: (e) => PRIORITY[e], claimantPriority: 2, figures: (c) => figures[c] ?? { receiptsUj: 0 }, hasProvider: (c) => providers.has(c) };
}

describe('steward preemption inputs (pool/1 §5.2 with real figures)', () => {
  const open = [claim('c-expensive', 'mid'), claim('c-unmeasured', 'low'), claim('c-cheap', 'mid')];
  const figures: Record<string, ClaimFigures> = {
    // 200 µJ of a failed attempt's receipt + 300 µJ live over 10 completed units: 50 µJ/unit
    'c-expensive': { receiptsUj: 200, liveUj: 300, units: 10 },
    // spent a lot, completed nothing: undefined (not 0, not ∞)
    'c-unmeasured': { receiptsUj: 0, liveUj: 9_000 },
    // 20 µJ/unit
    'c-cheap': { receiptsUj: 0, liveUj: 400, units: 20 },
  };

  test('spent energy is receipts plus the live attempt; completed units come from the attempt; nothing reported is 0 units', () => {
    assert.deepEqual(runningWorkloads(inputs(open, figures)), [
      { key: 'c-expensive', spentUj: 500, completedUnits: 10, priority: 1 },
      { key: 'c-unmeasured', spentUj: 9_000, completedUnits: 0, priority: 0 },
      { key: 'c-cheap', spentUj: 400, completedUnits: 20, priority: 1 },
    ]);
  });

  test('a defined cost goes first, most expensive first, before the lowest-priority unmeasured claim', () => {
    assert.deepEqual(chooseVictims(inputs(open, figures), 1), ['c-expensive']);
    assert.deepEqual(chooseVictims(inputs(open, figures), 2), ['c-expensive', 'c-cheap']);
    assert.deepEqual(chooseVictims(inputs(open, figures), 3), ['c-expensive', 'c-cheap', 'c-unmeasured']);
    // with no figures at all (what the daemon used to pass) the lowest priority goes first
    assert.deepEqual(chooseVictims(inputs(open, {}), 1), ['c-unmeasured']);
  });

  test('only lower-priority claims with a known provider and devices are candidates; too few devices frees none', () => {
    const more = [...open, claim('c-top', 'top'), claim('c-none', 'low', 0), claim('c-unknown', 'nobody')];
    const withProviders = new Set(['c-expensive', 'c-cheap', 'c-top', 'c-none', 'c-unknown']);
    assert.deepEqual(
      runningWorkloads(inputs(more, figures, withProviders)).map((w) => w.key),
      ['c-expensive', 'c-cheap'],
    );
    assert.deepEqual(chooseVictims(inputs(more, figures, withProviders), 3), []);
  });

  test('builtin.sha256 reports the rounds it completed as units (what the provider answers the steward’s usage request with)', async () => {
    const units: number[] = [];
    await builtinExecutor('builtin.sha256').run({ input: new Uint8Array([1]), params: '50', signal: new AbortController().signal, maxOutputBytes: 1024, onProgress: (p) => p.units !== undefined && units.push(p.units) });
    assert.ok(units.length >= 2);
    assert.equal(units[units.length - 1], 50);
    assert.deepEqual([...units].sort((a, b) => a - b), units, 'units only grow');
  });
});
