/**
 * A stage's bound per caller counts every request it holds (src/training/pipeline-net.ts `serveStage`; docs/training.md
 * "Pipeline"): waiting, computed, or waiting on the stages after it. One more is answered PIPELINE_BUSY (detail.scope
 * caller), at admission before its activations are read and again when the handler starts, and room comes back as
 * answers go. Before (QA qaTrn F1), only the compute queue was bounded: a request waiting on its forward was out of
 * it, and a caller's 65th stream on a connection was reset by libp2p before any bound spoke (NET_STREAM_FAILED). The
 * network is a stub whose next stage answers only when the test lets it.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { CborValue } from '../../../src/records/cbor.js';
import type { ProtocolHandler, ServeOptions } from '../../../src/net/protocols.js';
import { peerIdFromDid } from '../../../src/node/peer-id.js';
import { initWeights, weightsBytes } from '../../../src/training/model.js';
import { STAGE_QUEUE } from '../../../src/training/pipeline.js';
import { PIPELINE_LIMITS, serveStage } from '../../../src/training/pipeline-net.js';
import { splitPayload } from '../../../src/training/transport.js';
import { P } from '../market/fixtures.js';

const shape = { layers: [4, 4, 4] };

describe('a stage’s bound per caller', () => {
  it('counts requests waiting on the next stage: one past the bound is PIPELINE_BUSY, before and after its read', async () => {
    let handler: ProtocolHandler | undefined;
    let admit: ServeOptions['admit'];
    const waiting: Array<() => void> = [];
    const net = {
      handle: async (_p: string, h: ProtocolHandler, _l: unknown, o?: ServeOptions) => {
        handler = h;
        admit = o?.admit;
      },
      // the next stage holds every forward until released
      request: async (_to: string, _p: string, frames: CborValue[]) => {
        await new Promise<void>((r) => waiting.push(r));
        return frames.slice(1);
      },
    };
    await serveStage(net as never, { shape, w: initWeights(shape, 1), range: [0, 1] });
    const [a, b, next] = [P(630), P(631), P(632)];
    const call = async (from: string): Promise<void> => handler!([{ batch: 1, mb: 0, route: [next.did] } as CborValue, ...splitPayload(weightsBytes(new Float64Array(4)))], { peer: peerIdFromDid(from), signal: new AbortController().signal, send: async () => {} } as never);
    const held = Array.from({ length: STAGE_QUEUE.perCaller }, () => call(a.did));
    while (waiting.length < STAGE_QUEUE.perCaller) await new Promise((r) => setTimeout(r, 1));
    const busy = (e: unknown) => (e as { code?: string }).code === 'PIPELINE_BUSY' && (e as { detail?: { scope?: string } }).detail?.scope === 'caller';
    assert.ok(busy(admit!(peerIdFromDid(a.did))), 'refused at admission, before its activations are read');
    await assert.rejects(call(a.did), busy);
    // another caller is not held up by a's bound
    assert.equal(admit!(peerIdFromDid(b.did)), undefined);
    const other = call(b.did);
    while (waiting.length < STAGE_QUEUE.perCaller + 1) await new Promise((r) => setTimeout(r, 1));
    for (const r of waiting.splice(0)) r();
    await Promise.all([...held, other]);
    assert.equal(admit!(peerIdFromDid(a.did)), undefined, 'room again once answered');
    // libp2p's own bound on a connection's streams is above the caller's, so the stage's answer is what a caller sees
    assert.ok(PIPELINE_LIMITS.maxInboundStreams > STAGE_QUEUE.perCaller);
  });
});
