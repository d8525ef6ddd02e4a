/**
 * A dispatch names the member that runs the job; the member must be on the roster the dispatch names (an honest
 * coordinator picks with selectMember over that roster's active members). A hostile member's dispatches naming
 * made-up DIDs are refused when it sends them (`op: trail`), and whatever a trail already holds (kept before this
 * check) loads, is recovered, and neither adds a c0mpute_pool_member_outcomes_total series per made-up DID nor makes
 * recovery dial one. Three members with their own stores (member-rig.ts).
 */
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { seal } from '../../../src/records/envelope.js';
import { T } from '../../../src/records/kinds.js';
import { didFromPublicKey } from '../../../src/records/did.js';
import { signerFrom } from '../records/fixtures.js';
import { Rig, MEMBERS, keyOf, clock, job, offer, r } from './member-rig.js';

const rig = new Rig();
const madeUp = (i: number): string => didFromPublicKey(signerFrom(200 + i).publicKey);

async function outcomeMembers(reg: Registry): Promise<string[]> {
  const m = reg.getSingleMetric('c0mpute_pool_member_outcomes_total');
  return m ? [...new Set((await m.get()).values.map((v) => String(v.labels.member)))].sort() : [];
}

describe('a dispatch’s member is on its roster', () => {
  after(() => rig.close());

  test('op trail and op run refuse a dispatch naming a member off the roster (POOL_DISPATCH_MISMATCH); one naming a member on it is kept', async () => {
    const w = await rig.world('member-on-roster');
    const A = w.members.get(MEMBERS[0]!)!.elected().coordinator!;
    const H = MEMBERS.find((m) => m !== A)!;
    const a = w.members.get(A)!;
    const { job: j, input } = job();
    const o = offer(j, H);
    const bad = seal(T.poolDispatch, { pool: a.pool, roster: r.address, job: j.address, offer: o.address, member: madeUp(0), coordinator: H, epoch: 0, issuedAt: clock() }, keyOf(H));
    const ans = await a.serve({ op: 'trail', dispatch: bad.bytes, job: j.bytes, offer: o.bytes }, H);
    assert.equal(ans.code, 'POOL_DISPATCH_MISMATCH', JSON.stringify(ans));
    assert.equal((await a.serve({ op: 'run', dispatch: bad.bytes, job: j.bytes, offer: o.bytes, input }, H)).code, 'POOL_DISPATCH_MISMATCH');
    const good = seal(T.poolDispatch, { pool: a.pool, roster: r.address, job: j.address, offer: o.address, member: A, coordinator: H, epoch: 0, issuedAt: clock() }, keyOf(H));
    assert.equal((await a.serve({ op: 'trail', dispatch: good.bytes, job: j.bytes, offer: o.bytes }, H)).ok, 'yes');
  });

  test('dispatches to made-up members already in a trail load and are failed as lost, counted under `other`, and no made-up DID is dialled', async () => {
    const regs = new Map<string, Registry>();
    const dialled = new Set<string>();
    const w = await rig.world('member-label', {
      extra: (did) => {
        const reg = new Registry();
        regs.set(did, reg);
        return { registry: reg };
      },
      intercept: async (_from, to) => {
        dialled.add(to);
        return undefined;
      },
    });
    const A = w.members.get(MEMBERS[0]!)!.elected().coordinator!;
    const H = MEMBERS.find((m) => m !== A)!;
    const a = w.members.get(A)!;
    const [trail] = a.historyStores();
    const fakes: string[] = [];
    for (let i = 0; i < 12; i++) {
      const { job: j } = job({ deadline: clock() + 5_000 });
      const o = offer(j, H);
      fakes.push(madeUp(i));
      const d = seal(T.poolDispatch, { pool: a.pool, roster: r.address, job: j.address, offer: o.address, member: fakes[i]!, coordinator: H, epoch: 0, issuedAt: clock() }, keyOf(H));
      // as a build without the roster check kept it
      await trail.record(j.address, H, { dispatch: d.bytes, job: j.bytes, offer: o.bytes }, j.record.deadline, undefined, r);
    }
    w.down.add(H);
    clock.advance(60_000);
    for (let t = 0; t < 20; t++) await a.recover();
    const members = await outcomeMembers(regs.get(A)!);
    assert.deepEqual(members, ['other'], `one series for every member off the roster, got ${members.length}`);
    const lost = (await regs.get(A)!.getSingleMetric('c0mpute_pool_member_outcomes_total')!.get()).values.reduce((n, v) => n + v.value, 0);
    assert.equal(lost, 12, 'each dispatch failed as lost once');
    for (const f of fakes) assert.equal(dialled.has(f), false, `recovery dialled ${f}, which is on no roster`);
  });
});
