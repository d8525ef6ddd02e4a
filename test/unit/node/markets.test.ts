/** The markets a node joins, and whether it hears others' job outcomes (src/node/markets.ts; docs/network.md §14). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hearsOutcomes, marketShards } from '../../../src/node/markets.js';
import { shardsOf } from '../../../src/net/topics.js';
import type { NetworkConfig, NodeConfig } from '../../../src/node/config.js';

const config = { provider: { workloads: { 'builtin.sha256': {} } } } as unknown as NodeConfig;
const net = (markets?: string[] | 'all') => ({ ...(markets ? { markets } : {}) }) as unknown as NetworkConfig;

test('a provider alone joins its workloads’ markets; listed markets add to them; any other node joins all; a steward always all', () => {
  assert.deepEqual(marketShards(config, net(), ['provider']), shardsOf(['builtin.sha256']));
  assert.deepEqual(marketShards(config, net(['infer.llm']), ['provider']), shardsOf(['infer.llm', 'builtin.sha256']));
  assert.deepEqual(marketShards(config, net(['infer.llm']), ['buyer']), shardsOf(['infer.llm']));
  assert.equal(marketShards(config, net(), ['buyer']), undefined);
  assert.equal(marketShards(config, net('all'), ['provider']), undefined);
  // a steward learns each admitted job's end from its outcome, on the job's market: every market
  assert.equal(marketShards(config, net(['infer.llm']), ['steward']), undefined);
  assert.equal(marketShards(config, net(['infer.llm']), ['provider', 'steward']), undefined);
});

test('under auto only a node that counts second-hand evidence, a steward, or a node on a steward’s overlay joins the outcome topics; all and own decide', () => {
  const buyer = 'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK';
  const rep = (r: Record<string, unknown> = {}) => ({ ...config, reputation: { trustedBuyers: [], overlayMembers: true, dealtWith: false, secondHandWeight: 0.5, ...r } }) as unknown as NodeConfig;
  const nc = (o: Record<string, unknown> = {}) => ({ outcomes: 'auto', ...o }) as unknown as NetworkConfig;
  // the default node counts only first-hand evidence: it takes no one else's outcome
  assert.equal(hearsOutcomes(rep(), nc(), ['buyer']), false);
  assert.equal(hearsOutcomes(rep(), nc(), ['provider']), false);
  assert.equal(hearsOutcomes(rep({ trustedBuyers: [buyer] }), nc(), ['buyer']), true);
  assert.equal(hearsOutcomes(rep({ dealtWith: true }), nc(), ['provider']), true);
  // an overlay's members count when overlayMembers is on (the default), not when it is off
  assert.equal(hearsOutcomes(rep(), nc({ allowlist: [buyer] }), ['buyer']), true);
  assert.equal(hearsOutcomes(rep({ overlayMembers: false }), nc({ allowlist: [buyer] }), ['buyer']), false);
  assert.equal(hearsOutcomes(rep(), nc({ steward: buyer }), ['provider']), true);
  assert.equal(hearsOutcomes(rep(), nc(), ['steward']), true);
  // explicit settings; a steward hears them whatever `own` says (it charges each job's receipt)
  assert.equal(hearsOutcomes(rep(), nc({ outcomes: 'all' }), ['buyer']), true);
  assert.equal(hearsOutcomes(rep({ trustedBuyers: [buyer] }), nc({ outcomes: 'own' }), ['buyer']), false);
  assert.equal(hearsOutcomes(rep(), nc({ outcomes: 'own' }), ['steward']), true);
});
