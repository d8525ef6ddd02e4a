/**
 * pool-head on an overlay that names its steward (src/node/record-hooks.ts poolHeadHook): a head signed by any other
 * key (a throwaway key costs nothing) is ignored in validation, not relayed nor delivered, with no penalty; the
 * steward's own head passes, and with no steward named every key's head passes (the witness bounds those).
 */
import '../../../src/polyfill.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { fakeClock } from '../../../src/util/clock.js';
import { silentLogger } from '../../../src/util/log.js';
import { createNetMetrics } from '../../../src/net/metrics.js';
import { RecordPipeline } from '../../../src/net/gossip-validation.js';
import { ForeignHeads, poolHeadHook, HOOK_ERR } from '../../../src/node/record-hooks.js';
import { Ed25519Signer, didFromPublicKey } from '../../../src/records/index.js';
import { sealEntries } from '../../../src/ledger/index.js';
import { NOW } from '../records/fixtures.js';

const clock = fakeClock(NOW);

test('pool-head: on an overlay naming its steward, a head signed by any other key is ignored (no penalty) on gossip and sync; the steward’s passes, and with none named any key’s', async () => {
  const steward = Ed25519Signer.generate();
  const S = didFromPublicKey(steward.publicKey);
  const head = (signer: Ed25519Signer, n: number) => sealEntries([{ event: 'Admitted' as const, claim: `c${n}`, entitlement: 'x', reserved: { uj: 1, grade: 'Estimator' as const }, devices: 1, borrowed_uj: 0 }], signer, { at: NOW })[0]!.bytes;
  const pipeline = (hook: ReturnType<typeof poolHeadHook>) =>
    new RecordPipeline({ clock, metrics: createNetMetrics(new Registry()), log: silentLogger(), hooks: hook ? { 'pool-head': hook } : {}, floodLimits: { signer: {} } });
  const outcome = async (p: RecordPipeline, data: Uint8Array, source: 'gossip' | 'sync' = 'gossip') => {
    const o = await p.validate('pool-head', data, 'peer', source);
    return `${o.verdict}:${o.reason}`;
  };
  assert.equal(poolHeadHook({}), undefined, 'no steward named: no hook');
  const p = pipeline(poolHeadHook({ steward: S }));
  assert.equal(await outcome(p, head(steward, 1)), 'accept:ok');
  assert.equal(await outcome(p, head(Ed25519Signer.generate(), 2)), `ignore:${HOOK_ERR.HEAD_FOREIGN_STEWARD}`);
  assert.equal(await outcome(p, head(Ed25519Signer.generate(), 3), 'sync'), `ignore:${HOOK_ERR.HEAD_FOREIGN_STEWARD}`);
  assert.equal(await outcome(pipeline(undefined), head(Ed25519Signer.generate(), 4)), 'accept:ok');
});

test('pool-head: each head dropped as signed by another key is counted with its signer (ForeignHeads, shown by witness status); the steward’s is not', async () => {
  const steward = Ed25519Signer.generate();
  const S = didFromPublicKey(steward.publicKey);
  const real = Ed25519Signer.generate();
  const head = (signer: Ed25519Signer, n: number) => sealEntries([{ event: 'Admitted' as const, claim: `c${n}`, entitlement: 'x', reserved: { uj: 1, grade: 'Estimator' as const }, devices: 1, borrowed_uj: 0 }], signer, { at: NOW })[0]!.bytes;
  const foreign = new ForeignHeads(clock);
  const p = new RecordPipeline({ clock, metrics: createNetMetrics(new Registry()), log: silentLogger(), hooks: { 'pool-head': poolHeadHook({ steward: S }, (signer) => foreign.note(signer))! }, floodLimits: { signer: {} } });
  assert.equal(foreign.view(), undefined);
  await p.validate('pool-head', head(steward, 1), 'peer', 'gossip');
  assert.equal(foreign.view(), undefined, 'the steward’s own head is not counted');
  await p.validate('pool-head', head(real, 2), 'peer', 'gossip');
  await p.validate('pool-head', head(real, 3), 'peer', 'gossip');
  assert.deepEqual(foreign.view(), { dropped: 2, last: { signer: didFromPublicKey(real.publicKey), at: clock() } });
});
