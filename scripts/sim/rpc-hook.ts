/**
 * gossipsub's RPCs as they go in and out of a node, for the sim's and the benches' traffic counts: gossipsub calls
 * `metrics.onRpcRecv/onRpcSent(rpc, bytes)` when metrics are set; everything else it calls on metrics is a no-op
 * here. Replaces the node's gossipsub metrics (the sim and the benches run without them).
 */
import type { Network } from '../../src/net/node.js';

export interface Rpc {
  messages?: Array<{ topic?: string; data?: Uint8Array }>;
}

export function onGossipRpc(net: Network, on: (rpc: Rpc, bytes: number, dir: 'in' | 'out') => void): void {
  const noop: unknown = new Proxy(function () {}, {
    get: (_t, p) => (p === 'then' ? undefined : p === 'onRpcRecv' ? (rpc: Rpc, n: number) => on(rpc, n, 'in') : p === 'onRpcSent' ? (rpc: Rpc, n: number) => on(rpc, n, 'out') : noop),
    apply: () => noop,
  });
  (net.libp2p.services.pubsub as unknown as { metrics: unknown }).metrics = noop;
}
