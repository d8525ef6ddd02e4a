/**
 * A buyer proves afterwards why it chose (docs/market.md §9 "Exporting a job's records"), across real daemons: two
 * providers and a buyer run two jobs; `c0mpute market export` on the running buyer writes the second job's records a
 * file each (the job, its selection, the offers and adverts it weighed, the evidence about both providers, among it
 * the first job's receipt and acceptance); `c0mpute market audit` on that directory alone reproduces the selection,
 * and fails AUDIT_MISSING_RECORD once the winning offer's file is taken away.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { open, T, type Opened, type Selection } from '../../src/records/index.js';
import { Cluster, bootstrapAddr, buyerConfig, c0mpute, providerConfig, runJob, waitForMarket, withLogs, type NodeProc } from './node-helpers.js';

const c = new Cluster('market-export');
let buyer: NodeProc;
let p1: NodeProc;
let p2: NodeProc;
let out: string;

const spec = (input: string) => ({ workload: 'builtin.sha256', params: '10', maxPrice: { amount: '0.01', currency: 'USD' }, deadlineMs: 60_000, input: Buffer.from(input).toString('base64') });

before(async () => {
  out = mkdtempSync(join(tmpdir(), 'c0-market-export-'));
  p1 = await c.start('p1', providerConfig({ price: '0.002' }));
  p2 = await c.start('p2', providerConfig({ price: '0.003', bootstrap: [bootstrapAddr(p1)] }));
  buyer = await c.start('b', buyerConfig({ bootstrap: [bootstrapAddr(p1), bootstrapAddr(p2)], collectWindowMs: 1500 }));
  await waitForMarket(buyer, 2, [p1, p2]);
});

after(async () => {
  await c.destroy();
  rmSync(out, { recursive: true, force: true });
});

test('market export writes what a selection rests on; market audit reproduces it from those files alone', async () => {
  await withLogs(c, async () => {
    const first = await runJob(buyer, spec('history'));
    assert.equal(first.result.status, 'completed');
    let job: string | undefined;
    const second = await runJob(buyer, spec('audited'), (e) => {
      if (e.e === 'job') job = (e.job as { address: string }).address;
    });
    assert.equal(second.result.status, 'completed');
    assert.ok(job);

    const dir = join(out, 'records');
    const ex = await c0mpute(buyer.dir, ['market', 'export', '--job', job, '--out', dir, '--json']);
    assert.equal(ex.code, 0, ex.err);
    const r = JSON.parse(ex.out) as { written: number; selections: string[]; missing: unknown[]; auditArgs: string[] };
    assert.equal(r.selections.length, 1, 'the buyer decided once');
    assert.deepEqual(r.missing, []);
    assert.deepEqual(r.auditArgs, [], 'a buyer on the defaults: the bare audit command');
    const files = readdirSync(dir).filter((f) => f !== 'export.json');
    assert.equal(files.length, r.written);
    // export.json, written last, lists every record (docs/market.md §9)
    assert.equal((JSON.parse(readFileSync(join(dir, 'export.json'), 'utf8')) as { records: unknown[] }).records.length, r.written);
    const kinds = new Set(files.map((f) => f.slice(0, f.lastIndexOf('-'))));
    for (const k of ['job', 'selection', 'offer', 'advert', 'receipt', 'acceptance']) assert.ok(kinds.has(k), `a ${k} among ${[...kinds].join(', ')}`);

    const audit = await c0mpute(buyer.dir, ['market', 'audit', '--selection', r.selections[0]!, '--records', dir, '--json']);
    assert.equal(audit.code, 0, `${audit.out}\n${audit.err}`);
    assert.equal((JSON.parse(audit.out) as { reproduces: boolean }).reproduces, true);

    // the winning offer's file taken away: the audit cannot stand
    const sel = open(readFileSync(join(dir, files.find((f) => f.startsWith('selection-'))!)), T.selection) as Opened<Selection>;
    rmSync(join(dir, `offer-${sel.record.winner.slice('sha256:'.length)}.cbor`));
    const broken = await c0mpute(buyer.dir, ['market', 'audit', '--selection', r.selections[0]!, '--records', dir, '--json']);
    assert.equal(broken.code, 1, broken.err);
    assert.ok((JSON.parse(broken.out) as { differences: Array<{ code: string }> }).differences.some((d) => d.code === 'AUDIT_MISSING_RECORD'));
    assert.ok((JSON.parse(broken.out) as { export: { problems: Array<{ code: string }> } }).export.problems.some((d) => d.code === 'AUDIT_EXPORT_RECORD_ABSENT'));

    // with no daemon running, from the data directory itself: the same records, and the audit reproduces
    await c.stop(buyer);
    const offline = join(out, 'offline');
    const ex2 = await c0mpute(buyer.dir, ['market', 'export', '--job', job, '--out', offline, '--json']);
    assert.equal(ex2.code, 0, ex2.err);
    assert.deepEqual((JSON.parse(ex2.out) as { selections: string[] }).selections, r.selections);
    const audit2 = await c0mpute(buyer.dir, ['market', 'audit', '--selection', r.selections[0]!, '--records', offline, '--json']);
    assert.equal(audit2.code, 0, `${audit2.out}\n${audit2.err}`);

    // a job this node does not hold: a clear error, nothing written
    const none = await c0mpute(buyer.dir, ['market', 'export', '--job', `sha256:${'0'.repeat(64)}`, '--out', join(out, 'none')]);
    assert.equal(none.code, 3);
    assert.match(none.err, /JOB_NOT_FOUND/);
  });
});

test('export gives the settings a decision was taken under, kept with its selection, after the operator changed them', async () => {
  await withLogs(c, async () => {
    // a buyer trusting another buyer's evidence, with a wider clock-skew window: its decisions counted both
    const trusted = buyer.did;
    const base = buyerConfig({ bootstrap: [bootstrapAddr(p1), bootstrapAddr(p2)], collectWindowMs: 1500 });
    let b = await c.start('b-trust', { ...base, network: { ...(base.network as object), clockSkewMs: 45_000 }, reputation: { trustedBuyers: [trusted] } });
    await waitForMarket(b, 2, [p1, p2]);
    let job: string | undefined;
    const run = await runJob(b, spec('decided under a trusted buyer'), (e) => {
      if (e.e === 'job') job = (e.job as { address: string }).address;
    });
    assert.equal(run.result.status, 'completed');
    assert.ok(job);
    // the operator takes the trusted buyer and the wider window out of its config, and restarts
    b = await c.restart(b, base);
    const dir = join(out, 'after-change');
    const ex = await c0mpute(b.dir, ['market', 'export', '--job', job, '--out', dir, '--json']);
    assert.equal(ex.code, 0, ex.err);
    const r = JSON.parse(ex.out) as { selections: string[]; auditArgs: string[]; decisions: Array<{ selection: string; settings: string; auditArgs: string[] }> };
    const want = ['--trusted-buyers', trusted, '--skew-ms', '45000'];
    assert.deepEqual(r.decisions.map((d) => [d.selection, d.settings, d.auditArgs]), [[r.selections[0], 'recorded', want]], 'the settings of the decision, not of the day it was exported');
    assert.deepEqual(r.auditArgs, want);
    const manifest = JSON.parse(readFileSync(join(dir, 'export.json'), 'utf8')) as { settings: string; decisions: Array<{ settings: string; auditArgs: string[] }> };
    assert.deepEqual([manifest.settings, manifest.decisions[0]!.settings, manifest.decisions[0]!.auditArgs], ['recorded', 'recorded', want]);
    const text = await c0mpute(b.dir, ['market', 'export', '--job', job, '--out', join(out, 'after-change-text')]);
    assert.match(text.out, new RegExp(`^audit +c0mpute market audit --selection ${r.selections[0]} --records \\S+ --trusted-buyers ${trusted} --skew-ms 45000$`, 'm'), text.out);
    assert.doesNotMatch(text.out, /^note /m, 'nothing to warn about: the settings are the decision’s');
    // the audit with the options printed reproduces, and says nothing of other settings
    const audit = await c0mpute(b.dir, ['market', 'audit', '--selection', r.selections[0]!, '--records', dir, ...want]);
    assert.equal(audit.code, 0, `${audit.out}\n${audit.err}`);
    assert.doesNotMatch(audit.out, /^note .*settings/m, audit.out);

    // a selection's address given as the job: said to be a selection, naming its job; the job's file is taken as the job
    const bySel = await c0mpute(b.dir, ['market', 'export', '--job', r.selections[0]!, '--out', join(out, 'by-selection')]);
    assert.equal(bySel.code, 3, bySel.err);
    assert.match(bySel.err, new RegExp(`JOB_NOT_FOUND: ${r.selections[0]} is not a job: this node holds it as a c0mpute\\.selection/1, of job ${job}`));
    const byFile = await c0mpute(b.dir, ['market', 'export', '--job', join(dir, `job-${job.slice('sha256:'.length)}.cbor`), '--out', join(out, 'by-file'), '--json']);
    assert.equal(byFile.code, 0, byFile.err);
    assert.deepEqual((JSON.parse(byFile.out) as { selections: string[] }).selections, r.selections);
  });
});
