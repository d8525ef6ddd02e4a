/**
 * One node on the public network and a private overlay at once (the `overlays`
 * list), as real `c0mpute start` processes: a provider on the public network
 * only, two on the private overlay only. Nothing crosses: each overlay's market
 * lists only its own providers, a job on one overlay is heard, quoted and run
 * only there (the leak test), and the `private` policy on the overlay selects
 * only providers on the job's allowlist, or refuses a job without one.
 */
import '../../src/polyfill.js';
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify as toYaml } from 'yaml';
import { C0Error } from '../../src/errors.js';
import { apiStream } from '../../src/node/api.js';
import { Cluster, bootstrapAddr, buyerConfig, c0mpute, freePort, get, providerConfig, waitFor, waitForMarket, withLogs, type NodeProc, type RunOutcome, type StatusView } from './node-helpers.js';

const NAME = 'labs';
const c = new Cluster('overlay-multi');
let keyFile: string;
let pub: NodeProc; // provider, public network only
let priv1: NodeProc; // provider, the overlay only (the cheaper one)
let priv2: NodeProc; // provider, the overlay only
let x: NodeProc; // buyer on both

interface OfferWire {
  signer: string;
  address: string;
}
interface ResultWire {
  status: string;
  job: { address: string };
  receipt?: { signer: string; record: { provider: string } };
  decision?: { ranked: Array<{ provider: string }> };
  attempts: Array<{ provider: string; outcome: string }>;
}

/** POST /v1/run?overlay=<name> and collect the stream. */
async function runOn(n: NodeProc, overlay: string, spec: Record<string, unknown>): Promise<RunOutcome & { result: ResultWire }> {
  const events: RunOutcome['events'] = [];
  let result: ResultWire | undefined;
  for await (const ev of apiStream(n.api.api, n.api.token, `/v1/run?overlay=${overlay}`, spec)) {
    if (ev.e === 'result') result = ev.result as ResultWire;
    else if (ev.e === 'error') {
      const err = ev.error as { code: string; message: string };
      throw new C0Error(err.code, err.message);
    } else events.push(ev as RunOutcome['events'][number]);
  }
  if (!result) throw new C0Error('RUN_NO_RESULT', 'the run ended without a result');
  return { result: result as ResultWire & RunOutcome['result'], events };
}

const offerSigners = (r: RunOutcome): string[] => [...new Set(r.events.filter((e) => e.e === 'offer').map((e) => (e.offer as OfferWire).signer))].sort();

function spec(text: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { workload: 'builtin.sha256', params: '100', maxPrice: { amount: '0.01', currency: 'USD' }, deadlineMs: 30_000, input: Buffer.from(text).toString('base64'), ...extra };
}

const marketSigners = async (n: NodeProc, overlay: string): Promise<string[]> => (await get<{ adverts: Array<{ signer: string }> }>(n, `/v1/market?overlay=${overlay}`)).adverts.map((a) => a.signer).sort();
const knowsJob = async (n: NodeProc, job: string, overlay?: string): Promise<boolean> => (await get<{ known: boolean }>(n, `/v1/offers/${encodeURIComponent(job)}${overlay ? `?overlay=${overlay}` : ''}`)).known;

after(async () => {
  await c.destroy();
});

before(async () => {
  await withLogs(c, async () => {
    const admin = c.dataDir('admin');
    const r = await c0mpute(admin.dir, ['overlay', 'create', NAME, '--out', join(c.root, `${NAME}.key`), '--json']);
    assert.equal(r.code, 0, r.err);
    keyFile = (JSON.parse(r.out) as { keyFile: string }).keyFile;
    const overlayNet = (bootstrap: string[]) => ({ overlay: NAME, swarmKeyFile: keyFile, listen: ['/ip4/127.0.0.1/tcp/0'], loopback: true, bootstrap });
    const privProvider = (price: string, bootstrap: string[]) => ({ ...providerConfig({ price, tier: 'private', baseMs: 800 }), network: overlayNet(bootstrap) });

    [pub, priv1] = await Promise.all([c.start('pub', providerConfig({ price: '0.001', baseMs: 800 })), c.start('priv1', privProvider('0.002', []))]);
    priv2 = await c.start('priv2', privProvider('0.004', [bootstrapAddr(priv1)]));
    // The buyer: the public network (the `network` section) and the overlay (an `overlays` entry) at once.
    x = await c.start('x', {
      ...buyerConfig({ bootstrap: [bootstrapAddr(pub)], collectWindowMs: 3000, enoughOffers: 2 }),
      overlays: [{ ...overlayNet([bootstrapAddr(priv1), bootstrapAddr(priv2)]) }],
    });
    await waitForMarket(x, 1, [pub]);
    await waitFor('x to see both overlay providers', async () => (await marketSigners(x, NAME)).length === 2);
    await waitFor('x connected to both overlay providers', async () => {
      const p = await get<{ peers: Array<{ did?: string }> }>(x, `/v1/peers?overlay=${NAME}`);
      return [priv1.did, priv2.did].every((d) => p.peers.some((q) => q.did === d));
    });
  });
});

test('status and `overlay list` show both overlays, each with its own peers and providers', async () => {
  const s = await get<StatusView & { overlay: string; overlays: Record<string, StatusView> }>(x, '/v1/status');
  assert.equal(s.overlay, 'public');
  assert.deepEqual(Object.keys(s.overlays), [NAME]);
  const r = await c0mpute(x.dir, ['overlay', 'list', '--json']);
  assert.equal(r.code, 0, r.err);
  const list = (JSON.parse(r.out) as { overlays: Array<{ overlay: string; primary: boolean; peers: number; providersKnown: number }> }).overlays;
  assert.deepEqual(
    list.map((o) => [o.overlay, o.primary]),
    [
      ['public', true],
      [NAME, false],
    ],
  );
  assert.equal(list[0]!.providersKnown, 1);
  assert.equal(list[1]!.providersKnown, 2);
  assert.ok(list[0]!.peers >= 1 && list[1]!.peers >= 2);
  // The overlay-only providers have one overlay each, and it is the named one.
  const p1 = await get<{ overlay: string; overlays?: unknown }>(priv1, '/v1/status');
  assert.equal(p1.overlay, NAME);
  assert.equal(p1.overlays, undefined);
});

test('the leak test: markets, jobs, offers and runs stay on their own overlay', async () => {
  await withLogs(c, async () => {
    // Each market lists only its own providers, from the same node.
    assert.deepEqual(await marketSigners(x, 'public'), [pub.did]);
    assert.deepEqual(await marketSigners(x, NAME), [priv1.did, priv2.did].sort());
    assert.deepEqual(await marketSigners(pub, 'public'), [pub.did]);

    // One job on each overlay, at the same time. The public provider is the cheapest of all and
    // would win anywhere it could quote.
    const [onOverlay, onPublic] = await Promise.all([runOn(x, NAME, spec('private work', { policy: 'cheapest' })), runOn(x, 'public', spec('public work', { policy: 'cheapest' }))]);
    assert.equal(onOverlay.result.status, 'completed');
    assert.equal(onPublic.result.status, 'completed');
    const jobPriv = onOverlay.result.job.address;
    const jobPub = onPublic.result.job.address;

    // The overlay's job: quoted and run only by overlay providers; the public provider never heard of it.
    assert.deepEqual(offerSigners(onOverlay), [priv1.did, priv2.did].sort());
    assert.equal(onOverlay.result.receipt?.signer, priv1.did);
    assert.ok(onOverlay.result.attempts.every((a) => a.provider !== pub.did));
    assert.ok(onOverlay.result.decision?.ranked.every((r) => r.provider !== pub.did));
    assert.equal(await knowsJob(pub, jobPriv), false);
    assert.equal(await knowsJob(x, jobPriv, 'public'), false);
    assert.equal(await knowsJob(x, jobPriv, NAME), true);

    // The public job: the other way round.
    assert.deepEqual(offerSigners(onPublic), [pub.did]);
    assert.equal(onPublic.result.receipt?.signer, pub.did);
    assert.equal(await knowsJob(priv1, jobPub), false);
    assert.equal(await knowsJob(priv2, jobPub), false);
    assert.equal(await knowsJob(x, jobPub, NAME), false);
    assert.equal(await knowsJob(x, jobPub, 'public'), true);

    // Each overlay's store lists its own job only, and the markets did not pick up the other side's adverts meanwhile.
    const jobsOn = async (o: string) => (await get<{ jobs: Array<{ address: string }> }>(x, `/v1/jobs?overlay=${o}`)).jobs.map((j) => j.address);
    assert.deepEqual(await jobsOn('public'), [jobPub]);
    assert.deepEqual(await jobsOn(NAME), [jobPriv]);
    assert.deepEqual(await marketSigners(x, 'public'), [pub.did]);
    assert.deepEqual(await marketSigners(x, NAME), [priv1.did, priv2.did].sort());
    assert.deepEqual(await marketSigners(priv1, NAME), [priv1.did, priv2.did].sort());
  });
});

test('the private policy on the overlay: only a listed provider quotes and is selected; no allowlist is refused', async () => {
  await withLogs(c, async () => {
    // priv1 is cheaper and otherwise equal: without the allowlist it would win (it did above).
    const r = await runOn(x, NAME, spec('listed only', { policy: 'private', requirements: { tier: 'private', allowlist: [priv2.did] } }));
    assert.equal(r.result.status, 'completed');
    assert.deepEqual(offerSigners(r), [priv2.did]);
    assert.ok((r.result.decision?.ranked.length ?? 0) > 0);
    assert.ok(r.result.decision!.ranked.every((c0) => c0.provider === priv2.did));
    assert.deepEqual(
      r.result.attempts.map((a) => a.provider),
      [priv2.did],
    );
    assert.equal(r.result.receipt?.record.provider, priv2.did);
    const selections = r.events.filter((e) => e.e === 'selection').map((e) => (e.winner as { provider: string }).provider);
    assert.deepEqual(selections, [priv2.did]);

    const before = (await get<{ jobs: unknown[] }>(x, `/v1/jobs?overlay=${NAME}`)).jobs.length;
    await assert.rejects(runOn(x, NAME, spec('no list', { policy: 'private' })), (e: C0Error) => e.code === 'POLICY_PRIVATE_NEEDS_ALLOWLIST');
    // Refused before anything was announced.
    assert.equal((await get<{ jobs: unknown[] }>(x, `/v1/jobs?overlay=${NAME}`)).jobs.length, before);
  });
});

test('two overlays configured on one port: the node refuses to start with an operator error naming the address', async () => {
  const port = await freePort();
  const { dir } = c.dataDir('clash');
  const listen = [`/ip4/127.0.0.1/tcp/${port}`];
  const config = join(dir, 'clash.yaml');
  writeFileSync(config, toYaml({ ...buyerConfig(), network: { listen, loopback: true }, overlays: [{ overlay: NAME, swarmKeyFile: keyFile, listen, loopback: true }] }));
  const r = await c0mpute(dir, ['start', '--config', config], { C0MPUTE_PASSPHRASE: '' });
  assert.equal(r.code, 3, r.err);
  assert.match(r.err, /^error NET_LISTEN_FAILED: /);
});
