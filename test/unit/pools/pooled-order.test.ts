/**
 * A pooled open order (docs/pools.md "Dispatch recorded before the call"; docs/matching.md "A pooled claim"): the
 * record the buyer took is the coordinator's `c0mpute.claim/1`, not an offer, and its dispatch carries it where an
 * auction's carries the offer. The other members keep such a dispatch in their trail and run it when chosen; a
 * coordinator killed while it runs one starts again and closes its own dispatch POOL_COORDINATOR_LOST for the claim;
 * and a trail entry that does not open never stops a start (QA qaOrd F1: RECORD_WRONG_TYPE, exit 3 at every start).
 * Three members with their own LevelDB stores (member-rig.ts), the restart a fresh PoolMember over the same store.
 */
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { seal, type Opened } from '../../../src/records/envelope.js';
import { hashHex } from '../../../src/records/address.js';
import { T, type Claim, type Job, type Offer } from '../../../src/records/kinds.js';
import { selectMember } from '../../../src/pools/choice.js';
import type { PoolMemberDeps } from '../../../src/roles/pool-member/member.js';
import { Rig, MEMBERS, buyer, clock, codeOfAsync, ctx, finish, keyOf, tallyOf, type World } from './member-rig.js';
import { POOL } from './helpers.js';

const rig = new Rig();
const A = MEMBERS[0]!;

/** An open bid (`order: {}`) whose chosen member (selectMember over MEMBERS) passes `chosen`. */
function order(chosen: (m: string) => boolean = () => true): { job: Opened<Job>; input: Uint8Array } {
  for (;;) {
    const input = new Uint8Array(randomBytes(16));
    const now = clock();
    const job = seal(T.job, { workload: 'builtin.sha256', requirements: {}, maxPrice: { amount: '0.009', currency: 'USD' }, announcedAt: now, deadline: now + 120_000, timeoutMs: 60_000, input: { hash: hashHex(input), size: input.length }, inputSealed: 'no', nonce: new Uint8Array(randomBytes(8)), order: {} }, buyer) as Opened<Job>;
    if (chosen(selectMember(job.address, MEMBERS))) return { job, input };
  }
}

/** `by`'s claim on `job`, typed as the offer it stands for (the provider role hands it to the pool so: src/records/taken.ts). */
function claim(job: Opened<Job>, by: string): Opened<Offer> {
  return seal(T.claim, { job: job.address, advert: 'sha256:' + 'a'.repeat(64), price: { amount: '0.009', currency: 'USD' }, issuedAt: clock() } satisfies Claim, keyOf(by)) as unknown as Opened<Offer>;
}

/** A coordinator killed right after its dispatch is durable and sent, before the call (the CLI's failpoint exits there). */
/** The dispatches `did` holds open (its status's `pending`). */
const pending = async (w: World, did: string): Promise<number> => ((await w.members.get(did)!.status()) as { pending: number }).pending;

const killedAfterDispatch = (): Partial<PoolMemberDeps> => ({
  failpoint: (name) => {
    if (name === 'pool.after-dispatch') throw new Error('killed at the failpoint');
  },
});

describe('a pooled open order: the dispatch carries the claim', () => {
  after(() => rig.close());

  test('dispatched to another member: every member keeps the dispatch, the chosen one runs it, the close settles everywhere', async () => {
    const w = await rig.world('order-elsewhere');
    const a = w.members.get(A)!;
    const { job, input } = order((m) => m !== A);
    const c = claim(job, A);
    const out = await a.run(job, c, ctx(input));
    assert.ok(out.length > 0, 'the output came back');
    const chosen = selectMember(job.address, MEMBERS);
    assert.equal(w.runs.get(chosen), 1, 'the chosen member ran it');
    for (const m of MEMBERS) assert.equal(await pending(w, m), 1, `${m.slice(-6)} keeps the dispatch`);
    const rec = await finish(w, a, job, c, A, Promise.resolve(out));
    assert.equal(rec.record.offer, c.address, 'the receipt names the claim');
    for (const m of MEMBERS) {
      const t = await tallyOf(w.members.get(m)!);
      assert.deepEqual([await pending(w, m), t.completed, t.failed], [0, 1, 0], `${m.slice(-6)} counts it completed`);
    }
  });

  test('the coordinator killed after its dispatch: it starts again and closes its own dispatch POOL_COORDINATOR_LOST, for the claim', async () => {
    const w = await rig.world('order-killed', { extra: (did) => (did === A ? killedAfterDispatch() : {}) });
    const a = w.members.get(A)!;
    const { job, input } = order((m) => m !== A);
    const c = claim(job, A);
    assert.equal(await codeOfAsync(a.run(job, c, ctx(input))), 'Error: killed at the failpoint');
    a.stop();
    clock.advance(1000);
    const a2 = await rig.addMember(w, 'order-killed', A);
    await a2.start();
    a2.stop();
    const lost = w.published.map((p) => p.rec.record);
    assert.deepEqual(lost.map((r) => [r.status, r.failure?.code, r.offer, r.provider, r.job]), [['failed', 'POOL_COORDINATOR_LOST', c.address, POOL, job.address]]);
    assert.equal(await a2.recover(), 0, 'nothing left pending');
    for (const m of MEMBERS) {
      const t = await tallyOf(w.members.get(m)!);
      assert.deepEqual([await pending(w, m), t.failed], [0, 1], `${m.slice(-6)} holds the dispatch closed as lost`);
    }
  });

  test('a trail entry that does not open is skipped with its code at every start and tick; the other entries are recovered', async () => {
    const lines: Array<{ level: number; msg: string; code?: string; job?: string }> = [];
    const log = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s) as (typeof lines)[number]) });
    const w = await rig.world('order-unreadable', { extra: (did) => (did === A ? killedAfterDispatch() : {}) });
    const a = w.members.get(A)!;
    // An auction's dispatch kept with a claim where its offer belongs (no build writes it: a damaged or foreign entry).
    const bad = order((m) => m !== A);
    const { order: _order, ...plain } = bad.job.record;
    const aj = seal(T.job, plain, buyer) as Opened<Job>;
    await codeOfAsync(a.run(aj, claim(aj, A), ctx(bad.input)));
    // And a good one beside it: a pooled order's dispatch.
    const good = order((m) => m !== A);
    const c = claim(good.job, A);
    await codeOfAsync(a.run(good.job, c, ctx(good.input)));
    a.stop();
    clock.advance(1000);
    const a2 = await rig.addMember(w, 'order-unreadable', A, { extra: () => ({ log }) });
    await a2.start();
    a2.stop();
    assert.deepEqual(w.published.map((p) => [p.rec.record.job, p.rec.record.failure?.code]), [[good.job.address, 'POOL_COORDINATOR_LOST']], 'the good entry is closed');
    const warned = lines.filter((l) => l.level === 40 && l.job === aj.address);
    assert.equal(warned.length, 1);
    assert.equal(warned[0]!.code, 'RECORD_WRONG_TYPE');
    assert.match(warned[0]!.msg, /does not open; it is skipped/);
    // Skipped at every tick, said once.
    assert.equal(await a2.recover(), 0);
    assert.equal(lines.filter((l) => l.level === 40 && l.job === aj.address).length, 1);
  });
});
