/**
 * The pay split of one completed job (docs/pools.md "Settlement"; issue #13
 * "Settlement"): the price divides across the roster's members by pay weight
 * in exact decimals (decimal.js), and the parts always sum to the price.
 *
 * Rule: precision P = max(the price's own decimal places, 6), at most 30. Each
 * member first gets floor(price × weight / total weight) to P places; the units
 * of 10^-P left over (fewer than the number of members) go one each to the
 * members with the largest discarded fractions, ties broken by the larger
 * weight, then by DID order (largest-remainder method). Pure.
 */
import { Decimal } from 'decimal.js';
import { C0Error } from '../errors.js';
import { compareDids } from '../records/did.js';
import type { Money } from '../records/money.js';
import type { PoolSettlement } from '../records/kinds.js';

const D = Decimal.clone({ precision: 120, rounding: Decimal.ROUND_DOWN });

export const SETTLEMENT_MIN_PLACES = 6;
export const SETTLEMENT_MAX_PLACES = 30;

export function settlementPlaces(amount: string): number {
  const dot = amount.indexOf('.');
  const own = dot < 0 ? 0 : amount.length - dot - 1;
  return Math.min(SETTLEMENT_MAX_PLACES, Math.max(own, SETTLEMENT_MIN_PLACES));
}

/** The parts of `price` for members with these weights, in DID order. POOL_SETTLEMENT_NO_MEMBERS / POOL_WEIGHT_INVALID. */
export function splitPrice(price: Money, members: Array<{ did: string; weight: number }>): PoolSettlement['parts'] {
  if (!members.length) throw new C0Error('POOL_SETTLEMENT_NO_MEMBERS', 'a settlement needs at least one member');
  for (const m of members) if (!Number.isSafeInteger(m.weight) || m.weight < 1) throw new C0Error('POOL_WEIGHT_INVALID', `weight of ${m.did} must be a positive integer`, { field: 'weight' });
  const sorted = [...members].sort((a, b) => compareDids(a.did, b.did));
  const places = settlementPlaces(price.amount);
  const unit = new D(10).pow(-places);
  const total = new D(price.amount);
  const W = sorted.reduce((n, m) => n + m.weight, 0);
  const shares = sorted.map((m, i) => {
    const exact = total.mul(m.weight).div(W);
    const floor = exact.toDecimalPlaces(places, Decimal.ROUND_DOWN);
    return { i, m, amount: floor, frac: exact.sub(floor) };
  });
  let left = total.sub(shares.reduce((s, x) => s.add(x.amount), new D(0))).div(unit).toNumber();
  const order = [...shares].sort((a, b) => b.frac.cmp(a.frac) || b.m.weight - a.m.weight || compareDids(a.m.did, b.m.did));
  for (const s of order) {
    if (left <= 0) break;
    s.amount = s.amount.add(unit);
    left--;
  }
  return shares.map((s) => ({ member: s.m.did, weight: s.m.weight, amount: s.amount.toFixed() }));
}
