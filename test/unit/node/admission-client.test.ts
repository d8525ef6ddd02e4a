/** The buyer's admit client (src/roles/admission-client.ts): asks the steward again, with backoff, when a queued claim's stream fails. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import { requestAdmission } from '../../../src/roles/admission-client.js';
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

  test('no verdict and never queued: STEWARD_NO_ANSWER at once; a failure before queued is rethrown', async () => {
    const clock = fakeClock();
    const base = { deadline: clock() + 60_000, clock, onQueued: () => {}, sleep: async () => assert.fail('no retry') };
    await assert.rejects(requestAdmission({ ...base, ask: scripted([[]]).ask }), (e: unknown) => e instanceof C0Error && e.code === 'STEWARD_NO_ANSWER');
    await assert.rejects(requestAdmission({ ...base, ask: scripted([{ frames: [], fail: broken() }]).ask }), (e: unknown) => e instanceof C0Error && e.code === 'NET_STREAM_FAILED');
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
});
