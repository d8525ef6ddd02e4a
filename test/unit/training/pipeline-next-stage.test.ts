/**
 * A stage whose next stage does not answer (src/training/pipeline-net.ts
 * `serveStage`; docs/training.md "Pipeline"): its forward has a share of the
 * request's deadline (route length / (route length + 1) of it, so each stage
 * along the route gives up before the one that called it), and a forward that
 * fails or times out is answered PIPELINE_NEXT_STAGE_FAILED naming the stage
 * that did not answer. Before, the forward waited as long as the caller, and with
 * the next stage SIGSTOPped the driver got, after 38 s, a local
 * NET_STREAM_FAILED that named the stage before it.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import type { CborValue } from '../../../src/records/cbor.js';
import type { ProtocolHandler } from '../../../src/net/protocols.js';
import { peerIdFromDid } from '../../../src/node/peer-id.js';
import { initWeights, weightsBytes } from '../../../src/training/model.js';
import { serveStage } from '../../../src/training/pipeline-net.js';
import { splitPayload } from '../../../src/training/transport.js';
import { P } from '../market/fixtures.js';

const shape = { layers: [4, 4, 4] };
const [driver, next] = [P(610), P(611)];

async function stage(request: (signal: AbortSignal | undefined) => Promise<CborValue[]>) {
  let handler: ProtocolHandler | undefined;
  const net = { handle: async (_p: string, h: ProtocolHandler) => void (handler = h), request: async (_to: string, _p: string, _f: CborValue[], o?: { signal?: AbortSignal }) => request(o?.signal) };
  await serveStage(net as never, { shape, w: initWeights(shape, 1), range: [0, 1], deadlineMs: 600 });
  const ctx = { peer: peerIdFromDid(driver.did), signal: new AbortController().signal, send: async () => {} };
  return async () => handler!([{ batch: 1, mb: 0, route: [next.did] } as CborValue, ...splitPayload(weightsBytes(new Float64Array([1, 2, 3, 4])))], ctx as never);
}

describe('a pipeline stage whose next stage does not answer', () => {
  it('answers PIPELINE_NEXT_STAGE_FAILED naming it, within its share of the deadline', { timeout: 5_000 }, async () => {
    // a stalled stage: nothing comes back until the forward is given up
    const call = await stage((signal) => new Promise((_, rej) => signal?.addEventListener('abort', () => rej(new C0Error('NET_DEADLINE', 'deadline')))));
    const started = Date.now();
    await assert.rejects(call(), (e: unknown) => e instanceof C0Error && e.code === 'PIPELINE_NEXT_STAGE_FAILED' && e.message.includes(next.did) && /NET_DEADLINE/.test(e.message));
    const took = Date.now() - started;
    assert.ok(took >= 250 && took < 600, `gave up after ${took} ms: half of the 600 ms deadline, before the caller's`);
  });

  it('a failed forward names the next stage and keeps its reason', async () => {
    const call = await stage(async () => {
      throw new C0Error('NET_DIAL_FAILED', 'connection refused', { detail: { remote: true } });
    });
    await assert.rejects(call(), (e: unknown) => e instanceof C0Error && e.code === 'PIPELINE_NEXT_STAGE_FAILED' && e.message.includes(next.did) && e.message.includes('NET_DIAL_FAILED: connection refused'));
  });

  it('a forward that fails at once is worded as a failure with its reason, not as a timeout', async () => {
    const call = await stage(async () => {
      throw new C0Error('NET_DIAL_FAILED', 'connect ECONNREFUSED 127.0.0.1:4102');
    });
    const started = Date.now();
    await assert.rejects(call(), (e: unknown) => {
      assert.ok(e instanceof C0Error && e.code === 'PIPELINE_NEXT_STAGE_FAILED', String(e));
      assert.doesNotMatch(e.message, /did not answer within/, `${Date.now() - started} ms: ${e.message}`);
      assert.match(e.message, new RegExp(`stage ${next.did} failed: NET_DIAL_FAILED: connect ECONNREFUSED`));
      assert.equal(e.detail?.cause, 'NET_DIAL_FAILED');
      return true;
    });
  });

  it('a later stage’s failure, already named, is passed back as it is', async () => {
    const call = await stage(async () => {
      throw new C0Error('PIPELINE_NEXT_STAGE_FAILED', 'stage did:key:zLater did not answer', { detail: { remote: true } });
    });
    await assert.rejects(call(), (e: unknown) => e instanceof C0Error && e.code === 'PIPELINE_NEXT_STAGE_FAILED' && e.message === 'stage did:key:zLater did not answer');
  });
});
