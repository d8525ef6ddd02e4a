/**
 * Gossip validation of a record from a signer new to this node (DESIGN §2,
 * §3.4; docs/scale.md §1): the node:crypto precheck's verify counts as the
 * signature check, so only the strict key check follows — one verify per
 * record, not two — and a key the strict rule refuses is still refused
 * (ENVELOPE_BAD_SIGNER) when its signature verifies.
 */
import '../../../src/polyfill.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Registry } from 'prom-client';
import { ed25519 } from '@noble/curves/ed25519.js';
import { Ed25519Signer, type Signer } from '../../../src/records/index.js';
import { didChecked, didFromPublicKey } from '../../../src/records/did.js';
import { fakeClock } from '../../../src/util/clock.js';
import { silentLogger } from '../../../src/util/log.js';
import { createNetMetrics } from '../../../src/net/metrics.js';
import { RecordPipeline } from '../../../src/net/gossip-validation.js';
import { NO_FLOOD_LIMITS } from '../../../src/net/flood-limits.js';
import { sealJob } from './fixtures/records.js';
import { countVerifies } from './fixtures/count-verifies.js';

const clock = fakeClock();
const pipe = () => new RecordPipeline({ clock, metrics: createNetMetrics(new Registry()), log: silentLogger(), floodLimits: NO_FLOOD_LIMITS });
const job = (s: Signer): Uint8Array => sealJob(s, clock).bytes;

test('a good record from a new signer costs one signature verify (the precheck), then the key check', async () => {
  const p = pipe();
  const s = Ed25519Signer.generate();
  const bytes = job(s);
  assert.equal(didChecked(didFromPublicKey(s.publicKey)), false);
  const calls = await countVerifies(async () => {
    assert.equal((await p.validate('job', bytes, 'x', 'gossip')).verdict, 'accept');
  });
  assert.equal(calls, 1);
  assert.equal(didChecked(didFromPublicKey(s.publicKey)), true, 'the strict key check ran');
  // a known signer: one verify too (no precheck)
  assert.equal(await countVerifies(async () => void (await p.validate('job', job(s), 'x', 'gossip'))), 1);
});

test('a valid signature under a small-order key (the identity point) passes the precheck and is refused as ENVELOPE_BAD_SIGNER', async () => {
  // A = identity: S·B = R + k·A holds for R = r·B, S = r whatever the message (OpenSSL accepts it; our rule refuses the key)
  const identity: Signer = {
    publicKey: Uint8Array.from([1, ...new Array<number>(31).fill(0)]),
    sign: () => {
      const r = ed25519.Point.Fn.create(BigInt('0x' + randomBytes(32).toString('hex')));
      const le = Uint8Array.from(Buffer.from(r.toString(16).padStart(64, '0'), 'hex')).reverse();
      return new Uint8Array([...ed25519.Point.BASE.multiply(r).toBytes(), ...le]);
    },
  };
  const p = pipe();
  const out = await p.validate('job', job(identity), 'x', 'gossip');
  assert.equal(out.verdict, 'reject');
  assert.equal(out.reason, 'ENVELOPE_BAD_SIGNER');
});
