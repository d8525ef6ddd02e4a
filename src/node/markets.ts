/**
 * The markets (topic shards, src/net/topics.ts) a node joins on an overlay
 * (issue #16; docs/network.md §14 "Markets: topics sharded by workload";
 * config key `network.markets`): the configured workloads' shards, or every
 * shard. Default: a node whose only role is provider joins the markets of the
 * workloads it serves; any other node (buyer, witness, steward, relay) all of
 * them, so a devnet started without configuration works unchanged.
 */
import { shardsOf } from '../net/topics.js';
import type { NetworkConfig, NodeConfig, Role } from './config.js';

/** The shards to join, or undefined for every shard. A provider always joins its own workloads' markets. */
export function marketShards(config: NodeConfig, network: NetworkConfig, roles: readonly Role[]): string[] | undefined {
  const own = roles.includes('provider') ? Object.keys(config.provider?.workloads ?? {}) : [];
  const m = network.markets;
  if (m === 'all') return undefined;
  if (m) return shardsOf([...m, ...own]);
  if (roles.length === 1 && roles[0] === 'provider' && own.length) return shardsOf(own);
  return undefined;
}
