/**
 * Work a crash took with it (docs/node.md "Orphaned work after a crash"): a provider notes each job it accepts in
 * its runs store (src/store/provider-runs.ts, a real LevelDB here) before running it, the receipt supersedes the
 * note, and a note left at the next start gets the failed receipt EXEC_PROVIDER_CRASHED: signed, kept, gossiped
 * and sent to the buyer, as an exec group's orphan is. Builtin work has no process group to find, so before the
 * notes nothing was signed for it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Opened } from '../../../src/records/envelope.js';
import { type Job, type Offer, type Receipt } from '../../../src/records/kinds.js';
import { fakeClock } from '../../../src/util/clock.js';
import { Provider } from '../../../src/roles/provider/provider.js';
import type { ExecFrame } from '../../../src/roles/exec-protocol.js';
import { closeDb, openDb, sub, injectWriteFault, setRecovery, storeProblem } from '../../../src/store/db.js';
import { ProviderRuns } from '../../../src/store/provider-runs.js';
import { NOW, did, runsConfig, runsDeps, runsJob, selectionOf } from './runs-rig.js';

const input = new TextEncoder().encode('crash me');

function provider(runs: ProviderRuns, clock: ReturnType<typeof fakeClock>, extra: Partial<ConstructorParameters<typeof Provider>[0]> = {}) {
  const receipts: Array<Opened<Receipt>> = [];
  const published: Opened[] = [];
  const delivered: Array<Opened<Receipt>> = [];
  const outcomes: string[] = [];
  const config = runsConfig(['builtin.sha256', 'builtin.sleep']);
  const p = new Provider({
    ...runsDeps(runs, clock),
    config,
    publish: async (kind, env) => {
      if (kind === 'receipt') published.push(env);
      return 1;
    },
    deliver: (r) => void delivered.push(r),
    onReceipt: async (r, _offer, job) => {
      await runs.record(r.record.job, r.address, Math.max(job.record.deadline, r.record.completedAt));
      receipts.push(r);
    },
    onOutcome: (status, workload) => outcomes.push(`${status}:${workload}`),
    ...extra,
  });
  return { p, receipts, published, delivered, outcomes };
}

function job(workload: string, params: string): Opened<Job> {
  return runsJob(workload, input, params);
}

/** Offer on the job, then run it over a fake exec stream; resolves when the exchange ends. */
async function run(p: Provider, j: Opened<Job>, frames: ExecFrame[], signal = new AbortController().signal): Promise<void> {
  const offer = (await p.onJob(j)) as Opened<Offer>;
  assert.ok(offer, 'offered');
  const selection = selectionOf(j, offer);
  const queue: unknown[] = [{ t: 'exec', selection: selection.bytes, job: j.bytes, offer: offer.bytes, input }];
  await p.handleExec({ next: async () => queue.shift(), send: async (f) => void frames.push(f as ExecFrame), signal, reserve: () => {}, setDeadline: () => {} });
}

test('accepted builtin work is noted before it runs; its receipt supersedes the note; a note a crash left gets EXEC_PROVIDER_CRASHED at the next start', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-crashed-'));
  const db = await openDb(join(dir, 'db'));
  const clock = fakeClock(NOW);
  try {
    const runs = await ProviderRuns.open(db, sub(db, 'provider-runs'), NOW);
    const first = provider(runs, clock);
    await first.p.start();

    // A job that finishes leaves no note.
    const quick = job('builtin.sha256', '1');
    await run(first.p, quick, []);
    assert.equal(first.receipts.at(-1)?.record.status, 'completed');
    assert.deepEqual(await runs.notes(), [], 'the receipt superseded the note');

    // A long one, running when the "crash" comes: its note is on disk with its envelopes.
    const slow = job('builtin.sleep', '60000');
    const frames: ExecFrame[] = [];
    const stream = new AbortController();
    const running = run(first.p, slow, frames, stream.signal);
    for (let i = 0; i < 200 && !frames.some((f) => f.t === 'accepted'); i++) await new Promise((r) => setTimeout(r, 10));
    const notes = await runs.notes();
    assert.deepEqual(notes.map((n) => [n.job, n.startedAt]), [[slow.address, NOW]], 'noted before it ran');
    assert.deepEqual(notes[0]!.jobEnvelope, slow.bytes);

    // The restarted provider (the same store) finds the note and signs the failed receipt.
    clock.advance(5_000);
    const second = provider(runs, clock);
    await second.p.start();
    const r = second.receipts.find((x) => x.record.job === slow.address);
    assert.ok(r, 'a receipt for the work the crash took');
    assert.equal(r.signer, did);
    assert.equal(r.record.status, 'failed');
    assert.equal(r.record.failure?.code, 'EXEC_PROVIDER_CRASHED');
    assert.deepEqual([r.record.startedAt, r.record.completedAt, r.record.energy.uj], [NOW, NOW + 5_000, 0]);
    assert.deepEqual(second.outcomes, ['failed:builtin.sleep']);
    assert.deepEqual(second.published.map((x) => x.address), [r.address], 'gossiped');
    assert.deepEqual(second.delivered.map((x) => x.address), [r.address], 'and sent to the buyer');
    assert.equal(await runs.has(slow.address), true);
    assert.deepEqual(await runs.notes(), [], 'the note is superseded');

    // A third start signs nothing again.
    const third = provider(runs, clock);
    await third.p.start();
    assert.deepEqual(third.receipts, []);
    await Promise.all([first.p.stop(), second.p.stop(), third.p.stop()]);
    stream.abort();
    await running;
  } finally {
    await closeDb(db);
    rmSync(dir, { recursive: true, force: true });
  }
});

/** Run `j` on the offer `offer` over a fake exec stream (the offer made beforehand); the frames sent back. */
async function exec(p: Provider, j: Opened<Job>, offer: Opened<Offer>): Promise<ExecFrame[]> {
  const frames: ExecFrame[] = [];
  const selection = selectionOf(j, offer);
  const queue: unknown[] = [{ t: 'exec', selection: selection.bytes, job: j.bytes, offer: offer.bytes, input }];
  await p.handleExec({ next: async () => queue.shift(), send: async (f) => void frames.push(f as ExecFrame), signal: new AbortController().signal, reserve: () => {}, setDeadline: () => {} });
  return frames;
}

test('a provider whose store takes no writes refuses the work before it runs (EXEC_PROVIDER_STORE_FAILED), quotes nothing meanwhile, and works again once the store is reopened', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-storefail-'));
  const db = await openDb(join(dir, 'db'));
  const clock = fakeClock(NOW);
  let diskBack = false;
  setRecovery(db, { firstDelayMs: 5, maxDelayMs: 10, probe: async () => diskBack });
  try {
    const runs = await ProviderRuns.open(db, sub(db, 'provider-runs'), NOW);
    const ran: string[] = [];
    const h = provider(runs, clock, { storeProblem: () => storeProblem(db), onOutcome: (status, workload) => void ran.push(`${status}:${workload}`) });
    await h.p.start();
    const [a, b, c] = [job('builtin.sha256', '1'), job('builtin.sha256', '2'), job('builtin.sha256', '3')];
    const offerA = (await h.p.onJob(a)) as Opened<Offer>;
    const offerB = (await h.p.onJob(b)) as Opened<Offer>;
    assert.ok(offerA && offerB);

    // The disk fills: the note of A cannot be written. A is refused before it runs, not run without a receipt.
    injectWriteFault(db, Object.assign(new Error('IO error: /data/db/000003.log: No space left on device'), { code: 'LEVEL_IO_ERROR' }));
    const fa = await exec(h.p, a, offerA);
    assert.deepEqual(fa.map((f) => f.t), ['refused']);
    const refusal = fa[0] as Extract<ExecFrame, { t: 'refused' }>;
    assert.equal(refusal.code, 'EXEC_PROVIDER_STORE_FAILED');
    assert.match(refusal.message, /No space left on device/);
    assert.doesNotMatch(refusal.message, /\/data\/db/, 'no path of the provider goes to the buyer');
    // B, selected before: refused at its header while the store takes no writes
    const fb = await exec(h.p, b, offerB);
    assert.deepEqual(fb.map((f) => [f.t, (f as { code?: string }).code]), [['refused', 'EXEC_PROVIDER_STORE_FAILED']]);
    assert.deepEqual(ran, [], 'nothing ran');
    assert.deepEqual(h.receipts, []);
    assert.equal(h.p.running, 0, 'the slots are free again');
    assert.equal(await h.p.onJob(c), undefined, 'no offer while the store takes no writes');

    // The disk has room again: the store is reopened, and C is quoted and runs.
    diskBack = true;
    for (let i = 0; i < 300 && storeProblem(db) !== undefined; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(storeProblem(db), undefined);
    const offerC = (await h.p.onJob(c)) as Opened<Offer>;
    assert.ok(offerC, 'quoting again');
    const fc = await exec(h.p, c, offerC);
    assert.deepEqual([fc[0]?.t, fc.at(-1)?.t], ['accepted', 'receipt']);
    assert.deepEqual(ran, ['completed:builtin.sha256']);
    await h.p.stop();
  } finally {
    await closeDb(db);
    rmSync(dir, { recursive: true, force: true });
  }
});
