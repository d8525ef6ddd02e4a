/**
 * One member's word that it moved on does not stop the others (review s43 R8 F1).
 * A member that answers a ping "I am in view N+1", or answers a proposal with
 * TRAIN_VIEW_PAST, says only that it left this worker out: it is left out of
 * this worker's next view, and the members that do propose carry on without it.
 * This worker was dropped (TRAIN_DROPPED) only when no other live member
 * carries on with it — src/roles/trainer/worker.ts `#recover`.
 * Before, a single such answer stopped every honest member with TRAIN_DROPPED
 * at the first view change, and the whole run was lost.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { fakeNet, hostileNet, makeRun, runAll, type FakeNet, type Frames } from './trainer-net.js';
import type { TrainerEvent, TrainerWorker } from '../../../src/roles/trainer/worker.js';
import { P, type Party } from '../market/fixtures.js';
import { C0Error } from '../../../src/errors.js';

/** A chunk of step 3 or later (the hostile member holds them back, so a view change follows). */
const late = (frames: Frames) => {
  const h = frames[0] as { k?: unknown; tag?: unknown } | undefined;
  return !!h && typeof h === 'object' && h.k === 'chunk' && /\/s([3-9]|\d\d)\//.test(String(h.tag));
};

/** Every member but the last (the hostile one) finished the run's 4 epochs without it. */
function assertHonestFinish(workers: Awaited<ReturnType<typeof runAll>>['workers'], res: Awaited<ReturnType<typeof runAll>>['res'], hostile: string) {
  for (const [i, w] of workers.slice(0, -1).entries()) {
    assert.equal(res[i]!.status, 'fulfilled', `honest member ${i} ended ${w.status}: ${String((res[i] as PromiseRejectedResult).reason)}`);
    assert.equal(w.status, 'done');
    assert.ok(!w.members.includes(hostile), `the hostile member is left out: ${JSON.stringify(w.views)}`);
    assert.equal(w.epochs.length, 4);
  }
}

/**
 * Run the members (the last one hostile) to their end. The hostile member's own worker, left out, would go on for
 * seconds more to its own TRAIN_DROPPED, which these cases do not check: once every honest member is done, it is
 * stopped (its mailbox closed, as its process ending would).
 */
async function runHonestToEnd(members: Party[], net: FakeNet) {
  const hostile = members.at(-1)!.did;
  let all: TrainerWorker[] = [];
  let done = 0;
  const onEvent = (did: string, e: TrainerEvent) => {
    if (did !== hostile && e.e === 'done' && ++done === members.length - 1) all.at(-1)!.box.close(new C0Error('EXEC_ABORTED', 'fake: the hostile member is stopped once the honest ones are done'));
  };
  return runAll(members, makeRun(members, members[0]!, { stepsPerEpoch: 3, epochs: 4, timeoutMs: 500 }), net, onEvent, (ws) => (all = ws));
}

// The three cases share nothing (their own members, net and directories): they run side by side.
describe('a member that claims a later view', { concurrency: true }, () => {
  it('in its ping answers: it is left out, the honest members finish the run', { timeout: 60_000 }, async () => {
    const members = [P(560), P(561), P(562)];
    const C = members[2]!.did;
    const net = hostileNet(fakeNet((from, _to, frames) => (from === C && late(frames) ? null : frames)), C, (hn) => ({
      handle: async (p, h) =>
        hn.handle(p, async (frames, ctx) =>
          h(frames, {
            ...ctx,
            send: async (f: unknown) => ctx.send((f && typeof f === 'object' && 'view' in f && 'lastEpoch' in f ? { ...f, view: (f as { view: number }).view + 1 } : f) as never),
          } as never),
        ),
    }));
    const { workers, res } = await runHonestToEnd(members, net);
    assertHonestFinish(workers, res, C);
  });

  it('by answering proposals TRAIN_VIEW_PAST: it is left out, the honest members finish the run', { timeout: 60_000 }, async () => {
    const members = [P(563), P(564), P(565)];
    const C = members[2]!.did;
    const net = fakeNet((from, to, frames) => {
      if (from === C && late(frames)) return null;
      const h = frames[0] as { k?: unknown } | undefined;
      if (to === C && h && typeof h === 'object' && h.k === 'view') throw new C0Error('TRAIN_VIEW_PAST', 'fake: this member is in a later view', { detail: { remote: true, view: 99 } });
      return frames;
    });
    const { workers, res } = await runHonestToEnd(members, net);
    assertHonestFinish(workers, res, C);
  });

  it('after holding back its proposal (it reports the view it moved to): it is left out, the honest members finish the run', { timeout: 60_000 }, async () => {
    const members = [P(566), P(567), P(568)];
    const C = members[2]!.did;
    const net = fakeNet((from, _to, frames) => {
      const h = frames[0] as { k?: unknown } | undefined;
      if (from === C && (late(frames) || (h && typeof h === 'object' && h.k === 'view'))) return null;
      return frames;
    });
    const { workers, res } = await runHonestToEnd(members, net);
    assertHonestFinish(workers, res, C);
  });
});
