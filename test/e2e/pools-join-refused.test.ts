/**
 * `pool-provider join`/`leave` that the running member refuses leave the membership file as it was (docs/pools.md
 * "A new roster reaches running members"): an older roster (POOL_ROSTER_STALE), another pool's (POOL_WRONG_POOL), an
 * expired one (POOL_ROSTER_EXPIRED) are errors, exit 3, nothing printed as joined, the file unchanged, and the member
 * restarts on what it used. Before, the file was written and "joined" printed first, then the member refused it: the
 * restart failed POOL_MEMBERSHIP_WRONG_ROSTER. Without a daemon, a newer membership at --out is not replaced either.
 * One real one-member pool.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Cluster, c0mpute, get, providerConfig, sleep, waitFor, type NodeProc } from './node-helpers.js';
import { createPool, signRoster } from './pool-helpers.js';

const c = new Cluster('pools-join-refused');
after(() => c.destroy());

interface View {
  roster: { seq: number; expiresAt: number };
  quoting: boolean;
  notQuoting?: string;
}

test('a refused join or leave writes nothing; the member restarts on the roster it used', async () => {
  const d = c.dataDir('m1');
  const { poolDir } = await createPool(c, [d], { epochMs: 2000 });
  await signRoster(c, poolDir, [{ did: d.did, index: 0, weight: 1 }], { out: 'roster2.cose', epochMs: 2000 });
  const membership = join(d.dir, 'membership.cose');
  let r = await c0mpute(d.dir, ['pool-provider', 'join', '--no-push', '--roster', join(c.root, 'roster2.cose'), '--out', membership]);
  assert.equal(r.code, 0, r.err);
  const config = { ...providerConfig({ cpuCores: 4 }), pool: { roster: join(c.root, 'roster2.cose'), membership, livenessMs: 1000 } };
  let m: NodeProc = await c.start('m1', config);
  const view = () => get<View>(m, '/v1/pool');
  await waitFor('the member to quote', async () => (await view()).quoting);
  const kept = readFileSync(membership);
  const refused = async (args: string[], code: string) => {
    const x = await c0mpute(d.dir, ['pool-provider', ...args, '--out', membership]);
    assert.equal(x.code, 3, `${args.join(' ')}: ${x.out}${x.err}`);
    assert.match(x.err, new RegExp(code));
    assert.doesNotMatch(x.out, /joined|left pool/);
    assert.deepEqual(readFileSync(membership), kept, `${args.join(' ')}: the membership file is unchanged`);
  };
  await refused(['join', '--roster', join(c.root, 'roster.cose')], 'POOL_ROSTER_STALE');
  await refused(['leave', '--roster', join(c.root, 'roster.cose')], 'POOL_ROSTER_STALE');
  // another pool's roster listing this node
  const other = join(c.root, 'otherpool');
  assert.equal((await c0mpute(other, ['pool-provider', 'init', '--pool-dir', other])).code, 0);
  await signRoster(c, other, [{ did: d.did, index: 0, weight: 1 }], { out: 'other.cose', epochMs: 2000, seq: 9 });
  await refused(['join', '--roster', join(c.root, 'other.cose')], 'POOL_WRONG_POOL');
  // an expired roster of this pool (a higher seq): refused before anything is asked or written
  r = await c0mpute(poolDir, ['pool-provider', 'roster', '--pool-dir', poolDir, '--members', join(c.root, 'roster2.members.yaml'), '--out', join(c.root, 'expired.cose'), '--lifetime-days', '0.00001']);
  assert.equal(r.code, 0, r.err);
  await sleep(1500);
  await refused(['join', '--roster', join(c.root, 'expired.cose')], 'POOL_ROSTER_EXPIRED');
  let v = await view();
  assert.equal(v.roster.seq, 2);
  assert.equal(v.quoting, true);
  assert.ok(v.roster.expiresAt > Date.now(), 'status shows the roster’s expiry');
  const st = await c0mpute(d.dir, ['pool-provider', 'status']);
  assert.match(st.out, /roster expires \d{4}-/);

  m = await c.restart(m);
  await waitFor('the restarted member to quote on seq 2', async () => (await view()).quoting);
  v = await view();
  assert.equal(v.roster.seq, 2);
  await c.stop(m);
  // no daemon: the membership of seq 2 at --out is not replaced by one of seq 1
  await refused(['join', '--roster', join(c.root, 'roster.cose')], 'POOL_ROSTER_STALE');
});
