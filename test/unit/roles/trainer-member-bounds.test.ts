/**
 * builtin.train-member's bounds (src/roles/trainer/member-job.ts checkMemberBounds; docs/training.md "A training run
 * bought as a gang"; review s43 R4 F2): a run whose model is over the jobs' bound (MAX_JOB_PARAMS weights, the one
 * builtin.mlp-pipeline applies) or whose steps are over MAX_MEMBER_STEPS is refused EXEC_BAD_INPUT naming the run's
 * field, before any worker is made or run directory marked. Before, a run of 33.6 M weights took a provider to 2.2 GB
 * and minutes of compute per step, and nothing bounded the steps. One-member runs over an in-process network.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { stringify } from 'yaml';
import { C0Error } from '../../../src/errors.js';
import { buildRun } from '../../../src/roles/trainer/run-file.js';
import { seal } from '../../../src/records/envelope.js';
import { TRAIN_T } from '../../../src/training/record-kinds.js';
import { MAX_MEMBER_STEPS, checkMemberBounds, runMemberJob } from '../../../src/roles/trainer/member-job.js';
import { MAX_JOB_ACTIVATIONS, MAX_JOB_PARAMS, paramCount } from '../../../src/training/model.js';
import { tempDir } from '../ledger/helpers.js';
import { NOW, P } from '../market/fixtures.js';
import { fakeNet } from './trainer-net.js';

const badInput = (field: string) => (e: unknown) => e instanceof C0Error && e.code === 'EXEC_BAD_INPUT' && e.field === field && e.message.startsWith(`${field}:`);

describe('builtin.train-member bounds the run it takes', () => {
  it('checkMemberBounds: the model, the batch × widest layer and the steps', () => {
    const ok = { model: { arch: 'mlp' as const, layers: [4, 16, 3] }, batch: 8, epochs: 10, stepsPerEpoch: 10 };
    checkMemberBounds(ok);
    assert.ok(paramCount({ layers: [4, 2048, 2048, 3] }) > MAX_JOB_PARAMS);
    assert.throws(() => checkMemberBounds({ ...ok, model: { arch: 'mlp', layers: [4, 2048, 2048, 3] } }), badInput('model.layers'));
    checkMemberBounds({ ...ok, model: { arch: 'mlp', layers: [4, 2000, 2000, 3] } });
    assert.throws(() => checkMemberBounds({ ...ok, model: { arch: 'mlp', layers: [4, 4096, 3] }, batch: MAX_JOB_ACTIVATIONS / 4096 + 1 }), badInput('batch'));
    assert.throws(() => checkMemberBounds({ ...ok, epochs: MAX_MEMBER_STEPS / 10 + 1 }), badInput('epochs'));
    checkMemberBounds({ ...ok, epochs: MAX_MEMBER_STEPS / 10 });
  });

  for (const [what, extra, field] of [
    ['a model over MAX_JOB_PARAMS', { model: { arch: 'mlp', layers: [4, 2048, 2048, 3] }, stepsPerEpoch: 1, epochs: 1 }, 'model.layers'],
    ['more steps than MAX_MEMBER_STEPS', { stepsPerEpoch: 1000, epochs: MAX_MEMBER_STEPS / 1000 + 1 }, 'epochs'],
  ] as const) {
    it(`a member job of ${what} is refused EXEC_BAD_INPUT (${field}) before it trains`, async () => {
      const A = P(540);
      const d = tempDir('c0-member-bounds-');
      try {
        // `train start` refuses such a run (run-file.ts runBounds): one signed elsewhere is sealed here past the bounds
        const small = buildRun(stringify({ name: 'big', model: { layers: [4, 8, 3] }, seed: 1, timeoutMs: 2_000, members: [{ did: A.did, addr: '/ip4/127.0.0.1/tcp/1' }] }), A.signer, NOW).bundle.run;
        const run = seal(TRAIN_T.run, { ...small.record, ...extra } as never, A.signer);
        let units = 0;
        const ctx = {
          input: new TextEncoder().encode(JSON.stringify({ run: Buffer.from(run.bytes).toString('hex') })),
          // without the bound the job would train until this (the step count) or to its end (the model)
          signal: AbortSignal.timeout(5_000),
          onProgress: (p: { units?: number }) => (units = p.units ?? units),
          maxOutputBytes: 1 << 20,
          host: { signer: A.signer, did: A.did, net: fakeNet().netFor(A.did), dir: d.dir } as never,
        };
        await assert.rejects(runMemberJob(ctx), badInput(field));
        assert.equal(units, 0, 'no step ran');
        assert.ok(!existsSync(d.dir) || readdirSync(d.dir).length === 0, 'no run directory made');
      } finally {
        d.cleanup();
      }
    });
  }
});
