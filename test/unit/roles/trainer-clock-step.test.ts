/**
 * The training worker times its waits on the monotonic clock (src/util/clock.ts;
 * src/roles/trainer/worker.ts `join`, src/roles/trainer/epoch-commit.ts `finalised`):
 * the wall clock, stepped back an hour during a wait (NTP, an operator, a VM
 * restore), only dates the records. Before, the join deadline and an epoch's
 * wait for step commitments were wall-clock deadlines, so a step back of an hour
 * made a timeout of one second an hour long.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import { electCoordinator } from '../../../src/training/aggregator.js';
import { TrainerWorker } from '../../../src/roles/trainer/worker.js';
import { tempDir } from '../ledger/helpers.js';
import { P } from '../market/fixtures.js';
import { fakeNet, makeRun } from './trainer-net.js';

const HOUR = 3_600_000;

/** A wall clock stepped back an hour at every read while `stepping` (so any wait timed on it never ends), then right again. */
function steppingWall() {
  let back = 0;
  const c = Object.assign(() => Date.now() - (c.stepping ? (back += HOUR) : 0), { stepping: true });
  return c;
}

/** `p`, or a timeout after `ms` (and then `giveUp`, so what still waits ends). */
async function within<T>(p: Promise<T>, ms: number, giveUp: () => void): Promise<T> {
  let t: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<never>((_, rej) => (t = setTimeout(() => rej(new Error(`still waiting after ${ms} ms`)), ms)))]);
  } catch (e) {
    giveUp();
    await p.catch(() => {});
    throw e;
  } finally {
    clearTimeout(t);
  }
}

describe('the wall clock stepped back during a trainer wait', () => {
  it('a join whose peer never comes still ends TRAIN_JOIN_TIMEOUT on time', { timeout: 20_000 }, async () => {
    const [A, B] = [P(550), P(551)];
    const wall = steppingWall();
    const t = tempDir('c0-train-clock-');
    const net = fakeNet();
    const w = new TrainerWorker({ signer: A.signer, did: A.did, run: makeRun([A, B], A), addrs: {}, dir: t.dir, clock: wall, net: net.netFor(A.did) as never, joinTimeoutMs: 500 });
    try {
      await w.start();
      const started = Date.now();
      await assert.rejects(
        within(w.join(), 5_000, () => (wall.stepping = false)),
        (e: unknown) => e instanceof C0Error && e.code === 'TRAIN_JOIN_TIMEOUT',
      );
      assert.ok(Date.now() - started < 3_000, `${Date.now() - started} ms`);
    } finally {
      await w.stop();
      t.cleanup();
    }
  });

  it('a coordinator missing a member’s step commitments gives up after the run’s timeout', { timeout: 20_000 }, async () => {
    const [A, B] = [P(552), P(553)];
    const run = makeRun([A, B], A, { timeoutMs: 300, onFailure: 'stop', epochs: 1 });
    const coord = electCoordinator(run.address, 0, run.record.members);
    const other = coord === A.did ? B.did : A.did;
    // the other member's step commitments never reach the coordinator
    const net = fakeNet((from, to, frames) => (from === other && to === coord && (frames[0] as { k?: string }).k === 'commit' ? null : frames));
    const wall = steppingWall();
    const dirs = [tempDir('c0-train-clock-'), tempDir('c0-train-clock-')];
    const ws = [A, B].map((m, i) => new TrainerWorker({ signer: m.signer, did: m.did, run, addrs: {}, dir: dirs[i]!.dir, clock: wall, net: net.netFor(m.did) as never, joinTimeoutMs: 5_000 }));
    const c = ws[A.did === coord ? 0 : 1]!;
    try {
      for (const w of ws) await w.start();
      await Promise.all(ws.map((w) => w.join()));
      const started = Date.now();
      const res = await within(
        Promise.allSettled(ws.map((w) => w.run())),
        8_000,
        () => (wall.stepping = false),
      );
      assert.ok(Date.now() - started < 5_000, `${Date.now() - started} ms`);
      for (const r of res) assert.equal(r.status, 'rejected');
      assert.equal(c.status, 'stopped');
      assert.equal(c.stopReason?.code, 'TRAIN_STOPPED', JSON.stringify(c.stopReason));
      assert.match(c.stopReason!.message, /TRAIN_EPOCH_INCOMPLETE/);
    } finally {
      for (const w of ws) await w.stop();
      for (const d of dirs) d.cleanup();
    }
  });
});
