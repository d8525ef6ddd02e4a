/**
 * The members' clocks and the election (docs/pools.md "Clocks and the election"; QA qaPnet F2): a member whose wall
 * clock was 45 s ahead was still elected in its epochs, and a buyer dropped every offer it made there
 * (RECORD_FROM_FUTURE), with nothing said anywhere. Now each member estimates the others' clocks from its pings, and a
 * member further than the buyers' clock-skew window from the pool's (the median of the live members') is elected by
 * nobody, itself included; both sides warn once, `status` names it with its offset, and a gauge says it.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { clockSample, judgeClocks } from '../../../src/pools/clock.js';
import { coordinatorRanking } from '../../../src/pools/choice.js';
import { clockLines } from '../../../src/cli/commands/pool-provider.js';
import { short } from '../../../src/cli/short.js';
import { Registry } from 'prom-client';
import { Rig, MEMBERS, clock } from './member-rig.js';

const W = 30_000;

describe('judgeClocks', () => {
  it('a sample is the callee’s clock against this member’s at the middle of the round trip', () => {
    // sent at 1000 by our clock, answered 200 ms later (round trip); the callee said 46 100: it is 45 000 ahead
    assert.deepEqual(clockSample(1000, 200, 46_100), { offsetMs: 45_000, rttMs: 200 });
  });

  it('one of three 45 s ahead is skewed, and every member — the skewed one too — finds the same', () => {
    const views = {
      a: new Map([['a', 0], ['b', 45_000], ['c', 12]]),
      b: new Map([['a', -45_000], ['b', 0], ['c', -44_990]]),
      c: new Map([['a', -11], ['b', 44_995], ['c', 0]]),
    };
    for (const [who, v] of Object.entries(views)) {
      const j = judgeClocks(v, W);
      assert.deepEqual([...j.skewed], ['b'], who);
      assert.equal(j.split, false, who);
      assert.ok(Math.abs(j.deviation.get('b')! - 45_000) < 20, `${who}: b is ~45 s ahead of the pool's`);
    }
  });

  it('random clocks: every member’s view (with each estimate off by up to 50 ms) leaves out the same members, unless one is within 100 ms of the window', () => {
    let seed = 7;
    const rnd = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);
    for (let round = 0; round < 500; round++) {
      const n = 3 + Math.floor(rnd() * 5);
      const ids = Array.from({ length: n }, (_, i) => `m${i}`);
      const truth = ids.map(() => (rnd() < 0.3 ? (rnd() - 0.5) * 200_000 : (rnd() - 0.5) * 2000));
      const judged = ids.map((_, me) => judgeClocks(new Map(ids.map((id, k) => [id, k === me ? 0 : truth[k]! - truth[me]! + (rnd() - 0.5) * 100])), W));
      const exact = judgeClocks(new Map(ids.map((id, k) => [id, truth[k]!])), W);
      const borderline = [...exact.deviation.values()].some((d) => Math.abs(Math.abs(d) - W) < 100) || [...exact.deviation.values()].some((d, i, a) => a.some((e) => Math.abs(Math.abs(d - e) - W) < 100));
      if (borderline) continue;
      for (const j of judged) {
        assert.deepEqual([...j.skewed].sort(), [...exact.skewed].sort());
        assert.equal(j.split, exact.split);
        // the election among the rest is then the same at every member
        assert.deepEqual(coordinatorRanking('did:key:zPool', 7, ids.filter((m) => !j.skewed.has(m))), coordinatorRanking('did:key:zPool', 7, ids.filter((m) => !exact.skewed.has(m))));
      }
    }
  });

  it('two members cannot tell whose clock is wrong: nobody is left out, and beyond the window they are a split', () => {
    assert.deepEqual(judgeClocks(new Map([['a', 0], ['b', 20_000]]), W), { deviation: new Map([['a', -10_000], ['b', 10_000]]), skewed: new Set(), split: false });
    const far = judgeClocks(new Map([['a', 0], ['b', 45_000]]), W);
    assert.deepEqual([...far.skewed], []);
    assert.equal(far.split, true);
    // three clocks each 45 s from the next: the middle one is the pool's; the other two are left out
    const spread = judgeClocks(new Map([['a', 0], ['b', 45_000], ['c', 90_000]]), W);
    assert.deepEqual([...spread.skewed], ['a', 'c']);
    assert.equal(spread.split, false);
    // two against two, 100 s apart: every clock is 50 s from the pool's, so nobody can be singled out: a split
    const halves = judgeClocks(new Map([['a', 0], ['b', 0], ['c', 100_000], ['d', 100_000]]), W);
    assert.deepEqual([...halves.skewed], []);
    assert.equal(halves.split, true);
    // a member whose clock is not known (a build before `now`) is neither counted nor left out
    assert.deepEqual(judgeClocks(new Map([['a', 0]]), W), { deviation: new Map([['a', 0]]), skewed: new Set(), split: false });
  });
});

describe('members with one clock 45 s ahead', () => {
  const rig = new Rig();
  after(() => rig.close());

  it('the others never elect it, nor does it itself; each warns once, status names it with its offset, the gauge says it', async () => {
    const [A, B, C] = MEMBERS as [string, string, string];
    const skew = 45_000;
    const logs = new Map<string, Array<{ level: number; msg: string; code?: string; member?: string; offsetMs?: number }>>();
    const registries = new Map<string, Registry>();
    const w = await rig.world('skew', {
      extra: (did) => {
        const lines: Array<{ level: number; msg: string }> = [];
        logs.set(did, lines);
        const registry = new Registry();
        registries.set(did, registry);
        return { log: pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s) as { level: number; msg: string }) }), registry, ...(did === B ? { clock: () => clock() + skew } : {}) };
      },
    });
    // before any ping round carried a clock (the rig's first start), B could be elected; after a round it is not
    for (const m of w.members.values()) {
      await m.start();
      m.stop();
    }
    const [a, b, c] = [A, B, C].map((d) => w.members.get(d)!);
    for (let i = 0; i < 40; i++) {
      for (const m of [a, b, c]) assert.notEqual(m!.elected().coordinator, B, `epoch step ${i}: nobody elects the skewed member`);
      assert.equal(a!.elected().coordinator, c!.elected().coordinator, 'the members that agree elect the same one');
      assert.equal(b!.electable().includes(B), false, 'the skewed member leaves itself out');
      clock.advance(5000);
      for (const m of [a, b, c]) {
        await m!.start();
        m!.stop();
      }
    }
    // status, as the CLI reads it
    for (const m of [a, b, c]) {
      const s = (await m!.status()) as { me: string; nextCoordinator?: string; clock: { windowMs: number }; members: Array<{ did: string; clock?: { offsetMs: number; skewed?: boolean } }> };
      assert.notEqual(s.nextCoordinator, B);
      assert.equal(s.clock.windowMs, 30_000);
      assert.deepEqual(s.members.find((x) => x.did === B)!.clock, { offsetMs: skew, skewed: true });
      assert.deepEqual(s.members.find((x) => x.did === A)!.clock, { offsetMs: 0 });
      assert.deepEqual(clockLines(s), [`⚠ clock of ${short(B)}${s.me === B ? ' (this member)' : ''} is 45.0 s ahead of the pool's (buyers allow 30 s): it is not elected coordinator; fix its clock (NTP) [POOL_MEMBER_CLOCK_SKEWED]`]);
    }
    // warned once each, on both sides: the others name B, B says it is its own clock
    for (const [did, lines] of logs) {
      const warned = lines.filter((l) => l.code === 'POOL_MEMBER_CLOCK_SKEWED');
      assert.equal(warned.length, 1, `${short(did)} warns once: ${JSON.stringify(warned)}`);
      assert.equal(warned[0]!.member, B);
      assert.equal(warned[0]!.offsetMs, skew);
      assert.match(warned[0]!.msg, did === B ? /this member's clock is 45\.0 s ahead of the pool's.*fix this machine's clock \(NTP\)/ : /clock is 45\.0 s ahead of the pool's.*fix its clock \(NTP\)/);
    }
    const metrics = await registries.get(A)!.metrics();
    assert.match(metrics, new RegExp(`c0mpute_pool_member_clock_skewed\\{member="${B}"\\} 1`));
    assert.match(metrics, new RegExp(`c0mpute_pool_member_clock_offset_ms\\{member="${B}"\\} ${skew}`));
    assert.match(metrics, new RegExp(`c0mpute_pool_member_clock_skewed\\{member="${A}"\\} 0`));
  });
});
