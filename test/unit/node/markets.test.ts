/** The markets a node joins (src/node/markets.ts; docs/network.md §14). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { marketShards } from '../../../src/node/markets.js';
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
