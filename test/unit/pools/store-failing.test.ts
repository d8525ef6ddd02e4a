/**
 * A member whose database takes no writes (a full disk: docs/node.md "When a write fails") says so in its ping answers
 * (`storeFailing: 'yes'`), and the coordinator dispatches nothing to it (docs/pools.md "Member choice"): a job whose
 * hash picks it goes to another live member by the same formula; with none left the pool quotes nothing and a won job
 * is refused POOL_NO_ACTIVE_MEMBER. The field is optional on the wire: an answer without it (a build before it) is a
 * member whose store takes writes. Before, pings carried no store health and such a member was dispatched to (its run
 * then failed on its run note's write). Three members in one process (member-rig.ts); each one's store health is a
 * fake `storeProblem`.
 */
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { Registry } from 'prom-client';
import { C0Error } from '../../../src/errors.js';
import { closeDb, injectWriteFault, openDb, setRecovery, sub } from '../../../src/store/db.js';
import { silentLogger } from '../../../src/util/log.js';
import { startPoolMember } from '../../../src/roles/pool-member/wiring.js';
import { keyOf, membership } from './helpers.js';
import { selectMember } from '../../../src/pools/choice.js';
import { decodeCanonical, encodeCanonical, type CborValue } from '../../../src/records/cbor.js';
import type { PoolMemberDeps, PoolReply } from '../../../src/roles/pool-member/member.js';
import { Rig, MEMBERS, clock, ctx, job, offer, codeOfAsync, r } from './member-rig.js';

const rig = new Rig();
const NO_SPACE = 'IO error: /data/db/000003.log: No space left on device';

describe('a member whose store takes no writes', () => {
  after(() => rig.close());

  test('says so in its ping answer; the coordinator sends its jobs to another live member, again once its store is back', async () => {
    const failing = new Set<string>();
    const w = await rig.world('store-failing', { extra: (did) => ({ storeProblem: () => (failing.has(did) ? NO_SPACE : undefined) }) as Partial<PoolMemberDeps> });
    const A = w.members.get(MEMBERS[0]!)!.elected().coordinator!;
    const a = w.members.get(A)!;
    const X = MEMBERS.find((m) => m !== A)!;
    const pickingX = () => {
      let jj = job();
      while (selectMember(jj.job.address, MEMBERS) !== X) jj = job();
      return jj;
    };

    failing.add(X);
    // the coordinator's next round of pings hears it (in the member's answers)
    await a.start();
    a.stop();
    const jj = pickingX();
    assert.equal(a.mayQuote(jj.job), true, 'the other members can run it');
    assert.equal(await codeOfAsync(a.run(jj.job, offer(jj.job, A), ctx(jj.input))), 'none');
    assert.equal(w.runs.get(X) ?? 0, 0, 'nothing was dispatched to the member whose store takes no writes');
    const instead = selectMember(jj.job.address, MEMBERS.filter((m) => m !== X));
    assert.equal(w.runs.get(instead), 1, 'the same formula over the members left');
    const st = (await a.status()) as { members: Array<{ did: string; live: boolean; storeFailing?: boolean }> };
    const x = st.members.find((m) => m.did === X)!;
    assert.equal(x.live, true, 'still live: only member choice leaves it out');
    assert.equal(x.storeFailing, true, 'its status says why it gets no work');
    // its answer to a ping says so, and keeps saying so through the wire's encoding
    const answer = await w.members.get(X)!.serve({ op: 'ping', seq: r.record.seq }, A);
    assert.equal(answer.ok, 'yes');
    assert.equal((decodeCanonical(encodeCanonical(answer as CborValue)) as PoolReply).storeFailing, 'yes');

    // its store is back: its next answer says nothing of it, and it is chosen again
    failing.delete(X);
    await a.start();
    a.stop();
    const back = pickingX();
    assert.equal(await codeOfAsync(a.run(back.job, offer(back.job, A), ctx(back.input))), 'none');
    assert.equal(w.runs.get(X), 1);
  });

  test('an answer without the field (a member of an older build) is a member whose store takes writes', async () => {
    // the member answering as an older build (chosen once the coordinator is known)
    const old: { did?: string } = {};
    const w = await rig.world('store-old', {
      // answered as a build before the field answers a ping: ok and its seq, nothing more
      intercept: async (_from, to, frame) => (to === old.did && frame.op === 'ping' ? { ok: 'yes', seq: r.record.seq } : undefined),
    });
    const A = w.members.get(MEMBERS[0]!)!.elected().coordinator!;
    const a = w.members.get(A)!;
    const X = (old.did = MEMBERS.find((m) => m !== A)!);
    await a.start();
    a.stop();
    let jj = job();
    while (selectMember(jj.job.address, MEMBERS) !== X) jj = job();
    assert.equal(await codeOfAsync(a.run(jj.job, offer(jj.job, A), ctx(jj.input))), 'none');
    assert.equal(w.runs.get(X), 1, 'dispatched to it as before');
  });

  test('no live member whose store takes writes (the coordinator’s own included): no quote; a won job is refused POOL_NO_ACTIVE_MEMBER', async () => {
    const failing = new Set<string>();
    const w = await rig.world('store-none', { extra: (did) => ({ storeProblem: () => (failing.has(did) ? NO_SPACE : undefined) }) as Partial<PoolMemberDeps> });
    const A = w.members.get(MEMBERS[0]!)!.elected().coordinator!;
    const a = w.members.get(A)!;
    for (const m of MEMBERS) failing.add(m);
    await a.start();
    a.stop();
    assert.equal(a.elected().coordinator, A, 'still live and elected: only member choice leaves them out');
    const jj = job();
    assert.equal(a.mayQuote(jj.job), false);
    assert.equal(await codeOfAsync(a.run(jj.job, offer(jj.job, A), ctx(jj.input))), 'POOL_NO_ACTIVE_MEMBER');
    assert.equal([...w.runs.values()].reduce((s, n) => s + n, 0), 0);
  });

  test('wired to a node (wiring.ts): the ping answer says so once a write to the node\'s database failed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'c0-pool-store-'));
    const db = await openDb(join(dir, 'db'));
    try {
      // the disk stays full for the test: the database is not reopened
      setRecovery(db, { probe: async () => false, firstDelayMs: 60_000, maxDelayMs: 60_000 });
      const me = MEMBERS[0]!;
      writeFileSync(join(dir, 'roster.cose'), r.bytes);
      writeFileSync(join(dir, 'membership.cose'), membership(r, keyOf(me)).bytes);
      const m = await startPoolMember({
        config: { roster: join(dir, 'roster.cose'), membership: join(dir, 'membership.cose'), maxInputBytes: 512 * 1024, sizeParam: 'maxTokens', maxSizeParam: 8192, memberTimeoutMs: 30_000, livenessMs: 1000, maxOpenDispatches: 64, maxKeptDispatches: 4096, maxKeptBytes: 16 * 1024 * 1024 },
        did: me,
        signer: keyOf(me),
        clock,
        log: silentLogger(),
        sub: (n) => sub(db, n),
        registry: new Registry(),
        executor: () => undefined,
        maxOutputBytes: 1 << 20,
        net: { request: async () => Promise.reject(new C0Error('NET_DIAL_FAILED', 'no network here')), handle: async () => {} },
        publishReceipt: async () => {},
      });
      const ping = () => m.serve({ op: 'ping', seq: r.record.seq }, MEMBERS[1]!);
      assert.equal((await ping()).storeFailing, undefined, 'a store that takes writes: the field is absent');
      injectWriteFault(db, Object.assign(new Error(NO_SPACE), { code: 'LEVEL_IO_ERROR' }));
      await assert.rejects(sub(db, 'x').put('k', new Uint8Array([1])));
      const answer = await ping();
      assert.equal(answer.ok, 'yes');
      assert.equal(answer.storeFailing, 'yes');
      m.stop();
    } finally {
      await closeDb(db);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
