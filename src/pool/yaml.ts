/**
 * Loading an entitlement tree and a claim from YAML (operator files). The
 * shape is validated with zod; every refusal is a C0Error with a stable code
 * and the path of the offending field (e.g. `entitlements[2].guarantee_uj`).
 *
 * tree.yaml:   entitlements: [{id, parent?, guarantee_uj, guarantee_devices, over_quota_weight?, limit_uj?, priority?, buyers?}]
 * claim.yaml:  {id, entitlement, class?, gang_size, devices_per_member,
 *               estimate: {uj, grade} | "derive", required_evidence?}
 */
import { z } from 'zod';
import { C0Error } from '../errors.js';
import { GRADES } from './grades.js';
import { buildTree, type Entitlement, type Tree } from './tree.js';
import { checkClaim, type Claim } from './admission.js';
import { parsePlainYaml } from '../util/yaml.js';

export const YAML_ERR = {
  SYNTAX: 'POOL_YAML_SYNTAX',
  TREE: 'POOL_TREE_INVALID',
  CLAIM: 'POOL_CLAIM_INVALID',
} as const;

const uj = z.number().int().nonnegative().refine((v) => Number.isSafeInteger(v), { message: 'beyond 2^53 - 1 µJ' });
const count = z.number().int().nonnegative().refine((v) => Number.isSafeInteger(v), { message: 'beyond 2^53 - 1' });

const entitlementSchema = z
  .object({
    id: z.string().min(1),
    parent: z.string().min(1).optional(),
    guarantee_uj: uj,
    guarantee_devices: count,
    over_quota_weight: count.default(0),
    limit_uj: uj.optional(),
    priority: z.number().int().default(0),
    /** The DIDs allowed to claim under it (c0mpute's, tree.ts buyersOf); each is checked by buildTree (POOL_TREE_BAD_DID). */
    buyers: z.array(z.unknown()).optional(),
  })
  .strict();

const treeSchema = z.object({ entitlements: z.array(entitlementSchema) }).strict();

const energySchema = z.object({ uj, grade: z.enum(GRADES) }).strict();

const claimSchema = z
  .object({
    id: z.string().min(1),
    entitlement: z.string().min(1),
    class: z.string().min(1).optional(),
    gang_size: count,
    devices_per_member: count,
    estimate: z.union([z.literal('derive'), energySchema]),
    required_evidence: count.optional(),
  })
  .strict();

/** A claim as an operator writes it: the estimate may be asked to be derived from history (§2.6). */
export type ClaimSpec = Omit<Claim, 'estimate'> & { estimate: Claim['estimate'] | 'derive'; required_evidence?: number };

function pathOf(path: readonly PropertyKey[]): string {
  let s = '';
  for (const p of path) s += typeof p === 'number' ? `[${p}]` : s === '' ? String(p) : `.${String(p)}`;
  return s;
}

function zodFail(code: string, what: string, err: z.ZodError): never {
  let issue = err.issues[0]!;
  // a union: report the branch that got furthest (the one whose issue path is deepest)
  while (issue.code === 'invalid_union' && issue.errors.length > 0) {
    const base = issue.path;
    const best = issue.errors.map((es) => es[0]!).filter(Boolean).sort((a, b) => b.path.length - a.path.length)[0];
    if (!best || best.path.length === 0) break;
    issue = { ...best, path: [...base, ...best.path] } as typeof issue;
  }
  let field = pathOf(issue.path);
  if (issue.code === 'unrecognized_keys') field = [field, issue.keys[0]].filter(Boolean).join(field ? '.' : '');
  throw new C0Error(code, `${what}: ${field || '(top level)'}: ${issue.message}`, { field: field || what, detail: { issues: err.issues.length } });
}

function parseText(text: string, what: string): unknown {
  try {
    return parsePlainYaml(text);
  } catch (e) {
    throw new C0Error(YAML_ERR.SYNTAX, `${what}: not valid YAML: ${(e as Error).message.split('\n')[0]}`);
  }
}

export function treeFromYaml(text: string, what = 'tree'): Tree {
  const r = treeSchema.safeParse(parseText(text, what));
  if (!r.success) zodFail(YAML_ERR.TREE, what, r.error);
  const list: Entitlement[] = r.data.entitlements.map((e) => {
    const o: Entitlement = { id: e.id, guarantee_uj: e.guarantee_uj, guarantee_devices: e.guarantee_devices, over_quota_weight: e.over_quota_weight, priority: e.priority };
    if (e.parent !== undefined) o.parent = e.parent;
    if (e.limit_uj !== undefined) o.limit_uj = e.limit_uj;
    if (e.buyers !== undefined) o.buyers = e.buyers as string[];
    return o;
  });
  return buildTree(list);
}

export function claimFromYaml(text: string, what = 'claim'): ClaimSpec {
  const r = claimSchema.safeParse(parseText(text, what));
  if (!r.success) zodFail(YAML_ERR.CLAIM, what, r.error);
  const d = r.data;
  const c: ClaimSpec = { id: d.id, entitlement: d.entitlement, gang_size: d.gang_size, devices_per_member: d.devices_per_member, estimate: d.estimate };
  if (d.class !== undefined) c.class = d.class;
  if (d.required_evidence !== undefined) c.required_evidence = d.required_evidence;
  if (c.estimate !== 'derive') checkClaim(c as Claim);
  return c;
}
