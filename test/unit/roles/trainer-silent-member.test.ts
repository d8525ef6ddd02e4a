/**
 * A member that answers pings but withholds its all-reduce chunks is dropped
 * after a bounded number of view changes, and a run whose view changes never
 * commit an epoch ends (src/roles/trainer/worker.ts `#recover`; docs/training.md
 * "Failure"). Each view change names the member whose chunk did not arrive
 * (`silent`); that member is excused only when it was itself waiting for an
 * earlier chunk of the same view (the ring's cascade), else it gets a strike,
 * and at STRIKES_TO_DROP strikes it is left out of the proposal however it
 * answers pings. View changes without a new committed epoch are bounded
 * (TRAIN_VIEW_LIMIT). Before, the survivors changed view forever.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ProtocolHandler } from '../../../src/net/protocols.js';
import { MAX_STALLED_VIEWS } from '../../../src/roles/trainer/worker.js';
import { fakeNet, hostileNet, makeRun, runAll } from './trainer-net.js';
import { P } from '../market/fixtures.js';

const [A, B, H] = [P(500), P(501), P(502)];
const members = [A, B, H];

describe('a member withholding its chunks', () => {
  it('is dropped after two view changes; the others finish', { timeout: 20_000 }, async () => {
    const net = fakeNet((from, _to, frames) => (from === H.did && (frames[0] as { k?: string }).k === 'chunk' ? null : frames));
    const { workers, res } = await runAll(members, makeRun(members, A, { timeoutMs: 200 }), net);
    for (const [i, w] of workers.slice(0, 2).entries()) {
      assert.equal(res[i]!.status, 'fulfilled', String((res[i] as PromiseRejectedResult).reason));
      assert.deepEqual(w.members, [A.did, B.did].sort());
      assert.ok(w.views.length <= 3, `${w.views.length} view changes`);
      assert.deepEqual(w.views.at(-1)!.dropped, [H.did]);
    }
    assert.ok(workers.slice(0, 2).some((w) => w.views.some((v) => v.silent === H.did)), 'a view change names the member that did not deliver');
  });

  it('one that excuses itself every time: the run stops with TRAIN_VIEW_LIMIT instead of changing view forever', { timeout: 30_000 }, async () => {
    // H withholds the second chunk of step 1 and, asked, claims it still waits for the first one
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
      assert.equal(res[i]!.status, 'rejected');
      assert.equal(w.stopReason?.code, 'TRAIN_VIEW_LIMIT', JSON.stringify(w.stopReason));
      assert.ok(w.views.length <= MAX_STALLED_VIEWS(members.length), `${w.views.length} view changes`);
    }
  });
});
