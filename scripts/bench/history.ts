/**
 * Job history: what `GET /v1/jobs` and the console's Jobs page cost on a node
 * that has run for a while (src/node/job-history.ts; docs/node.md "Job
 * history"), and what finding its live jobs at start costs. A real LevelDB
 * holding `n` jobs this node published as a buyer (signed) with the offer each
 * took, as many jobs of other buyers it quoted on as a provider, and a receipt
 * and an acceptance for each of its own in the evidence store (fabricated
 * opened records: reading them never verifies).
 *
 * The baseline, in the same run, is the code before the sixteenth round of
 * issue #16: every job held read from disk, the signer's kept, and every
 * receipt and acceptance held matched against each (`before`).
 *
 * Then what dropping the history by age costs (`history.keepDays`, the
 * seventeenth round): the open that indexes a store written by the previous
 * build (index version 2) by age, once, at the upgrade; and a pass dropping
 * all of it a thousand records a batch, with the longest batch's wall time
 * (a batch awaits the store for every record it reads, so the event loop runs
 * other work throughout).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ed25519Signer } from '../../src/records/ed25519.js';
import { didFromPublicKey } from '../../src/records/did.js';
import { seal, T, type Acceptance, type Job, type Opened, type Receipt } from '../../src/records/index.js';
import { hashHex } from '../../src/records/address.js';
import { EvidenceStore } from '../../src/reputation/store.js';
import { RecordStore } from '../../src/store/records.js';
import { closeDb, openDb } from '../../src/store/db.js';
import { jobHistory, providedReceipts } from '../../src/node/job-history.js';
import { settle, table, type BenchResult } from './lib.js';

const NOW = 1_800_000_000_000;

async function timed(fn: () => Promise<unknown> | unknown, runs: number): Promise<number> {
  let best = Infinity;
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await fn();
    best = Math.min(best, performance.now() - t0);
  }
  return best;
}

function mkJob(signer: Ed25519Signer, n: number, at: number): Opened<Job> {
  const input = new TextEncoder().encode(`history ${n}`);
  return seal(T.job, { workload: 'builtin.sha256', requirements: {}, maxPrice: { amount: '0.01', currency: 'USD' }, announcedAt: at, deadline: at + 60_000, timeoutMs: 10_000, input: { hash: hashHex(input), size: input.length }, inputSealed: 'no', nonce: Uint8Array.of(n & 0xff, (n >> 8) & 0xff, n >> 16) }, signer);
}

/** The code before: every job held, the signer's kept, every receipt and acceptance matched against each. */
async function before(records: RecordStore, ev: EvidenceStore, did: string): Promise<number> {
  const mine = (await records.list(T.job)).filter((j) => j.signer === did).sort((a, b) => b.record.announcedAt - a.record.announcedAt);
  const receipts = [...ev.receipts.values()];
  const acceptances = [...ev.acceptances.values()];
  let n = 0;
  for (const j of mine) for (const r of receipts.filter((x) => x.record.job === j.address)) if (acceptances.find((a) => a.record.receipt === r.address)) n++;
  return n;
}

export async function run(): Promise<BenchResult> {
  const rows: Array<Record<string, string | number>> = [];
  for (const n of [2_000, 10_000]) {
    const dir = mkdtempSync(join(tmpdir(), 'c0-bench-history-'));
    const db = await openDb(dir);
    try {
      const me = Ed25519Signer.generate();
      const did = didFromPublicKey(me.publicKey);
      const others = Array.from({ length: 20 }, () => Ed25519Signer.generate());
      const records = await RecordStore.open(db);
      const ev = new EvidenceStore();
      const provider = 'did:key:z6MkBenchProvider';
      const providerKey = Ed25519Signer.generate();
      for (let i = 0; i < n; i++) {
        const at = NOW - (n - i) * 4_000; // a job every 4 s: 10k is about 11 hours
        const j = mkJob(me, i, at);
        await records.put(j);
        // the offer it took, kept with its selection (dropped with the job by its key, never decoded)
        await records.putMany([seal(T.offer, { job: j.address, advert: hashHex(Uint8Array.of(4, i & 0xff)), price: { amount: '0.001', currency: 'USD' }, durationMs: 500, issuedAt: at, startBy: at + 3_000, expiresAt: at + 3_000 }, providerKey)]);
        await records.put(mkJob(others[i % others.length]!, i, at)); // a job it quoted on as a provider
        const r = { type: T.receipt, signer: provider, address: hashHex(Uint8Array.of(1, i & 0xff, (i >> 8) & 0xff, i >> 16)), bytes: new Uint8Array(), record: { job: j.address, offer: hashHex(Uint8Array.of(2, i & 0xff, (i >> 8) & 0xff, i >> 16)), buyer: did, provider, workload: 'builtin.sha256', status: 'completed', startedAt: at + 3_000, completedAt: at + 3_500, inputHash: j.record.input.hash } } as unknown as Opened<Receipt>;
        const a = { type: T.acceptance, signer: did, address: hashHex(Uint8Array.of(3, i & 0xff, (i >> 8) & 0xff, i >> 16)), bytes: new Uint8Array(), record: { receipt: r.address, verdict: 'accepted', signedAt: at + 3_600 } } as unknown as Opened<Acceptance>;
        await ev.add(r, a);
      }
      settle();
      const old = await timed(() => before(records, ev, did), n >= 10_000 ? 1 : 3);
      const page = await timed(() => jobHistory(records, ev, did, { limit: 100 }), 10);
      const consolePage = await timed(async () => {
        await jobHistory(records, ev, did, { limit: 50 });
        providedReceipts(ev, provider, 50);
      }, 10);
      const startOld = await timed(async () => (await records.list(T.job)).filter((j) => j.signer === did && j.record.deadline > NOW), 3);
      const startNew = await timed(() => records.liveJobsOf(did, NOW), 10);
      // the upgrade: a store indexed by the previous build has no age index; the next open writes it
      const idx = db.sublevel<string, Uint8Array>('jobindex', { valueEncoding: 'view' });
      await idx.clear({ gt: 'e!', lt: 'e!\xff' });
      await idx.put('~indexed', new TextEncoder().encode('2'));
      let t0 = performance.now();
      const upgraded = await RecordStore.open(db);
      const upgradeMs = performance.now() - t0;
      // a pass that drops all of it, a thousand records a batch
      let dropped = 0;
      let longest = 0;
      t0 = performance.now();
      let after: string | undefined;
      for (;;) {
        const b0 = performance.now();
        const r = await upgraded.pruneHistory(NOW + 3_600_000, 1000, after);
        longest = Math.max(longest, performance.now() - b0);
        dropped += r.removed;
        if (!r.more) break;
        after = r.after;
      }
      const pruneMs = performance.now() - t0;
      rows.push({
        'own jobs (and as many quoted)': n,
        'before: every job, every receipt ms': old.toFixed(1),
        'a page of 100 ms': page.toFixed(2),
        'console page ms': consolePage.toFixed(2),
        'before / page': (old / page).toFixed(0),
        'live jobs at start, before / now ms': `${startOld.toFixed(1)} / ${startNew.toFixed(2)}`,
        'upgrade open (index by age) ms': upgradeMs.toFixed(0),
        'drop all (jobs and offers): records, ms, longest batch ms': `${dropped}, ${pruneMs.toFixed(0)}, ${longest.toFixed(1)}`,
      });
    } finally {
      await closeDb(db);
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const report = ['history: a buyer’s job list (GET /v1/jobs, the console’s Jobs page) on a real LevelDB; fastest of the runs', table(rows)].join('\n');
  return { report, targets: [] };
}
