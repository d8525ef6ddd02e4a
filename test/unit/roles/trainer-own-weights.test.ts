/**
 * A training worker holds the weights it reached per step only for the epochs a request can still ask about: the
 * one running and the one last committed, of this view (src/roles/trainer/worker.ts #dropAggs; review s43 R4 F4).
 * Before, an entry per step was kept for the whole run (~158 MB a million steps; the schema allows 10⁹). Members
 * over an in-process network (test/unit/roles/trainer-net.ts): every epoch still commits with its witness.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { P } from '../market/fixtures.js';
import { fakeNet, makeRun, runAll } from './trainer-net.js';

describe("a training worker's own weights per step", () => {
  it('are kept for at most two epochs while a run of six epochs commits every one', async () => {
    const members = [P(550), P(551)];
    const spe = 3;
    const run = makeRun(members, members[0]!, { stepsPerEpoch: spe, epochs: 6, timeoutMs: 5_000 });
    const { workers, res } = await runAll(members, run, fakeNet());
    for (const r of res) assert.equal(r.status, 'fulfilled', r.status === 'rejected' ? String(r.reason) : '');
    for (const w of workers) {
      assert.equal(w.status, 'done');
      assert.equal(w.epochs.length, 6);
      assert.ok(w.epochs.every((e) => e.witnesses.length === 1), 'each epoch witnessed');
      assert.ok(w.heldOwnWeights() <= 2 * spe, `${w.heldOwnWeights()} steps' weights held`);
    }
  });
});
