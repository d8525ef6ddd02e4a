/**
 * A pipeline stage served on a stub network for tests (pipeline-stage-bounds, stage-queue): its weights count the
 * reads the stage makes of them (nothing read: nothing computed), and `call` hands the stage one request of `rows`
 * rows from `from`, as the network would once it admitted the caller.
 */
import type { CborValue } from '../../../src/records/cbor.js';
import type { ProtocolHandler } from '../../../src/net/protocols.js';
import { peerIdFromDid } from '../../../src/node/peer-id.js';
import { initWeights, weightsBytes, type MlpShape } from '../../../src/training/model.js';
import { serveStage } from '../../../src/training/pipeline-net.js';
import { splitPayload } from '../../../src/training/transport.js';

export async function countedStage(shape: MlpShape, range: [number, number]) {
  const w0 = initWeights(shape, 1);
  let reads = 0;
  const w = new Proxy(w0, {
    get(t, k) {
      if (typeof k === 'string' && /^\d+$/.test(k)) reads++;
      const v = Reflect.get(t, k, t) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(t) : v;
    },
  });
  let handler: ProtocolHandler | undefined;
  await serveStage({ handle: async (_p: string, h: ProtocolHandler) => void (handler = h), request: async () => [] } as never, { shape, w, range });
  const inWidth = shape.layers[range[0]]!;
  const call = async (from: string, rows: number, signal = new AbortController().signal): Promise<CborValue[]> => {
    const out: CborValue[] = [];
    await handler!([{ batch: rows, mb: 0, route: [] } as CborValue, ...splitPayload(weightsBytes(new Float64Array(rows * inWidth)))], { peer: peerIdFromDid(from), signal, send: async (f: CborValue) => void out.push(f) } as never);
    return out;
  };
  return { call, reads: () => reads };
}
