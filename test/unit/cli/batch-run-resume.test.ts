/**
 * `c0mpute batch run` into an output directory that holds an earlier run's summary.json (QA pass on matching, session
 * 49): before, it re-ran and re-paid every line, the done ones included, and overwrote the summary, the only record of
 * which lines were done, in flight or never posted. Now it is refused without `--resume` (BATCH_OUTPUT_HAS_SUMMARY,
 * exit 3, nothing asked of the daemon); `--resume` posts only the lines the summary does not record done, leaves the
 * `unknown` ones out (named with their job) unless `--rerun-unknown`, keeps the earlier summary beside the new one and
 * carries the earlier entries forward, so a second resume still knows every line.
 *
 * A fake daemon (fake-batch-daemon.ts) that plans the lines it is asked for on one provider and completes each
 * `/v1/run` with an output and a receipt; every request it gets is counted.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EXIT } from '../../../src/cli/context.js';
import { P } from '../market/fixtures.js';
import { runNode } from './cli-run.js';
import { fakeBatchDaemon, type FakeBatchDaemon } from './fake-batch-daemon.js';

const BIN = fileURLToPath(new URL('../../../../bin/c0mpute.js', import.meta.url));
const root = mkdtempSync(join(tmpdir(), 'c0-batch-resume-'));
const provider = P(953).did;
let daemon: FakeBatchDaemon;
const dataDir = join(root, 'buyer');
const file = join(root, 'b.yaml');
const W = 'builtin.sha256';
const id = (n: number) => `${W}-${n}`;

before(async () => {
  daemon = await fakeBatchDaemon(dataDir, provider, { workload: W });
  writeFileSync(file, `window: 10m\nworkloads: [{ workload: ${W}, lines: 5, lineTime: 2s, maxPrice: "0.01 USD", params: "1000", inputText: "line {n}" }]\n`);
});

after(() => {
  daemon?.close();
  rmSync(root, { recursive: true, force: true });
});

const c0 = (...args: string[]) => runNode([BIN, '--data-dir', dataDir, 'batch', 'run', file, ...args], { env: { ...process.env, C0MPUTE_HOME: join(root, 'unused-home') }, timeout: 60_000 });
const posted = () => daemon.asked.filter((a) => a.startsWith('POST /v1/run')).length;

/** An output directory as an interrupted run left it: lines 1–2 done (their outputs kept), 3 not posted, 4 in flight, 5 failed. */
function interrupted(name: string, batch = file): { dir: string; summary: string } {
  const dir = join(root, name);
  mkdirSync(dir);
  for (const n of [1, 2]) writeFileSync(join(dir, `${id(n)}.out`), 'earlier');
  const perLine = [
    { id: id(1), workload: W, status: 'done', provider, job: 'sha256:' + '1'.repeat(64), receipt: 'sha256:' + 'a'.repeat(64), attempts: [] },
    { id: id(2), workload: W, status: 'done', provider, job: 'sha256:' + '2'.repeat(64), receipt: 'sha256:' + 'b'.repeat(64), attempts: [] },
    { id: id(3), workload: W, status: 'not-posted', attempts: [] },
    { id: id(4), workload: W, status: 'unknown', provider, job: 'sha256:' + '4'.repeat(64), attempts: [] },
    { id: id(5), workload: W, status: 'failed', provider, attempts: [] },
  ];
  const summary = JSON.stringify({ batch, outputDir: dir, startedAt: 1_700_000_000_000, lines: 5, done: 2, failed: 1, unknown: 1, notPosted: 1, stopped: { code: 'DAEMON_STREAM_LOST', message: 'gone' }, perLine, receipts: ['a', 'b'].map((x, i) => ({ line: id(i + 1), address: 'sha256:' + x.repeat(64), status: 'completed', provider, price: { amount: '0.003', currency: 'USD' } })) }, null, 2);
  writeFileSync(join(dir, 'summary.json'), summary);
  return { dir, summary };
}

describe('batch run into a directory holding an earlier run’s summary', () => {
  it('without --resume: BATCH_OUTPUT_HAS_SUMMARY (exit 3) with the earlier counts; nothing asked of the daemon, nothing changed', async () => {
    const { dir, summary } = interrupted('plain');
    daemon.asked.length = 0;
    const r = await c0('--output-dir', dir);
    assert.equal(r.status, EXIT.OPERATOR, r.stderr);
    assert.match(r.stderr, /^error BATCH_OUTPUT_HAS_SUMMARY: .* holds the summary of an earlier run: 2 of 5 lines done, 1 failed, 1 in flight when it stopped \(outcome unknown\), 1 not posted\. Run again with --resume/m);
    assert.deepEqual(daemon.asked, []);
    assert.equal(readFileSync(join(dir, 'summary.json'), 'utf8'), summary);
    assert.deepEqual(readdirSync(dir).sort(), [`${id(1)}.out`, `${id(2)}.out`, 'summary.json']);
  });

  it('--resume posts only the lines not done (not the unknown one), keeps the earlier summary, and exits 1 naming the line left out', async () => {
    const { dir, summary } = interrupted('resume');
    daemon.asked.length = 0;
    const r = await c0('--output-dir', dir, '--resume');
    assert.equal(r.status, EXIT.NEGATIVE, r.stdout + r.stderr);
    assert.equal(posted(), 2, 'lines 3 and 5 only');
    assert.match(r.stderr, new RegExp(`resuming .*: 2 lines done earlier, not posted again; 1 in flight when it stopped left out \\(outcome unknown here: check \`c0mpute jobs\` for ${id(4)} \\(job sha256:4{64}\\)`));
    assert.match(r.stderr, /1 line left out with outcome unknown/);
    for (const n of [1, 2]) assert.equal(readFileSync(join(dir, `${id(n)}.out`), 'utf8'), 'earlier', 'a done line’s output is not replaced');
    for (const n of [3, 5]) assert.equal(readFileSync(join(dir, `${id(n)}.out`), 'utf8'), 'now');
    assert.equal(existsSync(join(dir, `${id(4)}.out`)), false);
    assert.equal(readFileSync(join(dir, 'summary.1700000000000.json'), 'utf8'), summary, 'the earlier summary is kept as it was');
    const s = JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8')) as { lines: number; done: number; perLine: Array<{ id: string }>; resumed: { from: string; doneEarlier: number; leftOutUnknown: Array<{ id: string }>; carried: Array<{ id: string; status: string }> } };
    assert.deepEqual([s.lines, s.done], [2, 2]);
    assert.deepEqual(s.perLine.map((l) => l.id), [id(3), id(5)]);
    assert.equal(s.resumed.from, 'summary.1700000000000.json');
    assert.deepEqual(s.resumed.carried.map((l) => [l.id, l.status]), [[id(1), 'done'], [id(2), 'done'], [id(4), 'unknown']]);
    // the whole batch beside this run's figures: the carried lines' prices (read from the earlier receipts) and this run's
    const whole = (JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8')) as { wholeBatch: unknown }).wholeBatch;
    assert.deepEqual(whole, { lines: 5, done: 4, failed: 0, unknown: 1, notPosted: 0, cost: [{ amount: '0.01', currency: 'USD' }] });
    assert.match(r.stdout, /cost 0\.004 USD \(this run\)\nthe whole batch: 4 of 5 lines done, cost 0\.01 USD/);

    // a second resume reads the carried lines too: only the unknown one is left, and --rerun-unknown posts it
    daemon.asked.length = 0;
    const again = await c0('--output-dir', dir, '--resume');
    assert.equal(again.status, EXIT.NEGATIVE, again.stderr);
    assert.equal(posted(), 0);
    assert.match(again.stderr, /4 lines done earlier, not posted again; 1 in flight/);
    const last = await c0('--output-dir', dir, '--resume', '--rerun-unknown');
    assert.equal(last.status, EXIT.OK, last.stderr);
    assert.equal(posted(), 1);
    assert.equal(readFileSync(join(dir, `${id(4)}.out`), 'utf8'), 'now');
    // two runs on, the whole batch still counts the first run's lines at their price (carried forward with it)
    const last1 = JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8')) as { lines: number; cost: unknown; wholeBatch: unknown };
    assert.deepEqual([last1.lines, last1.cost], [1, [{ amount: '0.002', currency: 'USD' }]]);
    assert.deepEqual(last1.wholeBatch, { lines: 5, done: 5, failed: 0, unknown: 0, notPosted: 0, cost: [{ amount: '0.012', currency: 'USD' }] });
    // and then nothing is left: nothing posted, exit 0, without the daemon
    daemon.asked.length = 0;
    const done = await c0('--output-dir', dir, '--resume');
    assert.equal(done.status, EXIT.OK, done.stderr);
    assert.match(done.stdout, /every line was done by the earlier run; nothing to post/);
    assert.deepEqual(daemon.asked, []);
  });

  it('--resume on another batch’s summary: BATCH_RESUME_OTHER_BATCH; --rerun-unknown without --resume: a usage error; a summary that is not one: BATCH_SUMMARY_INVALID', async () => {
    const { dir } = interrupted('other', join(root, 'another.yaml'));
    daemon.asked.length = 0;
    const r = await c0('--output-dir', dir, '--resume');
    assert.equal(r.status, EXIT.OPERATOR, r.stderr);
    assert.match(r.stderr, /^error BATCH_RESUME_OTHER_BATCH: /m);
    const u = await c0('--output-dir', dir, '--rerun-unknown');
    assert.equal(u.status, EXIT.USAGE, u.stderr);
    assert.match(u.stderr, /--rerun-unknown goes with --resume/);
    const junk = join(root, 'junk');
    mkdirSync(junk);
    writeFileSync(join(junk, 'summary.json'), '{"mine": true}');
    const j = await c0('--output-dir', junk, '--resume');
    assert.equal(j.status, EXIT.OPERATOR, j.stderr);
    assert.match(j.stderr, /^error BATCH_SUMMARY_INVALID: .*junk\/summary\.json: no perLine list/m);
    assert.deepEqual(daemon.asked, []);
  });
});
