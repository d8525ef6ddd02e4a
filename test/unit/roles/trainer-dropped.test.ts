/**
 * A member stalled past the run's timeout (SIGSTOP, a GC pause, a VM freeze)
 * while the others move to a view without it learns, once it runs again, that
 * it was dropped, and stops with TRAIN_DROPPED (state `stopped`, naming the
 * view) — src/roles/trainer/worker.ts `#recover`; docs/training.md "Failure".
 * Before, its pings to the others succeeded, its proposal for their past view
 * was dropped by them unanswered, and it trained the rest of the run as a
 * one-member view and ended `done` with other weights.
 *
 * When the others finished the run and exited before it resumed, nobody is
 * left to say so: its pings fail and it counts only itself alive. It stops then
 * too, with TRAIN_ALONE: a run of several members never goes on as a
 * one-member view, whose epochs no one can witness (TRAIN_VERIFY_NO_WITNESS).
 * Before, it trained on alone and ended `done` (a member job: a completed receipt).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { fakeNet, makeRun, runAll } from './trainer-net.js';
import { P } from '../market/fixtures.js';
import { C0Error } from '../../../src/errors.js';

const [A, B, H] = [P(530), P(531), P(532)];
const members = [A, B, H];

describe('a member stalled past the timeout', () => {
  it('comes back, learns it was dropped and stops with TRAIN_DROPPED; the others finish without it', { timeout: 30_000 }, async () => {
    let frozen: Promise<void> | undefined;
    let thaw = () => {};
    // while H is frozen nothing reaches it (a deadline, as to a stopped process) and what it sends waits until it runs again
    const net = fakeNet(async (from, to, frames) => {
      if (frozen && to === H.did) return null;
      if (frozen && from === H.did) await frozen;
      return frames;
    });
    const { workers, res } = await runAll(members, makeRun(members, A, { timeoutMs: 200 }), net, (did, e) => {
      if (did === H.did && e.e === 'step' && e.step === 4 && !frozen) {
        frozen = new Promise<void>((r) => (thaw = r));
        setTimeout(() => {
          frozen = undefined;
          thaw();
        }, 2_500);
      }
    });
    for (const [i, w] of workers.slice(0, 2).entries()) {
      assert.equal(res[i]!.status, 'fulfilled', String((res[i] as PromiseRejectedResult).reason));
      assert.deepEqual(w.members, [A.did, B.did].sort());
    }
    const h = workers[2]!;
    assert.equal(res[2]!.status, 'rejected', `the stalled member ended ${h.status} in a view of ${h.members.length}`);
    assert.equal(h.status, 'stopped');
    assert.equal(h.stopReason?.code, 'TRAIN_DROPPED', JSON.stringify(h.stopReason));
    assert.match(h.stopReason!.message, /view 1/);
    assert.ok(!h.views.some((v) => v.members.length === 1), `no one-member view: ${JSON.stringify(h.views)}`);
  });

  it('resumes after the others finished and exited: stops with TRAIN_ALONE, not a one-member view that ends done', { timeout: 40_000 }, async () => {
    let frozen: Promise<void> | undefined;
    let thaw = () => {};
    const gone = new Set<string>();
    // A and B exit once done (their process is gone: a dial fails); H, frozen, runs again only after both are gone
    const net = fakeNet(async (from, to, frames) => {
      if (frozen && to === H.did) return null;
      if (frozen && from === H.did) await frozen;
      if (gone.has(to)) throw new C0Error('NET_DIAL_FAILED', 'fake: the process exited');
      return frames;
    });
    let fallback: NodeJS.Timeout | undefined;
    const { workers, res, events } = await runAll(members, makeRun(members, A, { timeoutMs: 200 }), net, (did, e) => {
      if (did === H.did && e.e === 'step' && e.step === 4 && !frozen) {
        frozen = new Promise<void>((r) => (thaw = r));
        fallback = setTimeout(() => thaw(), 30_000);
      }
      if (did !== H.did && e.e === 'done') {
        gone.add(did);
        if (gone.size === 2) {
          frozen = undefined;
          thaw();
        }
      }
    });
    clearTimeout(fallback);
    for (const [i, w] of workers.slice(0, 2).entries()) {
      assert.equal(res[i]!.status, 'fulfilled', String((res[i] as PromiseRejectedResult).reason));
      assert.deepEqual(w.members, [A.did, B.did].sort());
    }
    assert.equal(gone.size, 2, 'A and B finished before H resumed');
    const h = workers[2]!;
    assert.equal(res[2]!.status, 'rejected', `the stalled member ended ${h.status} in a view of ${h.members.length}: ${JSON.stringify(h.views)}`);
    assert.equal(h.status, 'stopped');
    assert.equal(h.stopReason?.code, 'TRAIN_ALONE', JSON.stringify(h.stopReason));
    assert.ok(!h.views.some((v) => v.members.length === 1), `no one-member view: ${JSON.stringify(h.views)}`);
    // nothing was signed as an epoch of H alone
    assert.ok(!events.get(H.did)!.some((e) => e.e === 'epoch' && e.witnesses.length === 0), 'no unwitnessed epoch');
  });
});
