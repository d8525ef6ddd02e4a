/**
 * `c0mpute run --output FILE` whose FILE cannot be written once the job is done (its directory removed while the job
 * ran): the job was bought and the daemon keeps no outputs, so the output is kept in `<data dir>/outputs/<job>.out`
 * and the error says where (OUTPUT_UNWRITABLE, exit 3). Before (QA ffBuyerDay2 F1) the bytes were dropped.
 *
 * A fake daemon answers `/v1/run` with a completed result, removing the output's directory first.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EXIT } from '../../../src/cli/context.js';
import { runNode } from './cli-run.js';
import { cliEnv, fakeDaemon } from './fake-daemon.js';

const BIN = fileURLToPath(new URL('../../../../bin/c0mpute.js', import.meta.url));
const root = mkdtempSync(join(tmpdir(), 'c0-run-output-kept-'));
const dataDir = join(root, 'buyer');
const outDir = join(root, 'out');
const jobFile = join(root, 'job.yaml');
const job = `sha256:${'ab'.repeat(32)}`;
const output = 'the output that was paid for\n';
let server: Server;

before(async () => {
  server = await fakeDaemon(dataDir, (req, res) => {
    req.resume();
    if (req.url === '/v1/status') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify({ did: 'did:key:z6Mk', buyer: { collectWindowMs: 3000 } }));
    }
    if (!req.url?.startsWith('/v1/run')) return void res.writeHead(404).end();
    // the directory goes while the job runs
    rmSync(outDir, { recursive: true, force: true });
    res.writeHead(200, { 'content-type': 'application/x-ndjson' });
    const receipt = { address: `sha256:${'cd'.repeat(32)}`, record: { job, status: 'completed', outputHash: `sha256:${'ef'.repeat(32)}` } };
    res.end(JSON.stringify({ e: 'result', result: { status: 'completed', output: Buffer.from(output).toString('base64'), job: { address: job }, receipt } }) + '\n');
  });
  writeFileSync(jobFile, 'workload: builtin.sha256\ninput: "x"\nmaxPrice: "0.01 USD"\n');
});

after(() => {
  server?.close();
  rmSync(root, { recursive: true, force: true });
});

const env = (): NodeJS.ProcessEnv => cliEnv(join(root, 'unused-home'));

describe('run --output that cannot be written once the job is done', () => {
  it('keeps the output in <data dir>/outputs/<job>.out and says so (OUTPUT_UNWRITABLE, exit 3)', async () => {
    mkdirSync(outDir, { recursive: true });
    const r = await runNode([BIN, '--data-dir', dataDir, 'run', jobFile, '--output', join(outDir, 'o.txt')], { env: env(), timeout: 60_000 });
    assert.equal(r.status, EXIT.OPERATOR, r.stderr);
    const kept = join(dataDir, 'outputs', `${'ab'.repeat(32)}.out`);
    assert.match(r.stderr, /^error OUTPUT_UNWRITABLE: cannot write .*o\.txt: its directory does not exist.*so it is kept in .*\.out instead/m);
    assert.ok(r.stderr.includes(kept), r.stderr);
    assert.ok(existsSync(kept), 'the output is kept');
    assert.equal(readFileSync(kept, 'utf8'), output);
  });
});
