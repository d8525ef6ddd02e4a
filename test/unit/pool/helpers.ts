import { buildTree, type Entitlement, type Tree } from '../../../src/pool/index.js';

export function ent(id: string, o: Partial<Entitlement> = {}): Entitlement {
  return { id, guarantee_uj: 1000, guarantee_devices: 4, over_quota_weight: 1, priority: 0, ...o };
}

/** org (root) with children a, b, c; a second root other with child x. */
export function sampleTree(over: Record<string, Partial<Entitlement>> = {}): Tree {
  return buildTree([
    ent('org', { guarantee_uj: 10_000, guarantee_devices: 16, over_quota_weight: 0, ...over.org }),
    ent('a', { parent: 'org', ...over.a }),
    ent('b', { parent: 'org', ...over.b }),
    ent('c', { parent: 'org', over_quota_weight: 2, ...over.c }),
    ent('other', { guarantee_uj: 5000, over_quota_weight: 0, ...over.other }),
    ent('x', { parent: 'other', ...over.x }),
  ]);
}
