/**
 * Ctrl-C on `c0mpute run` through a daemon (review s43 R6 F2): the command exited 130 saying nothing, and the daemon
 * went on to select, run, accept and pay; the output went to the client that had gone. Now the CLI closes the stream
 * and says the job is cancelled, and the daemon, whose run had not selected a provider yet, withdraws it: nothing
 * selected, no receipt, nothing paid (docs/node.md "A run whose client went away").
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BIN, Cluster, bootstrapAddr, buyerConfig, get, providerConfig, track, waitFor, waitForMarket, withLogs, type NodeProc } from './node-helpers.js';

const c = new Cluster('run-client-gone');
let p: NodeProc;
let buyer: NodeProc;

before(async () => {
  await withLogs(c, async () => {
    p = await c.start('p', providerConfig({ price: '0.002' }));
    // the whole offer window is waited for (enoughOffers 0, and not ended when the one provider quoted): the Ctrl-C
    // comes before any selection
    buyer = await c.start('buyer', buyerConfig({ bootstrap: [bootstrapAddr(p)], collectWindowMs: 4000, endWhenAllQuoted: false }));
    await waitForMarket(buyer, 1, [p]);
  });
});

after(async () => {
  await c.destroy();
});

test('Ctrl-C on `run` before a provider is selected: the CLI says cancelled (130), the daemon withdraws the job, nothing is paid', async () => {
  await withLogs(c, async () => {
    const jobFile = join(buyer.dir, 'job.yaml');
    writeFileSync(jobFile, 'workload: builtin.sleep\nparams: "5000"\ninput: "x"\nmaxPrice: "0.01 USD"\ndeadline: 60s\n');
    const cli = spawn(process.execPath, [BIN, '--data-dir', buyer.dir, 'run', jobFile], { stdio: ['ignore', 'pipe', 'pipe'] });
    track(cli);
    let err = '';
    cli.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    const exited = new Promise<number | null>((resolve) => cli.once('close', (code) => resolve(code)));
    await waitFor('the job published', () => err.includes('published'));
    const job = /job (sha256:[0-9a-f]{64}) published/.exec(err)![1]!;
    cli.kill('SIGINT');
    assert.equal(await exited, 130, err);
    assert.match(err, new RegExp(`error RUN_CANCELLED: job ${job} cancelled: no provider was selected yet`));

    // the daemon's run ends (its one line per job), interrupted, with the reason logged once
    const ended = await waitFor('the run to end', () => {
      const lines = readFileSync(buyer.log, 'utf8').split('\n').filter((l) => l.includes(job));
      return lines.some((l) => l.includes('"job ended"')) ? lines : undefined;
    });
    assert.match(ended.find((l) => l.includes('"job ended"'))!, /"status":"interrupted"/);
    assert.equal(ended.filter((l) => l.includes('run client went away: job withdrawn')).length, 1);
    const held = (await get<{ jobs: Array<{ address: string; receipts: unknown[]; attempts?: unknown[] }> }>(buyer, '/v1/jobs')).jobs.find((j) => j.address === job);
    assert.deepEqual(held && { receipts: held.receipts, attempts: held.attempts }, { receipts: [], attempts: [] }, 'no provider selected, no receipt');
  });
});
