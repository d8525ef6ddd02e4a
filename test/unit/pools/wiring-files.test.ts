/**
 * What startPoolMember (src/roles/pool-member/wiring.ts) does with the config's roster and membership files, over a
 * real LevelDB store and real files: a membership file overwritten with one that is not this node's place on the
 * config's roster (a `pool-provider join` refused after it wrote the file, before the fix) falls back to the pair of
 * that seq kept in the database, with a warning naming the file; with none kept, the error names both files; a file
 * that does not open is named too.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import pino from 'pino';
import { Registry } from 'prom-client';
import { C0Error } from '../../../src/errors.js';
import { closeDb, openDb, sub } from '../../../src/store/db.js';
import { fakeClock } from '../../../src/util/clock.js';
import { startPoolMember, type PoolWiringDeps } from '../../../src/roles/pool-member/wiring.js';
import { NOW } from '../records/fixtures.js';
import { MEMBERS, keyOf, membership, roster } from './helpers.js';

const [a] = MEMBERS as [string];
const clock = fakeClock(NOW);
const config = (dir: string) => ({ roster: join(dir, 'roster.cose'), membership: join(dir, 'membership.cose'), maxInputBytes: 512 * 1024, sizeParam: 'maxTokens', maxSizeParam: 8192, memberTimeoutMs: 30_000, livenessMs: 1000, maxOpenDispatches: 64, maxKeptDispatches: 4096, maxKeptBytes: 16 * 1024 * 1024 });
/** No peer answers (the member is only started, never ticked). */
const net = { request: () => Promise.reject(new C0Error('NET_DIAL_FAILED', 'no peers here')), handle: async () => {} };

async function withDir(f: (dir: string, deps: (db: Awaited<ReturnType<typeof openDb>>, lines?: Array<{ level: number; msg: string }>) => PoolWiringDeps) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'c0-pool-files-'));
  try {
    await f(dir, (db, lines) => ({
      config: config(dir) as PoolWiringDeps['config'],
      did: a,
      signer: keyOf(a),
      clock,
      log: pino({ level: 'info' }, { write: (s: string) => void lines?.push(JSON.parse(s) as { level: number; msg: string }) }),
      sub: (n) => sub(db, n),
      registry: new Registry(),
      executor: () => undefined,
      maxOutputBytes: 1 << 20,
      net,
      publishReceipt: async () => {},
    }));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const r1 = roster();
const r2 = roster({ seq: 2 });

test('an overwritten membership file of an older roster: the pair of the same seq kept in the database is used, with a warning naming the file', async () => {
  await withDir(async (dir, deps) => {
    const db = await openDb(join(dir, 'db'));
    try {
      writeFileSync(join(dir, 'roster.cose'), r1.bytes);
      writeFileSync(join(dir, 'membership.cose'), membership(r1, keyOf(a)).bytes);
      const first = await startPoolMember(deps(db));
      // `pool-provider join` of seq 2 on the running node (kept in the database), and the config now names seq 2's roster
      await first.adopt(r2.bytes, membership(r2, keyOf(a)).bytes);
      first.stop();
      writeFileSync(join(dir, 'roster.cose'), r2.bytes);
      // a join of seq 1 that was refused once it had written the file
      writeFileSync(join(dir, 'membership.cose'), membership(r1, keyOf(a)).bytes);
      const lines: Array<{ level: number; msg: string }> = [];
      const again = await startPoolMember(deps(db, lines));
      again.stop();
      assert.equal(((await again.status()).roster as { seq: number }).seq, 2);
      const warned = lines.find((l) => l.level === 40 && l.msg.includes(join(dir, 'membership.cose')));
      assert.ok(warned, JSON.stringify(lines));
      assert.match(warned.msg, /POOL_MEMBERSHIP_WRONG_ROSTER/);
    } finally {
      await closeDb(db);
    }
  });
});

test('with no pair kept, a membership that is not this node’s place on the roster is refused naming both files; a file that does not open is named', async () => {
  await withDir(async (dir, deps) => {
    const db = await openDb(join(dir, 'db'));
    try {
      writeFileSync(join(dir, 'roster.cose'), r2.bytes);
      writeFileSync(join(dir, 'membership.cose'), membership(r1, keyOf(a)).bytes);
      await assert.rejects(startPoolMember(deps(db)), (e: unknown) => e instanceof C0Error && e.code === 'POOL_MEMBERSHIP_WRONG_ROSTER' && e.message.includes(join(dir, 'membership.cose')) && e.message.includes(join(dir, 'roster.cose')));
      writeFileSync(join(dir, 'roster.cose'), 'not an envelope');
      await assert.rejects(startPoolMember(deps(db)), (e: unknown) => e instanceof C0Error && e.code === 'ENVELOPE_MALFORMED' && e.message.includes(`the roster ${join(dir, 'roster.cose')}`));
      writeFileSync(join(dir, 'roster.cose'), r2.bytes);
      writeFileSync(join(dir, 'membership.cose'), 'junk');
      await assert.rejects(startPoolMember(deps(db)), (e: unknown) => e instanceof C0Error && e.message.includes(`the membership ${join(dir, 'membership.cose')}`));
    } finally {
      await closeDb(db);
    }
  });
});

test('a newer roster in the config that does not list this node (the pool removed it): it starts removed on the pair it kept; with none kept, POOL_NOT_MEMBER naming the roster file (QA ffPoolChurn F3)', async () => {
  const others = MEMBERS.filter((m) => m !== a).map((did) => ({ did }));
  const r3 = roster({ seq: 3, members: others });
  await withDir(async (dir, deps) => {
    const db = await openDb(join(dir, 'db'));
    try {
      // no pair kept: refused, saying what is wrong and what to do
      writeFileSync(join(dir, 'roster.cose'), r3.bytes);
      writeFileSync(join(dir, 'membership.cose'), membership(r1, keyOf(a)).bytes);
      await assert.rejects(startPoolMember(deps(db)), (e: unknown) => e instanceof C0Error && e.code === 'POOL_NOT_MEMBER' && e.message.includes(join(dir, 'roster.cose')) && e.message.includes('drop `pool`'));
      // ran on seq 1, joined seq 2 while running (kept), then the operator signed seq 3 without it over roster.cose
      writeFileSync(join(dir, 'roster.cose'), r1.bytes);
      const first = await startPoolMember(deps(db));
      await first.adopt(r2.bytes, membership(r2, keyOf(a)).bytes);
      first.stop();
      writeFileSync(join(dir, 'roster.cose'), r3.bytes);
      writeFileSync(join(dir, 'membership.cose'), membership(r2, keyOf(a)).bytes);
      const lines: Array<{ level: number; msg: string }> = [];
      const again = await startPoolMember(deps(db, lines));
      again.stop();
      const st = await again.status();
      assert.equal((st.roster as { seq: number }).seq, 2);
      assert.equal(st.newestSeq, 3);
      assert.equal(st.removed, true);
      assert.equal(st.quoting, false);
      assert.ok(lines.some((l) => l.level === 40 && l.msg.includes('does not list this node')), JSON.stringify(lines));
    } finally {
      await closeDb(db);
    }
  });
});
