/**
 * TRAIN_ALONE, which ends a member's run for good, is not decided on one short
 * ping (src/roles/trainer/worker.ts `#recover`; docs/training.md "Failure"):
 * when the next view would hold this worker alone, it asks the members that
 * did not answer again and again until the run's timeoutMs has passed since it
 * first asked, and goes on with any that answers. Before, one ping capped at
 * 3 s decided it: in a run of 3 with timeoutMs 10 s, one member crashed and
 * another paused for 4 s (a GC pause, swap, SIGSTOP) stopped both survivors.
 *
 * The ring sends from members[i] to members[i + 1] (DID order), so the member
 * before the crashed one notices the crash at once (its send fails) and starts
 * asking while the other is still paused.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import { fakeNet, makeRun, runAll, type Frames } from './trainer-net.js';
import type { TrainerWorker } from '../../../src/roles/trainer/worker.js';
import { P, type Party } from '../market/fixtures.js';

/**
 * The run's timeoutMs: it must exceed the 3 s a single ping waits (PING_MS) for the old behaviour to be told apart.
 * Per case, as short as that case allows: the paused member's 4 s pause must end within it, the silent member must be
 * pinged at least 3 times within it (rounds at 0, 3 and 6 s), and the abort (about 3.5 s in) must come well before it.
 */
const TIMEOUT = { paused: 6_000, silent: 7_500, aborted: 10_000 };

/** The run's three members by ring place: `slow` (members[0]), `asker` (members[1], which sends to `dead`) and `dead` (members[2]). */
function roles(parties: Party[], members: string[]) {
  const by = (i: number) => parties.find((p) => p.did === members[i])!;
  return { slow: by(0), asker: by(1), dead: by(2) };
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** The crashed member's own worker ends with its process (its mailbox closed), instead of asking on to its own TRAIN_ALONE for timeoutMs, which only lengthens the test. */
const killed = (w: TrainerWorker) => w.box.close(new C0Error('EXEC_ABORTED', 'fake: the process was killed'));

// The three cases share nothing (their own members, net and directories) and mostly wait: they run side by side.
describe('TRAIN_ALONE waits for the run’s timeout', { concurrency: true }, () => {
  it('a member paused 4 s (timeoutMs 6 s) while another crashed answers a later ping: the two go on to view 1 and finish', { timeout: 60_000 }, async () => {
    const parties = [P(560), P(561), P(562)];
    const run = makeRun(parties, parties[0]!, { timeoutMs: TIMEOUT.paused });
    const { slow, asker, dead } = roles(parties, run.record.members);
    let crashed = false;
    let resumed: Promise<void> | undefined;
    // `dead` is gone (a dial fails either way); `slow` is paused: what is sent to it is answered once it runs again if the sender still waits, what it sends leaves then
    const net = fakeNet(async (from, to, frames: Frames, deadlineMs) => {
      if (crashed && (from === dead.did || to === dead.did)) throw new C0Error('NET_DIAL_FAILED', 'fake: the process was killed');
      if (resumed && from === slow.did) await resumed;
      if (resumed && to === slow.did) {
        const late = await Promise.race([resumed.then(() => false), sleep(deadlineMs).then(() => true)]);
        if (late) throw new C0Error('NET_DEADLINE', 'fake: no answer within the deadline (paused)');
      }
      return frames;
    });
    let all: TrainerWorker[] = [];
    const { workers, res } = await runAll(
      [slow, asker, dead],
      run,
      net,
      (did, e) => {
        if (did === asker.did && e.e === 'step' && e.step === 4 && !crashed) {
          crashed = true;
          killed(all[2]!);
          resumed = sleep(4_000).then(() => (resumed = undefined));
        }
      },
      (ws) => (all = ws),
    );
    for (const i of [0, 1]) {
      const w = workers[i]!;
      assert.equal(res[i]!.status, 'fulfilled', `${i ? 'asker' : 'slow'}: ${String((res[i] as PromiseRejectedResult).reason)}`);
      assert.equal(w.status, 'done');
      assert.deepEqual(w.members, [slow.did, asker.did].sort());
      assert.deepEqual(w.views.at(-1)!.dropped, [dead.did]);
    }
  });

  it('a member that never answers: TRAIN_ALONE after the run’s timeoutMs of asking, not after one 3 s ping', { timeout: 60_000 }, async () => {
    const parties = [P(563), P(564), P(565)];
    const run = makeRun(parties, parties[0]!, { timeoutMs: TIMEOUT.silent });
    const { slow, asker, dead } = roles(parties, run.record.members);
    let crashed = false;
    let firstPing: number | undefined;
    let stoppedAt: number | undefined;
    let pingsToSlow = 0;
    // `dead` is gone; `slow` hangs: nothing sent to it is answered (each request waits out its deadline), and nothing it sends leaves
    const net = fakeNet(async (from, to, frames: Frames, deadlineMs) => {
      if (!crashed) return frames;
      if (from === asker.did && (frames[0] as { k?: string }).k === 'ping') {
        firstPing ??= Date.now();
        if (to === slow.did) pingsToSlow++;
      }
      if (from === dead.did || to === dead.did || from === slow.did) throw new C0Error('NET_DIAL_FAILED', 'fake: unreachable');
      if (to === slow.did) {
        await sleep(deadlineMs);
        throw new C0Error('NET_DEADLINE', 'fake: no answer within the deadline (hung)');
      }
      return frames;
    });
    const { workers, res } = await runAll([slow, asker, dead], run, net, (did, e) => {
      if (did === asker.did && e.e === 'step' && e.step === 4) crashed = true;
      if (did === asker.did && e.e === 'stopped') stoppedAt = Date.now();
    });
    const w = workers[1]!;
    assert.equal(res[1]!.status, 'rejected', `the asker ended ${w.status}`);
    assert.equal(w.stopReason?.code, 'TRAIN_ALONE', JSON.stringify(w.stopReason));
    assert.ok(!w.views.some((v) => v.members.length === 1), `no one-member view: ${JSON.stringify(w.views)}`);
    assert.ok(firstPing !== undefined && stoppedAt !== undefined);
    const asked = stoppedAt - firstPing;
    assert.ok(asked >= TIMEOUT.silent - 200, `stopped ${asked} ms after it first asked; the run's timeoutMs is ${TIMEOUT.silent}`);
    assert.ok(asked < TIMEOUT.silent + 4_000, `stopped ${asked} ms after it first asked: the wait is bounded by the run's timeoutMs`);
    assert.ok(pingsToSlow >= 3, `${pingsToSlow} pings to the silent member`);
    assert.match(w.stopReason!.message, new RegExp(String(TIMEOUT.silent)));
  });

  it('the worker’s end (its job aborted: the mailbox closed) ends the wait at once, with the abort’s reason, not TRAIN_ALONE at timeoutMs', { timeout: 60_000 }, async () => {
    const parties = [P(566), P(567), P(568)];
    const run = makeRun(parties, parties[0]!, { timeoutMs: TIMEOUT.aborted });
    const { slow, asker, dead } = roles(parties, run.record.members);
    let crashed = false;
    let pingsToSlow = 0;
    let closedAt: number | undefined;
    let endedAt: number | undefined;
    let askerWorker: TrainerWorker | undefined;
    let all: TrainerWorker[] = [];
    const net = fakeNet(async (from, to, frames: Frames, deadlineMs) => {
      if (!crashed) return frames;
      if (from === asker.did && to === slow.did && (frames[0] as { k?: string }).k === 'ping' && ++pingsToSlow === 2) {
        // the second ping is the wait's first round: the job is stopped 500 ms into it (member-job.ts closes the mailbox)
        setTimeout(() => {
          closedAt = Date.now();
          askerWorker!.box.close(new C0Error('EXEC_ABORTED', 'the job was stopped'));
        }, 500);
      }
      if (from === dead.did || to === dead.did || from === slow.did) throw new C0Error('NET_DIAL_FAILED', 'fake: unreachable');
      if (to === slow.did) {
        await sleep(deadlineMs);
        throw new C0Error('NET_DEADLINE', 'fake: no answer within the deadline (hung)');
      }
      return frames;
    });
    const { workers, res } = await runAll(
      [slow, asker, dead],
      run,
      net,
      (did, e) => {
        if (did === asker.did && e.e === 'step' && e.step === 4 && !crashed) {
          crashed = true;
          killed(all[2]!);
        }
        if (did === asker.did && e.e === 'stopped') {
          endedAt = Date.now();
          killed(all[0]!); // the hung member: what it does after the asker ended is not this test's
        }
      },
      (ws) => {
        all = ws;
        askerWorker = ws[1];
      },
    );
    const r = res[1]!;
    assert.equal(r.status, 'rejected', `the asker ended ${workers[1]!.status}`);
    assert.equal(((r as PromiseRejectedResult).reason as C0Error).code, 'EXEC_ABORTED');
    assert.ok(closedAt !== undefined && endedAt !== undefined, `closed ${closedAt}, ended ${endedAt}`);
    assert.ok(endedAt - closedAt < 2_000, `ended ${endedAt - closedAt} ms after the mailbox closed; the wait would have gone on to timeoutMs (${TIMEOUT.aborted})`);
  });
});
