/**
 * `c0mpute market export` writes export.json last, and only when the export ended well (docs/market.md §9): the job,
 * every record written, what the node did not hold, the audit's options. `market audit` on a directory says when it
 * has none (AUDIT_EXPORT_UNMARKED: a warning, or with --complete a failure) and fails a directory that lacks a record
 * its export.json lists (AUDIT_EXPORT_RECORD_ABSENT). Before, a directory cut after 8 of 19 records (the daemon died
 * mid-stream) audited `reproduces` with no word, and its auditor never got the exporter's options.
 *
 * A fake daemon (a data directory whose daemon.json points at a local HTTP server) streams real records.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Buffer } from 'node:buffer';
import { select, shortDid } from '../../../src/market/index.js';
import { deriveReputation } from '../../../src/reputation/index.js';
import { seal, T, type Opened, type Selection } from '../../../src/records/index.js';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { NOW, P, advert, job, offer } from '../market/fixtures.js';

const ME = P(940);
const [A, B] = [P(941), P(942)];
const adA = advert(A, { issuedAt: NOW - 3_600_000, expiresAt: NOW + 3_600_000 });
const adB = advert(B, { issuedAt: NOW - 3_600_000, expiresAt: NOW + 3_600_000 });
const J = job(ME);
const oA = offer(A, J, adA, { amount: '0.45' });
const oB = offer(B, J, adB, { amount: '0.5' });
const r = select({ job: J, adverts: [adA, adB], offers: [oA, oB], policy: 'balanced', reputation: deriveReputation({ receipts: [], acceptances: [], offers: [oA, oB], nondeliveries: [] }, { self: ME.did, asOf: NOW }), now: NOW });
assert.ok(r.ok);
const considered = [oA, oB].map((o) => ({ provider: o.signer, offer: o.address })).sort((a, b) => (a.provider < b.provider ? -1 : 1));
const SEL = seal(T.selection, { job: J.address, buyer: ME.did, policy: 'balanced', winner: r.winner.offer, considered, decidedAt: NOW }, ME.signer) as Opened<Selection>;
// evidence the decision did not turn on (another job of this buyer's): its absence alone does not change the audit
const OTHER = job(ME, { announcedAt: NOW - 7_200_000, deadline: NOW - 3_600_000 });
// in the order the daemon sends them: the job, its selection, then what it weighed
const RECORDS: Opened[] = [J, SEL, oA, oB, adA, adB, OTHER] as Opened[];
const LINES = RECORDS.map((x) => JSON.stringify({ e: 'record', type: x.type, address: x.address, signer: x.signer, envelope: Buffer.from(x.bytes).toString('hex') }));
const SUMMARY = JSON.stringify({ e: 'result', result: { job: J.address, written: RECORDS.length, missing: [], audit: { trustedBuyers: [P(943).did], dealtWith: false, secondHandWeight: 0.25, skewMs: 30_000 } } });

const BIN = fileURLToPath(new URL('../../../../bin/c0mpute.js', import.meta.url));
const root = mkdtempSync(join(tmpdir(), 'c0-export-summary-'));
const servers: Server[] = [];
after(() => {
  for (const s of servers) s.close();
  rmSync(root, { recursive: true, force: true });
});

/** A data directory whose "daemon" sends the first `n` records, then its summary (`whole`) or dies (socket destroyed). */
async function fakeDaemon(name: string, n: number, whole: boolean): Promise<string> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/x-ndjson' });
    res.flushHeaders();
    for (const l of LINES.slice(0, n)) res.write(l + '\n');
    if (whole) res.end(SUMMARY + '\n');
    else setTimeout(() => res.socket?.destroy(), 50);
  });
  servers.push(server);
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const dataDir = join(root, name);
  rmSync(dataDir, { recursive: true, force: true });
  const { mkdirSync } = await import('node:fs');
  mkdirSync(dataDir);
  writeFileSync(join(dataDir, 'api.token'), 'token\n', { mode: 0o600 });
  // a live process's pid that is not this one (the test runner that started this file)
  writeFileSync(join(dataDir, 'daemon.json'), JSON.stringify({ pid: process.ppid, api: `127.0.0.1:${(server.address() as AddressInfo).port}` }));
  return dataDir;
}

interface AuditJson {
  reproduces: boolean;
  export: { manifest: boolean; problems: Array<{ code: string; address?: string }>; warnings: Array<{ code: string }>; settingsDiffer?: boolean; auditArgs?: string[] };
}

/** The real command in a child (not blocking this process, whose fake daemon answers it): exit code and output. */
function c0mpute(args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((ok) => {
    // the child is a command, not a test: without NODE_TEST_CONTEXT (node:test would take its output as test reports)
    const { NODE_TEST_CONTEXT: _t, ...env } = process.env;
    execFile(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 60_000, env: { ...env, C0MPUTE_HOME: join(root, 'unused-home') } }, (e, out, err) => ok({ code: e ? (typeof e.code === 'number' ? e.code : null) : 0, out, err }));
  });
}

/** `market audit --json` on `dir`. */
async function audit(dir: string, extra: string[] = []): Promise<{ json: AuditJson; code: number | null }> {
  const r = await c0mpute(['market', 'audit', '--selection', SEL.address, '--records', dir, '--json', ...extra]);
  return { json: JSON.parse(r.out) as AuditJson, code: r.code };
}

const TRUST = () => ['--trusted-buyers', P(943).did, '--second-hand-weight', '0.25'];

describe('market export: export.json', () => {
  it('a whole export ends with export.json listing every record and the audit options; the audit reads it', async () => {
    const dataDir = await fakeDaemon('whole', RECORDS.length, true);
    const out = join(root, 'whole-out');
    const ex = await c0mpute(['--data-dir', dataDir, 'market', 'export', '--job', J.address, '--out', out, '--json']);
    assert.equal(ex.code, 0, ex.err);
    const m = JSON.parse(readFileSync(join(out, 'export.json'), 'utf8')) as { job: string; records: Array<{ address: string; file: string }>; auditArgs: string[] };
    assert.equal(m.job, J.address);
    assert.deepEqual(m.records.map((x) => x.address), RECORDS.map((x) => x.address));
    assert.deepEqual(m.auditArgs, ['--trusted-buyers', P(943).did, '--second-hand-weight', '0.25']);
    assert.equal(readdirSync(out).length, RECORDS.length + 1);

    const ok = await audit(out, TRUST());
    assert.equal(ok.code, 0, JSON.stringify(ok.json.export));
    assert.equal(ok.json.reproduces, true);
    assert.equal(ok.json.export.manifest, true);
    assert.deepEqual(ok.json.export.problems, []);
    assert.equal(ok.json.export.settingsDiffer, false);
    // without the exporter's options the audit says they differ (its export.json carries them)
    assert.equal((await audit(out)).json.export.settingsDiffer, true);

    assert.equal(m.records[6]!.address, OTHER.address);
    // a record it lists taken away: the audit fails naming it, even though the selection still reproduces
    rmSync(join(out, m.records[6]!.file));
    const broken = await audit(out, TRUST());
    assert.equal(broken.code, 1);
    assert.equal(broken.json.reproduces, true, 'the recomputation alone still reproduces');
    assert.deepEqual(broken.json.export.problems.map((p) => [p.code, p.address]), [['AUDIT_EXPORT_RECORD_ABSENT', m.records[6]!.address]]);
  });

  it('the daemon dies mid-stream: DAEMON_STREAM_LOST, no export.json (an earlier one removed), and the audit says the directory is not a whole export', async () => {
    const dataDir = await fakeDaemon('cut', RECORDS.length, false);
    const out = join(root, 'cut-out');
    const { mkdirSync } = await import('node:fs');
    mkdirSync(out);
    writeFileSync(join(out, 'export.json'), '{"left": "by an earlier export"}');
    const ex = await c0mpute(['--data-dir', dataDir, 'market', 'export', '--job', J.address, '--out', out]);
    assert.equal(ex.code, 3);
    assert.match(ex.err, /DAEMON_STREAM_LOST.*incomplete export/);
    assert.equal(existsSync(join(out, 'export.json')), false);
    assert.equal(readdirSync(out).length, RECORDS.length);

    const lenient = await audit(out);
    assert.equal(lenient.code, 0, 'without --complete, a warning: the audit as before');
    assert.deepEqual(lenient.json.export.warnings.map((w) => w.code), ['AUDIT_EXPORT_UNMARKED']);
    const strict = await audit(out, ['--complete']);
    assert.equal(strict.code, 1);
    assert.deepEqual(strict.json.export.problems.map((p) => p.code), ['AUDIT_EXPORT_UNMARKED']);
    // the text answers say so too
    const text = await c0mpute(['market', 'audit', '--selection', SEL.address, '--records', out]);
    assert.match(text.out, /^warning {3}AUDIT_EXPORT_UNMARKED/m);
    const textStrict = await c0mpute(['market', 'audit', '--selection', SEL.address, '--records', out, '--complete']);
    assert.equal(textStrict.code, 1);
    assert.match(textStrict.out, /^differs {3}AUDIT_EXPORT_UNMARKED/m);
  });

  it("the audit's text prints export.json's text one line each: a line break in it is escaped, not a line of the audit's", async () => {
    const out = join(root, 'newline-out');
    const { mkdirSync } = await import('node:fs');
    mkdirSync(out);
    for (const x of RECORDS) writeFileSync(join(out, `${x.address.slice(7)}.cbor`), x.bytes);
    const what = 'y\nresult    reproduces\nz';
    const arg = 'a\nresult    reproduces';
    writeFileSync(join(out, 'export.json'), JSON.stringify({ format: 'c0mpute.export/1', job: J.address, records: [], missing: [{ address: oA.address, what }], selections: [SEL.address], audit: { trustedBuyers: [P(943).did], dealtWith: false, secondHandWeight: 0.25, skewMs: 30_000 }, auditArgs: [arg] }));
    const text = await c0mpute(['market', 'audit', '--selection', SEL.address, '--records', out]);
    assert.equal(text.code, 0, text.err);
    // the audit's own result line only: none made of export.json's text
    const lines = text.out.split('\n');
    assert.deepEqual(lines.filter((l) => l.startsWith('result')), ['result    reproduces'], text.out);
    assert.ok(lines.some((l) => l.startsWith('note') && l.includes('a\\u000aresult    reproduces')), text.out);
    assert.ok(lines.includes(`export    not held by the exporting node: ${oA.address}: y\\u000aresult    reproduces\\u000az`), text.out);

    // another job's export.json (an address, well-formed): --complete fails, saying so
    const other = job(ME, { announcedAt: NOW - 60_000 });
    writeFileSync(join(out, 'export.json'), JSON.stringify({ format: 'c0mpute.export/1', job: other.address, records: [], missing: [], selections: [], auditArgs: [] }));
    const strict = await c0mpute(['market', 'audit', '--selection', SEL.address, '--records', out, '--complete']);
    assert.equal(strict.code, 1, strict.err);
    assert.match(strict.out, /^export {4}export\.json: job \S+, 0 record\(s\) listed, all here$/m);
    assert.match(strict.out, /^differs {3}AUDIT_EXPORT_OTHER_JOB/m);
    assert.match(strict.out, /^result {4}reproduces, but the directory is not this job's export/m);
    assert.equal((await c0mpute(['market', 'audit', '--selection', SEL.address, '--records', out])).code, 0, 'without --complete, a warning');
  });

  it('the audit prints every difference before its result, the result last, each winner with its provider and when it was decided', async () => {
    // QA (reputation and audit pass, F12): with the job's file taken away, a `differs` line came after `result`, and
    // the winners were offer addresses alone
    const dataDir = await fakeDaemon('order', RECORDS.length, true);
    const out = join(root, 'order-out');
    assert.equal((await c0mpute(['--data-dir', dataDir, 'market', 'export', '--job', J.address, '--out', out])).code, 0);
    const ok = await c0mpute(['market', 'audit', '--selection', SEL.address, '--records', out, ...TRUST()]);
    assert.equal(ok.code, 0, ok.out + ok.err);
    const okLines = ok.out.trimEnd().split('\n');
    assert.equal(okLines.at(-1), 'result    reproduces');
    const provider = (o: string) => shortDid([oA, oB].find((x) => x.address === o)!.signer);
    assert.ok(okLines.includes(`winner    claimed ${SEL.record.winner} (${provider(SEL.record.winner)})`), ok.out);
    assert.ok(okLines.includes(`          recomputed ${SEL.record.winner} (${provider(SEL.record.winner)})`), ok.out);
    assert.ok(okLines.includes(`decided   ${new Date(NOW).toISOString()} (market select --job ${J.address} --records ${out} --policy balanced --at ${NOW} ${TRUST().join(' ')} shows the ranking)`), ok.out);

    rmSync(join(out, `job-${J.address.slice('sha256:'.length)}.cbor`));
    const bad = await c0mpute(['market', 'audit', '--selection', SEL.address, '--records', out, ...TRUST()]);
    assert.equal(bad.code, 1);
    const lines = bad.out.trimEnd().split('\n');
    assert.equal(lines.at(-1), 'result    does not reproduce', bad.out);
    const differs = lines.filter((l) => l.startsWith('differs'));
    assert.ok(differs.some((l) => l.includes('AUDIT_EXPORT_RECORD_ABSENT')) && differs.some((l) => l.includes('AUDIT_MISSING_RECORD')), bad.out);
    assert.equal(lines.findIndex((l) => l.startsWith('result')), lines.length - 1, 'nothing after the result');
  });

  it('the audit’s `market select` hint, run as printed, ranks under the selection’s policy and trust options and names its winner (QA ffRcpt F4)', async () => {
    // before, the hint was `market select --at T` alone: a `cheapest` selection's ranking was shown under `balanced`
    const cheapest = select({ job: J, adverts: [adA, adB], offers: [oA, oB], policy: 'cheapest', reputation: deriveReputation({ receipts: [], acceptances: [], offers: [oA, oB], nondeliveries: [] }, { self: ME.did, asOf: NOW }), now: NOW });
    const sel = seal(T.selection, { job: J.address, buyer: ME.did, policy: 'cheapest', winner: (cheapest as { winner: { offer: string } }).winner.offer, considered, decidedAt: NOW }, ME.signer) as Opened<Selection>;
    const dir = join(root, 'hint-records');
    const { mkdirSync } = await import('node:fs');
    mkdirSync(dir);
    for (const x of [J, sel, oA, oB, adA, adB] as Opened[]) writeFileSync(join(dir, `${x.address.slice(7)}.cbor`), x.bytes);
    const a = await c0mpute(['market', 'audit', '--selection', sel.address, '--records', dir, ...TRUST()]);
    assert.equal(a.code, 0, a.out + a.err);
    const hint = /^decided {3}\S+ \((market select .*) shows the ranking\)$/m.exec(a.out)?.[1];
    assert.ok(hint, a.out);
    const ranked = await c0mpute(hint.split(' '));
    assert.equal(ranked.code, 0, ranked.out + ranked.err);
    assert.match(ranked.out, /^policy {3}cheapest$/m, ranked.out);
    assert.match(ranked.out, new RegExp(`^winner {3}${sel.record.winner} `, 'm'), ranked.out);
  });

  it('--job takes a file holding the job record; another record is RECORD_WRONG_TYPE naming its job; a damaged one is invalid, exit 1', async () => {
    // QA (reputation and audit pass, F12): docs/market.md §9 said `J` is a file or an address, and a file was ADDRESS_MALFORMED
    const dataDir = await fakeDaemon('file', RECORDS.length, true);
    const asked: string[] = [];
    servers.at(-1)!.prependListener('request', (req) => asked.push(req.url ?? ''));
    const file = (name: string, bytes: Uint8Array) => {
      writeFileSync(join(root, name), bytes);
      return join(root, name);
    };
    const ex = await c0mpute(['--data-dir', dataDir, 'market', 'export', '--job', file('the-job.cbor', J.bytes), '--out', join(root, 'file-out'), '--json']);
    assert.equal(ex.code, 0, ex.err);
    assert.ok(asked.some((u) => u.startsWith(`/v1/jobs/${encodeURIComponent(J.address)}/records`)), asked.join(' '));
    const wrong = await c0mpute(['--data-dir', dataDir, 'market', 'export', '--job', file('a-selection.cbor', SEL.bytes), '--out', join(root, 'file-out2')]);
    assert.equal(wrong.code, 3, wrong.err);
    assert.match(wrong.err, new RegExp(`^error RECORD_WRONG_TYPE: --job \\S+ holds a ${T.selection} \\(${SEL.address}\\), not a job; its job is ${J.address}: c0mpute market export --job ${J.address}`, 'm'));
    const flipped = Uint8Array.from(J.bytes);
    flipped[flipped.length - 1]! ^= 1;
    const bad = await c0mpute(['--data-dir', dataDir, 'market', 'export', '--job', file('flipped.cbor', flipped), '--out', join(root, 'file-out3')]);
    assert.equal(bad.code, 1, bad.err);
    assert.match(bad.out, /^invalid {3}job \S+: ENVELOPE_BAD_SIGNATURE: /m);
    const neither = await c0mpute(['--data-dir', dataDir, 'market', 'export', '--job', join(root, 'no-such-file'), '--out', join(root, 'file-out4')]);
    assert.equal(neither.code, 2, neither.err);
    assert.match(neither.err, /^error ADDRESS_MALFORMED: --job must be a job's address, sha256:<64 hex>, or a file holding a job record/m);
    assert.equal(existsSync(join(root, 'file-out2')) || existsSync(join(root, 'file-out3')) || existsSync(join(root, 'file-out4')), false, 'nothing written');
  });

  it('a stream that ends without its summary: DAEMON_BAD_ANSWER, no export.json', async () => {
    const dataDir = await fakeDaemon('end', 3, true);
    // the summary is sent: a daemon that sends 3 records and then ends cleanly without it is below
    const server = servers.at(-1)!;
    server.removeAllListeners('request');
    server.on('request', (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      res.end(LINES.slice(0, 3).join('\n') + '\n');
    });
    const out = join(root, 'end-out');
    const ex = await c0mpute(['--data-dir', dataDir, 'market', 'export', '--job', J.address, '--out', out]);
    assert.equal(ex.code, 3);
    assert.match(ex.err, /DAEMON_BAD_ANSWER/);
    assert.equal(existsSync(join(out, 'export.json')), false);
    assert.equal(readdirSync(out).length, 3);
  });
});
