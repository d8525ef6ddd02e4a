/** Config: the flood-defence keys under `network` (floodLimits, abuse, recordsServe, recordCache) parse, and bad values are CONFIG_INVALID naming the field. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { C0Error } from '../../../src/errors.js';
import { parseConfig } from '../../../src/node/config.js';

test('network.floodLimits, .abuse and .recordsServe parse; unset keys stay unset (the modules own the defaults)', () => {
  const c = parseConfig({
    network: {
      floodLimits: { peer: { ratePerSec: 50, burst: 100 }, signer: { job: { ratePerSec: 2, burst: 10 } } },
      abuse: { disconnectAt: 0 },
      recordsServe: { peer: { ratePerSec: 1024, burst: 65536 } },
      recordCache: { maxBytes: 8_388_608, ttlMs: 600_000 },
    },
  });
  assert.deepEqual(c.network.recordCache, { maxBytes: 8_388_608, ttlMs: 600_000 });
  assert.deepEqual(c.network.floodLimits, { peer: { ratePerSec: 50, burst: 100 }, signer: { job: { ratePerSec: 2, burst: 10 } } });
  assert.deepEqual(c.network.abuse, { disconnectAt: 0 });
  assert.equal(c.network.recordsServe?.peer?.burst, 65536);
  assert.equal(parseConfig({}).network.floodLimits, undefined);
});

test('bad flood-defence values are CONFIG_INVALID naming the field', () => {
  const bad = [
    { floodLimits: { signer: { nope: { ratePerSec: 1, burst: 1 } } } },
    { floodLimits: { peer: { ratePerSec: -1, burst: 1 } } },
    { abuse: { banMs: 1.5 } },
    { recordsServe: { maxResponseBytes: 0 } },
    { recordCache: { maxPerKind: 0 } },
    { recordCache: { ttlMs: 1.5 } },
    { recordCache: { maxbytes: 1 } },
  ];
  for (const network of bad) {
    assert.throws(
      () => parseConfig({ network }),
      (e: C0Error) => e.code === 'CONFIG_INVALID' && /network\.(floodLimits|abuse|recordsServe|recordCache)/.test(e.message),
      JSON.stringify(network),
    );
  }
});

test('network.witnesses: did:keys, not empty, never the steward (pool/1 §6.7), on the node and on each overlay', () => {
  const W = 'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK';
  const S = 'did:key:z6MkpTHR8VNsBxYAAWHut2Geadd9jSwuBV8xRoAnwWsdvktH';
  assert.deepEqual(parseConfig({ network: { steward: S, witnesses: [W] } }).network.witnesses, [W]);
  assert.equal(parseConfig({}).network.witnesses, undefined);
  const field = (raw: unknown) => {
    try {
      parseConfig(raw);
    } catch (e) {
      return `${(e as C0Error).code} ${(e as C0Error).field}`;
    }
    return 'parsed';
  };
  assert.equal(field({ network: { witnesses: [] } }), 'CONFIG_INVALID network.witnesses');
  assert.equal(field({ network: { witnesses: ['did:key:nope'] } }), 'CONFIG_INVALID network.witnesses.0');
  assert.equal(field({ network: { steward: S, witnesses: [W, S] } }), 'CONFIG_INVALID network.witnesses');
  assert.equal(field({ overlays: [{ overlay: 'acme', steward: S, witnesses: [S] }] }), 'CONFIG_INVALID overlays.0.witnesses');
});
