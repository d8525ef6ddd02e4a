/** Money: exact decimal comparison, never a conversion between currencies. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { compareAmounts, compareMoney, isAmount, moneyEquals, parseMoney, scaleAmount } from '../../../src/records/money.js';
import { assertCode } from './fixtures.js';

const usd = (amount: string) => ({ amount, currency: 'USD' });

describe('money', () => {
  test('exact comparison, not string or float order', () => {
    assert.equal(compareAmounts('0.042', '0.10'), -1);
    assert.equal(compareAmounts('0.9', '0.10'), 1); // string order would agree here; '0.9' > '0.10' numerically too
    assert.equal(compareAmounts('0.10', '0.9'), -1);
    assert.equal(compareAmounts('1.0', '1'), 0);
    assert.equal(compareAmounts('1', '1.000000000000000000000000000000'), 0);
    assert.equal(compareAmounts('10', '9.99'), 1); // string order says '10' < '9.99'
    assert.equal(compareAmounts('0', '0.000000000000000000000000000001'), -1);
    // Beyond float precision: these are equal as doubles, different as decimals.
    assert.equal(compareAmounts('0.1000000000000000000000000001', '0.1'), 1);
    assert.equal(compareAmounts('9007199254740993', '9007199254740992'), 1);
  });

  test('compareMoney and moneyEquals', () => {
    assert.equal(compareMoney(usd('0.042'), usd('0.10')), -1);
    assert.equal(compareMoney(usd('0.9'), usd('0.10')), 1);
    assert.equal(compareMoney(usd('1.0'), usd('1')), 0);
    assert.ok(moneyEquals(usd('1.0'), usd('1')));
    assert.ok(!moneyEquals(usd('1'), { amount: '1', currency: 'EUR' }));
  });

  test('two currencies never compare: MONEY_CURRENCY_MISMATCH', () => {
    assertCode(() => compareMoney(usd('1'), { amount: '1', currency: 'EUR' }), 'MONEY_CURRENCY_MISMATCH');
    assertCode(() => compareMoney(usd('0'), { amount: '0', currency: 'usd' }), 'MONEY_CURRENCY_MISMATCH');
  });

  test('amount syntax', () => {
    for (const ok of ['0', '1', '0.5', '10.25', '0.' + '0'.repeat(29) + '1']) assert.ok(isAmount(ok), ok);
    for (const bad of ['', '01', '1.', '.5', '-1', '+1', '1e3', '1,5', ' 1', '0x10', '0.' + '1'.repeat(31), 1 as unknown as string]) assert.ok(!isAmount(bad), String(bad));
  });

  test('parseMoney (CLI) and scaleAmount', () => {
    assert.deepEqual(parseMoney('0.05 USD'), usd('0.05'));
    assert.deepEqual(parseMoney('0.05USD'), usd('0.05'));
    assertCode(() => parseMoney('0.05'), 'MONEY_MALFORMED');
    assertCode(() => parseMoney('1.2.3 USD'), 'MONEY_MALFORMED');
    assert.equal(scaleAmount('0.042', 3), '0.126');
    assert.equal(scaleAmount('0.1', '0.1'), '0.01');
  });

  test('property: comparison agrees with scaled-integer comparison', () => {
    const amount = fc.tuple(fc.bigInt({ min: 0n, max: 10n ** 20n }), fc.nat({ max: 30 })).map(([n, scale]) => {
      const s = n.toString().padStart(scale + 1, '0');
      return scale === 0 ? s : `${s.slice(0, -scale)}.${s.slice(-scale)}`;
    });
    const toScaled = (a: string) => {
      const [i, f = ''] = a.split('.');
      return BigInt(i! + f.padEnd(30, '0'));
    };
    fc.assert(
      fc.property(amount, amount, (a, b) => {
        if (!isAmount(a) || !isAmount(b)) return; // leading zeros ("007") are not amounts; skip them
        const want = toScaled(a) < toScaled(b) ? -1 : toScaled(a) > toScaled(b) ? 1 : 0;
        assert.equal(compareAmounts(a, b), want);
      }),
      { numRuns: 500 },
    );
  });
});
