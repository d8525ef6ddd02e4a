/**
 * A run that selected no provider keeps how it ended with the job (Buyer #noteEnded, util/run-failure.ts
 * NO_PROVIDER_ENDED): no offers, none eligible (with the explanation's summary), or broken off after the job was
 * published. Before, one outcome read three ways: `c0mpute run` "no provider answered", the console "no provider
 * offered before the offer window closed" until a restart and then "no provider selected", `c0mpute jobs` "no outcome
 * held (no provider was selected)". Driven through the Buyer's run into a real RecordStore on disk, read back after the
 * store is closed and opened again (a restart) as `GET /v1/jobs`, `c0mpute jobs` and the console's Jobs list read it.
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
import { historyOf } from '../../../src/node/job-history.js';
import type { OverlayNode } from '../../../src/node/overlay.js';
import { jobsBody, type JobsEntry } from '../../../src/cli/commands/node.js';
import type { Job, Opened } from '../../../src/records/index.js';
import { runFailureLines } from '../../../src/util/run-failure.js';
import { outcomeView } from '../../../ui/job-walk.js';
import { NOW, P, advert, offer } from '../market/fixtures.js';
import { buyerOnFakes, fakeSpec } from './buyer-fakes.js';

const ME = P(791);
const SUMMARY = 'No provider is eligible among 2 known: no provider has at least 64 CPU cores.';

test('no offers, none eligible, broken off after publishing: the run keeps its ending, and jobs, the API and the console say it in its words after a restart', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-run-ended-'));
  let db = await openDb(dir);
  try {
    let records = await RecordStore.open(db);
    const deps = (over: Record<string, unknown> = {}) => ({
      store: async (rec: Opened) => void (await records.put(rec)),
      noteRun: (job: Opened, note: { code?: string; message: string }) => records.noteAttempt(job.address, note),
      ...over,
    });
    // no offers in the window
    const none = await buyerOnFakes(ME, { providers: [], exec: async function* () {}, deps: deps() }).buyer.run(fakeSpec());
    assert.equal(none.status, 'no-offers');
    assert.deepEqual(runFailureLines(none as never, { verdictSaid: false }), ['✘ no provider offered before the offer window closed [JOB_NO_OFFERS]']);
    // two offers, none eligible: the explanation's summary is kept with it
    const explained = { ranked: [], result: { ok: false, ranked: [], explanation: { summary: SUMMARY, relaxations: [] } }, market: {} };
    const market = { decide: async () => explained, offerCount: () => 2, signSelection: () => assert.fail('nobody to select') };
    const ineligible = await buyerOnFakes(ME, { providers: [], exec: async function* () {}, deps: deps({ market, waitForOffers: async () => ({ offers: 2, ended: 'window' }) }) }).buyer.run(fakeSpec({ input: new Uint8Array([9]) }));
    assert.equal(ineligible.status, 'no-eligible-provider');
    // the client gone while offers were collected: the job was published, then withdrawn
    const gone = new AbortController();
    const waitForOffers = async () => (gone.abort(), { offers: 0, ended: 'window' });
    const broken = await buyerOnFakes(ME, { providers: [], exec: async function* () {}, deps: deps({ waitForOffers }) }).buyer.run(fakeSpec({ input: new Uint8Array([7]) }), () => {}, { gone: gone.signal });
    assert.equal(broken.status, 'interrupted');

    // the second day: the store closed and opened again, no run held in memory
    await closeDb(db);
    db = await openDb(dir);
    records = await RecordStore.open(db);
    // a crash during the run: the job kept with its JOB_RUNNING note, and the note of its end never written (only the
    // first note is kept here); live as the next process started
    let first = true;
    const firstOnly = async (job: Opened, note: { code?: string; message: string }) => (first ? ((first = false), await records.noteAttempt(job.address, note)) : undefined);
    const crashed = await buyerOnFakes(ME, { providers: [], exec: async function* () {}, deps: deps({ noteRun: firstOnly }) }).buyer.run(fakeSpec({ input: new Uint8Array([5]) }));
    // a job from a build before these notes: kept, no note at all, live too
    const older = await buyerOnFakes(ME, { providers: [], exec: async function* () {}, deps: deps({ noteRun: async () => {} }) }).buyer.run(fakeSpec({ input: new Uint8Array([6]) }));
    // offers, none selectable: the one offer lapsed before it could be selected
    const PROV = P(792);
    const lapsedOffer = (p: typeof PROV, j: Opened<Job>) => offer(p, j as never, advert(p), { startBy: NOW - 1, expiresAt: NOW - 2 });
    const lapsed = await buyerOnFakes(ME, { providers: [PROV], offerFor: lapsedOffer as never, exec: async function* () {}, deps: deps() }).buyer.run(fakeSpec({ input: new Uint8Array([4]) }));
    assert.deepEqual([lapsed.status, lapsed.selection, lapsed.attempts.map((a) => a.outcome)], ['failed', undefined, ['offer lapsed']]);
    const node = { records, market: { evidence: new EvidenceStore(), earlierJobs: [crashed.job, older.job] }, did: ME.did, clock: () => NOW } as unknown as OverlayNode;
    const page = JSON.parse(JSON.stringify(await jobs(node))) as { jobs: Array<JobsEntry & { address: string }> };
    const entry = (a: string) => page.jobs.find((j) => j.address === a)!;
    const row = async (j: Opened) => consoleBuyerRow(await historyOf(records, new EvidenceStore(), ME.did, j as never), NOW);

    assert.deepEqual(entry(none.job.address).outcome, { status: 'none', code: 'JOB_NO_OFFERS', message: 'no provider offered before the offer window closed' });
    assert.deepEqual(jobsBody(entry(none.job.address)), ['no outcome held: no provider offered before the offer window closed (JOB_NO_OFFERS)']);
    const noneRow = await row(none.job);
    assert.deepEqual([noneRow.status, noneRow.code, noneRow.note], ['no-offers', 'JOB_NO_OFFERS', 'no provider offered before the offer window closed']);

    assert.deepEqual(entry(ineligible.job.address).outcome, { status: 'none', code: 'JOB_NO_ELIGIBLE_PROVIDER', message: `no offer came from an eligible provider: ${SUMMARY}` });
    assert.deepEqual(jobsBody(entry(ineligible.job.address)), [`no outcome held: no offer came from an eligible provider: ${SUMMARY} (JOB_NO_ELIGIBLE_PROVIDER)`]);
    const ineligibleRow = await row(ineligible.job);
    assert.equal(ineligibleRow.status, 'no-eligible-provider');
    assert.deepEqual(outcomeView({ status: 'none', ending: { status: String(ineligibleRow.status), code: String(ineligibleRow.code), note: String(ineligibleRow.note) } }), { status: 'no-eligible-provider', text: `no offer came from an eligible provider: ${SUMMARY} (JOB_NO_ELIGIBLE_PROVIDER)` });

    assert.equal(entry(broken.job.address).outcome?.code, 'JOB_INTERRUPTED');
    assert.match(jobsBody(entry(broken.job.address))[0]!, /^no outcome held: the run was broken off because its client went away before a provider was selected: the job was withdrawn \(JOB_INTERRUPTED\)$/);
    assert.equal((await row(broken.job)).status, 'interrupted');

    // the crash: still noted running, live as this process started: broken off, not "nobody would take it" (QA ffBuyerDay2 F3)
    assert.equal(entry(crashed.job.address).outcome?.code, 'JOB_INTERRUPTED');
    assert.equal(jobsBody(entry(crashed.job.address))[0], 'no outcome held: the run was broken off before a provider was selected: the node crashed or was killed during it, and nothing was paid (JOB_INTERRUPTED)');
    const crashedRow = consoleBuyerRow(await historyOf(records, new EvidenceStore(), ME.did, crashed.job as never), NOW, { earlier: true });
    assert.deepEqual([crashedRow.status, crashedRow.code], ['interrupted', 'JOB_INTERRUPTED']);
    // noted running and not live as this process started: this process runs it, nothing says it ended
    assert.equal((await row(crashed.job)).status, undefined);
    assert.equal(consoleBuyerRow(await historyOf(records, new EvidenceStore(), ME.did, crashed.job as never), NOW, { run: { done: false } }).status, 'running');
    // back only after its deadline (not live at the start): still the crash, by the deadline its run would have ended by
    assert.equal(consoleBuyerRow(await historyOf(records, new EvidenceStore(), ME.did, crashed.job as never), crashed.job.record.deadline).code, 'JOB_INTERRUPTED');
    // an older build's job, no note, live at the start: nothing known (no false crash), as before these notes
    assert.equal(entry(older.job.address).outcome?.code, undefined);
    assert.deepEqual(jobsBody(entry(older.job.address)), ['no outcome held (no provider was selected)']);
    // the lapsed offer: the provider tried and why, JOB_NO_PROVIDER_SELECTED
    assert.equal(entry(lapsed.job.address).outcome?.code, 'JOB_NO_PROVIDER_SELECTED');
    assert.match(jobsBody(entry(lapsed.job.address))[0]!, /^no outcome held: no provider could be selected: \S+ offer lapsed \(JOB_NO_PROVIDER_SELECTED\)$/);
    const lapsedRow = await row(lapsed.job);
    assert.deepEqual([lapsedRow.status, lapsedRow.code], ['no provider selected', 'JOB_NO_PROVIDER_SELECTED']);
  } finally {
    await closeDb(db);
    rmSync(dir, { recursive: true, force: true });
  }
});
