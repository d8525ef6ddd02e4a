/**
 * At a provider's start, a training member job's run a crash left (its status.json still `training`) is ended with
 * what its job's receipt says (src/node/provider-wiring.ts interruptedRunEnds, src/roles/trainer/run-dirs.ts;
 * docs/training.md "A provider's run directories"). The run's directory is linked to its job by the job's input hash;
 * the job by the run note the crash left, for which the crash recovery that follows signs EXEC_PROVIDER_CRASHED
 * (src/roles/provider/crash-recovery.ts). The run is marked with the code and words of that very receipt: after the
 * recovery, the receipt it signed says the same. A real runs store (runs-rig.ts).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { Counter, Registry } from 'prom-client';
import { join } from 'node:path';
import { seal, type Opened } from '../../../src/records/envelope.js';
import { hashHex } from '../../../src/records/address.js';
import { T, type Job, type Offer, type Receipt } from '../../../src/records/kinds.js';
import { fakeClock } from '../../../src/util/clock.js';
import { silentLogger } from '../../../src/util/log.js';
import { recoverCrashedWork } from '../../../src/roles/provider/crash-recovery.js';
import { interruptedRunEnds, trainRunsHistory } from '../../../src/node/provider-wiring.js';
import { reconcileRunDirs } from '../../../src/roles/trainer/run-dirs.js';
import { tempDir } from '../ledger/helpers.js';
import { NOW, buyer, did, signer, withStore } from './runs-rig.js';

test('a member job’s run a crash left is marked stopped with the code and words of the EXEC_PROVIDER_CRASHED receipt the recovery then signs for its job', async () => {
  await withStore('train-runs-start', async (runs) => {
    const clock = fakeClock(NOW + 60_000);
    const input = new TextEncoder().encode(JSON.stringify({ run: 'a run bundle' }));
    const job = seal(T.job, { workload: 'train.member', requirements: {}, maxPrice: { amount: '0.01', currency: 'USD' }, announcedAt: NOW, deadline: NOW + 600_000, timeoutMs: 300_000, input: { hash: hashHex(input), size: input.length }, inputSealed: 'no', nonce: Uint8Array.of(7) }, buyer) as Opened<Job>;
    const offer = seal(T.offer, { job: job.address, advert: 'sha256:' + 'a'.repeat(64), price: { amount: '0.001', currency: 'USD' }, durationMs: 1000, issuedAt: NOW, startBy: NOW + 10_000, expiresAt: NOW + 10_000 }, signer) as Opened<Offer>;
    // the note the provider wrote as the member job started, left by the crash
    await runs.note({ job: job.address, jobEnvelope: job.bytes, offerEnvelope: offer.bytes, startedAt: NOW }, job.record.deadline);
    const bytes = new Map<string, Uint8Array>();
    const signed: Array<Opened<Receipt>> = [];
    const before = await interruptedRunEnds(runs, async (a) => bytes.get(a), () => signed);
    const marked = before(job.record.input.hash);
    assert.equal(marked?.code, 'EXEC_PROVIDER_CRASHED');
    assert.equal(marked?.job, job.address);
    assert.equal(before('sha256:' + 'f'.repeat(64)), undefined, 'another input: no receipt known');

    // the start marks the run directory so
    const t = tempDir('c0-train-start-');
    try {
      const dir = join(t.dir, 'run1');
      mkdirSync(dir);
      writeFileSync(join(dir, 'status.json'), JSON.stringify({ status: 'training', step: 4 }));
      writeFileSync(join(dir, 'member-job.json'), JSON.stringify({ inputHash: job.record.input.hash, startedAt: NOW }));
      assert.equal(reconcileRunDirs(t.dir, { now: clock(), ended: before, log: silentLogger() }), 1);
      const status = JSON.parse(readFileSync(join(dir, 'status.json'), 'utf8')) as { status: string; step: number; stopReason: { code: string; message: string } };
      assert.deepEqual([status.status, status.step, status.stopReason.code], ['stopped', 4, 'EXEC_PROVIDER_CRASHED']);

      // then the crash recovery signs the job's receipt: the very code and words the run was marked with
      await recoverCrashedWork({
        signer,
        did,
        clock,
        log: silentLogger(),
        state: { hasReceiptFor: (j) => runs.has(j), notes: () => runs.notes(), dropNote: (j) => runs.dropNote(j) },
        keep: async (r, _o, j) => {
          await runs.record(j.address, r.address, j.record.deadline);
          bytes.set(r.address, r.bytes);
          signed.push(r);
        },
        publish: async () => 1,
      });
      assert.equal(signed.length, 1);
      assert.deepEqual(signed[0]!.record.failure, { code: status.stopReason.code, message: status.stopReason.message });
      // a later start (the note gone) finds the same in the receipt this provider signed
      const after = await interruptedRunEnds(runs, async (a) => bytes.get(a), () => signed);
      assert.deepEqual(after(job.record.input.hash), marked);
    } finally {
      t.cleanup();
    }
  });
});

test('at the provider’s start (setupProvider: trainRunsHistory) a run a crash left is ended, and finished runs go with the history, counted in c0mpute_history_pruned_total', async () => {
  await withStore('train-runs-wiring', async (runs) => {
    const t = tempDir('c0-train-wiring-');
    const stops: Array<() => Promise<void>> = [];
    try {
      const root = join(t.dir, 'train');
      const DAY = 24 * 3600_000;
      const now = NOW + 40 * DAY;
      const mk = (name: string, status: string, mark: Record<string, unknown>) => {
        mkdirSync(join(root, name, 'steps'), { recursive: true });
        writeFileSync(join(root, name, 'status.json'), JSON.stringify({ status, step: 4 }));
        writeFileSync(join(root, name, 'member-job.json'), JSON.stringify(mark));
      };
      mk('killed', 'training', { inputHash: 'sha256:' + 'c'.repeat(64), startedAt: NOW });
      mk('old', 'done', { inputHash: 'sha256:' + 'd'.repeat(64), startedAt: NOW, endedAt: NOW });
      mk('recent', 'done', { inputHash: 'sha256:' + 'e'.repeat(64), startedAt: now - DAY, endedAt: now - DAY });
      const registry = new Registry();
      new Counter({ name: 'c0mpute_history_pruned_total', help: 'x', registers: [registry] });
      const o = {
        name: 'test',
        did,
        d: { dataDir: t.dir, config: { history: { keepDays: 30 } } },
        log: silentLogger(),
        clock: () => now,
        registry,
        market: { getBytes: async () => undefined, evidence: { receiptsAbout: () => [] } },
      };
      await trainRunsHistory(o as never, runs, { onStop: (f) => void stops.push(f) });
      const status = JSON.parse(readFileSync(join(root, 'killed', 'status.json'), 'utf8')) as { status: string; stopReason: { code: string } };
      assert.deepEqual([status.status, status.stopReason.code], ['stopped', 'TRAIN_INTERRUPTED'], 'no note nor receipt of its job here');
      // the history pass, 2 s after start
      for (let i = 0; i < 500 && existsSync(join(root, 'old', 'steps')); i++) await new Promise((r) => setTimeout(r, 20));
      assert.deepEqual(readdirSync(join(root, 'old')), ['member-job.json'], 'past keepDays: emptied');
      assert.ok(existsSync(join(root, 'recent', 'steps')), 'within keepDays: kept');
      assert.ok(existsSync(join(root, 'killed', 'steps')), 'ended just now: kept');
      assert.equal((await registry.getSingleMetricAsString('c0mpute_history_pruned_total')).split('\n').at(-1), 'c0mpute_history_pruned_total 1');
    } finally {
      for (const s of stops) await s();
      t.cleanup();
    }
  });
});
