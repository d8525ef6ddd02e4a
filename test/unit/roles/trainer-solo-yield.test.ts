/**
 * A one-member run yields to the event loop every step (src/roles/trainer/worker.ts #runEpoch; review s43 R4 F1):
 * with no other member it awaits nothing that is not already settled, so before, its step loop was one endless
 * microtask chain: timers, sockets and signal handlers never ran, so the job's deadline never fired, the provider's
 * node froze, and the run went on to its last step (a `completed` receipt signed past the timeout). Now a timer set
 * before the run fires during it, and closing the worker's mailbox (a job's abort or timeout, `stop()`) ends the run
 * at the next step with that failure; a member job whose deadline passes fails EXEC_TIMEOUT. Counts, not times, are
 * asserted: the run stops before its last step.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { C0Error } from '../../../src/errors.js';
import { buildRun } from '../../../src/roles/trainer/run-file.js';
import { runMemberJob } from '../../../src/roles/trainer/member-job.js';
import { TrainerWorker, type TrainerEvent } from '../../../src/roles/trainer/worker.js';
import { tempDir } from '../ledger/helpers.js';
import { NOW, P, type Party } from '../market/fixtures.js';
import { fakeNet } from './trainer-net.js';

const STEPS = 200;
const EPOCHS = 2;
const soloRun = (party: Party) =>
  buildRun(stringify({ name: 'solo', model: { layers: [4, 8, 3] }, seed: 1, stepsPerEpoch: STEPS, epochs: EPOCHS, timeoutMs: 2_000, members: [{ did: party.did, addr: '/ip4/127.0.0.1/tcp/1' }] }), party.signer, NOW).bundle.run;

describe('a one-member run yields every step', () => {
  it('a timer set before the run fires during it, and the mailbox it closes ends the run at the next step', async () => {
    const A = P(520);
    const d = tempDir('c0-solo-');
    try {
      const events: TrainerEvent[] = [];
      const w = new TrainerWorker({ signer: A.signer, did: A.did, run: soloRun(A), addrs: {}, dir: d.dir, clock: () => Date.now(), net: fakeNet().netFor(A.did) as never, onEvent: (e) => events.push(e) });
      await w.start();
      await w.join();
      let fired = false;
      setTimeout(() => {
        fired = true;
        w.box.close(new C0Error('EXEC_ABORTED', 'the job was stopped'));
      }, 0);
      await assert.rejects(w.run(), (e: unknown) => e instanceof C0Error && e.code === 'EXEC_ABORTED');
      assert.ok(fired);
      const steps = events.filter((e) => e.e === 'step').length;
      assert.ok(steps < STEPS * EPOCHS, `stopped before its last step (${steps} of ${STEPS * EPOCHS})`);
      assert.equal(w.status, 'stopped');
      assert.equal(w.stopReason?.code, 'EXEC_ABORTED');
      assert.equal(readdirSync(join(d.dir, 'steps')).length, steps, 'no step past the stop');
      await w.stop();
    } finally {
      d.cleanup();
    }
  });

  it('a member job of a one-member run whose deadline passes fails EXEC_TIMEOUT before its last step', async () => {
    const A = P(521);
    const d = tempDir('c0-solo-job-');
    try {
      const run = soloRun(A);
      const host = { signer: A.signer, did: A.did, net: fakeNet().netFor(A.did), dir: d.dir };
      let units = 0;
      const ctx = {
        input: new TextEncoder().encode(JSON.stringify({ run: Buffer.from(run.bytes).toString('hex') })),
        signal: AbortSignal.timeout(1),
        onProgress: (p: { units?: number }) => (units = p.units ?? units),
        maxOutputBytes: 1 << 20,
        host: host as never,
      };
      await assert.rejects(runMemberJob(ctx), (e: unknown) => e instanceof C0Error && e.code === 'EXEC_TIMEOUT');
      assert.ok(units < STEPS * EPOCHS, `stopped before its last step (${units} of ${STEPS * EPOCHS})`);
    } finally {
      d.cleanup();
    }
  });
});
