/**
 * A member that sends all-reduce chunks no honest member can send — an
 * exponent outside [MIN_EXP, MAX_EXP], a partial sum beyond ±127 per
 * contribution — does not get them applied (src/training/allreduce.ts,
 * src/roles/trainer/worker.ts; docs/training.md "Ring all-reduce", "Failure"):
 * the receiver refuses the chunk (TRAIN_CHUNK_OUT_OF_RANGE, naming the sender)
 * and the survivors go on without that member, even though it answers pings.
 * Three real workers on an in-process network; the hostile one's chunks are
 * rewritten on the way out.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { iris } from '../../../src/training/data.js';
import { addressOf, referenceRun } from '../../../src/training/engine.js';
import { initWeights, weightsBytes } from '../../../src/training/model.js';
import { P } from '../market/fixtures.js';
import { fakeNet, makeRun, runAll, type Frames } from './trainer-net.js';

const [A, B, H] = [P(500), P(501), P(502)];
const members = [A, B, H];

/** H's chunks under a tag matching `re` get every int32 value from `f`. */
function rewrite(re: RegExp, f: (v: number) => number) {
  return (from: string, _to: string, frames: Frames): Frames => {
    const head = frames[0] as { k?: string; tag?: string };
    if (from !== H.did || head.k !== 'chunk' || !re.test(head.tag ?? '')) return frames;
    const buf = Buffer.concat(frames.slice(1) as Uint8Array[]);
    for (let i = 0; i < buf.length; i += 4) buf.writeInt32LE(f(buf.readInt32LE(i)), i);
    return [frames[0]!, new Uint8Array(buf)];
  };
}

describe('a member sending out-of-range all-reduce chunks', () => {
  for (const [what, tap] of [
    ['an exponent far above MAX_EXP', rewrite(/\/e\/rs0$/, () => 0x7fffffff)],
    ['gradient values beyond 127 per contribution', rewrite(/\/g\/rs0$/, () => 254)],
  ] as const) {
    it(`${what}: refused, the sender dropped, the others train on with finite weights`, async () => {
      const run = makeRun(members, A);
      const { workers, res } = await runAll(members, run, fakeNet(tap));
      const honest = workers.slice(0, 2);
      for (const [i, w] of honest.entries()) {
        assert.equal(res[i]!.status, 'fulfilled', String((res[i] as PromiseRejectedResult).reason));
        assert.equal(w.status, 'done');
        assert.ok(w.state.w.every((x) => Number.isFinite(x)), 'weights stay finite');
        assert.deepEqual(w.views.map((v) => v.dropped), [[H.did]], 'H is dropped, once');
        assert.deepEqual(w.members, [A.did, B.did].sort());
      }
      assert.ok(
        honest.some((w) => w.views[0]!.cause === 'TRAIN_CHUNK_OUT_OF_RANGE'),
        honest.map((w) => w.views[0]!.cause).join(),
      );
      // Refused at the first step: the survivors redo the run as two members, bit for bit the two-shard reference.
      const d = iris();
      const ref = referenceRun(honest[0]!.params, d.train, initWeights(honest[0]!.params.shape, run.record.init.seed), 2, run.record.epochs * run.record.stepsPerEpoch);
      for (const w of honest) assert.equal(addressOf(weightsBytes(w.state.w)), addressOf(weightsBytes(ref.w)));
    });
  }
});
