/**
 * A provider does not quote a job whose params its builtin workload would refuse (Executor.checkParams; docs/market.md
 * skip reason `bad-params`). Before, such a job was quoted and won, then failed EXEC_BAD_PARAMS here, and the failed
 * receipt counted against this provider's reputation for the buyer's own params (review s40 F: builtin.sha256 asked
 * for more than 10,000,000 rounds). A job within the bounds is quoted as before.
 */
import { test, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { Ed25519Signer } from '../../../src/records/ed25519.js';
import { seal, type Opened } from '../../../src/records/envelope.js';
import { didFromPublicKey } from '../../../src/records/did.js';
import { hashHex } from '../../../src/records/address.js';
import { T, type Job, type Offer } from '../../../src/records/kinds.js';
import { fakeClock } from '../../../src/util/clock.js';
import { silentLogger } from '../../../src/util/log.js';
import { generateBoxKeyPair } from '../../../src/crypto/sealed-box.js';
import { parseConfig } from '../../../src/node/config.js';
import { EstimatorMeter } from '../../../src/roles/provider/meters.js';
import { QuoteBudget } from '../../../src/roles/provider/quote-budget.js';
import { Provider } from '../../../src/roles/provider/provider.js';
import { builtinExecutor, createExecutor } from '../../../src/roles/provider/executors.js';

const NOW = 1_800_000_000_000;
const buyer = Ed25519Signer.generate();
const input = new TextEncoder().encode('job input');
const live: Provider[] = [];
afterEach(async () => {
  for (const p of live.splice(0)) await p.stop();
});

const workload = (name: string) => ({ executor: { type: 'builtin', name }, price: { amount: '0.001', currency: 'USD' }, duration: { baseMs: 1000, perInputMiBMs: 0 } });

async function provider() {
  const signer = Ed25519Signer.generate();
  const clock = fakeClock(NOW);
  const registry = new Registry();
  const config = parseConfig({ roles: ['provider'], provider: { tier: 'standard', slots: 4, workloads: { 'builtin.sha256': workload('builtin.sha256'), 'builtin.sleep': workload('builtin.sleep') } } }).provider!;
  const p = new Provider({
    signer,
    did: didFromPublicKey(signer.publicKey),
    config,
    hardware: { cpuCores: 4, memoryMiB: 8192 },
    meter: new EstimatorMeter(50, clock),
    box: generateBoxKeyPair(),
    clock,
    log: silentLogger(),
    eligibility: () => [],
    publish: async () => 1,
    state: { loadSeq: async () => 0, saveSeq: async () => {}, hasReceiptFor: async () => false },
    onReceipt: async () => {},
    quoteBudget: new QuoteBudget<Opened<Offer>>({ ...config.quoteBudget, windowMs: config.offerLifetimeMs, registry, clock }),
  });
  live.push(p);
  await p.start();
  const skipped = async (reason: string) => (await registry.getSingleMetric('c0mpute_provider_quotes_skipped_total')?.get())?.values.find((v) => v.labels.reason === reason)?.value ?? 0;
  return { p, skipped };
}

let nonce = 0;
function job(name: string, params?: string): Opened<Job> {
  return seal(
    T.job,
    {
      workload: name,
      requirements: {},
      maxPrice: { amount: '0.01', currency: 'USD' },
      announcedAt: NOW - 5_000,
      deadline: NOW + 60_000,
      timeoutMs: 10_000,
      input: { hash: hashHex(input), size: input.length },
      inputSealed: 'no',
      ...(params === undefined ? {} : { params }),
      nonce: Uint8Array.of(nonce++ & 0xff),
    },
    buyer,
  );
}

test('params the builtin would refuse get no offer (bad-params); params within its bounds are quoted', async () => {
  const { p, skipped } = await provider();
  assert.equal(await p.onJob(job('builtin.sha256', '10000001')), undefined, 'over builtin.sha256’s 10,000,000 rounds');
  assert.equal(await p.onJob(job('builtin.sha256', 'lots')), undefined, 'not a number');
  assert.equal(await p.onJob(job('builtin.sleep', '3600001')), undefined, 'over builtin.sleep’s hour');
  assert.equal(await skipped('bad-params'), 3);
  assert.ok(await p.onJob(job('builtin.sha256', '10000000')), 'at the bound');
  assert.ok(await p.onJob(job('builtin.sha256')), 'no params: the default');
});

test('checkParams refuses exactly what run refuses', async () => {
  const sha = builtinExecutor('builtin.sha256');
  assert.throws(() => sha.checkParams!('10000001'), { code: 'EXEC_BAD_PARAMS' });
  await assert.rejects(sha.run({ input, params: '10000001', signal: new AbortController().signal, onProgress: () => {}, maxOutputBytes: 1024 }), { code: 'EXEC_BAD_PARAMS' });
  // builtin.primes may take N from its input, which a quote does not see: only params are checked
  const primes = builtinExecutor('builtin.primes');
  assert.doesNotThrow(() => primes.checkParams!(undefined));
  assert.throws(() => primes.checkParams!('50000001'), { code: 'EXEC_BAD_PARAMS' });
});

test('an exec command is not quoted params its environment cannot carry (a NUL byte); any other params are its own business', async () => {
  const cat = createExecutor({ type: 'exec', command: ['sh', '-c', 'cat'] });
  assert.throws(() => cat.checkParams!('a\0b'), { code: 'EXEC_BAD_PARAMS' });
  assert.doesNotThrow(() => cat.checkParams!(JSON.stringify({ claim: 'sha256:' + 'ab'.repeat(32), member: 0 })));
  await assert.rejects(cat.run({ input, params: 'a\0b', signal: new AbortController().signal, onProgress: () => {}, maxOutputBytes: 1024 }), { code: 'EXEC_BAD_PARAMS' });
});
