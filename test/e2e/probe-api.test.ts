/**
 * The probe on a real daemon (in process, real data dir, real LevelDB, real
 * HTTP control API): POST and GET /v1/probe rank the live providers the
 * overlay's `liveProviders` hook gives (the presence view plugs in there),
 * unpinned probes rotate across equal prices, a pinned probe does not, bad
 * input is PROBE_SPEC_INVALID, and the rotation survives a restart.
 */
import '../../src/polyfill.js';
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { openSync } from 'node:fs';
import { join } from 'node:path';
import { Daemon } from '../../src/node/daemon.js';
import { parseConfig } from '../../src/node/config.js';
import { loadIdentity } from '../../src/node/identity.js';
import { createLogger } from '../../src/util/log.js';
import { apiCall, ensureToken } from '../../src/node/api.js';
import { seal, T, type Opened, type Presence } from '../../src/records/index.js';
import type { LiveProvider } from '../../src/matching/types.js';
import { C0Error } from '../../src/errors.js';
import { Cluster, buyerConfig } from './node-helpers.js';
import { P, advert, type Party } from '../unit/market/fixtures.js';

const c = new Cluster('probe-api');
after(async () => {
  await c.destroy();
});

function live(p: Party, amount: string): LiveProvider {
  const t = Date.now();
  const a = advert(p, { issuedAt: t - 1000, expiresAt: t + 3_600_000, prices: [{ workload: 'infer.llm', unit: 'job', price: { amount, currency: 'USD' } }], boxKey: new Uint8Array(32).fill(3) });
  const pres = seal(T.presence, { workloads: ['infer.llm'], freeSlots: 1, issuedAt: t - 1000, windowMs: 600_000 }, p.signer) as Opened<Presence>;
  return { did: p.did, presence: pres, advert: a, workloads: ['infer.llm'], freeSlots: 1, liveUntil: t + 599_000 };
}

test('POST/GET /v1/probe rank and rotate; a pinned probe does not move the rotation; it survives a restart', async () => {
  const { dir } = c.dataDir('b');
  const start = async () => {
    const log = createLogger({ level: 'info', format: 'json', fd: openSync(join(dir, 'node.log'), 'a') });
    const d = await Daemon.start({ dataDir: dir, config: parseConfig(buyerConfig()), identity: loadIdentity(dir), log });
    const set = [P(11), P(12), P(13)].map((p) => live(p, '0.2'));
    d.primary.liveProviders = () => set;
    return d;
  };
  let d = await start();
  try {
    const token = ensureToken(dir);
    const spec = { workload: 'infer.llm', maxPrice: '0.5 USD', deadlineMs: 30_000, input: Buffer.from('x').toString('base64') };
    type R = { candidates: Array<{ provider: string; cost: { amount: string } }>; picked?: string; summary: string };
    const probe = async (body: object = spec) => (await apiCall(d.apiAddress!, token, 'POST', '/v1/probe', body)) as R;
    const a = await probe();
    assert.equal(a.candidates.length, 3, a.summary);
    assert.equal(a.candidates[0]!.cost.amount, '0.2');
    const b = await probe();
    assert.notEqual(b.picked, a.picked);
    // pinned (GET, query parameters): only that provider, and the rotation stays
    const pinned = (await apiCall(d.apiAddress!, token, 'GET', `/v1/probe?workload=infer.llm&maxPrice=${encodeURIComponent('0.5 USD')}&designated=${encodeURIComponent(a.picked!)}`)) as R;
    assert.deepEqual(pinned.candidates.map((x) => x.provider), [a.picked]);
    assert.equal(pinned.picked, undefined);
    await assert.rejects(probe({ workload: 'Not A Workload', maxPrice: '0.5 USD' }), (e: unknown) => e instanceof C0Error && e.code === 'PROBE_SPEC_INVALID');
    await d.stop();
    d = await start();
    // the two picks were stored: the third provider is first now (a fresh rotation would put the first again)
    const third = await probe();
    assert.equal(new Set([a.picked, b.picked, third.picked]).size, 3);
  } finally {
    await d.stop();
  }
});
