/**
 * A driver's errors name the stage (src/training/pipeline-net.ts `remotePipeline`, `connectStage`; docs/training.md
 * "Driving it"). A stage 0 that took a request and then stalls is PIPELINE_NEXT_STAGE_FAILED naming it by place, key
 * and address within the request's deadline, retries included (before, QA qaTrn F3: a retry after the deadline opened
 * a new stream, and 71 s later the driver said `NET_DIAL_FAILED … cannot open` with the peer id only); a later stage
 * a stage names by key is named by its place too; a stage 0 never reached stays NET_DIAL_FAILED, named. A dial that
 * stage 0's node closes as it opens (its libp2p refuses over 5 new connections a second from one host) is tried again
 * (QA qaTrn F2). The network is a stub.
 */
import '../../../src/polyfill.js';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import { createNetwork, type Network } from '../../../src/net/node.js';
import { Ed25519Signer } from '../../../src/records/index.js';
import { connectStage, remotePipeline } from '../../../src/training/pipeline-net.js';
import { P } from '../market/fixtures.js';

const route = [
  { did: P(640).did, addr: '/ip4/127.0.0.1/tcp/4200/p2p/A' },
  { did: P(641).did, addr: '/ip4/127.0.0.1/tcp/4201/p2p/B' },
];
const x = new Float64Array(4);

function net(request: (signal: AbortSignal | undefined, attempt: number) => Promise<never>) {
  let attempt = 0;
  return { request: async (_to: string, _p: string, _f: unknown, o?: { signal?: AbortSignal }) => request(o?.signal, ++attempt) };
}
const untilAborted = (signal: AbortSignal | undefined) => new Promise<never>((_, rej) => signal?.addEventListener('abort', () => rej(signal.reason as Error)));

describe('a pipeline driver', () => {
  it('a stage 0 that stalls mid-request is PIPELINE_NEXT_STAGE_FAILED naming it, within the deadline, retries included', { timeout: 5_000 }, async () => {
    // the first try's connection is lost under it; the retry's stream is never answered (the stage is stopped)
    const run = remotePipeline(
      net(async (signal, attempt) => {
        if (attempt === 1) throw new C0Error('NET_STREAM_FAILED', "the stream's connection was closed under it");
        return untilAborted(signal);
      }) as never,
      route,
      { deadlineMs: 300 },
    );
    const t0 = Date.now();
    await assert.rejects(run(x, 1, 0), (e: unknown) => {
      assert.ok(e instanceof C0Error && e.code === 'PIPELINE_NEXT_STAGE_FAILED', String(e));
      assert.ok(e.message.startsWith(`stage 0 (${route[0]!.did} at ${route[0]!.addr}) did not answer within 300 ms`), e.message);
      assert.equal((e.detail as { timedOut?: boolean }).timedOut, true);
      return true;
    });
    assert.ok(Date.now() - t0 < 1_000, `${Date.now() - t0} ms`);
  });

  it('a later stage named by key is named by its place; a stage 0 never reached is NET_DIAL_FAILED naming it', async () => {
    const later = remotePipeline(
      net(async () => {
        throw new C0Error('PIPELINE_NEXT_STAGE_FAILED', `/c0mpute/pipeline/1 peer answered: stage ${route[1]!.did} failed: NET_DIAL_FAILED: refused`, { detail: { remote: true } });
      }) as never,
      route,
    );
    await assert.rejects(later(x, 1, 0), (e: unknown) => {
      assert.ok(e instanceof C0Error && e.code === 'PIPELINE_NEXT_STAGE_FAILED');
      assert.equal(e.message, `stage 0 (${route[0]!.did} at ${route[0]!.addr}) answered: stage 1 (${route[1]!.did} at ${route[1]!.addr}) failed: NET_DIAL_FAILED: refused`);
      assert.equal((e.detail as { index?: number }).index, 1);
      return true;
    });
    const down = remotePipeline(
      net(async () => {
        throw new C0Error('NET_DIAL_FAILED', 'cannot open /c0mpute/pipeline/1 to A: connect ECONNREFUSED');
      }) as never,
      route,
    );
    await assert.rejects(down(x, 1, 0), (e: unknown) => e instanceof C0Error && e.code === 'NET_DIAL_FAILED' && e.message.startsWith(`stage 0 (${route[0]!.did} at ${route[0]!.addr}) is not reachable`));
  });

  it('tries a dial again that stage 0’s node closed as it opened; a refused one is not tried again', async () => {
    let dials = 0;
    const resetting = {
      dial: async () => {
        if (++dials < 3) throw new C0Error('NET_DIAL_FAILED', 'cannot connect to A: connection error 127.0.0.1:4200: connect ECONNRESET 127.0.0.1:4200');
        return undefined as never;
      },
    };
    await connectStage(resetting as never, route, { pauseMs: 5 });
    assert.equal(dials, 3);
    dials = 0;
    const refused = {
      dial: async () => {
        dials++;
        throw new C0Error('NET_DIAL_FAILED', 'cannot connect to A: connect ECONNREFUSED 127.0.0.1:4200');
      },
    };
    await assert.rejects(connectStage(refused as never, route, { pauseMs: 5 }), (e: unknown) => e instanceof C0Error && e.code === 'NET_DIAL_FAILED' && e.message.startsWith(`stage 0 (${route[0]!.did} at ${route[0]!.addr}) is not reachable`));
    assert.equal(dials, 1);
  });

  it('12 drivers dialling one stage at once over libp2p all connect (its node closes past 5 new connections a second from one host)', { timeout: 30_000 }, async () => {
    const mk = () => createNetwork({ signer: Ed25519Signer.generate(), listen: ['/ip4/127.0.0.1/tcp/0'], loopback: true, syncOnConnect: [], topics: [] });
    const nets: Network[] = [];
    try {
      for (let i = 0; i < 13; i++) nets.push(await mk());
      await Promise.all(nets.map((n) => n.start()));
      const [stage, ...drivers] = nets;
      const at = [{ did: stage!.did, addr: stage!.addrs()[0]! }];
      const got = await Promise.allSettled(drivers.map((d) => connectStage(d, at)));
      assert.deepEqual(got.filter((r) => r.status === 'rejected').map((r) => String((r as PromiseRejectedResult).reason)), []);
    } finally {
      await Promise.all(nets.map((n) => n.stop()));
    }
  });
});
