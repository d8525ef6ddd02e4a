/**
 * Member choice and coordinator election (docs/pools.md; spec/compute-pool.md):
 * `active[u64(last 8 bytes of keccak256(job id)) mod active_count]`, checked on
 * fixed vectors whose digests are written out here (keccak256 of 32 zero bytes
 * is the well-known 290decd9…e563), reduced with BigInt in the test itself.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { coordinatorRanking, electCoordinator, epochOf, jobDigest, selectMember } from '../../../src/pools/choice.js';
import { assertCode } from '../records/fixtures.js';
import { MEMBERS, POOL } from './helpers.js';

const VECTORS: Array<[string, string]> = [
  ['0', '290decd9548b62a8d60345a988386fc84ba6bc95484008f6362f93160ef3e563'],
  ['1', 'b569321de72d0af89c2fb48a484de3fc9343f31600ae1f3e13d633cb48cbf816'],
  ['a', '20ee8f1366f06926e9e8771d8fb9007a8537c8dfdb6a3f8c2cfd64db19d2ec90'],
  ['f', 'a9c584056064687e149968cbab758a3376d22aedc6a55823d1b3ecbee81b8fb9'],
];

describe('member choice', () => {
  test('job id → keccak256 digest → index, on fixed vectors', () => {
    for (const [c, digest] of VECTORS) {
      const job = 'sha256:' + c.repeat(64);
      assert.equal(Buffer.from(jobDigest(job)).toString('hex'), digest);
      const u64 = BigInt('0x' + digest.slice(48));
      for (const n of [1, 2, 3]) {
        const active = MEMBERS.slice(0, n);
        assert.equal(selectMember(job, active), active[Number(u64 % BigInt(n))], `${c} mod ${n}`);
      }
    }
    // Written out: 0x362f93160ef3e563 = 3904501124902937955; mod 3 = 0, mod 2 = 1.
    assert.equal(selectMember('sha256:' + '0'.repeat(64), MEMBERS), MEMBERS[0]);
    assert.equal(selectMember('sha256:' + '0'.repeat(64), MEMBERS.slice(0, 2)), MEMBERS[1]);
  });

  test('the active list is put in DID order first: any input order picks the same member', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 32, maxLength: 32 }), fc.shuffledSubarray(MEMBERS, { minLength: 1 }), (b, sub) => {
        const job = 'sha256:' + Buffer.from(b).toString('hex');
        assert.equal(selectMember(job, sub), selectMember(job, [...sub].reverse()));
      }),
    );
  });

  test('no active member: POOL_NO_ACTIVE_MEMBER', () => {
    assertCode(() => selectMember('sha256:' + '0'.repeat(64), []), 'POOL_NO_ACTIVE_MEMBER');
  });
});

describe('coordinator election', () => {
  test('deterministic per (pool, epoch, live members), independent of order; the ranking is the take-over order', () => {
    const e = epochOf(1_800_000_123_456, 10_000);
    assert.equal(e, 180_000_012);
    const first = electCoordinator(POOL, e, MEMBERS)!;
    assert.equal(electCoordinator(POOL, e, [...MEMBERS].reverse()), first);
    const ranking = coordinatorRanking(POOL, e, MEMBERS);
    assert.equal(ranking[0], first);
    // The elected one gone: the next in the ranking is elected, and the others keep their order.
    assert.deepEqual(coordinatorRanking(POOL, e, MEMBERS.filter((m) => m !== first)), ranking.slice(1));
  });

  test('the role rotates across epochs (every member is elected in some of 60 epochs)', () => {
    const seen = new Set<string>();
    for (let e = 0; e < 60; e++) seen.add(electCoordinator(POOL, e, MEMBERS)!);
    assert.equal(seen.size, MEMBERS.length);
  });
});
