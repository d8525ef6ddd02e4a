/**
 * steward/1 and ledger/1 refuse bad requests with stable codes, and steward/1 charges them to the network's abuse
 * score (review s39 F3; docs/network.md §Abuse): not a map with a string op is a strike (`invalid`); an op it does not
 * know, or fields it refuses (a buyer of another version may send them), is free up to REFUSED_RATE per peer and
 * reported past it (`report`); a lookup refused (not admitted), which an honest provider earns now and then, is free up
 * to LOOKUP_REFUSED_RATE and reported past it (review s40: 8,080 `admission` asks for random jobs answered in 20 s,
 * never blamed); ledger/1's LEDGER_BAD_RANGE, which no witness sends, is a strike.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openDb, closeDb } from '../../../src/store/db.js';
import type { CborValue } from '../../../src/records/cbor.js';
import type { C0Error } from '../../../src/errors.js';
import { LOOKUP_REFUSED_RATE, REFUSED_RATE } from '../../../src/net/peer-abuse.js';
import { LEDGER_PROTOCOL } from '../../../src/roles/steward.js';
import { peerIdFromDid } from '../../../src/node/peer-id.js';
import { tempDir } from '../ledger/helpers.js';
import { stewardOnStub, stubBuyer } from './steward-stub.js';

const TREE = `entitlements:
  - { id: ml, guarantee_uj: 100000000, guarantee_devices: 4, over_quota_weight: 0, priority: 0 }
`;

async function rig() {
  const t = tempDir('c0-steward-bad-');
  writeFileSync(join(t.dir, 'tree.yaml'), TREE);
  const db = await openDb(join(t.dir, 'db'));
  const reported: string[] = [];
  const struck: string[] = [];
  // a stopped monotonic clock: the per-peer refusal buckets never refill, however slow this machine is today
  const st = await stewardOnStub(t.dir, db, new Map(), { abuseReports: { report: (p) => void reported.push(p), invalid: (p) => void struck.push(p) }, monoClock: () => 0 });
  const code = async (req: unknown, from = stubBuyer.did): Promise<string | undefined> => {
    try {
      await st.ask(req as never, from);
      return undefined;
    } catch (e) {
      return (e as C0Error).code;
    }
  };
  const close = async () => {
    await st.s.stop();
    await closeDb(db);
    t.cleanup();
  };
  return { st, code, reported, struck, close };
}

test('steward/1: a request that is not a map with a string op is a strike, each time', async () => {
  const r = await rig();
  try {
    for (const req of [7, 'admit', [1], new Uint8Array(2), null, { job: 'x' }, { op: 3 }]) assert.equal(await r.code(req), 'STEWARD_BAD_REQUEST');
    const me = peerIdFromDid(stubBuyer.did).toString();
    assert.deepEqual(r.struck, Array(7).fill(me));
    assert.deepEqual(r.reported, []);
  } finally {
    await r.close();
  }
});

test('steward/1: a lookup refused is free up to LOOKUP_REFUSED_RATE and reported past it, never a strike', async () => {
  const r = await rig();
  try {
    const me = peerIdFromDid(stubBuyer.did).toString();
    // nothing open for this job: what an honest provider asking about a job now and then gets
    for (let i = 0; i < LOOKUP_REFUSED_RATE.burst; i++) assert.equal(await r.code({ op: 'admission', job: 'sha256:' + '0'.repeat(64) }), 'STEWARD_NOT_ADMITTED');
    assert.deepEqual(r.reported, [], 'within the burst');
    for (let i = 0; i < 3; i++) assert.equal(await r.code({ op: 'admission', job: 'sha256:' + '1'.repeat(64) }), 'STEWARD_NOT_ADMITTED');
    assert.deepEqual(r.reported, [me, me, me], 'a flood past it: each reported');
    assert.deepEqual(r.struck, []);
  } finally {
    await r.close();
  }
});

test('steward/1: an unknown op or refused fields (another version’s) are free up to REFUSED_RATE, reported past it; honest refusals cost nothing', async () => {
  const r = await rig();
  try {
    // an honest refusal: nothing open for this job
    for (let i = 0; i < REFUSED_RATE.burst + 4; i++) assert.equal(await r.code({ op: 'admission', job: 'sha256:' + '0'.repeat(64) }), 'STEWARD_NOT_ADMITTED');
    assert.deepEqual(r.reported, []);
    const maybeHonest = [{ op: 'x' }, { op: 'admission', job: 5 }, { op: 'admit', job: 'not bytes', entitlement: 'ml' }, { op: 'reclaimed', job: '' }];
    for (let i = 0; i < REFUSED_RATE.burst; i++) assert.equal(await r.code(maybeHonest[i % maybeHonest.length]), 'STEWARD_BAD_REQUEST');
    assert.deepEqual(r.reported, [], 'within the burst');
    assert.equal(await r.code({ op: 'x' }), 'STEWARD_BAD_REQUEST');
    assert.equal(await r.code({ op: 'x' }), 'STEWARD_BAD_REQUEST');
    assert.equal(r.reported.length, 2, 'past it: each reported');
    assert.deepEqual(r.struck, []);
  } finally {
    await r.close();
  }
});

test('ledger/1: a wrong-typed bound is refused LEDGER_BAD_RANGE (a strike), not served as the whole ledger', async () => {
  const r = await rig();
  try {
    const ask = async (req: unknown): Promise<string | number> => {
      const out: CborValue[] = [];
      try {
        await r.st.handlers.get(LEDGER_PROTOCOL)!([req as CborValue], { peer: peerIdFromDid(stubBuyer.did), signal: new AbortController().signal, send: async (f: CborValue) => void out.push(f) });
        return out.length;
      } catch (e) {
        return (e as C0Error).code;
      }
    };
    for (const req of [{ from: -5 }, { from: 'a' }, { from: 1.5 }, { from: 0, to: 'x' }, { to: -1 }]) assert.equal(await ask(req), 'LEDGER_BAD_RANGE', JSON.stringify(req));
    // no witness of any version sends one: each a strike
    assert.equal(r.struck.length, 5);
    assert.equal(await ask({ from: 0 }), 0, 'an empty ledger: nothing');
    assert.equal(await ask({}), 0);
    assert.equal(await ask({ from: 1 }), 'LEDGER_RANGE_INVALID', 'beyond the length: as before');
    // a witness ahead of a ledger that went back asks past its end: not charged (it is how the witness finds out)
    assert.equal(r.struck.length, 5);
    assert.deepEqual(r.reported, []);
  } finally {
    await r.close();
  }
});
