/**
 * The entitlement tree (pool/1 §2.1–§2.2). Plain data in, a validated,
 * indexed tree out. Field names follow the standard.
 */
import { C0Error } from '../errors.js';
import { isDid } from '../records/did.js';
import { addUj, checkUj } from './grades.js';

export const TREE_ERR = {
  INVALID: 'POOL_TREE_INVALID',
  DUPLICATE_ID: 'POOL_TREE_DUPLICATE_ID',
  UNKNOWN_PARENT: 'POOL_TREE_UNKNOWN_PARENT',
  CYCLE: 'POOL_TREE_CYCLE',
  LIMIT_BELOW_GUARANTEE: 'POOL_TREE_LIMIT_BELOW_GUARANTEE',
  BAD_DID: 'POOL_TREE_BAD_DID',
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
  /**
   * c0mpute's, not pool/1's (§1.1 leaves who is asking to the caller): the `did:key`s allowed to claim under this
   * entitlement. Absent: those of the nearest ancestor that lists some (buyersOf); absent on the whole path: any
   * member of the overlay. An empty list: nobody.
   */
  buyers?: readonly string[];
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
    const copy: Entitlement = { ...e };
    if (e.buyers !== undefined) {
      if (!Array.isArray(e.buyers)) throw new C0Error(TREE_ERR.INVALID, `${f}.buyers: expected a list of did:key`, { field: `${f}.buyers` });
      const listed: readonly unknown[] = e.buyers;
      listed.forEach((d, j) => {
        if (!isDid(d)) throw new C0Error(TREE_ERR.BAD_DID, `${f}.buyers[${j}]: ${String(JSON.stringify(d)).slice(0, 140)} is not a did:key whose key passes the key check`, { field: `${f}.buyers[${j}]` });
      });
      copy.buyers = [...new Set(listed.filter(isDid))];
    }
    entitlements.set(e.id, copy);
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

/**
 * Who may claim under an entitlement (c0mpute's choice; pool/1 §1.1 leaves identity to the caller): its own `buyers`,
 * else the nearest ancestor's that lists some. Undefined: no list on its path (or no such entitlement), so any member
 * of the overlay may. An empty set: nobody may.
 */
export function buyersOf(tree: Tree, id: string): ReadonlySet<string> | undefined {
  for (let e = tree.entitlements.get(id); e; e = e.parent === undefined ? undefined : tree.entitlements.get(e.parent)) {
    if (e.buyers) return new Set(e.buyers);
  }
  return undefined;
}

/** The entitlements any member of the overlay may claim under (no `buyers` list on their path), sorted. */
export function openEntitlements(tree: Tree): string[] {
  return [...tree.entitlements.keys()].filter((id) => buyersOf(tree, id) === undefined).sort();
}
