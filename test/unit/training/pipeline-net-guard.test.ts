/**
 * A pipeline stage server's guards (src/training/pipeline-net.ts `serveStage`;
 * docs/training.md "Pipeline"): a caller outside `allow` is refused
 * (PIPELINE_NOT_ALLOWED) before its request is read (ServeOptions.admit), and the route a caller
 * names is bounded by the stages that can still follow this one and must be
 * DIDs (PIPELINE_BAD_REQUEST), so one request cannot make a stage compute and
 * forward without end (to itself in a loop, say). Input over the documented 3 MiB
 * of activations is PIPELINE_TOO_LARGE before it is decoded or computed (before,
 * an 8 MiB request was computed in full and only its output checked), the wire
 * limits refuse more as the stream is read, and the batch must be a positive
 * integer whose rows × widest layer stay within 16,777,216 values. The network is a stub that
 * hands the test the stage's handler and counts the stage's own forwards.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { CborValue } from '../../../src/records/cbor.js';
import type { ProtocolHandler, ServeOptions } from '../../../src/net/protocols.js';
import { peerIdFromDid } from '../../../src/node/peer-id.js';
import { initWeights, weightsBytes, weightsFromBytes } from '../../../src/training/model.js';
import { MAX_ACTIVATION_BYTES, PIPELINE_LIMITS, serveStage } from '../../../src/training/pipeline-net.js';
import { splitPayload } from '../../../src/training/transport.js';
import { P } from '../market/fixtures.js';

const shape = { layers: [4, 4, 4] };
const S = P(600);
const allowed = P(601);
const stranger = P(602);

async function stage(opts: { allow?: string[]; range: [number, number] }) {
  let handler: ProtocolHandler | undefined;
  let admit: ServeOptions['admit'];
  const forwards: Array<{ to: string; route: unknown }> = [];
  const net = {
    // the network asks `admit` before it reads a request (protocols.ts), and calls the handler only if it let the caller in
    handle: async (_p: string, h: ProtocolHandler, _l: unknown, o?: ServeOptions) => {
      handler = h;
      admit = o?.admit;
    },
    // the next stage: echoes the activations back, as a last stage would
    request: async (to: string, _p: string, frames: CborValue[]) => {
      forwards.push({ to, route: (frames[0] as { route: unknown }).route });
      return frames.slice(1);
    },
  };
  await serveStage(net as never, { shape, w: initWeights(shape, 1), ...opts });
  const call = async (from: string, route: unknown, x = new Float64Array([1, 2, 3, 4]), batch: unknown = x.length / 4): Promise<Float64Array> => {
    const out: CborValue[] = [];
    const ctx = { peer: peerIdFromDid(from), signal: new AbortController().signal, send: async (f: CborValue) => void out.push(f) };
    const refused = admit?.(ctx.peer);
    if (refused) throw refused;
    await handler!([{ batch, mb: 0, route } as CborValue, ...splitPayload(weightsBytes(x))], ctx as never);
    return weightsFromBytes(out[0] as Uint8Array);
  };
  return { call, forwards };
}

describe('pipeline stage server guards', () => {
  it('refuses a caller outside allow with PIPELINE_NOT_ALLOWED, serves one inside it', async () => {
    const s = await stage({ allow: [allowed.did], range: [0, 1] });
    await assert.rejects(s.call(stranger.did, []), { code: 'PIPELINE_NOT_ALLOWED' });
    assert.equal((await s.call(allowed.did, [])).length, 4);
    const open = await stage({ range: [0, 1] });
    assert.equal((await open.call(stranger.did, [])).length, 4, 'no allow: anyone may call');
  });

  it('bounds the route by the stages that can follow and requires DIDs', async () => {
    const first = await stage({ range: [0, 1] });
    // a loop back to itself, 200 times: refused before computing or forwarding
    await assert.rejects(first.call(allowed.did, Array(200).fill(S.did)), { code: 'PIPELINE_BAD_REQUEST' });
    await assert.rejects(first.call(allowed.did, [S.did, S.did]), { code: 'PIPELINE_BAD_REQUEST' });
    await assert.rejects(first.call(allowed.did, ['not a did']), { code: 'PIPELINE_BAD_REQUEST' });
    await assert.rejects(first.call(allowed.did, [42]), { code: 'PIPELINE_BAD_REQUEST' });
    assert.equal(first.forwards.length, 0, 'nothing forwarded for a refused route');
    // one stage can follow layer 1 of 2: a route of one DID is served and forwarded once
    assert.equal((await first.call(allowed.did, [stranger.did])).length, 4);
    assert.deepEqual(first.forwards, [{ to: stranger.did, route: [] }]);
    // the last stage forwards nowhere
    const last = await stage({ range: [1, 2] });
    await assert.rejects(last.call(allowed.did, [stranger.did]), { code: 'PIPELINE_BAD_REQUEST' });
    assert.equal((await last.call(allowed.did, [])).length, 4);
  });

  it('refuses input over 3 MiB of activations before computing, and a batch that is not a positive integer', async () => {
    const s = await stage({ range: [0, 1] });
    const rows = MAX_ACTIVATION_BYTES / 8 / 4 + 4;
    const started = Date.now();
    await assert.rejects(s.call(allowed.did, [], new Float64Array(rows * 4), rows), { code: 'PIPELINE_TOO_LARGE' });
    assert.ok(Date.now() - started < 1000);
    for (const batch of [0, -1, 0.5, Number.NaN, 2 ** 60, '1']) await assert.rejects(s.call(allowed.did, [], new Float64Array(4), batch), { code: 'PIPELINE_BAD_REQUEST' }, String(batch));
    assert.equal((await s.call(allowed.did, [], new Float64Array(8), 2)).length, 8);
    // the stream itself is bounded: no more request frames or bytes than 3 MiB of activations and a header need
    assert.ok(PIPELINE_LIMITS.maxRequestFrames <= 1 + Math.ceil(MAX_ACTIVATION_BYTES / (512 * 1024)), String(PIPELINE_LIMITS.maxRequestFrames));
    assert.ok(PIPELINE_LIMITS.maxStreamBytes <= MAX_ACTIVATION_BYTES + 64 * 1024, String(PIPELINE_LIMITS.maxStreamBytes));
  });
});
