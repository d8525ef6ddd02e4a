/**
 * Peers a node keeps connected by name (docs/network.md §14 "Who hears a job's
 * outcome"): the buyers it trusts (`reputation.trustedBuyers`). A buyer's
 * receipts and acceptances go out to the connected peers that joined the
 * outcome topics (gossipsub's fanout; most nodes do not join them), so a node
 * connected to a trusted buyer hears all of its outcomes.
 *
 * A first round at `firstMs`, then one every `everyMs`: each wanted peer not
 * connected is dialled by its DID (peer store, else DHT), one after another;
 * one that cannot be reached is tried again next round. A round still running
 * when the next is due is not overlapped.
 */
import type { Network } from '../net/node.js';
import { NETWORK_DEFAULTS } from '../net/network-api.js';
import type { Logger } from '../util/log.js';

export interface KeepConnectedOptions {
  /** The first round (default 3 s after start). */
  firstMs?: number;
  /** Between rounds (default 30 s). */
  everyMs?: number;
  /**
   * Per dial (default NETWORK_DEFAULTS.dialTimeoutMs, 10 s: libp2p gives each of a peer's addresses 5 s in turn,
   * ADDRESS_DIAL_TIMEOUT_MS, so a first address that accepts TCP and never answers leaves 5 s for the second).
   */
  dialTimeoutMs?: number;
}

/** Start keeping `dids` connected; returns the stop. Nothing to do (no DID but this node's) starts nothing. */
export function keepConnected(net: Pick<Network, 'did' | 'peers' | 'dial'>, dids: readonly string[], log: Logger, opts: KeepConnectedOptions = {}): () => void {
  const wanted = [...new Set(dids)].filter((d) => d !== net.did);
  if (!wanted.length) return () => undefined;
  let running = false;
  let stopped = false;
  const round = async (): Promise<void> => {
    if (running) return;
    running = true;
    try {
      const connected = new Set(net.peers().map((p) => p.did));
      for (const did of wanted) {
        if (stopped) return;
        if (connected.has(did)) continue;
        await net.dial(did, { timeoutMs: opts.dialTimeoutMs ?? NETWORK_DEFAULTS.dialTimeoutMs }).then(
          () => log.debug({ peer: did }, 'connected to a peer kept by name'),
          (e) => log.debug({ peer: did, err: (e as Error).message }, 'peer kept by name not reachable; trying again later'),
        );
      }
    } finally {
      running = false;
    }
  };
  // a stopped network's peers() may throw: caught here, never an unhandled rejection
  const tick = (): void => void round().catch((e) => log.debug({ err: (e as Error).message }, 'keeping peers connected: round failed'));
  const first = setTimeout(tick, opts.firstMs ?? 3_000);
  const every = setInterval(tick, opts.everyMs ?? 30_000);
  first.unref();
  every.unref();
  return () => {
    stopped = true;
    clearTimeout(first);
    clearInterval(every);
  };
}
