/**
 * A member that withholds its all-reduce chunk and, asked why, answers that it
 * is still waiting for an earlier chunk its predecessor did deliver, is treated
 * as silent: a strike each time, dropped at STRIKES_TO_DROP, and the others
 * finish (src/roles/trainer/worker.ts `#recover`; docs/training.md "Failure").
 * Before, the "waiting" answer excused it every time: it never earned a strike,
 * the view changed again and again and the honest members ended with
 * TRAIN_VIEW_LIMIT.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ProtocolHandler } from '../../../src/net/protocols.js';
import { fakeNet, hostileNet, makeRun, runAll } from './trainer-net.js';
import { P } from '../market/fixtures.js';

const [A, B, H] = [P(530), P(531), P(532)];
const members = [A, B, H];

describe('a member answering "waiting" for a chunk it was given', () => {
  it('is treated as silent and dropped; the others finish', { timeout: 30_000 }, async () => {
    // H withholds the second reduce-scatter chunk of a step of every epoch and, asked, claims it still waits for the first one
    const net = fakeNet((from, _to, frames) => {
      const head = frames[0] as { k?: string; tag?: string };
      return from === H.did && head.k === 'chunk' && /\/s(1|4|7)\/e\/rs1$/.test(head.tag ?? '') ? null : frames;
    });
    hostileNet(net, H.did, (n) => ({
      handle: (protocol: string, h: ProtocolHandler) =>
        n.handle(protocol, async (frames, ctx) => {
          const head = frames[0] as { k?: string; tag?: string };
          if (head.k === 'ping' && typeof head.tag === 'string') {
            const sent: unknown[] = [];
            await h(frames, { ...ctx, send: async (f: unknown) => void sent.push(f) } as never);
            await ctx.send({ ...(sent[0] as object), waiting: head.tag.replace(/rs1$/, 'rs0') });
            return;
          }
          return h(frames, ctx);
        }),
    }));
    const { workers, res } = await runAll(members, makeRun(members, A, { timeoutMs: 150 }), net);
    for (const [i, w] of workers.slice(0, 2).entries()) {
      assert.equal(res[i]!.status, 'fulfilled', String((res[i] as PromiseRejectedResult).reason));
      assert.deepEqual(w.members, [A.did, B.did].sort());
      assert.deepEqual(w.views.at(-1)!.dropped, [H.did]);
      assert.equal(w.epochs.length >= 3, true);
    }
  });
});
