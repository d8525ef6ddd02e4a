/**
 * `batch run --resume` knows its batch by content, not by path (QA qaMatch F1). Before, only the batch file's path
 * counted: a 9-line file grown in place to 10 lines re-posted and re-paid every line (the ids changed width, `-1`
 * became `-01`, so no line was recorded done), changed params ran the rest with other params beside the old outputs,
 * and a byte-identical copy at another path was refused. Now a summary records the batch's identity: the same content
 * resumes wherever the file is; a change is BATCH_RESUME_OTHER_BATCH naming it, and nothing is posted.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EXIT } from '../../../src/cli/context.js';
import { P } from '../market/fixtures.js';
import { runNode } from './cli-run.js';
import { fakeBatchDaemon, type FakeBatchDaemon } from './fake-batch-daemon.js';

const BIN = fileURLToPath(new URL('../../../../bin/c0mpute.js', import.meta.url));
const root = mkdtempSync(join(tmpdir(), 'c0-batch-identity-'));
const provider = P(954).did;
let daemon: FakeBatchDaemon;
const dataDir = join(root, 'buyer');
const W = 'builtin.sha256';

before(async () => {
  daemon = await fakeBatchDaemon(dataDir, provider, { workload: W });
});

after(() => {
  daemon?.close();
  rmSync(root, { recursive: true, force: true });
});

const c0 = (file: string, ...args: string[]) => runNode([BIN, '--data-dir', dataDir, 'batch', 'run', file, ...args], { env: { ...process.env, C0MPUTE_HOME: join(root, 'unused-home') }, timeout: 60_000 });
const posted = () => daemon.asked.filter((a) => a.startsWith('POST /v1/run')).length;
const batch = (lines: number, params = '1000', extra = '') => `window: 10m\nworkloads: [{ workload: ${W}, lines: ${lines}, lineTime: 2s, maxPrice: "0.01 USD", params: "${params}", inputText: "line {n}"${extra} }]\n`;

describe('batch run --resume: the batch is its content, not its path', () => {
  it('a file grown from 9 to 10 lines in place is refused, naming the ids’ new width; nothing is posted', async () => {
    const file = join(root, 'grow.yaml');
    const out = join(root, 'grow.out');
    writeFileSync(file, batch(9));
    assert.equal((await c0(file, '--output-dir', out)).status, EXIT.OK);
    const summary = readFileSync(join(out, 'summary.json'), 'utf8');
    writeFileSync(file, batch(10));
    daemon.asked.length = 0;
    const r = await c0(file, '--output-dir', out, '--resume');
    assert.equal(r.status, EXIT.OPERATOR, r.stdout + r.stderr);
    assert.match(r.stderr, /^error BATCH_RESUME_OTHER_BATCH: .*: since that run, builtin\.sha256: lines 9 → 10 \(its line ids change width: builtin\.sha256-1 is now builtin\.sha256-01\)/m);
    assert.equal(posted(), 0);
    assert.deepEqual(daemon.asked, []);
    assert.equal(readFileSync(join(out, 'summary.json'), 'utf8'), summary, 'the summary is untouched');
  });

  it('changed params are refused, naming them; a planning change (maxPrice, deadline) is the same batch', async () => {
    const file = join(root, 'params.yaml');
    const out = join(root, 'params.out');
    writeFileSync(file, batch(3, '300000'));
    assert.equal((await c0(file, '--output-dir', out)).status, EXIT.OK);
    writeFileSync(file, batch(3, '1000'));
    daemon.asked.length = 0;
    const r = await c0(file, '--output-dir', out, '--resume');
    assert.equal(r.status, EXIT.OPERATOR, r.stderr);
    assert.match(r.stderr, /BATCH_RESUME_OTHER_BATCH: .*builtin\.sha256: params "300000" → "1000"/);
    assert.deepEqual(daemon.asked, []);
    writeFileSync(file, batch(3, '300000').replace('0.01 USD', '0.02 USD').replace('inputText', 'deadline: 90s, inputText'));
    const same = await c0(file, '--output-dir', out, '--resume');
    assert.equal(same.status, EXIT.OK, same.stderr);
    assert.match(same.stdout, /every line was done by the earlier run; nothing to post/);
  });

  it('a byte-identical copy at another path resumes', async () => {
    const file = join(root, 'orig.yaml');
    const out = join(root, 'orig.out');
    writeFileSync(file, batch(4));
    assert.equal((await c0(file, '--output-dir', out)).status, EXIT.OK);
    // the earlier run stopped after two lines: lines 3 and 4 not posted
    const s = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')) as { perLine: Array<{ status: string }> };
    s.perLine[2]!.status = 'not-posted';
    s.perLine[3]!.status = 'not-posted';
    writeFileSync(join(out, 'summary.json'), JSON.stringify(s));
    const copy = join(root, 'copy.yaml');
    copyFileSync(file, copy);
    daemon.asked.length = 0;
    const r = await c0(copy, '--output-dir', out, '--resume');
    assert.equal(r.status, EXIT.OK, r.stderr);
    assert.equal(posted(), 2, 'lines 3 and 4 only');
  });

  it('a summary of the previous version (no identity) at the same path: line ids of another width are refused', async () => {
    const file = join(root, 'legacy.yaml');
    const out = join(root, 'legacy.out');
    writeFileSync(file, batch(9));
    assert.equal((await c0(file, '--output-dir', out)).status, EXIT.OK);
    const s = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')) as Record<string, unknown>;
    delete s.identity;
    writeFileSync(join(out, 'summary.json'), JSON.stringify(s));
    writeFileSync(file, batch(10));
    daemon.asked.length = 0;
    const r = await c0(file, '--output-dir', out, '--resume');
    assert.equal(r.status, EXIT.OPERATOR, r.stderr);
    assert.match(r.stderr, /BATCH_RESUME_OTHER_BATCH: .*its lines are not this batch's \(9 recorded, builtin\.sha256-1, builtin\.sha256-2, builtin\.sha256-3, … not among this batch's 10\)/);
    assert.deepEqual(daemon.asked, []);
  });
});
