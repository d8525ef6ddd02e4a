/**
 * A receipt that reached the buyer after its run ended (docs/node.md "Job history"): the run said `failed`
 * (BUYER_STALLED, EXEC_PROVIDER_SILENT…) and the provider's receipt came later, over outcome/1, and was kept without
 * a verdict. `GET /v1/jobs` (control.ts jobs) and `c0mpute jobs` now say so on the job (`late`), and the node warns
 * when such a receipt arrives (late-receipts.ts directReceiptLog). Before, the job showed a completed receipt with no
 * acceptance and nothing said why: the run result and the history contradicted each other.
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
import type { OverlayNode } from '../../../src/node/overlay.js';
import { directReceiptLog } from '../../../src/node/late-receipts.js';
import { jobsLateLine } from '../../../src/cli/commands/node.js';
import { NOW, P, acceptance, advert, job, offer, receipt } from '../market/fixtures.js';

const BUYER = P(320);
const PROV = P(321);
const OTHER = P(322);
const THIRD = P(323);

type WireJob = { address: string; receipts: Array<{ status: string; acceptance?: string }>; late?: { receipt: string; provider: string; status: string; failure?: string; at: number; note: string } };

test('GET /v1/jobs says which receipt came after its run ended: completed or failed, never countersigned; a countersigned one is not late', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-late-'));
  const db = await openDb(dir);
  try {
    const records = await RecordStore.open(db);
    const ev = new EvidenceStore();
    const [stalled, failedLate, normal, failover, doneElsewhere] = [1, 2, 3, 4, 5].map((i) => job(BUYER, { nonce: new Uint8Array([i, 77]), announcedAt: NOW + i * 1000 }));
    for (const j of [stalled, failedLate, normal, failover, doneElsewhere]) await records.put(j!);
    // the buyer stalled: the provider's completed receipt came directly after the run ended `failed`, no verdict
    const o1 = offer(PROV, stalled!, advert(PROV));
    const late1 = receipt(PROV, BUYER, o1, { completedAt: NOW + 31_000 });
    // a failed receipt that came late
    const o2 = offer(PROV, failedLate!, advert(PROV));
    const late2 = receipt(PROV, BUYER, o2, { status: 'failed', failure: { code: 'EXEC_TIMEOUT', message: 'ran past its timeout' } });
    // the run got its receipt on the stream and countersigned it
    const o3 = offer(PROV, normal!, advert(PROV));
    const got = receipt(PROV, BUYER, o3);
    // a failed attempt countersigned, then a failover whose receipt came late
    const o4 = offer(PROV, failover!, advert(PROV));
    const first = receipt(PROV, BUYER, o4, { status: 'failed', startedAt: NOW + 4_100, completedAt: NOW + 4_200 });
    const o5 = offer(OTHER, failover!, advert(OTHER));
    const second = receipt(OTHER, BUYER, o5, { startedAt: NOW + 4_300, completedAt: NOW + 4_400 });
    // the first provider was given up (failover), the job completed with the second and was accepted; then the first's
    // completed receipt came late
    const o6 = offer(PROV, doneElsewhere!, advert(PROV));
    const o7 = offer(THIRD, doneElsewhere!, advert(THIRD));
    const done = receipt(THIRD, BUYER, o7, { startedAt: NOW + 5_300, completedAt: NOW + 5_400 });
    const tooLate = receipt(PROV, BUYER, o6, { startedAt: NOW + 5_100, completedAt: NOW + 5_600 });
    const winnerAgain = receipt(THIRD, BUYER, o7, { status: 'failed', failure: { code: 'EXEC_TIMEOUT', message: 'a second word on it' }, startedAt: NOW + 5_300, completedAt: NOW + 5_700 });
    await ev.add(o1, late1, o2, late2, o3, got, acceptance(BUYER, got, 'accepted'), o4, first, acceptance(BUYER, first, 'accepted'), o5, second, o6, o7, done, acceptance(BUYER, done, 'accepted'), tooLate, winnerAgain);
    const node = { records, market: { evidence: ev, earlierJobs: [] }, did: BUYER.did, clock: () => NOW } as unknown as OverlayNode;
    const page = (await jobs(node)) as { jobs: WireJob[] };
    const of = (j: { address: string }) => page.jobs.find((x) => x.address === j.address)!;

    const a = of(stalled!);
    assert.deepEqual(a.receipts.map((r) => [r.status, r.acceptance]), [['completed', undefined]]);
    assert.ok(a.late, 'the job says its receipt came after the run ended');
    assert.deepEqual({ ...a.late, note: undefined }, { receipt: late1.address, provider: PROV.did, status: 'completed', at: NOW + 31_000, note: undefined });
    assert.match(a.late.note, /completed after this node’s run of the job ended; its output was not received/);
    assert.match(jobsLateLine(a.late), /^late: .*completed after this node’s run of the job ended/);

    const b = of(failedLate!);
    assert.equal(b.late?.status, 'failed');
    assert.equal(b.late?.failure, 'EXEC_TIMEOUT');
    assert.match(b.late!.note, /reports failed \(EXEC_TIMEOUT\) after this node’s run of the job ended/);

    assert.equal(of(normal!).late, undefined, 'a receipt the run countersigned is not late');
    assert.equal(of(failover!).late?.receipt, second.address, 'the failover’s receipt that came late, not the countersigned failure');
    assert.match(of(failover!).late!.note, /after this node’s run of the job ended/, 'the other receipt with a verdict is a failure: the job was not done');

    // the accepted winner's own second receipt (a failed one signed after) is no late outcome
    const e = of(doneElsewhere!);
    assert.equal(e.late?.receipt, tooLate.address);
    assert.match(e.late!.note, /^the provider reports completed after this node had moved the job to another provider, whose completed receipt it accepted;/);

    // What reputation makes of it (docs/market.md "Per provider P"): a completed receipt its buyer never countersigned is no outcome
    const rep = ev.derive({ self: BUYER.did, asOf: NOW + 100_000 }).get(OTHER.did);
    assert.equal(rep?.jobs ?? 0, 0, 'the late completed receipt counts as no job');
  } finally {
    await closeDb(db);
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a receipt sent directly is warned about when the node holds no verdict on it; a copy already held is not', () => {
  const j = job(BUYER);
  const r = receipt(PROV, BUYER, offer(PROV, j, advert(PROV)));
  const first = directReceiptLog(r, false, false);
  assert.equal(first.level, 'warn');
  assert.deepEqual(first.fields, { job: j.address, receipt: r.address, provider: PROV.did, status: 'completed' });
  assert.match(first.msg, /after this node’s run of the job ended.*output was not received/);
  const failed = receipt(PROV, BUYER, offer(PROV, j, advert(PROV)), { status: 'failed' });
  assert.equal(directReceiptLog(failed, false, false).fields.failure, 'OOM');
  assert.equal(directReceiptLog(r, true, false).level, 'debug');
  assert.equal(directReceiptLog(r, true, true).level, 'debug');
});

test('a late receipt whose provider admits it stalled is countersigned; any other late receipt gets no verdict (QA qaMatch F10)', async () => {
  const { countersignsLate } = await import('../../../src/node/late-receipts.js');
  const { deriveReputation } = await import('../../../src/reputation/derive.js');
  const j = job(BUYER);
  const o = offer(PROV, j, advert(PROV));
  const stalled = receipt(PROV, BUYER, o, { status: 'failed', failure: { code: 'EXEC_PROVIDER_STALLED', message: 'did not run for 40 s' } });
  assert.equal(countersignsLate(stalled.record), true);
  assert.match(directReceiptLog(stalled, false, false).msg, /says the provider stalled .* countersigned/);
  assert.equal(countersignsLate(receipt(PROV, BUYER, o, { status: 'failed', failure: { code: 'EXEC_BUYER_GONE', message: 'gone' } }).record), false, 'the buyer gone is not the provider’s admission');
  assert.equal(countersignsLate(receipt(PROV, BUYER, o).record), false);
  // with the buyer's verdict it is the provider's failure, first-hand (without it, a claim that weighs nothing)
  const figures = (acc: boolean) => deriveReputation({ receipts: [stalled], acceptances: acc ? [acceptance(BUYER, stalled, 'accepted')] : [], offers: [o] } as never, { self: BUYER.did }).get(PROV.did);
  assert.equal(figures(false)?.failures ?? 0, 0);
  assert.equal(figures(true)?.failures, 1);
});
