/**
 * The CI-sized network simulation (issue #16; docs/scale.md "The hundred-node
 * run"): 30 real nodes in two worker processes, churn, and a partition during
 * which every provider republishes its advert for the last time in the run, so
 * only the heal can carry it across: sync between peers that reconnect, and
 * re-gossip of what a sync brought (src/net/heal.ts) for nodes with no link
 * across the cut (without it this run ends with nodes missing the other
 * half's adverts: 5 pairs on one witness at load 10, 83 pairs on 8 nodes at
 * load 15). Loose, non-timing assertions: the partition was real (adverts
 * were published while it held and none crossed the cut); every node up at the
 * end holds every provider's latest advert (no record lost after the heal);
 * jobs were decided with offers. The figures belong to `npm run sim`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runSim } from '../../scripts/sim/index.js';

test('sim: 30 nodes with churn and a partition that heals; every node ends with every live advert, none crossed the cut early', { timeout: 150_000 }, async () => {
  const { figures: f } = await runSim({
    nodes: 30,
    procs: 2,
    seed: 7,
    durationMs: 50_000,
    // republish at 30 s (+ phase ≤ 5 s): inside the partition [20 s, 36 s), and never again in the run
    advertLifetimeMs: 60_000,
    partitionAtMs: 20_000,
    partitionMs: 16_000,
    downMs: 8_000,
    jobEveryMs: 15_000,
    collectMs: 5_000,
    warmupMs: 6_000,
    // the daemon's anti-entropy, at a pace that fits the 14 s between the heal and the end
    resyncMs: 5_000,
  });
  assert.ok(f.heal, 'the run had a partition');
  assert.ok(f.heal.crossing > 0, 'adverts were published while the halves were apart');
  assert.equal(f.heal.leaked, 0, 'no advert crossed the cut while it held');
  assert.equal(f.missingAtEnd, 0, `every node holds every provider's latest advert at the end (${f.nodesMissingAtEnd} nodes miss some)`);
  assert.ok(f.reach.adverts > 0);
  assert.ok(f.offers.decided > 0 && f.offers.offersPerJob > 0, 'jobs were decided with offers');
  assert.deepEqual(f.errors, []);
});
