/**
 * A pipeline stage server refuses work it could not send on before doing it
 * (review s40 A F3; src/training/pipeline-net.ts `serveStage`): a request
 * whose output (rows × the stage's output width × 8 bytes) is over 3 MiB is
 * PIPELINE_TOO_LARGE before anything is computed. Before, a 1,536-row request
 * to a widening stage was computed (809 ms) and only then refused. And
 * `c0mpute train stage --allow` takes its DIDs through `parseAllow`
 * (PIPELINE_ALLOW_INVALID naming the field for anything else).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { countedStage } from './stage-rig.js';
import { MAX_ACTIVATION_BYTES, parseAllow } from '../../../src/training/pipeline-net.js';
import { P } from '../market/fixtures.js';

describe('pipeline stage: bounds before compute', () => {
  it('an output over 3 MiB is PIPELINE_TOO_LARGE before the stage reads a weight', async () => {
    // stage 0 of [4, 512, 3] widens 4 → 512: 1,536 rows in are 48 KiB, out would be 6 MiB
    const shape = { layers: [4, 512, 3] };
    const stage = await countedStage(shape, [0, 1]);
    const call = (rows: number) => stage.call(P(610).did, rows);
    const rows = 1536;
    assert.ok(rows * 512 * 8 > MAX_ACTIVATION_BYTES && rows * 4 * 8 < MAX_ACTIVATION_BYTES);
    await assert.rejects(call(rows), { code: 'PIPELINE_TOO_LARGE' });
    assert.equal(stage.reads(), 0, 'nothing computed for a request refused for its output');
    // the largest batch whose output fits is computed and answered
    const fits = Math.floor(MAX_ACTIVATION_BYTES / (512 * 8));
    assert.ok((await call(fits)).length > 0);
    assert.ok(stage.reads() > 0);
  });

  it('parseAllow takes DIDs separated by commas; anything else is PIPELINE_ALLOW_INVALID', () => {
    const [a, b] = [P(611).did, P(612).did];
    assert.deepEqual(parseAllow(`${a}, ${b},${a}`), [a, b]);
    for (const bad of ['', ' , ', `${a},nope`, 'did:key:zzz']) {
      assert.throws(() => parseAllow(bad), (e: { code?: string; field?: string }) => e.code === 'PIPELINE_ALLOW_INVALID' && e.field === 'allow', bad);
    }
  });
});
