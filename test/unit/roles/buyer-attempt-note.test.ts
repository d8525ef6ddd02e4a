/**
 * An attempt that ends with no receipt and no non-delivery keeps how the run said it ended (QA qaPnet F4): under a
 * flood, `run` printed "provider busy with another of our jobs: refused: EXEC_BUSY" while `c0mpute jobs` showed the
 * attempt as "no receipt, no non-delivery" with no reason, since the history is read from what the node signed and
 * nothing signed said it. Driven through the Buyer's run (its exec answered by a fake provider, two of our jobs at
 * once on its one slot) into a real RecordStore, then read back as `GET /v1/jobs`, `c0mpute jobs` and the console's
 * job walk read it.
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
import { jobsBody, type JobsEntry } from '../../../src/cli/commands/node.js';
import { short } from '../../../src/cli/short.js';
import { T, type Opened, type Selection } from '../../../src/records/index.js';
import { NOW, P } from '../market/fixtures.js';
import { buyerOnFakes, fakeSpec } from './buyer-fakes.js';

const ME = P(781);
const PROV = P(782);

test('an attempt refused EXEC_BUSY for another of our jobs keeps its reason: GET /v1/jobs gives it as `ended`, c0mpute jobs prints it', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-attempt-note-'));
  const db = await openDb(dir);
  try {
    const records = await RecordStore.open(db);
    // the provider's one slot: the first of our jobs holds it until released; the second is refused EXEC_BUSY
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let calls = 0;
    const f = buyerOnFakes(ME, {
      providers: [PROV],
      exec: async function* () {
        if (calls++ === 0) {
          await held;
          yield { t: 'refused', code: 'EXEC_NOT_MY_OFFER', message: 'first' };
          return;
        }
        yield { t: 'refused', code: 'EXEC_BUSY', message: 'all slots are busy' };
      },
      deps: {
        store: async (rec: Opened) => void (await records.put(rec)),
        noteAttempt: (s: Opened<Selection>, note: { code?: string; message: string }) => records.noteAttempt(s.address, note),
      },
    });
    const first = f.buyer.run(fakeSpec({ input: new Uint8Array([1, 2, 3, 4]) }));
    while (calls === 0) await new Promise((r) => setTimeout(r, 5));
    const second = await f.buyer.run(fakeSpec({ input: new Uint8Array([5, 6, 7, 8]) }));
    release();
    await first;
    assert.equal(second.status, 'failed');
    assert.match(second.attempts[0]!.outcome, /busy with another of our jobs: refused: EXEC_BUSY/);
    assert.equal(f.nondeliveries().filter((n) => (n.rec.record as { job: string }).job === second.job.address).length, 0, 'our own doing: no non-delivery');

    const node = { records, market: { evidence: new EvidenceStore(), earlierJobs: [] }, did: ME.did, clock: () => NOW } as unknown as OverlayNode;
    const page = JSON.parse(JSON.stringify(await jobs(node))) as { jobs: Array<JobsEntry & { address: string; attempts: Array<{ ended?: { code?: string; message: string } }> }> };
    const entry = page.jobs.find((j) => j.address === second.job.address)!;
    assert.deepEqual(entry.attempts[0]!.ended, { code: 'EXEC_BUSY', message: 'provider busy with another of our jobs: refused: EXEC_BUSY' });
    assert.deepEqual(jobsBody(entry), ['no outcome held', `attempt 1: ${short(PROV.did)} no receipt, no non-delivery: provider busy with another of our jobs: refused: EXEC_BUSY`]);
    // the first job's refusal was signed a non-delivery: no note is kept for it (the non-delivery says how it ended)
    const firstEntry = page.jobs.find((j) => j.address !== second.job.address)!;
    assert.equal(firstEntry.attempts[0]!.ended, undefined);
    // kept by the selection's address (dropped with it by the history's pruning)
    const sel = (await records.selectionsOf(second.job.address))[0]!;
    assert.equal(sel.type, T.selection);
    assert.ok(await records.attemptNoteOf(sel.address));
  } finally {
    await closeDb(db);
    rmSync(dir, { recursive: true, force: true });
  }
});
