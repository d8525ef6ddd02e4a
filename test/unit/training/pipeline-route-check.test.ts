/**
 * A stage says what it serves, and `train infer` checks --layers and the order of --stages against it before any row
 * is sent (src/training/pipeline-net.ts describeRoute, checkRoute; docs/training.md "Driving it"). A stage of another
 * model is PIPELINE_LAYERS_MISMATCH, stages reversed or one left out PIPELINE_ROUTE_MISMATCH with the likely cause,
 * both naming the stage; a stage of a build before the question is a warning, PIPELINE_STAGE_UNCHECKED, and the rows
 * still go through it. Before (QA qaTrn F7, F8), `--layers 4,8,3` against a 4-16-3 pipeline exited 0, a reversed
 * --stages said `a route of 1 stages; at most 0 can follow this one`, and one left out `stage output of 32 values,
 * expected 6`. The stages are served on a stub network that hands each request to the stage it names, as a remote
 * one (an error frame's code, `… peer answered: …`, `detail.remote`).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import type { CborValue } from '../../../src/records/cbor.js';
import type { ProtocolHandler } from '../../../src/net/protocols.js';
import { peerIdFromDid } from '../../../src/node/peer-id.js';
import { bytesToAddress, sha256 } from '../../../src/records/address.js';
import { initWeights, weightsBytes } from '../../../src/training/model.js';
import { gpipeForward, partition } from '../../../src/training/pipeline.js';
import { checkRoute, describeRoute, PIPELINE_PROTOCOL, readServes, remotePipeline, serveStage, type RouteStage } from '../../../src/training/pipeline-net.js';
import { P } from '../market/fixtures.js';

const shape = { layers: [4, 16, 3] };
const w = initWeights(shape, 1);
/** The weights' address, as a stage says it. */
const W = bytesToAddress(sha256(weightsBytes(w)));

/** Stages on a stub network: `request` from one node to another's DID calls that node's handler, its errors as remote answers. */
function world() {
  const handlers = new Map<string, ProtocolHandler>();
  const netOf = (me: string) => ({
    handle: async (_p: string, h: ProtocolHandler) => void handlers.set(me, h),
    request: async (to: string, p: string, frames: CborValue[], o?: { signal?: AbortSignal }): Promise<CborValue[]> => {
      const h = handlers.get(to);
      if (!h || p !== PIPELINE_PROTOCOL) throw new C0Error('NET_DIAL_FAILED', `cannot open ${p} to ${to}`);
      const out: CborValue[] = [];
      try {
        await h(frames, { peer: peerIdFromDid(me), signal: o?.signal ?? new AbortController().signal, send: async (f: CborValue) => void out.push(f) } as never);
      } catch (e) {
        const c = e as C0Error;
        throw new C0Error(c.code, `${p} peer answered: ${c.message}`, { detail: { remote: true } });
      }
      return out;
    },
  });
  return { netOf, handlers };
}

/** A stage of a build before stages said what they serve: it refuses a first frame without `batch`, as that build did. */
function olderStage(handlers: Map<string, ProtocolHandler>, did: string, real: ProtocolHandler): void {
  handlers.set(did, async (reqs, ctx) => {
    const head = reqs[0] as { batch?: unknown };
    if (typeof head?.batch !== 'number') throw new C0Error('PIPELINE_BAD_REQUEST', 'first frame must be {batch, mb, route}');
    return real(reqs, ctx);
  });
}

async function twoStages(w1: Float64Array = w) {
  const wd = world();
  const [d0, d1, driver] = [P(700).did, P(701).did, P(702).did];
  const [r0, r1] = partition(shape, 2);
  await serveStage(wd.netOf(d0) as never, { shape, w, range: r0! });
  await serveStage(wd.netOf(d1) as never, { shape, w: w1, range: r1! });
  const at = (did: string, k: number): RouteStage => ({ did, addr: `/ip4/127.0.0.1/tcp/${4200 + k}/p2p/X${k}` });
  return { wd, d0, d1, driver: wd.netOf(driver), at };
}

const code = (c: string, check: (e: C0Error) => void = () => {}) => (e: unknown) => {
  assert.ok(e instanceof C0Error && e.code === c, String(e));
  check(e);
  return true;
};

describe('a pipeline route checked against what its stages serve', () => {
  it('the stages say what they serve, in route order; the right --layers and order pass', async () => {
    const { d0, d1, driver, at } = await twoStages();
    const route = [at(d0, 0), at(d1, 1)];
    const said = await describeRoute(driver as never, route);
    assert.deepEqual(said, { serves: [{ layers: [4, 16, 3], from: 0, to: 1, weights: W }, { layers: [4, 16, 3], from: 1, to: 2, weights: W }] });
    assert.deepEqual(checkRoute(route, [4, 16, 3], said), []);
    assert.deepEqual(checkRoute(route, [4, 16, 3], said, { weights: W }), []);
  });

  it('stages started with other weights of the same model: PIPELINE_WEIGHTS_MISMATCH naming the stage; --weights pins them (QA ffTrainDay2 F1)', async () => {
    // before, every layer check passed and the rows came back through two models' halves, exit 0
    const other = initWeights(shape, 2);
    const W1 = bytesToAddress(sha256(weightsBytes(other)));
    const { d0, d1, driver, at } = await twoStages(other);
    const route = [at(d0, 0), at(d1, 1)];
    const said = await describeRoute(driver as never, route);
    assert.deepEqual(said.serves.map((s) => s.weights), [W, W1]);
    assert.throws(
      () => checkRoute(route, [4, 16, 3], said),
      code('PIPELINE_WEIGHTS_MISMATCH', (e) => {
        assert.equal(e.message, `stage 1 (${d1} at ${route[1]!.addr}) serves weights ${W1}, but stage 0 (${d0} at ${route[0]!.addr}) serves ${W}: every stage must be started with the same weights file`);
        assert.deepEqual(e.detail, { stage: d1, index: 1, weights: W1, expected: W });
        assert.equal(e.field, 'stages');
      }),
    );
    // --weights naming stage 1's: stage 0 is the one that differs
    assert.throws(
      () => checkRoute(route, [4, 16, 3], said, { weights: W1 }),
      code('PIPELINE_WEIGHTS_MISMATCH', (e) => {
        assert.match(e.message, /^stage 0 \(\S+ at \S+\) serves weights sha256:[0-9a-f]{64}, but --weights names sha256:[0-9a-f]{64}: /);
        assert.deepEqual([(e.detail as { index: number }).index, e.field], [0, 'weights']);
      }),
    );
    // a stage of a build before it says no weights: a warning, the others still checked
    const older = { serves: [{ layers: [4, 16, 3], from: 0, to: 1, weights: W }, { layers: [4, 16, 3], from: 1, to: 2 }] };
    assert.deepEqual(checkRoute(route, [4, 16, 3], older).map((x) => x.code), ['PIPELINE_WEIGHTS_UNCHECKED']);
    assert.match(checkRoute(route, [4, 16, 3], older)[0]!.message, /^stage 1 \(\S+ at \S+\) does not say which weights it serves .*: its weights are not checked$/);
    // an answer whose weights are not an address does not read (said as unsaid)
    assert.equal(readServes([{ serves: [{ layers: [4, 16, 3], from: 0, to: 1, weights: 'x' }] }], 2), undefined);
  });

  it('--layers not the stages’ model: PIPELINE_LAYERS_MISMATCH naming stage 0 and both models (QA qaTrn F7)', async () => {
    const { d0, d1, driver, at } = await twoStages();
    const route = [at(d0, 0), at(d1, 1)];
    const said = await describeRoute(driver as never, route);
    for (const layers of [[4, 8, 3], [4, 16, 16, 3]]) {
      assert.throws(
        () => checkRoute(route, layers, said),
        code('PIPELINE_LAYERS_MISMATCH', (e) => {
          assert.equal(e.message, `stage 0 (${d0} at ${route[0]!.addr}) serves layer 0 of 2 (4→16) of a 4,16,3 model; --layers says ${layers.join(',')}: give the model the stages serve`);
          assert.deepEqual(e.detail, { stage: d0, index: 0, layers: [4, 16, 3], expected: layers });
        }),
      );
    }
  });

  it('stages reversed, or one left out: PIPELINE_ROUTE_MISMATCH naming the stage and the likely cause (QA qaTrn F8)', async () => {
    const { d0, d1, driver, at } = await twoStages();
    const reversed = [at(d1, 0), at(d0, 1)];
    const saidReversed = await describeRoute(driver as never, reversed);
    assert.deepEqual(saidReversed, { serves: [{ layers: [4, 16, 3], from: 1, to: 2, weights: W }], end: 'not-asked' });
    assert.throws(
      () => checkRoute(reversed, [4, 16, 3], saidReversed),
      code('PIPELINE_ROUTE_MISMATCH', (e) => {
        assert.match(e.message, /^stage 0 \(\S+ at \S+\) serves layer 1 of 2 \(16→3\), but the first stage must serve layer 0: give the stages in order, stage 0 first/);
        assert.deepEqual([(e.detail as { index: number }).index, (e.detail as { likely: string }).likely, (e.detail as { stage: string }).stage], [0, 'order', d1]);
      }),
    );
    const short = [at(d0, 0)];
    assert.throws(
      () => checkRoute(short, [4, 16, 3], { serves: [{ layers: [4, 16, 3], from: 0, to: 1 }] }),
      code('PIPELINE_ROUTE_MISMATCH', (e) => {
        assert.match(e.message, /^the last of --stages, stage 0 \(\S+ at \S+\), serves layer 0 of 2 \(4→16\); layer 1 of 2 \(16→3\) is served by no stage of --stages: a stage is missing after it$/);
        assert.equal((e.detail as { likely: string }).likely, 'missing');
      }),
    );
    // a middle stage left out of three: the stage after the gap is named
    const three = { layers: [4, 8, 8, 3] };
    const s3 = partition(three, 3).map(([from, to]) => ({ layers: three.layers, from, to }));
    assert.throws(
      () => checkRoute([at(d0, 0), at(d1, 1)], three.layers, { serves: [s3[0]!, s3[2]!] }),
      code('PIPELINE_ROUTE_MISMATCH', (e) => {
        assert.match(e.message, /^stage 1 \(\S+ at \S+\) serves layer 2 of 3 \(8→3\), but after stage 0, which ends with layer 0, layer 1 must come next: a stage is missing before it \(no stage of --stages serves layer 1\)$/);
        assert.deepEqual([(e.detail as { index: number }).index, (e.detail as { likely: string }).likely], [1, 'missing']);
      }),
    );
    // a middle stage left out of four, the stages after the gap following one another: missing, not order (review s54)
    const four = { layers: [4, 8, 8, 8, 3] };
    const s4 = partition(four, 4).map(([from, to]) => ({ layers: four.layers, from, to }));
    assert.throws(
      () => checkRoute([at(d0, 0), at(d1, 1), at(d1, 2)], four.layers, { serves: [s4[0]!, s4[2]!, s4[3]!] }),
      code('PIPELINE_ROUTE_MISMATCH', (e) => assert.deepEqual([(e.detail as { index: number }).index, (e.detail as { likely: string }).likely], [1, 'missing'])),
    );
    // the last stage given twice
    assert.throws(
      () => checkRoute([at(d0, 0), at(d1, 1), at(d1, 2)], [4, 8, 8, 3], { serves: [s3[0]!, s3[1]!, s3[1]!] }),
      code('PIPELINE_ROUTE_MISMATCH', (e) => assert.equal((e.detail as { index: number }).index, 2)),
    );
  });

  it('a stage of a build before the question: a warning, PIPELINE_STAGE_UNCHECKED, and the rows still go through', async () => {
    const { wd, d0, d1, driver, at } = await twoStages();
    const route = [at(d0, 0), at(d1, 1)];
    olderStage(wd.handlers, d1, wd.handlers.get(d1)!);
    const said = await describeRoute(driver as never, route);
    assert.deepEqual(said, { serves: [{ layers: [4, 16, 3], from: 0, to: 1, weights: W }], end: 'unsaid' });
    // the stage past the answer says no weights either: both warnings (review s56: the weights one was missing)
    assert.deepEqual(checkRoute(route, [4, 16, 3], said).map((x) => x.code), ['PIPELINE_WEIGHTS_UNCHECKED', 'PIPELINE_STAGE_UNCHECKED']);
    assert.match(checkRoute(route, [4, 16, 3], said)[0]!.message, /^stage 1 \(\S+ at \S+\) does not say which weights it serves/);
    assert.match(checkRoute(route, [4, 16, 3], said)[1]!.message, /^stage 1 \(\S+ at \S+\) does not say what it serves .*: --layers and the order of the stages from stage 1 on are not checked$/);
    // stage 0 older too: nothing said at all
    olderStage(wd.handlers, d0, wd.handlers.get(d0)!);
    const none = await describeRoute(driver as never, route);
    assert.deepEqual(none, { serves: [], end: 'unsaid' });
    assert.match(checkRoute(route, [4, 16, 3], none).find((x) => x.code === 'PIPELINE_STAGE_UNCHECKED')!.message, /^stage 0 .*the order of the stages are not checked$/);
    const y = await gpipeForward([remotePipeline(driver as never, route)], new Float64Array(8), 2, 4, 3, 2, { serialise: false });
    assert.equal(y.length, 6);
  });

  it('a stage left out of an older pipeline: the driver says the widths and the likely cause', async () => {
    const { d0, driver, at } = await twoStages();
    await assert.rejects(
      gpipeForward([remotePipeline(driver as never, [at(d0, 0)])], new Float64Array(8), 2, 4, 3, 1, { serialise: false }),
      code('PIPELINE_BAD_OUTPUT', (e) => assert.match(e.message, /^the last stage's output is 16 wide, the model's output \(its last layer\) 3: a stage is missing after the last one given/)),
    );
  });
});
