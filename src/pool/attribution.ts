/**
 * Attribution of a shared device's energy among its occupants (pool/1 §2.5).
 *
 * Integer µJ, exactly conserved: each occupant gets floor(total·w/W); the
 * remainder goes one µJ at a time to the largest fractional remainders
 * (total·w mod W), ties broken on the occupant key in bytewise UTF-8 order.
 * Provenance degrades on division (HwShunt → ModelBased with two or more
 * occupants) and never improves.
 */
import { C0Error } from '../errors.js';
import { checkEnergy, compareKeys, gradeOnDivision, type Energy, type Grade } from './grades.js';

export const ATTR_ERR = {
  NO_OCCUPANTS: 'POOL_ATTRIBUTION_NO_OCCUPANTS',
  NO_WEIGHT: 'POOL_ATTRIBUTION_NO_WEIGHT',
  BAD_WEIGHT: 'POOL_ATTRIBUTION_BAD_WEIGHT',
  DUPLICATE: 'POOL_ATTRIBUTION_DUPLICATE_OCCUPANT',
} as const;

export interface Occupant {
  /** Stable key (e.g. the claim id); also the tie-break. */
  key: string;
  /** Weight on the one basis used for every occupant of this device (e.g. allotted memory in MiB). */
  weight: number;
}

export interface Share {
  key: string;
  uj: number;
  grade: Grade;
}

export function attribute(device: Energy, occupants: readonly Occupant[]): Share[] {
  checkEnergy(device, 'device');
  if (!Array.isArray(occupants) || occupants.length === 0) {
    throw new C0Error(ATTR_ERR.NO_OCCUPANTS, 'occupants: a device with no occupants cannot be attributed (its energy would be lost)', { field: 'occupants' });
  }
  const seen = new Set<string>();
  let W = 0n;
  occupants.forEach((o, i) => {
    if (typeof o.key !== 'string' || o.key.length === 0) throw new C0Error(ATTR_ERR.BAD_WEIGHT, `occupants[${i}].key: required`, { field: `occupants[${i}].key` });
    if (seen.has(o.key)) throw new C0Error(ATTR_ERR.DUPLICATE, `occupants[${i}].key: "${o.key}" listed twice`, { field: `occupants[${i}].key` });
    seen.add(o.key);
    if (typeof o.weight !== 'number' || !Number.isSafeInteger(o.weight) || o.weight < 0) {
      throw new C0Error(ATTR_ERR.BAD_WEIGHT, `occupants[${i}].weight: expected a non-negative integer, got ${String(o.weight)}`, { field: `occupants[${i}].weight` });
    }
    W += BigInt(o.weight);
  });
  if (W === 0n) throw new C0Error(ATTR_ERR.NO_WEIGHT, 'occupants: every occupant carries zero weight; there is no basis to divide on', { field: 'occupants' });
  const total = BigInt(device.uj);
  const grade = gradeOnDivision(device.grade, occupants.length);
  const rows = occupants.map((o, i) => {
    const p = total * BigInt(o.weight);
    return { i, key: o.key, base: p / W, rem: p % W };
  });
  let left = total;
  for (const r of rows) left -= r.base;
  const order = [...rows].sort((a, b) => (a.rem === b.rem ? compareKeys(a.key, b.key) : a.rem > b.rem ? -1 : 1));
  for (let k = 0; left > 0n; k++, left--) order[k]!.base += 1n;
  return rows.map((r) => ({ key: r.key, uj: Number(r.base), grade }));
}
