/** The provider's pricing rule: exact decimal prices per job, second or MiB. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { quotePrice, quotedDurationMs } from '../../../src/roles/provider/pricing.js';
import type { WorkloadConfig } from '../../../src/node/config.js';

const MIB = 1024 * 1024;

function w(amount: string, unit: WorkloadConfig['unit'], duration = { baseMs: 1000, perInputMiBMs: 0 }): WorkloadConfig {
  return { executor: { type: 'builtin', name: 'builtin.sha256' }, price: { amount, currency: 'USD' }, unit, duration };
}

describe('quotedDurationMs', () => {
  test('base plus per MiB of input, rounded up', () => {
    const cfg = w('1', 'job', { baseMs: 500, perInputMiBMs: 20 });
    assert.equal(quotedDurationMs(cfg, 0), 500);
    assert.equal(quotedDurationMs(cfg, MIB), 520);
    assert.equal(quotedDurationMs(cfg, 10 * MIB), 700);
    assert.equal(quotedDurationMs(cfg, 1), 501);
  });
});

describe('quotePrice', () => {
  test('unit job: the flat price whatever the size and duration', () => {
    assert.deepEqual(quotePrice(w('0.001', 'job'), 50 * MIB, 90_000), { amount: '0.001', currency: 'USD' });
  });

  test('unit second: per started second of the quoted duration, at least one, exact decimals', () => {
    assert.deepEqual(quotePrice(w('0.0001', 'second'), 0, 3000), { amount: '0.0003', currency: 'USD' });
    assert.equal(quotePrice(w('0.0001', 'second'), 0, 2001).amount, '0.0003');
    assert.equal(quotePrice(w('0.0001', 'second'), 0, 1).amount, '0.0001');
    assert.equal(quotePrice(w('0.1', 'second'), 0, 3000).amount, '0.3'); // 0.1 × 3 in floats is 0.30000000000000004
  });

  test('unit mib: per started MiB of input, at least one', () => {
    assert.equal(quotePrice(w('0.0001', 'mib'), 3 * MIB, 1000).amount, '0.0003');
    assert.equal(quotePrice(w('0.0001', 'mib'), 2 * MIB + 1, 1000).amount, '0.0003');
    assert.equal(quotePrice(w('0.0001', 'mib'), 0, 1000).amount, '0.0001');
  });

  test('many fractional digits and large amounts stay exact', () => {
    assert.equal(quotePrice(w('0.000000000000000000000000000001', 'second'), 0, 7000).amount, '0.000000000000000000000000000007');
    assert.equal(quotePrice(w('123456789012345678901234567890.1', 'mib'), 3 * MIB, 0).amount, '370370367037037036703703703670.3');
  });
});
