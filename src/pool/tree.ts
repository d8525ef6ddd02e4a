/**
 * The entitlement tree (pool/1 §2.1–§2.2). Plain data in, a validated,
 * indexed tree out. Field names follow the standard.
 */
import { C0Error } from '../errors.js';
import { addUj, checkUj } from './grades.js';

export const TREE_ERR = {
  INVALID: 'POOL_TREE_INVALID',
  DUPLICATE_ID: 'POOL_TREE_DUPLICATE_ID',
  UNKNOWN_PARENT: 'POOL_TREE_UNKNOWN_PARENT',
  CYCLE: 'POOL_TREE_CYCLE',
  LIMIT_BELOW_GUARANTEE: 'POOL_TREE_LIMIT_BELOW_GUARANTEE',
} as const;

export interface Entitlement {
  id: string;
  /** absent for a root */
  parent?: string;
  guarantee_uj: number;
  guarantee_devices: number;
  /** relative share of the parent's surplus; 0 never borrows */
  over_quota_weight: number;
  /** hard ceiling including anything borrowed; absent = only available surplus bounds it */
  limit_uj?: number;
  /** declared ordering, used only where evidence is absent (§5.2) */
  priority: number;
}

export interface Tree {
  readonly entitlements: ReadonlyMap<string, Entitlement>;
  /** children by parent id; roots under the key `undefined` are not siblings (surplus never crosses roots) */
  readonly children: ReadonlyMap<string, readonly string[]>;
  /** Σ over_quota_weight of every child of a parent */
  readonly weightSum: ReadonlyMap<string, number>;
  /** Σ guarantee_uj of every child of a parent */
  readonly guaranteeSum: ReadonlyMap<string, number>;
}

export const ID_RE = /^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$/;

function int(v: unknown, field: string, min = 0): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min) throw new C0Error(TREE_ERR.INVALID, `${field}: expected an integer ≥ ${min}, got ${String(v)}`, { field });
  return v;
}

/** Validate a list of entitlements and index it. Throws C0Error naming the field. */
export function buildTree(list: readonly Entitlement[]): Tree {
  if (!Array.isArray(list)) throw new C0Error(TREE_ERR.INVALID, 'entitlements: expected a list', { field: 'entitlements' });
  const entitlements = new Map<string, Entitlement>();
  list.forEach((e, i) => {
    const f = `entitlements[${i}]`;
    if (typeof e.id !== 'string' || !ID_RE.test(e.id)) throw new C0Error(TREE_ERR.INVALID, `${f}.id: expected a name matching ${ID_RE.source}`, { field: `${f}.id` });
    if (entitlements.has(e.id)) throw new C0Error(TREE_ERR.DUPLICATE_ID, `${f}.id: "${e.id}" is defined twice`, { field: `${f}.id` });
    checkUj(e.guarantee_uj, `${f}.guarantee_uj`);
    int(e.guarantee_devices, `${f}.guarantee_devices`);
    int(e.over_quota_weight, `${f}.over_quota_weight`);
    if (typeof e.priority !== 'number' || !Number.isSafeInteger(e.priority)) throw new C0Error(TREE_ERR.INVALID, `${f}.priority: expected an integer`, { field: `${f}.priority` });
    if (e.limit_uj !== undefined) {
      checkUj(e.limit_uj, `${f}.limit_uj`);
      if (e.limit_uj < e.guarantee_uj) throw new C0Error(TREE_ERR.LIMIT_BELOW_GUARANTEE, `${f}.limit_uj: ${e.limit_uj} is below guarantee_uj ${e.guarantee_uj}`, { field: `${f}.limit_uj` });
    }
    entitlements.set(e.id, { ...e });
  });
  const children = new Map<string, string[]>();
  const weightSum = new Map<string, number>();
  const guaranteeSum = new Map<string, number>();
  list.forEach((e, i) => {
    if (e.parent === undefined) return;
    if (!entitlements.has(e.parent)) throw new C0Error(TREE_ERR.UNKNOWN_PARENT, `entitlements[${i}].parent: "${e.parent}" is not an entitlement of this tree`, { field: `entitlements[${i}].parent` });
    let c = children.get(e.parent);
    if (!c) children.set(e.parent, (c = []));
    c.push(e.id);
    weightSum.set(e.parent, (weightSum.get(e.parent) ?? 0) + e.over_quota_weight);
    guaranteeSum.set(e.parent, addUj(guaranteeSum.get(e.parent) ?? 0, e.guarantee_uj, `entitlements[${i}].guarantee_uj`));
  });
  // cycles: walk up from each node
  for (const e of entitlements.values()) {
    const seen = new Set<string>([e.id]);
    let p = e.parent;
    while (p !== undefined) {
      if (seen.has(p)) throw new C0Error(TREE_ERR.CYCLE, `entitlements: "${e.id}" is its own ancestor`, { field: 'entitlements' });
      seen.add(p);
      p = entitlements.get(p)!.parent;
    }
  }
  for (const [k, v] of weightSum) if (!Number.isSafeInteger(v)) throw new C0Error(TREE_ERR.INVALID, `entitlements: weights under "${k}" sum beyond 2^53`, { field: 'entitlements' });
  return { entitlements, children, weightSum, guaranteeSum };
}
