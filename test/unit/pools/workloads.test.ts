/**
 * Member choice counts only the members that run the job's workload (docs/pools.md "Member choice"): each member
 * says which it runs in its pings, so a pool whose members run different workloads never sends a job to one that
 * cannot run it, and quotes nothing no member runs (member-rig.ts).
 */
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { selectMember } from '../../../src/pools/choice.js';
import type { PoolMemberDeps } from '../../../src/roles/pool-member/member.js';
import { Rig, MEMBERS, clock, ctx, job, offer, codeOfAsync } from './member-rig.js';

const rig = new Rig();

describe('member choice and the workloads a member runs', () => {
  after(() => rig.close());

  test('a job whose hash picks a member without its workload goes to one that runs it; a workload no live member runs gets no quote', async () => {
    const probe = await rig.world('wl-probe');
    const A = probe.members.get(MEMBERS[0]!)!.elected().coordinator!;
    const X = MEMBERS.find((m) => m !== A)!;
    const runs = (did: string) => (did === X ? ['infer.other'] : ['builtin.sha256']);
    const w = await rig.world('wl', { workloads: runs, extra: (did) => ({ workloads: runs(did) }) as Partial<PoolMemberDeps> });
    const a = w.members.get(A)!;
    let jj = job();
    while (selectMember(jj.job.address, MEMBERS) !== X) jj = job();
    assert.equal(a.mayQuote(jj.job), true);
    assert.equal(await codeOfAsync(a.run(jj.job, offer(jj.job, A), ctx(jj.input))), 'none');
    assert.equal(w.runs.get(X) ?? 0, 0);
    assert.equal(w.runs.get(selectMember(jj.job.address, MEMBERS.filter((m) => m !== X))), 1, 'the same formula over the members that run it');
    // nobody runs it: no quote
    const only = (did: string) => (did === X ? ['builtin.sha256'] : ['infer.other']);
    const w2 = await rig.world('wl-none', { workloads: only, extra: (did) => ({ workloads: only(did) }) as Partial<PoolMemberDeps> });
    const a2 = w2.members.get(A)!;
    w2.down.add(X);
    clock.advance(5000);
    await a2.start();
    a2.stop();
    assert.equal(a2.mayQuote(job().job), false, 'its one member that runs it is not live');
  });
});
