/**
 * The CLI without a daemon, as the README offers it: `c0mpute run job.yaml`
 * on a data directory with no daemon starts a node in-process for the one job
 * (flags as `start` takes them: --listen, --bootstrap), waits for the market,
 * runs the walk and writes the output (--output); `c0mpute jobs` and
 * `c0mpute reputation` then read the same directory's stores with no daemon
 * either. A second `start` on a directory whose daemon runs is refused
 * (DAEMON_RUNNING, exit 3), as is an unknown --role (CONFIG_INVALID, exit 2: a flag's value).
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Cluster, bootstrapAddr, c0mpute, providerConfig, sha256Rounds, withLogs } from './node-helpers.js';

const c = new Cluster('oneshot');

after(async () => {
  await c.destroy();
});

test('run with no daemon: an in-process node runs the job to its output; jobs and reputation read its stores after; a second start and an unknown role are refused', async () => {
  const p = await c.start('provider', providerConfig({ baseMs: 500 }));
  await withLogs(c, async () => {
    const buyer = c.dataDir('buyer');
    const job = join(buyer.dir, 'job.yaml');
    writeFileSync(job, 'workload: builtin.sha256\nparams: "1000"\ninput: "one shot"\nmaxPrice: "0.01 USD"\ndeadline: 60s\n');
    const output = join(buyer.dir, 'out.bin');
    // a second start on the provider's directory, whose daemon runs, is asked while the job runs (another directory)
    const [r, again] = await Promise.all([
      c0mpute(buyer.dir, ['run', job, '--listen', '/ip4/127.0.0.1/tcp/0', '--bootstrap', bootstrapAddr(p), '--wait', '30000', '--output', output]),
      c0mpute(p.dir, ['start', '--config', p.configPath]),
    ]);
    assert.equal(r.code, 0, r.out + r.err);
    // builtin.sha256's output is the hex digest of its rounds
    assert.match(r.err, /▸ output \(64 bytes\) written to /);
    assert.equal(readFileSync(output, 'utf8'), sha256Rounds(new TextEncoder().encode('one shot'), 1000));

    // the store is read by one command at a time; the refusals of a wrong DID and an unknown role come before any store opens
    const [[jobs, rep], bad, role] = await Promise.all([
      c0mpute(buyer.dir, ['jobs', '--json']).then(async (j) => [j, await c0mpute(buyer.dir, ['reputation', p.did, '--json'])] as const),
      c0mpute(buyer.dir, ['reputation', 'not-a-did']),
      c0mpute(buyer.dir, ['start', '--role', 'king']),
    ]);
    assert.equal(jobs.code, 0, jobs.err);
    const listed = (JSON.parse(jobs.out) as { jobs: Array<{ record: { workload: string }; receipts: Array<{ provider: string; status: string; acceptance?: string }> }> }).jobs;
    assert.equal(listed.length, 1);
    assert.deepEqual(listed[0]!.receipts.map((x) => [x.provider, x.status, x.acceptance]), [[p.did, 'completed', 'accepted']]);
    assert.equal(rep.code, 0, rep.err);
    assert.deepEqual(((x) => [x.jobs, x.successes])(JSON.parse(rep.out) as { jobs: number; successes: number }), [1, 1]);
    assert.equal(bad.code, 2, 'a wrong argument value is a wrong command line (review s40 F9)');
    assert.match(bad.err, /^error DID_MALFORMED: did must be a did:key/m);

    assert.equal(again.code, 3, again.out + again.err);
    assert.match(again.err, /^error DAEMON_RUNNING: a daemon \(pid \d+\) already runs on /m);
    assert.equal(role.code, 2, role.out + role.err);
    assert.match(role.err, /^error CONFIG_INVALID: .*roles/m);
  });
});
