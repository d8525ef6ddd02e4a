/**
 * The `c0mpute` node commands as a user runs them (child processes) against a
 * running daemon: `init`, `run` with no eligible provider (the binding
 * constraints, exit 1), `status`, `peers`, `market`, `jobs`, `reputation`
 * (exit 0), and the operator errors (exit 3 with `error CODE`).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Cluster, bootstrapAddr, buyerConfig, c0mpute, providerConfig, waitForMarket, withLogs, type NodeProc } from './node-helpers.js';

const DEFAULT_CONFIG = fileURLToPath(new URL('../../../config/default.yaml', import.meta.url));
const c = new Cluster('cli');
let prov: NodeProc;
let buyer: NodeProc;
let runJobAddr: string | undefined;

before(async () => {
  await withLogs(c, async () => {
    // One small provider: 4 GiB of memory in eu-west. The job below wants 64 GiB in us-east.
    prov = await c.start('provider', providerConfig({ memoryMiB: 4096, region: 'eu-west', tier: 'community' }));
    buyer = await c.start('buyer', buyerConfig({ bootstrap: [bootstrapAddr(prov)], collectWindowMs: 1500 }));
    await waitForMarket(buyer, 1, [prov]);
  });
});

after(async () => {
  await c.destroy();
});

function jsonLines(out: string): Array<Record<string, unknown>> {
  return out
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

test('`c0mpute init` creates the key (0600) and config.yaml; a second init keeps them', async () => {
  const dir = join(c.root, 'fresh');
  const r = await c0mpute(dir, ['init', '--no-passphrase']);
  assert.equal(r.code, 0, r.err);
  const key = join(dir, 'identity.key');
  assert.ok(existsSync(key));
  assert.equal(statSync(key).mode & 0o777, 0o600);
  assert.equal(readFileSync(join(dir, 'config.yaml'), 'utf8'), readFileSync(DEFAULT_CONFIG, 'utf8'));
  const did = (JSON.parse(readFileSync(key, 'utf8')) as { did: string }).did;
  assert.match(did, /^did:key:z/);
  assert.ok(r.out.includes(did), 'init prints the new DID');
  // a second init, and (no daemon runs on this data dir) status, which is an operator error
  const [again, st] = await Promise.all([c0mpute(dir, ['init', '--no-passphrase']), c0mpute(dir, ['status'])]);
  assert.equal(again.code, 0, again.err);
  assert.equal((JSON.parse(readFileSync(key, 'utf8')) as { did: string }).did, did, 'the key is kept');
  assert.equal(st.code, 3);
  assert.match(st.err, /^error DAEMON_NOT_RUNNING:/);
});

test('a job file with a bad field exits 3 with JOB_FILE_INVALID', async () => {
  const bad = [
    { workload: 'builtin.sha256', maxPrice: '0.01 USD', input: 'x', gpus: 2 }, // unknown field
    { workload: 'builtin.sha256', maxPrice: '0.01 USD', input: 'x', deadline: 'soon' }, // bad value
    { workload: 'Not A Workload', maxPrice: '0.01 USD', input: 'x' },
  ];
  const files = bad.map((j, i) => {
    const f = join(c.root, `bad-${i}.yaml`);
    writeFileSync(f, JSON.stringify(j));
    return f;
  });
  const runs = await Promise.all(files.map((f) => c0mpute(buyer.dir, ['run', f])));
  for (const [i, r] of runs.entries()) {
    assert.equal(r.code, 3, `${files[i]}: ${r.err}`);
    assert.match(r.err, /^error JOB_FILE_INVALID:/);
  }
});

test('`c0mpute run` with no eligible provider prints the binding constraints and exits 1', async () => {
  await withLogs(c, async () => {
    const f = join(c.root, 'big-job.yaml');
    writeFileSync(f, ['workload: builtin.sha256', 'params: 10', 'maxPrice: 0.01 USD', 'deadline: 60s', 'input: hello', 'requirements:', '  memoryMiB: 65536', '  regions: [us-east]', ''].join('\n'));
    const r = await c0mpute(buyer.dir, ['run', f, '--json']);
    assert.equal(r.code, 1, r.err);
    const lines = jsonLines(r.out);
    const res = lines.find((l) => l.e === 'result')?.result as { status: string; job: { address: string }; decision: { result: { explanation: { known: number; eligible: number; binding: Array<{ constraint: string; failing: number }>; providers: Array<{ provider: string; failures: Array<{ code: string }> }>; relaxations: unknown[] } } } };
    assert.ok(res, 'a result line');
    assert.equal(res.status, 'no-offers');
    runJobAddr = res.job.address;
    const x = res.decision.result.explanation;
    assert.equal(x.known, 1);
    assert.equal(x.eligible, 0);
    assert.deepEqual(x.providers.map((p) => p.provider), [prov.did]);
    assert.deepEqual(x.providers[0]!.failures.map((f) => f.code).sort(), ['MEMORY_TOO_SMALL', 'OFFER_MISSING', 'REGION_NOT_ACCEPTED']);
    const binding = x.binding.map((b) => b.constraint);
    assert.ok(binding.includes('memory') && binding.includes('region'), JSON.stringify(x.binding));
    // stdout holds the JSON lines only; the same in words for a person goes to stderr, once:
    // the explanation line and one line per relaxation.
    assert.deepEqual(r.out.split('\n').filter((l) => l && !l.startsWith('{')), [], r.out);
    const human = r.err.split('\n').filter((l) => l.startsWith('✘') || l.startsWith('  · '));
    assert.ok(human[0]?.startsWith('✘ no eligible provider'), r.err);
    assert.equal(human.filter((l) => l.startsWith('✘ no eligible provider')).length, 1, r.err);
    assert.equal(human.filter((l) => l.startsWith('  · ')).length, x.relaxations.length);
  });
});

test('status, peers, market, jobs and reputation against a running daemon exit 0 with sensible output', async () => {
  await withLogs(c, async () => {
    const cmds = ['status', 'peers', 'market', 'jobs', 'reputation'];
    const [json, human] = await Promise.all([Promise.all(cmds.map((cmd) => c0mpute(buyer.dir, [cmd, '--json']))), Promise.all(cmds.map((cmd) => c0mpute(buyer.dir, [cmd])))]);
    for (const [i, r] of [...json, ...human].entries()) {
      assert.equal(r.code, 0, `${cmds[i % cmds.length]}: ${r.err}`);
      assert.ok(r.out.trim().length > 0, `${cmds[i % cmds.length]} prints something`);
    }
    const [status, peers, market, jobs, reputation] = json.map((r) => JSON.parse(r.out) as Record<string, unknown>);
    assert.equal(status!.did, buyer.did);
    assert.deepEqual(status!.roles, ['buyer']);
    assert.equal(status!.providersKnown, 1);
    assert.ok((peers!.peers as Array<{ did: string }>).some((p) => p.did === prov.did));
    const ads = market!.adverts as Array<{ signer: string; live: boolean; record: { hardware: { memoryMiB: number }; region: string } }>;
    assert.deepEqual(ads.map((a) => a.signer), [prov.did]);
    assert.equal(ads[0]!.live, true);
    assert.equal(ads[0]!.record.hardware.memoryMiB, 4096);
    assert.equal(ads[0]!.record.region, 'eu-west');
    const js = jobs!.jobs as Array<{ address: string; signer: string; receipts: unknown[] }>;
    assert.ok(runJobAddr);
    assert.deepEqual(js.map((j) => j.address), [runJobAddr], 'the job `run` published, with no receipt');
    assert.equal(js[0]!.signer, buyer.did);
    assert.deepEqual(js[0]!.receipts, []);
    assert.deepEqual(reputation!.providers, []);
    // jobs a page at a time: --all follows the pages; a bad --limit is refused with its code
    const [all, bad] = await Promise.all([c0mpute(buyer.dir, ['jobs', '--all', '--json']), c0mpute(buyer.dir, ['jobs', '--limit', '0'])]);
    assert.deepEqual((JSON.parse(all.out) as { jobs: Array<{ address: string }> }).jobs.map((j) => j.address), [runJobAddr]);
    assert.notEqual(bad.code, 0);
    assert.match(bad.err, /CLI_BAD_LIMIT/);
    // The human forms name what the JSON says.
    assert.ok(human[0]!.out.includes(buyer.did));
    assert.ok(human[1]!.out.includes(prov.did));
    // On the provider, the buyer dialled in: `peers` names where the buyer listens (what a bootstrap list takes), not
    // only its connection's passing port, which never answers a dial (QA pass, session 48)
    assert.deepEqual(status!.buyer, { collectWindowMs: 1500 });
    const [pj, ph, pst] = await Promise.all([c0mpute(prov.dir, ['peers', '--json']), c0mpute(prov.dir, ['peers']), c0mpute(prov.dir, ['status', '--json'])]);
    // a node that buys nowhere says no offer window (before, a provider's status had a buyer line)
    assert.equal((JSON.parse(pst.out) as { buyer?: unknown }).buyer, undefined);
    const seen = (JSON.parse(pj.out) as { peers: Array<{ did?: string; inbound: boolean; listen: string[]; addrs: string[] }> }).peers.find((p) => p.did === buyer.did)!;
    assert.equal(seen.inbound, true);
    assert.ok(seen.listen.includes(bootstrapAddr(buyer)), `${seen.listen.join(' ')} names ${bootstrapAddr(buyer)}`);
    assert.ok(!seen.addrs.includes(bootstrapAddr(buyer)), 'the connection is from another port');
    assert.match(ph.out, new RegExp(`${buyer.did}  .*${bootstrapAddr(buyer).replace(/[/.]/g, '\\$&')}.*\\(dialled in from `));
  });
});

test('`c0mpute run` without --json prints its final error on stderr only, once', async () => {
  await withLogs(c, async () => {
    const plain = await c0mpute(buyer.dir, ['run', join(c.root, 'big-job.yaml')]);
    assert.equal(plain.code, 1, plain.err);
    assert.equal(plain.out, '', 'nothing on stdout');
    assert.equal(plain.err.split('\n').filter((l) => l.startsWith('✘ no eligible provider')).length, 1, plain.err);
  });
});
