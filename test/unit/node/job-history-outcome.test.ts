/**
 * How a buyer's run of its own job ended, in its job history (docs/node.md "Job history"): `GET /v1/jobs` (control.ts
 * jobs: `outcome`, `attempts`), `c0mpute jobs` (jobsBody) and the console's Jobs list (consoleBuyerRow) say the same.
 * QA (reputation and audit pass, F1): a run that failed (EXEC_PROVIDER_SILENT, a non-delivery signed) and then got its
 * provider's `completed` receipt late read as "completed" everywhere, and its non-delivery was listed nowhere, because
 * the attempts were given only for a job with no receipt held and the status was the last receipt's.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EvidenceStore } from '../../../src/reputation/store.js';
import { RecordStore } from '../../../src/store/records.js';
import { closeDb, openDb } from '../../../src/store/db.js';
import { jobs } from '../../../src/node/control.js';
import { consoleBuyerRow } from '../../../src/node/console-routes.js';
import { jobHistory, outcomeNow } from '../../../src/node/job-history.js';
import type { OverlayNode } from '../../../src/node/overlay.js';
import { jobsBody, type JobsEntry } from '../../../src/cli/commands/node.js';
import { short } from '../../../src/cli/short.js';
import { seal, T, type Job, type Offer, type Opened, type Selection } from '../../../src/records/index.js';
import { signNonDelivery } from '../../../src/reputation/nondelivery.js';
import { outcomeView } from '../../../ui/job-walk.js';
import { NOW, P, acceptance, advert, job, offer, receipt } from '../market/fixtures.js';

const BUYER = P(330);
const PROV = P(331);
const OTHER = P(332);

type Wire = JobsEntry & { outcome: { status: string; provider?: string; verdict?: string; failure?: string; reason?: string; nondelivery?: string; receipt?: string; at?: number }; attempts: Array<{ provider: string; selection: string; nondelivery?: string; reason?: string; receipts: string[] }> };

test('a run that failed and then got its provider’s receipt late reads failed, with its attempts and non-deliveries, in the API, the CLI and the console alike', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-outcome-'));
  const db = await openDb(dir);
  try {
    const records = await RecordStore.open(db);
    const ev = new EvidenceStore();
    const [silent, failover, inFlight, noOffers, failedAck, disputed] = [1, 2, 3, 4, 5, 6].map((i) => job(BUYER, { nonce: new Uint8Array([i, 88]), announcedAt: NOW + i * 1000 }));
    for (const j of [silent, failover, inFlight, noOffers, failedAck, disputed]) await records.put(j!);
    const select = async (j: Opened<Job>, o: Opened<Offer>, at: number) => {
      const s = seal(T.selection, { job: j.address, buyer: BUYER.did, policy: 'cheapest', winner: o.address, considered: [{ provider: o.signer, offer: o.address }], decidedAt: at }, BUYER.signer) as Opened<Selection>;
      await records.put(s);
      return s;
    };

    // F1's run: PROV fell silent (non-delivery `unreachable` signed), then its completed receipt came late, no verdict
    const o1 = offer(PROV, silent!, advert(PROV));
    const s1 = await select(silent!, o1, NOW + 1_100);
    const nd1 = signNonDelivery({ job: silent!, selection: s1, offer: o1, reason: 'unreachable', signedAt: NOW + 21_000, signer: BUYER.signer });
    const late1 = receipt(PROV, BUYER, o1, { startedAt: NOW + 1_200, completedAt: NOW + 36_000 });

    // the killed provider's job: PROV's non-delivery, a failover to OTHER that completed and was accepted, then PROV's
    // crashed receipt late
    const o2 = offer(PROV, failover!, advert(PROV));
    const o3 = offer(OTHER, failover!, advert(OTHER));
    const s2 = await select(failover!, o2, NOW + 2_100);
    await select(failover!, o3, NOW + 2_500);
    const nd2 = signNonDelivery({ job: failover!, selection: s2, offer: o2, reason: 'unreachable', signedAt: NOW + 2_400, signer: BUYER.signer });
    const done = receipt(OTHER, BUYER, o3, { startedAt: NOW + 2_600, completedAt: NOW + 2_900 });
    const crashed = receipt(PROV, BUYER, o2, { status: 'failed', failure: { code: 'EXEC_PROVIDER_CRASHED', message: 'the provider restarted' }, startedAt: NOW + 2_200, completedAt: NOW + 9_000 });

    // selected, nothing signed yet: no outcome held
    const o4 = offer(PROV, inFlight!, advert(PROV));
    await select(inFlight!, o4, NOW + 3_100);

    // a failed receipt the run acknowledged, and a completed one it disputed
    const o5 = offer(PROV, failedAck!, advert(PROV));
    await select(failedAck!, o5, NOW + 5_100);
    const r5 = receipt(PROV, BUYER, o5, { status: 'failed', failure: { code: 'EXEC_TIMEOUT', message: 'ran past its timeout' }, startedAt: NOW + 5_200, completedAt: NOW + 5_300 });
    const o6 = offer(PROV, disputed!, advert(PROV));
    await select(disputed!, o6, NOW + 6_100);
    const r6 = receipt(PROV, BUYER, o6, { startedAt: NOW + 6_200, completedAt: NOW + 6_300 });

    await ev.add(nd1, o1, late1, nd2, o2, o3, done, acceptance(BUYER, done, 'accepted', { signedAt: NOW + 3_000 }), crashed, o5, r5, acceptance(BUYER, r5, 'accepted', { signedAt: NOW + 5_400 }), o6, r6, acceptance(BUYER, r6, 'disputed', { reason: 'output hash differs', signedAt: NOW + 6_400 }));
    const node = { records, market: { evidence: ev, earlierJobs: [] }, did: BUYER.did, clock: () => NOW } as unknown as OverlayNode;
    const page = JSON.parse(JSON.stringify(await jobs(node))) as { jobs: Wire[] };
    const of = (j: { address: string }) => page.jobs.find((x) => x.address === j.address)!;

    // the API: the run failed on its non-delivery; the late receipt is `late`, not the job's status
    const a = of(silent!);
    assert.deepEqual(a.outcome, { status: 'failed', provider: PROV.did, nondelivery: nd1.address, reason: 'unreachable', at: NOW + 21_000 });
    assert.deepEqual(a.attempts, [{ provider: PROV.did, selection: s1.address, nondelivery: nd1.address, reason: 'unreachable', receipts: [late1.address] }]);
    assert.equal(a.late?.receipt, late1.address);
    // the CLI: `run failed`, the attempt with its non-delivery, the late receipt on its own line; no bare `completed`
    const lines = jobsBody(a);
    assert.deepEqual(lines.slice(0, 2), ['run failed', `attempt 1: ${short(PROV.did)} non-delivery signed (unreachable)`]);
    assert.match(lines[2]!, /^late: .* the provider reports completed after this node’s run of the job ended/);
    assert.equal(lines.length, 3, lines.join('\n'));
    // the console: the same status, the non-delivery as its verdict, the late receipt beside it
    const h = (await jobHistory(records, ev, BUYER.did, { limit: 10 })).jobs;
    const row = (j: { address: string }) => consoleBuyerRow(h.find((x) => x.job.address === j.address)!, NOW);
    assert.deepEqual({ ...row(silent!), late: undefined }, { address: silent!.address, workload: silent!.record.workload, announcedAt: silent!.record.announcedAt, attempts: 1, status: 'failed', provider: PROV.did, verdict: 'non-delivery', late: undefined, lateStatus: 'completed' });
    assert.match(String(row(silent!).late), /completed after this node’s run of the job ended/);
    assert.deepEqual(outcomeView(a.outcome as never), { status: 'failed', text: 'run failed: non-delivery signed (unreachable)' });

    // a failover: both attempts listed, the first with its non-delivery, and the run completed with the second
    const b = of(failover!);
    assert.deepEqual(b.outcome, { status: 'completed', provider: OTHER.did, receipt: done.address, verdict: 'accepted', at: NOW + 3_000 });
    assert.deepEqual(b.attempts.map((x) => [x.provider, x.reason, x.receipts]), [[PROV.did, 'unreachable', [crashed.address]], [OTHER.did, undefined, [done.address]]]);
    assert.deepEqual(jobsBody(b).slice(0, 3), ['run completed', `attempt 1: ${short(PROV.did)} non-delivery signed (unreachable)`, `attempt 2: ${short(OTHER.did)} completed, accepted`]);
    assert.match(jobsBody(b)[3]!, /^late: .*reports failed \(EXEC_PROVIDER_CRASHED\) after this node had moved the job to another provider/);
    assert.deepEqual([row(failover!).status, row(failover!).provider, row(failover!).verdict, row(failover!).attempts, row(failover!).lateStatus], ['completed', OTHER.did, 'accepted', 2, 'failed']);

    // selected, no verdict and no non-delivery yet: none held, never `completed` or `failed`
    assert.deepEqual(of(inFlight!).outcome, { status: 'none' });
    assert.deepEqual(jobsBody(of(inFlight!)), ['no outcome held', `attempt 1: ${short(PROV.did)} no receipt, no non-delivery`]);
    assert.equal(row(inFlight!).status, undefined);
    // QA qaCon F4, F10: what this process knows of the run says how a job with no outcome held stands
    const at = (j: { address: string }, now: number, ctx: Parameters<typeof consoleBuyerRow>[2]) => consoleBuyerRow(h.find((x) => x.job.address === j.address)!, now, ctx);
    assert.equal(at(inFlight!, NOW, { run: { done: false } }).status, 'running');
    // selected, then the node stopped or crashed: broken off, once the deadline passed, or before it when an earlier process ran it
    assert.deepEqual([at(inFlight!, NOW, { earlier: true }).status, at(inFlight!, NOW, { earlier: true }).code], ['interrupted', 'JOB_INTERRUPTED']);
    assert.equal(at(inFlight!, inFlight!.record.deadline + 1, {}).status, 'interrupted');
    assert.equal(outcomeNow(h.find((x) => x.job.address === inFlight!.address)!, inFlight!.record.deadline + 1).code, 'JOB_INTERRUPTED');
    // an attempt whose run noted how it ended was not broken off (QA qaPnet F4: EXEC_BUSY, a provider busy with another
    // of our jobs, read JOB_INTERRUPTED after the deadline); one noted as this node's stop was
    const held = h.find((x) => x.job.address === inFlight!.address)!;
    const noted = (code: string) => outcomeNow({ ...held, attempts: held.attempts.map((x) => ({ ...x, note: { code, message: code } })) }, inFlight!.record.deadline + 1).code;
    assert.equal(noted('EXEC_BUSY'), undefined);
    assert.equal(noted('JOB_INTERRUPTED'), 'JOB_INTERRUPTED');
    // `c0mpute jobs` says it too (before, the code the API carried was not shown: `no outcome held`)
    assert.match(jobsBody({ ...of(inFlight!), outcome: { status: 'none', code: 'JOB_INTERRUPTED' } })[0]!, /^no outcome held: the run was broken off by this node’s stop or crash \(JOB_INTERRUPTED\)$/);
    // no provider selected: how this process's run ended, else (after a restart) that nobody was selected
    assert.equal(at(noOffers!, NOW, { run: { done: true, status: 'no-eligible-provider' } }).status, 'no-eligible-provider');
    assert.equal(at(noOffers!, NOW, { run: { done: true, status: 'no-offers' } }).status, 'no-offers');
    assert.equal(at(noOffers!, NOW, {}).status, undefined, 'before its deadline, with no run held: nothing says it ended');
    assert.match(String(at(noOffers!, noOffers!.record.deadline + 1, {}).note), /no provider was selected/);
    // a job whose outcome is held keeps it, whatever the run context
    assert.equal(at(failedAck!, NOW, { earlier: true, run: { done: true, status: 'failed' } }).status, 'failed');
    // nobody selected
    assert.deepEqual(jobsBody(of(noOffers!)), ['no outcome held (no provider was selected)']);
    assert.equal(row(noOffers!).attempts, 0);

    // a failed receipt acknowledged, a completed one disputed: the run failed
    assert.deepEqual([of(failedAck!).outcome.status, of(failedAck!).outcome.failure], ['failed', 'EXEC_TIMEOUT']);
    assert.deepEqual(jobsBody(of(failedAck!)), ['run failed', `attempt 1: ${short(PROV.did)} failed (EXEC_TIMEOUT), acknowledged`]);
    assert.deepEqual([of(disputed!).outcome.status, of(disputed!).outcome.verdict], ['failed', 'disputed']);
    assert.deepEqual([row(disputed!).status, row(disputed!).verdict], ['failed', 'disputed']);
    assert.equal(outcomeView(of(disputed!).outcome as never).text, 'run failed: its receipt disputed');
  } finally {
    await closeDb(db);
    rmSync(dir, { recursive: true, force: true });
  }
});

test('`c0mpute jobs` against a daemon from before `outcome`: its receipts, and the attempts of a job with none, as before', () => {
  const old: JobsEntry = { address: 'sha256:' + 'a'.repeat(64), record: { workload: 'builtin.sleep', announcedAt: NOW }, receipts: [{ provider: PROV.did, status: 'completed', acceptance: 'accepted' }] };
  assert.deepEqual(jobsBody(old), [`${short(PROV.did)} completed, accepted`]);
  assert.deepEqual(jobsBody({ ...old, receipts: [], attempts: [{ provider: PROV.did, reason: 'unreachable' }] }), [`no outcome held; selected: ${short(PROV.did)} non-delivery signed (unreachable)`]);
});

test('an order whose deadline passed with no claim taken reads unclaimed (ORDER_NOT_CLAIMED), not as a run still waiting (QA qaMatch F7)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-unclaimed-'));
  const db = await openDb(dir);
  try {
    const records = await RecordStore.open(db);
    const ev = new EvidenceStore();
    const expired = job(BUYER, { nonce: new Uint8Array([1, 77]), order: { designated: PROV.did }, deadline: NOW + 60_000 });
    const open = job(BUYER, { nonce: new Uint8Array([2, 77]), order: {}, deadline: NOW + 600_000 });
    const auction = job(BUYER, { nonce: new Uint8Array([3, 77]), deadline: NOW + 60_000 });
    for (const j of [expired, open, auction]) await records.put(j);
    const node = { records, market: { evidence: ev, earlierJobs: [] }, did: BUYER.did, clock: () => NOW + 120_000 } as unknown as OverlayNode;
    const page = JSON.parse(JSON.stringify(await jobs(node))) as { jobs: Wire[] };
    const of = (j: { address: string }) => page.jobs.find((x) => x.address === j.address)!;
    assert.deepEqual(of(expired).outcome, { status: 'none', code: 'ORDER_NOT_CLAIMED', at: NOW + 60_000 });
    assert.deepEqual(jobsBody(of(expired)), [`unclaimed: order designated to ${short(PROV.did)}, its deadline passed at ${new Date(NOW + 60_000).toISOString()} with no claim taken (ORDER_NOT_CLAIMED)`]);
    // before its deadline: nothing says it is over
    assert.deepEqual(of(open).outcome, { status: 'none' });
    assert.deepEqual(jobsBody(of(open)), [`no outcome held (open order: no claim taken; it may be claimed until ${new Date(NOW + 600_000).toISOString()})`]);
    // an auction nobody was selected for: as before
    assert.deepEqual(jobsBody(of(auction)), ['no outcome held (no provider was selected)']);
    // the console says the same: its Jobs list's status and a job page's outcome
    const mine = await jobHistory(records, ev, BUYER.did, { limit: 10 });
    const row = (j: { address: string }) => consoleBuyerRow(mine.jobs.find((h) => h.job.address === j.address)!, NOW + 120_000);
    // an auction whose deadline passed with nobody selected: said so, not a blank like a job seconds into collecting (QA qaCon F4)
    assert.deepEqual([row(expired).status, row(open).status, row(auction).status], ['unclaimed', undefined, 'no provider selected']);
    const walkOutcome = (j: { address: string }) => outcomeNow(mine.jobs.find((h) => h.job.address === j.address)!, NOW + 120_000);
    assert.deepEqual(outcomeView(walkOutcome(expired)), { status: 'unclaimed', text: 'the order’s deadline passed with no claim taken (ORDER_NOT_CLAIMED)' });
    assert.deepEqual(outcomeView(walkOutcome(open)), { text: 'no outcome held' });
    // QA qaOrd F3: an order whose wait for claims this node's stop broke off (its run noted it by the job's address),
    // or that an earlier process was running, reads JOB_INTERRUPTED before its deadline and after, never as unclaimed
    await records.noteAttempt(expired.address, { code: 'JOB_INTERRUPTED', message: 'this node stopped while the order waited for claims' });
    await records.noteAttempt(open.address, { code: 'JOB_INTERRUPTED', message: 'this node stopped while the order waited for claims' });
    const again = JSON.parse(JSON.stringify(await jobs(node))) as { jobs: Wire[] };
    const now = (j: { address: string }) => again.jobs.find((x) => x.address === j.address)!;
    assert.deepEqual([now(expired).outcome, now(open).outcome], [{ status: 'none', code: 'JOB_INTERRUPTED' }, { status: 'none', code: 'JOB_INTERRUPTED' }]);
    assert.deepEqual(jobsBody(now(expired)), [`no outcome held (order designated to ${short(PROV.did)}): the run was broken off before a claim was taken: this node stopped or crashed, or its client withdrew the order (JOB_INTERRUPTED)`]);
    const noted = await jobHistory(records, ev, BUYER.did, { limit: 10 });
    const nrow = consoleBuyerRow(noted.jobs.find((h) => h.job.address === open.address)!, NOW + 120_000);
    assert.deepEqual([nrow.status, nrow.code], ['interrupted', 'JOB_INTERRUPTED']);
    assert.match(String(nrow.note), /while the order waited for claims/);
    // an earlier process's order, no note (a crash notes nothing): the same
    assert.equal(outcomeNow({ ...mine.jobs.find((h) => h.job.address === auction.address)!, job: expired }, NOW + 120_000, { earlier: true }).code, 'JOB_INTERRUPTED');
  } finally {
    await closeDb(db);
    rmSync(dir, { recursive: true, force: true });
  }
});
