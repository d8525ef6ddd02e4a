/** Settlement: exact parts that sum to the price (docs/pools.md "Settlement"), property-tested. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Decimal as D0 } from 'decimal.js';

const Decimal = D0.clone({ precision: 100 });
import { splitPrice } from '../../../src/pools/settlement.js';
import { seal } from '../../../src/records/envelope.js';
import { T } from '../../../src/records/kinds.js';
import { assertCode, signerFrom, NOW, addr } from '../records/fixtures.js';
import { didFromPublicKey, compareDids } from '../../../src/records/did.js';

const DIDS = Array.from({ length: 12 }, (_, i) => didFromPublicKey(signerFrom(60 + i).publicKey)).sort(compareDids);

describe('settlement', () => {
  test('documented examples', () => {
    const usd = (amount: string) => ({ amount, currency: 'USD' });
    assert.deepEqual(
      splitPrice(usd('1'), DIDS.slice(0, 3).map((did) => ({ did, weight: 1 }))).map((p) => p.amount),
      ['0.333334', '0.333333', '0.333333'],
    );
    assert.deepEqual(splitPrice(usd('10'), [{ did: DIDS[0]!, weight: 1 }, { did: DIDS[1]!, weight: 3 }]).map((p) => p.amount), ['2.5', '7.5']);
    // The leftover unit goes to the largest discarded fraction (2/3 of 1e-6 beats 1/3).
    assert.deepEqual(splitPrice(usd('0.000001'), [{ did: DIDS[0]!, weight: 1 }, { did: DIDS[1]!, weight: 2 }]).map((p) => p.amount), ['0', '0.000001']);
  });

  test('property: parts sum exactly to the price, each within one unit of its exact share, and the record accepts them', () => {
    const amount = fc
      .tuple(fc.bigInt({ min: 0n, max: 10n ** 15n }), fc.integer({ min: 0, max: 30 }))
      .map(([n, places]) => (places === 0 ? n.toString() : new Decimal(n.toString()).div(new Decimal(10).pow(places)).toFixed()));
    fc.assert(
      fc.property(amount, fc.array(fc.integer({ min: 1, max: 1_000_000 }), { minLength: 1, maxLength: 12 }), (amt, weights) => {
        const members = weights.map((weight, i) => ({ did: DIDS[i]!, weight }));
        const parts = splitPrice({ amount: amt, currency: 'USD' }, members);
        const sum = parts.reduce((s, p) => s.add(p.amount), new Decimal(0));
        assert.ok(sum.eq(amt), `${parts.map((p) => p.amount).join('+')} ≠ ${amt}`);
        const W = weights.reduce((a, b) => a + b, 0);
        for (const p of parts) {
          assert.match(p.amount, /^(0|[1-9][0-9]*)(\.[0-9]{1,30})?$/);
          const exact = new Decimal(amt).mul(p.weight).div(W);
          const unit = new Decimal(10).pow(-Math.min(30, Math.max(6, (amt.split('.')[1] ?? '').length)));
          assert.ok(new Decimal(p.amount).sub(exact).abs().lt(unit), `${p.amount} vs ${exact.toFixed()} (unit ${unit.toFixed()})`);
        }
        seal(T.poolSettlement, { pool: DIDS[11]!, roster: addr('a'), job: addr('b'), receipt: addr('c'), price: { amount: amt, currency: 'USD' }, parts, signedAt: NOW }, signerFrom(60));
      }),
      { numRuns: 300 },
    );
  });

  test('bad weights: POOL_WEIGHT_INVALID; no members: POOL_SETTLEMENT_NO_MEMBERS', () => {
    assertCode(() => splitPrice({ amount: '1', currency: 'USD' }, [{ did: DIDS[0]!, weight: 0 }]), 'POOL_WEIGHT_INVALID');
    assertCode(() => splitPrice({ amount: '1', currency: 'USD' }, []), 'POOL_SETTLEMENT_NO_MEMBERS');
  });
});
