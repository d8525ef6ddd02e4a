/**
 * `c0mpute devnet --pool --dir D` and `--overlay --dir D` run again on the same directory (README "--dir"): the
 * second run failed at once with KEY_EXISTS (D/poolkey/identity.key, D/steward/identity.key), as each scenario made
 * its keys anew. Now they reuse the keys, and the pool its roster and memberships, stored by the first run; a
 * roster signed again carries a seq above the stored one (members refuse the same seq: POOL_ROSTER_STALE). And the
 * --pool rerun waited on the daemon.json its killed coordinator left the first time (a dead port): DEVNET_TIMEOUT.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { open } from '../../../src/records/envelope.js';
import { T } from '../../../src/records/kinds.js';
import { verifyPoolProof } from '../../../src/pools/chain.js';
import { codeOf } from '../../../src/errors.js';
import { POOL_ROSTER_LIFETIME_MS, POOL_ROSTER_MIN_LEFT_MS, preparePool } from '../../../src/devnet/pool-scenario.js';
import { prepareOverlay } from '../../../src/devnet/overlay-scenario.js';
import { setupTraining } from '../../../src/devnet/training-scenario.js';
import { daemonApiOf } from '../../../src/devnet/devnet.js';

const NOW = 1_700_000_000_000;
const tmp = () => mkdtempSync(join(tmpdir(), 'c0-devnet-rerun-'));
const bytes = (f: string) => new Uint8Array(readFileSync(f));

test('--pool run again on one --dir: the same keys, roster and memberships', () => {
  const dir = tmp();
  try {
    const a = preparePool(dir, NOW);
    assert.equal(a.reused, false);
    assert.equal(a.roster.record.seq, 1);
    const files = [a.rosterFile, ...Object.values(a.memberships)].map(bytes);
    const b = preparePool(dir, NOW + 60_000);
    assert.equal(b.reused, true);
    assert.equal(b.pool.did, a.pool.did);
    assert.deepEqual(Object.fromEntries(Object.entries(b.ids).map(([n, id]) => [n, id.did])), Object.fromEntries(Object.entries(a.ids).map(([n, id]) => [n, id.did])));
    assert.equal(b.roster.address, a.roster.address);
    assert.deepEqual([b.rosterFile, ...Object.values(b.memberships)].map(bytes), files);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('--pool: a stored roster near its expiry is signed again with a higher seq, and every membership with it', () => {
  const dir = tmp();
  try {
    const a = preparePool(dir, NOW);
    const later = NOW + POOL_ROSTER_LIFETIME_MS - POOL_ROSTER_MIN_LEFT_MS + 1;
    const b = preparePool(dir, later);
    assert.equal(b.reused, false);
    assert.equal(b.pool.did, a.pool.did);
    assert.equal(b.roster.record.seq, 2);
    assert.equal(open(bytes(b.rosterFile), T.poolRoster).record.seq, 2);
    for (const [n, f] of Object.entries(b.memberships)) assert.equal(verifyPoolProof({ roster: bytes(b.rosterFile), membership: bytes(f) }, b.ids[n]!.did).roster.record.seq, 2);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('--pool: a lost membership is countersigned again for the stored roster; a damaged roster is refused, not overwritten', () => {
  const dir = tmp();
  try {
    const a = preparePool(dir, NOW);
    rmSync(a.memberships.m2!);
    const b = preparePool(dir, NOW + 1000);
    assert.equal(b.reused, true);
    assert.equal(verifyPoolProof({ roster: bytes(b.rosterFile), membership: bytes(b.memberships.m2!) }, b.ids.m2!.did).roster.address, a.roster.address);
    writeFileSync(a.rosterFile, 'not a roster');
    assert.equal(codeOf(() => preparePool(dir, NOW + 2000)), 'DEVNET_STATE_INVALID');
    assert.equal(readFileSync(a.rosterFile, 'utf8'), 'not a roster');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('--overlay run again on one --dir: the same swarm key and node keys', () => {
  const dir = tmp();
  try {
    const names = ['steward', 'witness', 'alpha'];
    let made = 0;
    const gen = () => new Uint8Array(Buffer.from(`swarm key ${++made}`));
    const a = prepareOverlay(dir, names, gen);
    const key = readFileSync(a.keyFile);
    const b = prepareOverlay(dir, names, gen);
    assert.deepEqual(b.dids, a.dids);
    assert.deepEqual(readFileSync(b.keyFile), key);
    assert.equal(made, 1);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a daemon.json left by a node of an earlier run (killed) is not the new node\'s API', () => {
  const dir = tmp();
  try {
    writeFileSync(join(dir, 'api.token'), 'tok\n');
    writeFileSync(join(dir, 'daemon.json'), JSON.stringify({ pid: 4242, did: 'did:key:z', api: '127.0.0.1:39357', startedAt: NOW }));
    assert.equal(daemonApiOf(dir, 5151), undefined);
    assert.deepEqual(daemonApiOf(dir, 4242), { api: '127.0.0.1:39357', token: 'tok' });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('--training run again on one --dir: the same worker keys (it failed KEY_EXISTS on worker1/identity.key), a new run', async () => {
  const dir = tmp();
  try {
    const a = await setupTraining(dir);
    const b = await setupTraining(dir);
    assert.deepEqual(b.workers.map((w) => w.did), a.workers.map((w) => w.did));
    assert.notEqual(b.bundle.run.address, a.bundle.run.address, 'each run is a training run of its own');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
