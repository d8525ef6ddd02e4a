/**
 * Money: `{amount, currency}` with amount a plain decimal string and currency an
 * upper-case code (DESIGN §3.1). Compared exactly with decimal arithmetic; two
 * currencies never compare (that is an error, not a conversion).
 */
import { Decimal } from 'decimal.js';
import { C0Error } from '../errors.js';

export interface Money {
  amount: string;
  currency: string;
}

export const AMOUNT_RE = /^(0|[1-9][0-9]*)(\.[0-9]{1,30})?$/;
export const CURRENCY_RE = /^[A-Z][A-Z0-9]{1,11}$/;

// Enough precision for 30 fractional digits and large integer parts.
const D = Decimal.clone({ precision: 80, rounding: Decimal.ROUND_HALF_EVEN });

export function isAmount(s: unknown): s is string {
  return typeof s === 'string' && s.length <= 64 && AMOUNT_RE.test(s);
}

export class CurrencyMismatch extends C0Error {
  constructor(a: string, b: string) {
    super('MONEY_CURRENCY_MISMATCH', `cannot compare ${a} with ${b}: amounts in different currencies are never converted`);
  }
}

/** Compare two amounts exactly: -1, 0, 1. */
export function compareAmounts(a: string, b: string): number {
  if (a === b) return 0;
  return new D(a).cmp(new D(b));
}

/** Compare money exactly; throws MONEY_CURRENCY_MISMATCH for different currencies. */
export function compareMoney(a: Money, b: Money): number {
  if (a.currency !== b.currency) throw new CurrencyMismatch(a.currency, b.currency);
  return compareAmounts(a.amount, b.amount);
}

export function moneyEquals(a: Money, b: Money): boolean {
  return a.currency === b.currency && compareAmounts(a.amount, b.amount) === 0;
}

/** Render for people: `0.042 USD`. */
export function formatMoney(m: Money): string {
  return `${m.amount} ${m.currency}`;
}

/** Parse `0.042 USD` or `0.042USD` (CLI convenience). */
export function parseMoney(s: string): Money {
  const m = /^\s*([0-9.]+)\s*([A-Z][A-Z0-9]{1,11})\s*$/.exec(s);
  if (!m || !isAmount(m[1])) throw new C0Error('MONEY_MALFORMED', `not an amount with a currency: "${s}" (example: "0.05 USD")`);
  return { amount: m[1]!, currency: m[2]! };
}

/** Multiply an amount by a non-negative integer or decimal factor, exactly, trimmed to 30 places. */
export function scaleAmount(amount: string, factor: string | number): string {
  const r = new D(amount).mul(new D(factor)).toDecimalPlaces(30, Decimal.ROUND_CEIL);
  return r.toFixed();
}

/** How many whole units at `price` each `budget` pays for, exactly (floor; a price of 0 is refused: it buys any number). */
export function wholeUnitsWithin(budget: string, price: string): number {
  const p = new D(price);
  if (p.isZero()) throw new C0Error('MONEY_ZERO_PRICE', 'a price of 0 buys any number of units');
  return new D(budget).div(p).floor().toNumber();
}

/** The amount as a float, for scoring only (never for a gate). */
export function amountToScore(amount: string): number {
  return new D(amount).toNumber();
}

/** Whether the amounts add up exactly to `total` (decimal arithmetic; pool settlements, docs/pools.md). */
export function amountsSumTo(parts: string[], total: string): boolean {
  let sum = new D(0);
  for (const p of parts) sum = sum.add(new D(p));
  return sum.eq(new D(total));
}
