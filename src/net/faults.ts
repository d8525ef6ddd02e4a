/**
 * User-space fault simulation for tests and benchmarks (no tc netem here).
 *
 * - `withhold(net, kind, predicate)`: turns a node into a withholding relay: the
 *   records the predicate picks are ignored (neither delivered nor forwarded).
 *   A relay can show less than exists; it cannot show something false.
 * - `faultyHandler(handler, opts)`: wraps a direct-protocol handler with latency
 *   and loss (a lost request hangs until the stream's deadline, like a dropped
 *   packet flow would).
 * - `seededRandom(seed)`: a deterministic PRNG for reproducible faults.
 */
import type { Opened } from '../records/envelope.js';
import { ignoreError } from './gossip-validation.js';
import type { Network } from './node.js';
import type { ProtocolHandler } from './protocols.js';
import type { TopicKind } from './topics.js';

export const WITHHELD = 'WITHHELD';

/** Make `net` silently withhold the records `predicate` selects. Returns a function restoring the previous behaviour (no hook). */
export function withhold(net: Pick<Network, 'setHook'>, kind: TopicKind, predicate: (rec: Opened) => boolean): () => void {
  net.setHook(kind, (rec) => {
    if (predicate(rec)) throw ignoreError(WITHHELD, 'withheld by this relay');
  });
  return () => net.setHook(kind, undefined);
}

/** Mulberry32: small, fast, deterministic. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface FaultOptions {
  /** Added before the handler runs, ms (default 0). */
  latencyMs?: number;
  /** Uniform extra latency in [0, jitterMs) (default 0). */
  jitterMs?: number;
  /** Probability a request is lost (default 0): the handler never answers and the stream runs into its deadline. */
  loss?: number;
  /** Random source (default Math.random; pass seededRandom(n) for reproducible runs). */
  random?: () => number;
}

export function faultyHandler(handler: ProtocolHandler, opts: FaultOptions = {}): ProtocolHandler {
  const rnd = opts.random ?? Math.random;
  return async (reqs, ctx) => {
    const delay = (opts.latencyMs ?? 0) + (opts.jitterMs ? rnd() * opts.jitterMs : 0);
    if (delay > 0) await abortableSleep(delay, ctx.signal);
    if (opts.loss && rnd() < opts.loss) {
      await new Promise<void>((resolve) => {
        if (ctx.signal.aborted) resolve();
        else ctx.signal.addEventListener('abort', () => resolve(), { once: true });
      });
      return;
    }
    await handler(reqs, ctx);
  };
}

function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(t);
        resolve();
      },
      { once: true },
    );
  });
}
