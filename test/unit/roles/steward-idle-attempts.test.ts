/**
 * Idle reclamation across attempts (src/roles/steward-reclaim.ts, pool/1 §2.7, §7 item 26): a `usage` answer's
 * figures are the running attempt's own, so the steward compares samples within one attempt only. A claim that
 * fails over to another provider, or whose attempt restarts, starts its window afresh: it is never judged from a
 * difference across attempts (a negative window, or 0 µJ over a full window while it draws 40 W), and one claim whose
 * figures cannot be judged does not stop the others being judged in the same pass. Fakes: the ledger's open claims,
 * the accounts, a network answering each provider from the test's clock (the steward's monotonic clock as well).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Reclaimer, type ReclaimDeps } from '../../../src/roles/steward-reclaim.js';
import type { IdleVerdict } from '../../../src/pool/idle.js';
import { silentLogger } from '../../../src/util/log.js';

const WINDOW = 60_000;
const STEP = 15_000;
/** 1 W: below it a claim is idle. */
const THRESHOLD_UW = 1_000_000;

type Answer = (job: string) => Record<string, unknown>;

function rig(claims: Record<string, { provider: string; devices?: number }>) {
  const open = new Map(Object.entries(claims).map(([c, o]) => [c, { claim: c, entitlement: 'e', devices: o.devices ?? 1 }]));
  const providers = new Map(Object.entries(claims).map(([c, o]) => [c, o.provider]));
  const answers = new Map<string, Answer>();
  const stops: string[] = [];
  const clock = { now: 0 };
  const request = async (to: string, _p: string, frames: Array<{ op: string; job: string }>) => {
    const f = frames[0]!;
    if (f.op === 'stop') {
      stops.push(f.job);
      return [{ stopped: 'yes' }];
    }
    const a = answers.get(to);
    if (!a) throw new Error('no answer');
    return [a(f.job)];
  };
  const d = {
    // the steward's monotonic clock is the test's clock too: real time passes as the test says
    ports: { net: { request }, log: silentLogger(), clock: () => clock.now, monoClock: () => clock.now },
    ledger: { book: { open } },
    cfg: { idle: { windowMs: WINDOW, idleBelowMicrowatts: THRESHOLD_UW } },
    did: 'did:key:steward',
    accounts: { providerOf: (c: string) => providers.get(c), get: (c: string) => (providers.has(c) ? { claim: c } : undefined), onReceipt: async () => {} },
    stopped: () => false,
  } as unknown as ReclaimDeps;
  const reclaim = new Reclaimer(d);
  const verdicts = () => Object.fromEntries(reclaim.idleVerdicts().map((v) => [v.key, v])) as Record<string, IdleVerdict>;
  return { reclaim, answers, providers, stops, clock, verdicts };
}

/** An attempt started at `start` on the test clock drawing `watts`; `startedAt` reported unless `legacy`. */
function attempt(clock: { now: number }, start: number, watts: number, legacy = false): Answer {
  return () => ({ uj: Math.floor(watts * 1_000_000 * ((clock.now - start) / 1000)), grade: 'HwShunt', elapsedMs: clock.now - start, ...(legacy ? {} : { startedAt: start }) });
}

test('a claim failing over to another provider is judged on its new attempt alone: never idle while it draws 40 W', async () => {
  const r = rig({ X: { provider: 'P1' }, Y: { provider: 'P3' } });
  r.answers.set('P1', attempt(r.clock, 0, 100));
  r.answers.set('P3', attempt(r.clock, 0, 0)); // Y really is idle
  for (r.clock.now = STEP; r.clock.now <= 90_000; r.clock.now += STEP) await r.reclaim.idleTick();
  assert.equal(r.verdicts().X!.verdict, 'working');
  // failover at 90 s: attempt B on P2, 40 W, its figures counted from its own start
  r.providers.set('X', 'P2');
  r.answers.set('P2', attempt(r.clock, 90_000, 40));
  r.stops.length = 0;
  const seen: string[] = [];
  for (r.clock.now = 105_000; r.clock.now <= 300_000; r.clock.now += STEP) {
    await r.reclaim.idleTick(); // never throws
    const x = r.verdicts().X!;
    seen.push(x.verdict === 'no-verdict' ? x.reason : x.verdict);
    assert.ok(r.verdicts().Y, 'Y judged every pass');
    if (x.verdict === 'working') assert.ok(x.uj > 0 && x.observedMs >= WINDOW);
  }
  assert.ok(!r.stops.includes('X'), `X was never stopped (stops: ${r.stops.join(',')})`);
  assert.ok(r.stops.includes('Y'), 'the really idle claim is still reclaimed');
  // the new attempt has no verdict until it has run for the window itself, then it is working
  assert.deepEqual(seen.slice(0, 4), ['EMPTY_WINDOW', 'WINDOW_TOO_SHORT', 'WINDOW_TOO_SHORT', 'WINDOW_TOO_SHORT']);
  assert.ok(seen.slice(4).every((v) => v === 'working'), seen.join(','));
});

test('an attempt restarted on the same provider, which does not report startedAt, starts the window afresh', async () => {
  const r = rig({ X: { provider: 'P1' }, Y: { provider: 'P3' } });
  r.answers.set('P1', attempt(r.clock, 0, 100, true));
  r.answers.set('P3', attempt(r.clock, 0, 0, true));
  for (r.clock.now = STEP; r.clock.now <= 90_000; r.clock.now += STEP) await r.reclaim.idleTick();
  // the attempt restarts at 90 s on P1 at 40 W: its elapsed time and energy go back to 0
  r.answers.set('P1', attempt(r.clock, 90_000, 40, true));
  r.stops.length = 0;
  for (r.clock.now = 105_000; r.clock.now <= 300_000; r.clock.now += STEP) {
    await r.reclaim.idleTick();
    const x = r.verdicts().X!;
    assert.notEqual(x.verdict, 'idle', `X judged idle at ${r.clock.now}`);
  }
  assert.ok(!r.stops.includes('X'));
  assert.equal(r.verdicts().X!.verdict, 'working');
});

test('one claim whose figures cannot be judged does not stop the pass: the others are judged and reclaimed', async () => {
  // Z's book entry holds a device count idleVerdict refuses (POOL_IDLE_BAD_INPUT); Y is idle
  const r = rig({ Z: { provider: 'P1', devices: 1.5 }, Y: { provider: 'P3' } });
  r.answers.set('P1', attempt(r.clock, 0, 0));
  r.answers.set('P3', attempt(r.clock, 0, 0));
  for (r.clock.now = STEP; r.clock.now <= 90_000; r.clock.now += STEP) await r.reclaim.idleTick();
  assert.equal(r.verdicts().Y!.verdict, 'idle');
  assert.equal(r.verdicts().Z, undefined, 'no verdict is kept for figures that were not judged');
  assert.ok(r.stops.includes('Y') && !r.stops.includes('Z'));
});

test('a usage answer with malformed figures is skipped, not judged', async () => {
  const r = rig({ X: { provider: 'P1' } });
  r.answers.set('P1', () => ({ uj: -5, grade: 'HwShunt', elapsedMs: r.clock.now }));
  for (r.clock.now = STEP; r.clock.now <= 90_000; r.clock.now += STEP) await r.reclaim.idleTick();
  assert.equal(r.verdicts().X, undefined);
  assert.deepEqual(r.stops, []);
});

test('one idle pass at a time: ticks while a stalled provider holds the pass are skipped, and at the heal one answer per claim is judged, one stop sent', async () => {
  const r = rig({ X: { provider: 'P1' } });
  r.answers.set('P1', attempt(r.clock, 0, 0)); // idle: reclaimed once judged
  for (r.clock.now = STEP; r.clock.now <= 60_000; r.clock.now += STEP) await r.reclaim.idleTick();
  assert.equal(r.verdicts().X?.verdict, 'no-verdict'); // 45 s of samples: not yet a window
  // the link to P1 stalls: its next answer waits until the heal
  let heal!: () => void;
  const healed = new Promise<void>((res) => (heal = res));
  let asked = 0;
  const idle = r.answers.get('P1')!;
  r.answers.set('P1', (job) => {
    asked++;
    return idle(job);
  });
  const inner = (r.reclaim as unknown as { d: ReclaimDeps }).d.ports.net.request;
  (r.reclaim as unknown as { d: ReclaimDeps }).d.ports.net.request = (async (to: string, p: string, frames: Array<{ op: string; job: string }>, o: unknown) => {
    if (frames[0]!.op === 'usage') await healed;
    return inner(to, p, frames as never, o as never);
  }) as never;
  r.clock.now = 75_000;
  const first = r.reclaim.idleTick();
  // forty ticks while it waits (a sampleMs of 250 ms over 10 s)
  const more = Array.from({ length: 40 }, () => r.reclaim.idleTick());
  await new Promise((res) => setImmediate(res));
  heal();
  await Promise.all([first, ...more]);
  assert.equal(asked, 1, 'P1 was asked once, by the one pass');
  assert.deepEqual(r.stops, ['X'], 'one stop');
});

test('a provider whose wall clock steps forward between two samples (one timing usage on it, before this version) does not get working work reclaimed: the time is at most what the steward saw pass', async () => {
  const r = rig({ X: { provider: 'P1' }, Y: { provider: 'P3' } });
  // X draws 1.5 W, above the 1 W threshold, all along; its provider counts elapsedMs on a wall clock that steps +25 s at 65 s
  const STEP_AT = 65_000;
  const wallAhead = () => (r.clock.now >= STEP_AT ? 25_000 : 0);
  r.answers.set('P1', () => ({ uj: Math.floor(1.5 * 1_000 * r.clock.now), grade: 'HwShunt', elapsedMs: r.clock.now + wallAhead(), startedAt: 0 }));
  r.answers.set('P3', attempt(r.clock, 0, 0)); // Y really is idle
  const seen: string[] = [];
  for (r.clock.now = STEP; r.clock.now <= 150_000; r.clock.now += STEP) {
    await r.reclaim.idleTick();
    const x = r.verdicts().X!;
    seen.push(x.verdict === 'no-verdict' ? x.reason : x.verdict === 'nothing-held' ? x.verdict : `${x.verdict} ${x.observedMs}`);
  }
  // at 75 s the provider's 70 s over the window were 45 s: 67.5 J over 70 s read 0.96 W, idle
  assert.ok(!r.stops.includes('X'), `X, drawing 1.5 W, was never stopped (verdicts: ${seen.join(', ')})`);
  for (const v of seen) if (v.startsWith('working')) assert.ok(Number(v.split(' ')[1]) <= 60_000 + STEP, v);
  assert.equal(r.verdicts().X!.verdict, 'working');
  assert.ok(r.stops.includes('Y'), 'the really idle claim is still reclaimed');
});
