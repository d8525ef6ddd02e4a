/**
 * The markets (topic shards, src/net/topics.ts) a node joins on an overlay
 * (issue #16; docs/network.md §14 "Markets: topics sharded by workload";
 * config key `network.markets`): the configured workloads' shards, or every
 * shard. Default: a node whose only role is provider joins the markets of the
 * workloads it serves; any other node (buyer, witness, steward, relay) all of
 * them, so a devnet started without configuration works unchanged. A
 * steward always joins every market.
 */
import { NONDELIVERY_TOPIC_KINDS, shardsOf, type TopicKind } from '../net/topics.js';
import type { NetworkConfig, NodeConfig, Role } from './config.js';
import { trustFor } from './reputation-trust.js';

/** The shards to join, or undefined for every shard. A provider always joins its own workloads' markets. */
export function marketShards(config: NodeConfig, network: NetworkConfig, roles: readonly Role[]): string[] | undefined {
  const own = roles.includes('provider') ? Object.keys(config.provider?.workloads ?? {}) : [];
  const m = network.markets;
  if (m === 'all') return undefined;
  // a steward admits jobs of any workload and learns each one's end from its receipt and selection, which travel on
  // the job's market (docs/network.md §14 "A job's outcome"): it hears every market whatever `network.markets` says
  if (roles.includes('steward')) return undefined;
  if (m) return shardsOf([...m, ...own]);
  if (roles.length === 1 && roles[0] === 'provider' && own.length) return shardsOf(own);
  return undefined;
}

/** The evidence kinds of a job's outcome: on gossip for the nodes that count them (`network.outcomes`); a pooled offer's non-delivery (/2) has its own. */
export const OUTCOME_EVIDENCE_KINDS: readonly TopicKind[] = ['receipt', 'acceptance', ...NONDELIVERY_TOPIC_KINDS];

/**
 * Whether this node joins the outcome evidence topics of its markets (docs/network.md §14 "Who hears a job's
 * outcome"). Under `auto`: when it counts second-hand evidence (a trusted buyer, the overlay's members, or buyers it
 * dealt with: anything else weighs nothing in its reputation view), is a steward (it charges each job's receipt), or
 * is on an overlay with a steward (whose accounts hear receipts on gossip). Its own outcomes reach it either way: a
 * provider's receipt is its own and the buyer's acceptance comes directly (outcome/1).
 */
export function hearsOutcomes(config: NodeConfig, network: NetworkConfig, roles: readonly Role[]): boolean {
  if (roles.includes('steward') || network.outcomes === 'all') return true;
  if (network.outcomes === 'own') return false;
  const trust = trustFor(config, network);
  return [...(trust.trustedBuyers ?? [])].length > 0 || trust.dealtWith === true || network.steward !== undefined;
}
