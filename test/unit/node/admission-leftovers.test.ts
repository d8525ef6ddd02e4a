/**
 * The start's withdraws of the claims an earlier process of a buyer left (src/roles/admission-client.ts leftoverClaims,
 * withdrawLeftovers; review rvC C1): which claims, each with its receipts; one at a time; a steward not reached tried
 * again with a doubling wait up to a minute while a deadline is ahead; an error it answered final; the node's stop ends it.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import { Ed25519Signer, didFromPublicKey, seal, T, type Acceptance, type Opened, type Receipt } from '../../../src/records/index.js';
import { accept, buyer, buyerKey, held, job, memberJob, now, provider, receipt } from './leftover-fixtures.js';
import { GANG_DEADLINE_SLACK_MS, GANG_LEFTOVER_RECEIPTS, LEFTOVER_RECEIPTS, leftoverClaims, withdrawLeftovers, type LeftoverClaim } from '../../../src/roles/admission-client.js';
import { fakeClock } from '../../../src/util/clock.js';
import type { Logger } from '../../../src/util/log.js';


describe('leftoverClaims', () => {
  test('the live jobs that did not end completed and accepted, each with its receipts naming this buyer', () => {
    const h = held();
    const c = leftoverClaims(h.jobs, h.evidence, buyer, now);
    assert.deepEqual(c, [
      { claim: h.broken.address, deadline: h.broken.record.deadline, receipts: [h.gone.bytes] },
      { claim: h.silent.address, deadline: h.silent.record.deadline },
    ]);
  });

  test('a completed receipt this buyer disputed does not end the job: its claim is withdrawn', () => {
    const j = job();
    const r = receipt(j, 'completed');
    const disputed = seal(T.acceptance, { receipt: r.address, verdict: 'disputed', reason: 'output hash mismatch', signedAt: now }, buyerKey) as Opened<Acceptance>;
    const c = leftoverClaims([j], { receiptsOf: () => [r], acceptancesOf: () => [disputed] }, buyer, now);
    assert.deepEqual(c.map((x) => x.claim), [j.address]);
  });
});

describe('leftoverClaims of a gang (a buyer killed mid-training)', () => {
  const gang = 'sha256:' + '9a'.repeat(32);
  /** What the node's store answers: receipts by job, and this buyer's acceptances. */
  const evidenceOf = (receipts: Array<Opened<Receipt>>, accepted: Array<Opened<Receipt>> = []) => {
    const acc = new Map(accepted.map((r) => [r.address, [accept(r)]]));
    return { receiptsOf: (j: string) => receipts.filter((r) => r.record.job === j), acceptancesOf: (r: string) => acc.get(r) ?? [] };
  };

  test("the gang's claim once, for all its member jobs, with every member's receipts; not the member jobs' addresses", () => {
    // before: each member job's address was withdrawn as if it were a claim (the steward answers `no`: it holds none),
    // and the gang's claim held its team's reservation and devices to its deadline (up to 24 h)
    const m0 = memberJob(gang, 0, now + 600_000);
    const m1 = memberJob(gang, 1, now + 900_000);
    const m2 = memberJob(gang, 2, now + 600_000);
    const single = job();
    const gone0 = receipt(m0, 'failed');
    const ok2 = receipt(m2, 'completed');
    const c = leftoverClaims([m0, single, m1, m2], evidenceOf([gone0, ok2], [ok2]), buyer, now);
    assert.deepEqual(c, [
      // in the place of its first member job; the latest member deadline + the slack (the gang's own is not kept here)
      { claim: gang, deadline: now + 900_000 + GANG_DEADLINE_SLACK_MS, receipts: [gone0.bytes, ok2.bytes], gang: 3 },
      { claim: single.address, deadline: single.record.deadline },
    ]);
  });

  test('a gang whose every member job held ended completed and accepted is not withdrawn (the steward released it on their receipts)', () => {
    const ms = [0, 1].map((i) => memberJob(gang, i));
    const oks = ms.map((m) => receipt(m, 'completed'));
    assert.deepEqual(leftoverClaims(ms, evidenceOf(oks, oks), buyer, now), []);
    // one disputed: the gang is withdrawn
    assert.deepEqual(leftoverClaims(ms, evidenceOf(oks, [oks[0]!]), buyer, now).map((x) => [x.claim, x.gang]), [[gang, 2]]);
  });

  test("receipts one member at a time, a member's allowed provider's first, so the first GANG_LEFTOVER_RECEIPTS cover every member", () => {
    const other = Ed25519Signer.generate();
    const m0 = memberJob(gang, 0);
    const m1 = memberJob(gang, 1);
    // member 0's job holds a receipt from a key its allowlist does not name (anyone can sign one: never charged), then its provider's
    const stray = receipt(m0, 'failed', other);
    const real0 = receipt(m0, 'failed');
    const real1 = receipt(m1, 'failed');
    const c = leftoverClaims([m0, m1], evidenceOf([stray, real0, real1]), buyer, now);
    assert.deepEqual(c[0]!.receipts, [real0.bytes, real1.bytes, stray.bytes]);
    assert.notEqual(didFromPublicKey(other.publicKey), provider);
  });
});

describe('withdrawLeftovers', () => {
  const claims = (n: number, deadline = now + 600_000): LeftoverClaim[] => Array.from({ length: n }, (_, i) => ({ claim: `sha256:${String(i).padStart(64, '0')}`, deadline }));

  test('a steward not reached yet (two failures in a row) is tried again with a doubling wait, from the claim the sweep stopped at', async () => {
    const clock = fakeClock(now);
    const waits: number[] = [];
    const sent: string[] = [];
    let down = 2;
    const r = await withdrawLeftovers({
      claims: claims(3),
      clock,
      sleep: async (ms) => {
        waits.push(ms);
        clock.advance(ms);
      },
      request: async (frames) => {
        const f = frames[0] as { job: string };
        if (sent.length === 1 && down-- > 0) throw new C0Error('NET_DIAL_FAILED', 'cannot dial the steward');
        sent.push(f.job);
        return [{ t: 'withdrawn', released: sent.length === 2 ? 'no' : 'yes' }];
      },
    });
    // the second claim failed, then the third (two in a row: not reached): the next sweep takes both, in order
    assert.deepEqual(waits, [2_000]);
    assert.deepEqual(sent, claims(3).map((c) => c.claim));
    assert.deepEqual(r, { released: { yes: 2, no: 1 }, refused: 0, unanswered: 0 });
  });

  test('an error the steward answered is final for that claim; the others are still withdrawn', async () => {
    const sent: string[] = [];
    const r = await withdrawLeftovers({
      claims: claims(2),
      clock: () => now,
      sleep: async () => assert.fail('no retry'),
      request: async (frames) => {
        sent.push((frames[0] as { job: string }).job);
        if (sent.length === 1) throw new C0Error('STEWARD_NOT_BUYER', 'only the job’s buyer may withdraw it', { detail: { remote: true } });
        return [{ t: 'withdrawn', released: 'yes' }];
      },
    });
    assert.equal(sent.length, 2);
    assert.deepEqual(r, { released: { yes: 1 }, refused: 1, unanswered: 0 });
  });

  test('a steward not reached for over a minute (it came up after its buyers) still gets the withdraws (second-round review s42 R1 F1)', async () => {
    // before: six sweeps, ~64 s, then every claim was held to its deadline (up to 90 days) though the steward came back at 70 s
    const clock = fakeClock(now);
    const waits: number[] = [];
    const warned: string[] = [];
    const log = { info() {}, debug() {}, warn: (_o: unknown, m: string) => void warned.push(m) } as unknown as Logger;
    const r = await withdrawLeftovers({
      claims: claims(3),
      clock,
      log,
      sleep: async (ms) => {
        waits.push(ms);
        clock.advance(ms);
      },
      request: async () => {
        if (clock() - now < 70_000) throw new C0Error('NET_DIAL_FAILED', 'cannot dial the steward');
        return [{ t: 'withdrawn', released: 'yes' }];
      },
    });
    assert.deepEqual(waits, [2_000, 4_000, 8_000, 16_000, 32_000, 60_000]);
    assert.deepEqual(r, { released: { yes: 3 }, refused: 0, unanswered: 0 });
    assert.equal(warned.length, 1, 'warned once, at the sixth sweep');
    assert.match(warned[0]!, /trying again every minute/);
  });

  test('a steward never reached is asked a minute apart until the last deadline; a claim past its deadline is left to the steward', async () => {
    const clock = fakeClock(now);
    let asked = 0;
    const waits: number[] = [];
    const r = await withdrawLeftovers({
      claims: [...claims(2, now + 300_000), { claim: 'sha256:' + 'ee'.repeat(32), deadline: now + 3_000 }],
      clock,
      tries: 4,
      sleep: async (ms) => {
        waits.push(ms);
        clock.advance(ms);
      },
      request: async () => {
        asked++;
        throw new C0Error('NET_DIAL_FAILED', 'cannot dial the steward');
      },
    });
    // 2+4+8+16+32+60+60+60+60 = 302 s: the sweep after the last deadline asks nothing and ends
    assert.deepEqual(waits, [2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000, 60_000, 60_000]);
    // two asks a sweep while two claims are left (two failures in a row: the rest would fail alike), one after the third's deadline
    assert.equal(asked, 9 * 2, 'two asks per sweep');
    // none answered: their deadlines passed while the steward was not reached
    assert.deepEqual(r, { released: {}, refused: 0, unanswered: 3 });
  });

  /** withdrawLeftovers of `n` claims against a steward whose withdraws of the claims at `stuck` time out every time; what it sent. */
  const withStuck = async (n: number, stuck: number[]) => {
    const clock = fakeClock(now);
    const c = claims(n, now + 300_000);
    const bad = new Set(stuck.map((i) => c[i]!.claim));
    const sent: string[] = [];
    const r = await withdrawLeftovers({
      claims: c,
      clock,
      sleep: async (ms) => clock.advance(ms),
      request: async (frames) => {
        const job = (frames[0] as { job: string }).job;
        sent.push(job);
        if (bad.has(job)) throw new C0Error('NET_DEADLINE', 'the withdraw timed out');
        return [{ t: 'withdrawn', released: 'yes' }];
      },
    });
    return { r, c, sent };
  };

  test('one claim whose withdraw fails every time does not hold back the claims behind it (second-round review s42 R6 F3)', async () => {
    // before: its transport failure ended each sweep, and every claim behind it was left unsent to its deadline
    const { r, c, sent } = await withStuck(5, [0]);
    assert.deepEqual(sent.slice(0, 5), c.map((x) => x.claim), 'the first sweep sends them all');
    assert.ok(sent.slice(5).every((j) => j === c[0]!.claim), 'later sweeps only the one that failed');
    assert.deepEqual(r, { released: { yes: 4 }, refused: 0, unanswered: 1 });
  });

  test('two claims side by side whose withdraws fail every time do not hold back the claims behind them (second-round review s42 R8 F4)', async () => {
    // before: they failed first in every sweep, two in a row, and the sweep ended: 0 of 300 released in 7 days
    const { r } = await withStuck(6, [0, 1]);
    assert.deepEqual(r, { released: { yes: 4 }, refused: 0, unanswered: 2 });
  });

  test("the node's stop ends it during a wait", async () => {
    const stop = new AbortController();
    let asked = 0;
    const r = await withdrawLeftovers({
      claims: claims(2),
      clock: () => now,
      signal: stop.signal,
      sleep: () => new Promise<void>(() => {}),
      request: async () => {
        asked++;
        setTimeout(() => stop.abort(), 10);
        throw new C0Error('NET_DIAL_FAILED', 'cannot dial the steward');
      },
    });
    assert.equal(asked, 2, 'two failures in a row end the sweep');
    assert.deepEqual(r, { released: {}, refused: 0, unanswered: 2 });
  });

  test("a gang claim's withdraw carries up to GANG_LEFTOVER_RECEIPTS receipts, a job's up to LEFTOVER_RECEIPTS", async () => {
    const many = Array.from({ length: 100 }, (_, i) => new Uint8Array([i]));
    const sent: Array<{ job: string; receipts?: Uint8Array[] }> = [];
    await withdrawLeftovers({
      claims: [
        { claim: 'sha256:' + '01'.repeat(32), deadline: now + 60_000, receipts: many, gang: 64 },
        { claim: 'sha256:' + '02'.repeat(32), deadline: now + 60_000, receipts: many },
      ],
      clock: () => now,
      request: async (frames) => {
        sent.push(frames[0] as never);
        return [{ t: 'withdrawn', released: 'yes' }];
      },
    });
    assert.deepEqual(sent.map((f) => f.receipts?.length), [GANG_LEFTOVER_RECEIPTS, LEFTOVER_RECEIPTS]);
  });
});
