/**
 * Ctrl-C on `c0mpute run` with no daemon (the buyer node in the command's own process; docs/node.md "A run whose
 * client went away"). Before, Node's default handling ended the process: no line, the node not stopped. Now the first
 * Ctrl-C withdraws a job no provider was selected for yet (RUN_CANCELLED, exit 130) or says that a selected one runs
 * to its end here; a second stops the node and breaks the run off (RUN_BROKEN_OFF, exit 130). A Ctrl-C while the
 * node is still starting lets it finish, then ends the run cancelled with nothing published (before, Node's default
 * handling killed the process mid-start, with no word).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BIN, Cluster, bootstrapAddr, buyerConfig, c0mpute, providerConfig, track, waitFor, withLogs, type NodeProc } from './node-helpers.js';

const c = new Cluster('run-ctrl-c-oneshot');
let p: NodeProc;

before(async () => {
  p = await c.start('p', providerConfig({ price: '0.002' }));
});

after(async () => {
  await c.destroy();
});

/** `c0mpute run` on a fresh data directory with no daemon, the buyer's config given (JSON is YAML). */
function oneShot(name: string, buyer: Record<string, unknown>, job: string) {
  const { dir } = c.dataDir(name);
  const config = join(dir, 'config.yaml');
  writeFileSync(config, JSON.stringify(buyerConfig({ bootstrap: [bootstrapAddr(p)], ...buyer })));
  const jobFile = join(dir, 'job.yaml');
  writeFileSync(jobFile, job);
  const cli = spawn(process.execPath, [BIN, '--data-dir', dir, 'run', jobFile, '--config', config, '--wait', '30000'], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, C0MPUTE_PASSPHRASE: '' } });
  track(cli);
  const seen = { err: '' };
  cli.stderr.setEncoding('utf8').on('data', (d: string) => (seen.err += d));
  const exited = new Promise<number | null>((resolve) => cli.once('close', (code) => resolve(code)));
  return { dir, cli, seen, exited };
}

test('no daemon: Ctrl-C before a provider is selected withdraws the job (RUN_CANCELLED, 130) and stops the node', async () => {
  await withLogs(c, async () => {
    // the whole offer window is waited for (enoughOffers 0, and not ended when the one provider quoted): the Ctrl-C
    // comes before any selection
    const r = oneShot('b1', { collectWindowMs: 4000, endWhenAllQuoted: false }, 'workload: builtin.sleep\nparams: "100"\ninput: "x"\nmaxPrice: "0.01 USD"\ndeadline: 60s\n');
    await waitFor('the job published', () => r.seen.err.includes('published'));
    const job = /job (sha256:[0-9a-f]{64}) published/.exec(r.seen.err)![1]!;
    r.cli.kill('SIGINT');
    assert.equal(await r.exited, 130, r.seen.err);
    assert.match(r.seen.err, new RegExp(`error RUN_CANCELLED: job ${job} cancelled: no provider was selected yet, so it was withdrawn`));
    assert.doesNotMatch(r.seen.err, /daemon/);
    // the node stopped with its store closed: the directory's store opens for the next command, the job held unrun
    const jobs = await c0mpute(r.dir, ['jobs', '--json']);
    assert.equal(jobs.code, 0, jobs.err);
    const held = (JSON.parse(jobs.out) as { jobs: Array<{ address: string; receipts: unknown[]; attempts?: unknown[] }> }).jobs.find((j) => j.address === job);
    assert.deepEqual(held && { receipts: held.receipts, attempts: held.attempts ?? [] }, { receipts: [], attempts: [] });
  });
});

test('no daemon: Ctrl-C after the selection says the job runs on here; a second breaks it off (RUN_BROKEN_OFF, 130)', async () => {
  await withLogs(c, async () => {
    const r = oneShot('b2', { collectWindowMs: 500, enoughOffers: 1 }, 'workload: builtin.sleep\nparams: "30000"\ninput: "x"\nmaxPrice: "0.01 USD"\ndeadline: 60s\n');
    await waitFor('the selection', () => r.seen.err.includes('▸ selection'));
    r.cli.kill('SIGINT');
    await waitFor('the line that the job goes on', () => r.seen.err.includes('runs to its end here and is paid for; Ctrl-C again breaks it off now'));
    r.cli.kill('SIGINT');
    assert.equal(await r.exited, 130, r.seen.err);
    assert.match(r.seen.err, new RegExp(`error RUN_BROKEN_OFF: job sha256:[0-9a-f]{64} broken off at ${p.did}`));
  });
});

test('no daemon: Ctrl-C while the node starts ends the run cancelled, nothing published (130), the store closed', async () => {
  await withLogs(c, async () => {
    const r = oneShot('b3', {}, 'workload: builtin.sleep\nparams: "100"\ninput: "x"\nmaxPrice: "0.01 USD"\ndeadline: 60s\n');
    // the node has opened its store: it is starting (the job is checked, and nothing is published until it has started)
    await waitFor('the node to open its store', () => existsSync(join(r.dir, 'db', 'C0HOLDER')), 30_000, 5);
    r.cli.kill('SIGINT');
    assert.equal(await r.exited, 130, r.seen.err);
    assert.match(r.seen.err, /error RUN_CANCELLED: cancelled before the job was published: nothing was sent, nothing is paid/);
    assert.doesNotMatch(r.seen.err, /job sha256:[0-9a-f]{64} published/);
    const jobs = await c0mpute(r.dir, ['jobs', '--json']);
    assert.equal(jobs.code, 0, jobs.err);
    assert.deepEqual((JSON.parse(jobs.out) as { jobs: unknown[] }).jobs, []);
  });
});
