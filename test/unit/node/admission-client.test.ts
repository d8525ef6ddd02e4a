/**
 * The buyer's admit client (src/roles/admission-client.ts): asks the steward again, with backoff, whenever the steward
 * may hold the claim with no verdict heard (a queued claim's stream failed, or an `admitted` answer was lost with its
 * stream before any `queued` frame: s35a finding 1), and withdraws the claim when it gives up after such an ask.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import { admitJob, requestAdmission } from '../../../src/roles/admission-client.js';
import { fakeClock } from '../../../src/util/clock.js';

type Step = Array<Record<string, unknown>> | { frames: Array<Record<string, unknown>>; fail: C0Error };

/** A scripted steward: each ask replays the next step's frames, then ends (or fails). */
function scripted(steps: Step[]) {
  let i = 0;
  return {
    asks: () => i,
    ask: async (onFrame: (f: unknown) => void) => {
      const s = steps[Math.min(i++, steps.length - 1)]!;
      const frames = Array.isArray(s) ? s : s.frames;
      for (const f of frames) onFrame(f);
      if (!Array.isArray(s)) throw s.fail;
    },
  };
}

async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !cond(); i++) await new Promise((r) => setTimeout(r, 5));
  assert.ok(cond());
}

const broken = () => new C0Error('NET_STREAM_FAILED', 'stream reset');

describe('requestAdmission', () => {
  test('a queued claim whose stream fails is asked for again, with backoff, until a verdict', async () => {
    const clock = fakeClock();
    const waits: number[] = [];
    const queued: string[] = [];
    const s = scripted([{ frames: [{ t: 'queued', reason: 'DEVICES_HELD', reasons: ['DEVICES_HELD'] }], fail: broken() }, [], [{ t: 'queued', reason: 'DEVICES_HELD' }, { t: 'admitted', reserved: { uj: 5, grade: 'Estimator' }, borrowed_uj: 0 }]]);
    const a = await requestAdmission({
      ask: s.ask,
      deadline: clock() + 60_000,
      clock,
      onQueued: (r) => queued.push(r),
      random: () => 0.5,
      sleep: async (ms) => {
        waits.push(ms);
        clock.advance(ms);
      },
    });
    assert.deepEqual(a, { verdict: 'Admit', reserved: { uj: 5, grade: 'Estimator' }, borrowed_uj: 0 });
    assert.equal(s.asks(), 3);
    assert.deepEqual(queued, ['DEVICES_HELD', 'DEVICES_HELD']);
    assert.deepEqual(waits, [500, 1000]);
  });

  test('a stream that fails before any `queued` frame, or ends without a verdict, is asked for again: a lost `admitted` is recovered', async () => {
    for (const first of [{ frames: [], fail: broken() }, [], { frames: [], fail: new C0Error('NET_DEADLINE', 'no answer in time') }] as Step[]) {
      const clock = fakeClock();
      const waits: number[] = [];
      const withdrawn: number[] = [];
      const s = scripted([first, [{ t: 'admitted', reserved: { uj: 5, grade: 'Estimator' }, borrowed_uj: 0 }]]);
      const a = await requestAdmission({
        ask: s.ask,
        deadline: clock() + 60_000,
        clock,
        onQueued: () => assert.fail('never queued'),
        random: () => 0.5,
        sleep: async (ms) => {
          waits.push(ms);
          clock.advance(ms);
        },
        withdraw: async () => void withdrawn.push(1),
      });
      assert.deepEqual(a, { verdict: 'Admit', reserved: { uj: 5, grade: 'Estimator' }, borrowed_uj: 0 });
      assert.equal(s.asks(), 2);
      assert.deepEqual(waits, [500]);
      assert.deepEqual(withdrawn, [], 'a verdict came: nothing to withdraw');
    }
  });

  test('a first ask whose dial fails reached nothing: NET_DIAL_FAILED at once, nothing withdrawn', async () => {
    const clock = fakeClock();
    const withdrawn: number[] = [];
    const dial = new C0Error('NET_DIAL_FAILED', 'cannot open /c0mpute/steward/1');
    const s = scripted([{ frames: [], fail: dial }]);
    await assert.rejects(requestAdmission({ ask: s.ask, deadline: clock() + 60_000, clock, onQueued: () => {}, sleep: async () => assert.fail('no retry'), withdraw: async () => void withdrawn.push(1) }), (e: unknown) => e === dial);
    assert.equal(s.asks(), 1);
    assert.deepEqual(withdrawn, []);
  });

  test('never queued, the re-asks failing until the deadline: the last failure is thrown (its code), after a withdraw', async () => {
    const clock = fakeClock();
    const waits: number[] = [];
    const withdrawn: AbortSignal[] = [];
    const dial = new C0Error('NET_DIAL_FAILED', 'cannot open /c0mpute/steward/1');
    const s = scripted([{ frames: [], fail: broken() }, { frames: [], fail: dial }]);
    const asked = requestAdmission({
      ask: s.ask,
      deadline: clock() + 20_000,
      clock,
      onQueued: () => {},
      random: () => 0.5,
      sleep: async (ms) => {
        waits.push(ms);
        clock.advance(ms);
      },
      withdraw: async (signal) => void withdrawn.push(signal),
    });
    await assert.rejects(asked, (e: unknown) => e === dial);
    assert.deepEqual(waits, [500, 1000, 2000, 4000, 5000, 5000]);
    assert.equal(withdrawn.length, 1, 'the claim the first ask may have admitted is withdrawn');
  });

  test('an error the steward answers a re-ask is thrown after a withdraw; answered to the first ask, nothing is withdrawn', async () => {
    const clock = fakeClock();
    const remote = () => new C0Error('STEWARD_NOT_ENTITLED', 'no', { detail: { remote: true } });
    for (const [steps, withdraws] of [
      [[{ frames: [], fail: broken() }, { frames: [], fail: remote() }], 1],
      [[{ frames: [], fail: remote() }], 0],
    ] as Array<[Step[], number]>) {
      const withdrawn: number[] = [];
      await assert.rejects(
        requestAdmission({ ask: scripted(steps).ask, deadline: clock() + 60_000, clock, onQueued: () => {}, sleep: async () => {}, withdraw: async () => void withdrawn.push(1) }),
        (e: unknown) => e instanceof C0Error && e.code === 'STEWARD_NOT_ENTITLED',
      );
      assert.equal(withdrawn.length, withdraws);
    }
  });

  test('the run’s abort breaks off the ask in flight: the abort’s reason is thrown, after a withdraw (the ask may have landed)', async () => {
    const clock = fakeClock();
    const stop = new AbortController();
    const withdrawn: number[] = [];
    let inFlight: AbortSignal | undefined;
    const asked = requestAdmission({
      ask: (_onFrame, signal) => {
        inFlight = signal;
        return new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(broken()), { once: true }));
      },
      deadline: clock() + 60_000,
      clock,
      onQueued: () => {},
      signal: stop.signal,
      withdraw: async () => void withdrawn.push(1),
    });
    await new Promise((r) => setImmediate(r));
    const why = new C0Error('JOB_INTERRUPTED', 'this node is stopping');
    stop.abort(why);
    await assert.rejects(asked, (e: unknown) => e === why);
    assert.ok(inFlight?.aborted, 'the ask in flight was broken off');
    assert.deepEqual(withdrawn, [1]);
  });

  test('aborted during the backoff after a lost answer: withdrawn at once; aborted before asking: nothing asked, nothing withdrawn', async () => {
    const clock = fakeClock();
    const stop = new AbortController();
    const withdrawn: number[] = [];
    const s = scripted([{ frames: [], fail: broken() }]);
    const asked = requestAdmission({ ask: s.ask, deadline: clock() + 600_000, clock, onQueued: () => {}, signal: stop.signal, initialMs: 60_000, maxMs: 60_000, withdraw: async () => void withdrawn.push(1) });
    const ended = assert.rejects(asked, (e: unknown) => e instanceof C0Error && e.code === 'JOB_INTERRUPTED');
    await until(() => s.asks() === 1);
    await new Promise((r) => setTimeout(r, 10));
    assert.equal(withdrawn.length, 0, 'waiting to ask again');
    const t0 = Date.now();
    stop.abort(new C0Error('JOB_INTERRUPTED', 'stopping'));
    await ended;
    assert.ok(Date.now() - t0 < 1_000, 'the backoff was cut short');
    assert.equal(s.asks(), 1);
    assert.deepEqual(withdrawn, [1]);

    const s2 = scripted([[]]);
    await assert.rejects(requestAdmission({ ask: s2.ask, deadline: clock() + 60_000, clock, onQueued: () => {}, signal: stop.signal, withdraw: async () => void withdrawn.push(2) }), (e: unknown) => e instanceof C0Error && e.code === 'JOB_INTERRUPTED');
    assert.equal(s2.asks(), 0);
    assert.deepEqual(withdrawn, [1]);
  });

  test('a withdraw that does not answer holds the giving up for withdrawMs at most', async () => {
    const clock = fakeClock();
    const stop = new AbortController();
    let cut: AbortSignal | undefined;
    const asked = requestAdmission({
      ask: (_f, signal) => new Promise((_r, reject) => signal.addEventListener('abort', () => reject(broken()), { once: true })),
      deadline: clock() + 60_000,
      clock,
      onQueued: () => {},
      signal: stop.signal,
      withdrawMs: 50,
      withdraw: (signal) => {
        cut = signal;
        return new Promise(() => {});
      },
    });
    await new Promise((r) => setImmediate(r));
    const t0 = Date.now();
    stop.abort(new C0Error('JOB_INTERRUPTED', 'stopping'));
    await assert.rejects(asked, (e: unknown) => e instanceof C0Error && e.code === 'JOB_INTERRUPTED');
    assert.ok(Date.now() - t0 < 1_000, 'given up without waiting on the withdraw');
    assert.ok(cut?.aborted, 'the withdraw request was broken off');
  });

  test('an error the steward answered is not retried, even after queued', async () => {
    const clock = fakeClock();
    const remote = new C0Error('STEWARD_CLAIM_MISMATCH', 'no', { detail: { remote: true } });
    const s = scripted([{ frames: [{ t: 'queued', reason: 'DEVICES_HELD' }], fail: remote }]);
    await assert.rejects(requestAdmission({ ask: s.ask, deadline: clock() + 60_000, clock, onQueued: () => {}, sleep: async () => assert.fail('no retry') }), (e: unknown) => e === remote);
    assert.equal(s.asks(), 1);
  });

  test('the backoff doubles to its cap, and asking stops at the job’s deadline: Expired STEWARD_UNREACHABLE', async () => {
    const clock = fakeClock();
    const waits: number[] = [];
    const s = scripted([{ frames: [{ t: 'queued', reason: 'DEVICES_HELD' }], fail: broken() }, { frames: [], fail: broken() }]);
    const a = await requestAdmission({
      ask: s.ask,
      deadline: clock() + 20_000,
      clock,
      onQueued: () => {},
      random: () => 0.5,
      sleep: async (ms) => {
        waits.push(ms);
        clock.advance(ms);
      },
    });
    assert.deepEqual(a, { verdict: 'Expired', reason: 'STEWARD_UNREACHABLE' });
    assert.deepEqual(waits, [500, 1000, 2000, 4000, 5000, 5000]);
  });

  test('STEWARD_RATE_LIMITED (claims withdrawn unrun lately) is waited out and asked again while the deadline allows; past it, thrown (second-round review s42 R8 F3)', async () => {
    // before: thrown at once, and every job of a batch after an empty-market spell failed
    const limited = () => new C0Error('STEWARD_RATE_LIMITED', 'too many claims withdrawn: ask again in 4 s', { detail: { remote: true } });
    const clock = fakeClock();
    const waits: number[] = [];
    const s = scripted([{ frames: [], fail: limited() }, { frames: [], fail: limited() }, [{ t: 'admitted', reserved: { uj: 5, grade: 'Estimator' }, borrowed_uj: 0 }]]);
    const a = await requestAdmission({ ask: s.ask, deadline: clock() + 60_000, clock, onQueued: () => {}, random: () => 0.5, sleep: async (ms) => void (waits.push(ms), clock.advance(ms)) });
    assert.equal(a.verdict, 'Admit');
    assert.deepEqual(waits, [2_000, 2_000]);
    const late = scripted([{ frames: [], fail: limited() }]);
    await assert.rejects(requestAdmission({ ask: late.ask, deadline: clock() + 1_500, clock, onQueued: () => {}, random: () => 0.5, sleep: async (ms) => void clock.advance(ms) }), (e: { code?: string }) => e.code === 'STEWARD_RATE_LIMITED');
  });

  test("the steward's `rate-limited` frame is when it is asked again, and not at all past the deadline; the run is told once and the error says why (review s43 R1 F4)", async () => {
    const limited = () => new C0Error('STEWARD_RATE_LIMITED', 'too many claims withdrawn: ask again in 50 s', { detail: { remote: true } });
    const clock = fakeClock();
    // the steward says 50 s, the deadline is 20 s away: given up at once (before: asked again 5 times, 2, 2, 4, 6 s apart)
    const dead = scripted([{ frames: [{ t: 'rate-limited', retry_in_ms: 50_000 }], fail: limited() }]);
    await assert.rejects(
      requestAdmission({ ask: dead.ask, deadline: clock() + 20_000, clock, onQueued: () => {}, random: () => 0.5, sleep: async (ms) => void clock.advance(ms) }),
      (e: { code?: string; message: string }) => e.code === 'STEWARD_RATE_LIMITED' && /the job was not admitted/.test(e.message) && /withdrawn without running/.test(e.message) && /ask again in 50 s/.test(e.message),
    );
    assert.equal(dead.asks(), 1);
    // 5 s said, 60 s left: one wait of 5 s, the run told once
    const waits: number[] = [];
    const told: number[] = [];
    const s = scripted([{ frames: [{ t: 'rate-limited', retry_in_ms: 5_000 }], fail: limited() }, { frames: [{ t: 'rate-limited', retry_in_ms: 3_000 }], fail: limited() }, [{ t: 'admitted', reserved: { uj: 5, grade: 'Estimator' }, borrowed_uj: 0 }]]);
    const a = await requestAdmission({ ask: s.ask, deadline: clock() + 60_000, clock, onQueued: () => {}, onRateLimited: (ms) => void told.push(ms), random: () => 0.5, sleep: async (ms) => void (waits.push(ms), clock.advance(ms)) });
    assert.equal(a.verdict, 'Admit');
    assert.deepEqual(waits, [5_000, 3_000]);
    assert.deepEqual(told, [5_000]);
  });
});

describe('admitJob: a steward whose dial fails', () => {
  const job = { address: 'sha256:' + '11'.repeat(32), bytes: new Uint8Array([1]), record: { deadline: 0 } };
  const admit = (fail: C0Error) => {
    const clock = fakeClock();
    job.record.deadline = clock() + 60_000;
    return admitJob({ request: async () => Promise.reject(fail), job: job as never, spec: { entitlement: 'team-a' } as never, clock, onQueued: () => {}, overlay: 'acme', steward: 'did:key:z6MkS' });
  };

  test('not reached: STEWARD_UNREACHABLE asking whether it runs', async () => {
    await assert.rejects(admit(new C0Error('NET_DIAL_FAILED', 'cannot open /c0mpute/steward/1 to 12D3…: connection refused', { detail: { name: 'Error' } })), (e: C0Error) => e.code === 'STEWARD_UNREACHABLE' && /is it running, and reachable/.test(e.message));
  });

  test('reached, but its node serves no steward protocol (the role taken off): STEWARD_UNREACHABLE saying so (QA witness pass, finding 5)', async () => {
    await assert.rejects(
      // as protocols.ts openError throws it: connected, the protocol not spoken
      admit(new C0Error('NET_PROTOCOL_UNSUPPORTED', 'cannot open /c0mpute/steward/1 to 12D3…: the peer does not speak it (Protocol selection failed - could not negotiate /c0mpute/steward/1)', { detail: { name: 'UnsupportedProtocolError' } })),
      (e: C0Error) => e.code === 'STEWARD_UNREACHABLE' && /its node answers but does not run the steward role/.test(e.message) && !/is it running/.test(e.message),
    );
  });
});
