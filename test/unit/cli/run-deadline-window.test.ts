/**
 * `c0mpute run job.yaml` checks the job's deadline against the offer window of the buyer that will run it
 * (docs/jobfile.md `deadline`: at least `buyer.collectWindowMs` plus 5 s): the running daemon's (GET /v1/status
 * `buyer.collectWindowMs`), or without a daemon the node config's. Before (QA ffBuyerDay2 F2) only the default 3 s
 * window was checked: a 10 s deadline on a daemon collecting for 20 s was signed and published, collected past its
 * deadline and ended "no eligible provider" with every offer expired.
 *
 * A fake daemon answers /v1/status with a 20 s window and counts the runs asked.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EXIT } from '../../../src/cli/context.js';
import { runNode } from './cli-run.js';
import { cliEnv, fakeDaemon } from './fake-daemon.js';

const BIN = fileURLToPath(new URL('../../../../bin/c0mpute.js', import.meta.url));
const root = mkdtempSync(join(tmpdir(), 'c0-run-deadline-window-'));
const dataDir = join(root, 'buyer');
const job = `sha256:${'ab'.repeat(32)}`;
let runs = 0;
let server: Server;
/** What the fake daemon's status says of its offer window (undefined: a daemon before it; 'fail': the status errs). */
let window: number | undefined | 'fail' = 20_000;

const file = (name: string, extra: string) => {
  const path = join(root, name);
  writeFileSync(path, `workload: builtin.sha256\ninput: "x"\nmaxPrice: "0.01 USD"\n${extra}`);
  return path;
};

before(async () => {
  server = await fakeDaemon(dataDir, (req, res) => {
    req.resume();
    if (req.url === '/v1/status') {
      if (window === 'fail') return void res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { code: 'INTERNAL', message: 'status broke' } }));
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify({ did: 'did:key:z6Mk', ...(window === undefined ? {} : { buyer: { collectWindowMs: window } }) }));
    }
    if (!req.url?.startsWith('/v1/run')) return void res.writeHead(404).end();
    runs++;
    res.writeHead(200, { 'content-type': 'application/x-ndjson' });
    res.end(JSON.stringify({ e: 'result', result: { status: 'completed', output: Buffer.from('ok').toString('base64'), job: { address: job } } }) + '\n');
  });
});

after(() => {
  server?.close();
  rmSync(root, { recursive: true, force: true });
});

const env = (): NodeJS.ProcessEnv => cliEnv(join(root, 'unused-home'));
const run = (dir: string, path: string) => runNode([BIN, '--data-dir', dir, 'run', path], { env: env(), timeout: 60_000 });

describe("run: a job's deadline against the buyer's own offer window", () => {
  it("a deadline the daemon's 20 s window would pass: JOB_DEADLINE_TOO_SOON (exit 3), nothing asked to run", async () => {
    runs = 0;
    const r = await run(dataDir, file('short.yaml', 'deadline: 10s\n'));
    assert.equal(r.status, EXIT.OPERATOR, r.stderr);
    assert.match(r.stderr, /^error JOB_DEADLINE_TOO_SOON: .*short\.yaml: deadline 10s is 10000 ms.*the buyer collects offers for 20000 ms.*give at least 25000 ms/m);
    assert.equal(runs, 0, 'no job posted');
  });

  it('a deadline past the window, and an order (no offer window), run', async () => {
    runs = 0;
    const long = await run(dataDir, file('long.yaml', 'deadline: 30s\n'));
    assert.equal(long.status, EXIT.OK, long.stderr);
    const order = await run(dataDir, file('order.yaml', 'deadline: 10s\norder: {}\n'));
    assert.equal(order.status, EXIT.OK, order.stderr);
    assert.equal(runs, 2);
  });

  it("a daemon's window under the default 3 s takes a deadline the default would refuse; a status that fails or says no window leaves the default check (review s56)", async () => {
    runs = 0;
    window = 1000;
    const seven = file('seven.yaml', 'deadline: 7s\n');
    const r = await run(dataDir, seven);
    assert.equal(r.status, EXIT.OK, r.stderr);
    assert.equal(runs, 1, 'a 7 s deadline on a 1 s window runs');
    for (const w of [undefined, 'fail'] as const) {
      window = w;
      const d = await run(dataDir, seven);
      assert.equal(d.status, EXIT.OPERATOR, d.stderr);
      assert.match(d.stderr, /^error JOB_DEADLINE_TOO_SOON: .*collects offers for 3000 ms/m, `window ${String(w)}`);
    }
    window = 20_000;
  });

  it("without a daemon, the node config's window: refused before a node starts", async () => {
    const solo = join(root, 'solo');
    mkdirSync(solo, { recursive: true });
    writeFileSync(join(solo, 'config.yaml'), 'roles: [buyer]\nbuyer: { collectWindowMs: 20000 }\n');
    const r = await run(solo, file('short2.yaml', 'deadline: 10s\n'));
    assert.equal(r.status, EXIT.OPERATOR, r.stderr);
    assert.match(r.stderr, /^error JOB_DEADLINE_TOO_SOON: .*collects offers for 20000 ms/m);
  });
});
