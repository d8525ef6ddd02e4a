/**
 * One training run per node network at a time (src/roles/trainer/worker.ts
 * start/stop, src/roles/trainer/member-job.ts; docs/training.md "A training
 * run bought as a gang"): `/c0mpute/train/1` has one handler per node, so a
 * second worker on a provider's network would replace the first one's handler
 * and take its messages (the first run then failed, TRAIN_JOIN_TIMEOUT). Now
 * the second is refused (TRAIN_BUSY), the first finishes, and stopping it
 * unregisters the handler, so the node can take the next run. Workers over an
 * in-process network (test/unit/roles/trainer-net.ts).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { stringify } from 'yaml';
import { C0Error } from '../../../src/errors.js';
import { buildRun } from '../../../src/roles/trainer/run-file.js';
import { runMemberJob } from '../../../src/roles/trainer/member-job.js';
import { TrainerWorker } from '../../../src/roles/trainer/worker.js';
import { TRAIN_PROTOCOL } from '../../../src/training/transport.js';
import { tempDir } from '../ledger/helpers.js';
import { NOW, P, type Party } from '../market/fixtures.js';
import { fakeNet } from './trainer-net.js';

const makeRun = (name: string, parties: Party[]) =>
  buildRun(stringify({ name, model: { layers: [4, 8, 3] }, seed: 1, stepsPerEpoch: 2, epochs: 2, timeoutMs: 2_000, members: parties.map((m, i) => ({ did: m.did, addr: `/ip4/127.0.0.1/tcp/${i + 1}` })) }), parties[0]!.signer, NOW).bundle.run;

describe('one training run per node network', () => {
  it('a second run on a node running one is TRAIN_BUSY; the first finishes; once stopped, the node takes the next', async () => {
    const [A, B, C] = [P(500), P(501), P(503)];
    const r1 = makeRun('one', [A, B]);
    const r2 = makeRun('two', [A, C]);
    const net = fakeNet();
    const hostA = net.netFor(A.did); // the provider's one host, shared by its jobs
    const dirs = [tempDir('c0-one-run-'), tempDir('c0-one-run-'), tempDir('c0-one-run-'), tempDir('c0-one-run-')];
    const mk = (m: Party, run: typeof r1, n: ReturnType<typeof net.netFor>, i: number) => new TrainerWorker({ signer: m.signer, did: m.did, run, addrs: {}, dir: dirs[i]!.dir, clock: () => Date.now(), net: n as never, joinTimeoutMs: 10_000 });
    try {
      const a1 = mk(A, r1, hostA, 0);
      const b1 = mk(B, r1, net.netFor(B.did), 1);
      const a2 = mk(A, r2, hostA, 2);
      const c2 = mk(C, r2, net.netFor(C.did), 3);
      await a1.start();
      await b1.start();
      await assert.rejects(a2.start(), (e: unknown) => e instanceof C0Error && e.code === 'TRAIN_BUSY' && e.message.includes(r1.address));
      // a worker refused at start owns nothing: stopping it leaves the first run's handler in place
      await a2.stop();
      assert.ok(net.handlers.get(A.did)?.has(TRAIN_PROTOCOL));
      await Promise.all([a1.join(), b1.join()]);
      await Promise.all([a1.run(), b1.run()]);
      assert.equal(a1.status, 'done');
      assert.equal(b1.status, 'done');
      await a1.stop();
      await b1.stop();
      assert.equal(net.handlers.get(A.did)?.has(TRAIN_PROTOCOL), false, 'stopping unregisters the handler');
      const a3 = mk(A, r2, hostA, 2);
      await a3.start();
      await c2.start();
      await Promise.all([a3.join(), c2.join()]);
      await Promise.all([a3.run(), c2.run()]);
      assert.equal(a3.status, 'done');
      assert.equal(c2.status, 'done');
      await a3.stop();
      await c2.stop();
    } finally {
      for (const d of dirs) d.cleanup();
    }
  });

  it('a second builtin.train-member job on a provider running one fails with TRAIN_BUSY; the first completes', async () => {
    const [A, B, C] = [P(500), P(501), P(503)];
    const r1 = makeRun('one', [A, B]);
    const r2 = makeRun('two', [A, C]);
    const net = fakeNet();
    const dirs = [tempDir('c0-one-job-'), tempDir('c0-one-job-')];
    try {
      const host = { signer: A.signer, did: A.did, net: net.netFor(A.did), dir: dirs[0]!.dir };
      const ctx = (run: typeof r1) => ({ input: new TextEncoder().encode(JSON.stringify({ run: Buffer.from(run.bytes).toString('hex') })), signal: new AbortController().signal, onProgress: () => {}, maxOutputBytes: 1 << 20, host: host as never });
      const b = new TrainerWorker({ signer: B.signer, did: B.did, run: r1, addrs: {}, dir: dirs[1]!.dir, clock: () => Date.now(), net: net.netFor(B.did) as never, joinTimeoutMs: 10_000 });
      await b.start();
      const job1 = runMemberJob(ctx(r1));
      await assert.rejects(runMemberJob(ctx(r2)), { code: 'TRAIN_BUSY' });
      await b.join();
      await b.run();
      const out = JSON.parse(new TextDecoder().decode(await job1)) as { run: string; status: string };
      assert.equal(out.run, r1.address);
      assert.equal(out.status, 'done');
      await b.stop();
      assert.equal(net.handlers.get(A.did)?.has(TRAIN_PROTOCOL), false, 'the finished job unregistered its handler');
    } finally {
      for (const d of dirs) d.cleanup();
    }
  });
});
