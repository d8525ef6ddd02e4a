import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import { claimFromYaml, treeFromYaml, buildTree } from '../../../src/pool/index.js';
import { ent } from './helpers.js';

function refusal(fn: () => unknown): [string, string | undefined] {
  try {
    fn();
  } catch (e) {
    if (e instanceof C0Error) return [e.code, e.field];
    throw e;
  }
  return ['none', undefined];
}

const TREE = `entitlements:
  - { id: org, guarantee_uj: 10000, guarantee_devices: 8 }
  - { id: a, parent: org, guarantee_uj: 1000, guarantee_devices: 2, over_quota_weight: 1, limit_uj: 3000, priority: 5 }
`;

describe('tree and claim YAML', () => {
  it('loads a tree with defaults', () => {
    const t = treeFromYaml(TREE);
    assert.deepEqual(t.entitlements.get('org'), { id: 'org', guarantee_uj: 10000, guarantee_devices: 8, over_quota_weight: 0, priority: 0 });
    assert.equal(t.entitlements.get('a')!.limit_uj, 3000);
  });
  it('names the offending field', () => {
    assert.deepEqual(refusal(() => treeFromYaml('entitlements:\n  - { id: a, guarantee_uj: -1, guarantee_devices: 1 }')), ['POOL_TREE_INVALID', 'entitlements[0].guarantee_uj']);
    assert.deepEqual(refusal(() => treeFromYaml('entitlements:\n  - { id: a, guarantee_uj: 1.5, guarantee_devices: 1 }')), ['POOL_TREE_INVALID', 'entitlements[0].guarantee_uj']);
    assert.deepEqual(refusal(() => treeFromYaml('entitlements:\n  - { id: a, guarantee_uj: 99999999999999999999, guarantee_devices: 1 }')), ['POOL_TREE_INVALID', 'entitlements[0].guarantee_uj']);
    assert.deepEqual(refusal(() => treeFromYaml('entitlements:\n  - { id: a, guarantee_uj: 1, guarantee_devices: 1, colour: red }')), ['POOL_TREE_INVALID', 'entitlements[0].colour']);
    assert.deepEqual(refusal(() => treeFromYaml('entitlements:\n  - { id: a, guarantee_devices: 1 }')), ['POOL_TREE_INVALID', 'entitlements[0].guarantee_uj']);
    assert.deepEqual(refusal(() => treeFromYaml('entitlements: [ {')), ['POOL_YAML_SYNTAX', undefined]);
    assert.deepEqual(refusal(() => treeFromYaml('entitlements:\n  - { id: a, parent: zz, guarantee_uj: 1, guarantee_devices: 1 }')), ['POOL_TREE_UNKNOWN_PARENT', 'entitlements[0].parent']);
    assert.deepEqual(refusal(() => treeFromYaml('entitlements:\n  - { id: a, guarantee_uj: 1, guarantee_devices: 1 }\n  - { id: a, guarantee_uj: 1, guarantee_devices: 1 }')), ['POOL_TREE_DUPLICATE_ID', 'entitlements[1].id']);
    assert.deepEqual(refusal(() => treeFromYaml('entitlements:\n  - { id: a, guarantee_uj: 10, limit_uj: 5, guarantee_devices: 1 }')), ['POOL_TREE_LIMIT_BELOW_GUARANTEE', 'entitlements[0].limit_uj']);
  });
  it('refuses a cycle', () => {
    assert.equal(refusal(() => buildTree([ent('a', { parent: 'b' }), ent('b', { parent: 'a' })]))[0], 'POOL_TREE_CYCLE');
  });
  it('loads a claim, with a given or derived estimate', () => {
    const c = claimFromYaml('id: j1\nentitlement: a\nclass: train.small\ngang_size: 2\ndevices_per_member: 1\nestimate: { uj: 500, grade: ModelBased }\n');
    assert.deepEqual(c.estimate, { uj: 500, grade: 'ModelBased' });
    assert.equal(claimFromYaml('id: j1\nentitlement: a\nclass: k\ngang_size: 2\ndevices_per_member: 1\nestimate: derive\nrequired_evidence: 0\n').estimate, 'derive');
    assert.deepEqual(refusal(() => claimFromYaml('id: j1\nentitlement: a\ngang_size: 2\ndevices_per_member: 1\nestimate: { uj: 5, grade: Guess }\n')), ['POOL_CLAIM_INVALID', 'estimate.grade']);
    assert.deepEqual(refusal(() => claimFromYaml('id: j1\nentitlement: a\ngang_size: 2\ndevices_per_member: 1\nestimate: { uj: 5 }\n')), ['POOL_CLAIM_INVALID', 'estimate.grade']);
    assert.deepEqual(refusal(() => claimFromYaml('id: j1\nentitlement: a\ngang_size: -2\ndevices_per_member: 1\nestimate: { uj: 5, grade: HwShunt }\n')), ['POOL_CLAIM_INVALID', 'gang_size']);
  });
});
