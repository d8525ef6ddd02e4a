/**
 * A stage server says what it refused and what failed (src/training/pipeline-net.ts `serveStage`, `stageLogger`;
 * docs/training.md "Pipeline"): a caller outside `allow` at info, a forward that failed at warn naming the next
 * stage, each code at most once per STAGE_LOG_WINDOW_MS with the count held back. Before (QA qaTrn F4), a stage
 * logged nothing after its start line. The network is a stub; the logger records its lines.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import type { CborValue } from '../../../src/records/cbor.js';
import type { ProtocolHandler, ServeOptions } from '../../../src/net/protocols.js';
import { peerIdFromDid } from '../../../src/node/peer-id.js';
import { initWeights, weightsBytes } from '../../../src/training/model.js';
import { STAGE_LOG_WINDOW_MS, serveStage, stageLogger } from '../../../src/training/pipeline-net.js';
import { splitPayload } from '../../../src/training/transport.js';
import type { Logger } from '../../../src/util/log.js';
import { P } from '../market/fixtures.js';

type Line = { level: string; fields: Record<string, unknown>; msg: string };
function recorder(): { log: Logger; lines: Line[] } {
  const lines: Line[] = [];
  const at = (level: string) => (fields: Record<string, unknown>, msg: string) => void lines.push({ level, fields, msg });
  return { log: { info: at('info'), warn: at('warn'), error: at('error'), debug: at('debug') } as unknown as Logger, lines };
}

describe('a pipeline stage’s log', () => {
  it('logs a caller refused at info and a failed forward at warn, naming who', async () => {
    const { log, lines } = recorder();
    let handler: ProtocolHandler | undefined;
    let admit: ServeOptions['admit'];
    const [driver, stranger, next] = [P(650), P(651), P(652)];
    const net = {
      handle: async (_p: string, h: ProtocolHandler, _l: unknown, o?: ServeOptions) => {
        handler = h;
        admit = o?.admit;
      },
      request: async () => {
        throw new C0Error('NET_DIAL_FAILED', 'connect ECONNREFUSED 127.0.0.1:4201');
      },
    };
    const shape = { layers: [4, 4, 4] };
    await serveStage(net as never, { shape, w: initWeights(shape, 1), range: [0, 1], allow: [driver.did], log });
    assert.equal(admit!(peerIdFromDid(stranger.did))?.code, 'PIPELINE_NOT_ALLOWED');
    const ctx = { peer: peerIdFromDid(driver.did), signal: new AbortController().signal, send: async () => {} };
    await assert.rejects(async () => handler!([{ batch: 1, mb: 0, route: [next.did] } as CborValue, ...splitPayload(weightsBytes(new Float64Array(4)))], ctx as never), { code: 'PIPELINE_NEXT_STAGE_FAILED' });
    assert.deepEqual(
      lines.map((l) => [l.level, l.fields.code, l.fields.caller]),
      [
        ['info', 'PIPELINE_NOT_ALLOWED', stranger.did],
        ['warn', 'PIPELINE_NEXT_STAGE_FAILED', driver.did],
      ],
    );
    assert.equal(lines[1]!.fields.next, next.did);
    assert.match(String(lines[1]!.fields.err), /ECONNREFUSED/);
  });

  it('logs each code at most once a window, counting the ones held back', () => {
    const { log, lines } = recorder();
    let t = 0;
    const said = stageLogger(log, () => t);
    for (let i = 0; i < 5; i++) said(new C0Error('PIPELINE_BUSY', 'busy'), 'did:key:zA');
    said(new C0Error('PIPELINE_BAD_REQUEST', 'bad'), 'did:key:zA');
    t = STAGE_LOG_WINDOW_MS;
    said(new C0Error('PIPELINE_BUSY', 'busy'), 'did:key:zA');
    assert.deepEqual(
      lines.map((l) => [l.fields.code, l.fields.more]),
      [
        ['PIPELINE_BUSY', undefined],
        ['PIPELINE_BAD_REQUEST', undefined],
        ['PIPELINE_BUSY', 4],
      ],
    );
  });
});
