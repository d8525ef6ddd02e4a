/** Config: the flood-defence keys under `network` (floodLimits, abuse, recordsServe) parse, and bad values are CONFIG_INVALID naming the field. */
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
    },
  });
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
  ];
  for (const network of bad) {
    assert.throws(
      () => parseConfig({ network }),
      (e: C0Error) => e.code === 'CONFIG_INVALID' && /network\.(floodLimits|abuse|recordsServe)/.test(e.message),
      JSON.stringify(network),
    );
  }
});
