/** Pool records and the chain roster → member → record (docs/pools.md; issue #13 "The pool"). */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { open, seal } from '../../../src/records/envelope.js';
import { Ed25519Signer } from '../../../src/records/ed25519.js';
import { T, type Receipt } from '../../../src/records/kinds.js';
import { providerOf, RosterView, verifyPoolProof } from '../../../src/pools/chain.js';
import { assertCode, addr, NOW, records, provider, PROVIDER, buyer as buyerKey } from '../records/fixtures.js';
import { POOL, MEMBERS, keyOf, outsider, poolKey, roster, proof, pooledAdvert, membership, didOf } from './helpers.js';

describe('pool chain', () => {
  test('a pooled advert signed by a member opens, and stands for the pool', () => {
    const r = roster();
    const m = keyOf(MEMBERS[0]!);
    const env = seal(T.advert, pooledAdvert(proof(r, m)), m);
    const back = open(env.bytes, T.advert);
    assert.equal(back.signer, MEMBERS[0]);
    assert.equal(providerOf(back), POOL);
    assert.equal(verifyPoolProof(back.record.pool!, back.signer).member.weight, 1);
  });

  test('an advert without the field is byte-identical to before (no pool key in the core)', () => {
    const a = records.advert();
    const env = seal(T.advert, a, provider);
    assert.ok(!Buffer.from(env.bytes).includes(Buffer.from('pool')));
    assert.equal(providerOf(open(env.bytes, T.advert)), PROVIDER);
  });

  test('a member that signs for a pool it is not on is refused: POOL_NOT_MEMBER', () => {
    const r = roster();
    // The outsider countersigns the roster itself, but the roster does not list it.
    assertCode(() => open(seal(T.advert, pooledAdvert(proof(r, outsider)), outsider).bytes, T.advert), 'POOL_NOT_MEMBER');
  });

  test('someone else’s membership: POOL_MEMBERSHIP_NOT_SIGNER; a left member: POOL_MEMBER_LEFT', () => {
    const r = roster();
    const a = keyOf(MEMBERS[0]!);
    const b = keyOf(MEMBERS[1]!);
    assertCode(() => seal(T.advert, pooledAdvert(proof(r, a)), b), 'POOL_MEMBERSHIP_NOT_SIGNER');
    assertCode(() => seal(T.advert, pooledAdvert(proof(r, a, 'left')), a), 'POOL_MEMBER_LEFT');
  });

  test('a forged roster is refused: signed by another key, or tampered bytes', () => {
    const forger = outsider;
    const forged = roster({ signer: forger, members: [...MEMBERS.map((did) => ({ did }))] });
    const m = keyOf(MEMBERS[0]!);
    // Signed by another key: it is a roster of another "pool"; its membership names the real pool → wrong roster.
    const p = { roster: forged.bytes, membership: membership(roster(), m).bytes };
    assertCode(() => seal(T.advert, pooledAdvert(p), m), 'POOL_MEMBERSHIP_WRONG_ROSTER');
    // Tampered: one byte of the real roster flipped (a weight, say).
    const bytes = Uint8Array.from(roster().bytes);
    bytes[bytes.length - 70]! ^= 1;
    assertCode(() => seal(T.advert, pooledAdvert({ roster: bytes, membership: membership(roster(), m).bytes }), m), 'POOL_ROSTER_INVALID');
    // Not a roster at all.
    assertCode(() => seal(T.advert, pooledAdvert({ roster: seal(T.advert, records.advert(), provider).bytes, membership: membership(roster(), m).bytes }), m), 'POOL_ROSTER_INVALID');
  });

  test('a pooled receipt names the pool as provider; naming the member or another DID is refused', () => {
    const r = roster();
    const m = keyOf(MEMBERS[1]!);
    const base: Receipt = { ...records.receipt(), provider: POOL, pool: proof(r, m) };
    const env = seal(T.receipt, base, m);
    assert.equal(open(env.bytes, T.receipt).record.provider, POOL);
    assertCode(() => seal(T.receipt, { ...base, provider: MEMBERS[1]! }, m), 'RECEIPT_POOL_NOT_PROVIDER');
    // Without the proof, a member cannot sign as the pool.
    const { pool: _drop, ...plain } = base;
    void _drop;
    assertCode(() => seal(T.receipt, plain, m), 'RECEIPT_SIGNER_NOT_PROVIDER');
  });

  test('the pool key is not a member and does not countersign', () => {
    assertCode(() => roster({ members: [{ did: POOL }, { did: MEMBERS[0]! }] }), 'POOL_ROSTER_SELF_MEMBER');
    assertCode(() => seal(T.poolMembership, { pool: POOL, roster: addr('a'), seq: 1, status: 'member', signedAt: NOW }, poolKey), 'POOL_MEMBERSHIP_SELF');
  });

  test('a roster change: the view refuses the older roster (POOL_ROSTER_STALE) and a removed member', () => {
    const view = new RosterView();
    const r1 = roster({ seq: 1 });
    const dropped = MEMBERS[2]!;
    const r2 = roster({ seq: 2, members: MEMBERS.slice(0, 2).map((did) => ({ did })) });
    assert.equal(view.check(proof(r1, keyOf(dropped)), dropped, NOW).pool, POOL);
    assert.equal(view.check(proof(r2, keyOf(MEMBERS[0]!)), MEMBERS[0]!, NOW).roster.record.seq, 2);
    assertCode(() => view.check(proof(r1, keyOf(dropped)), dropped, NOW), 'POOL_ROSTER_STALE');
    assertCode(() => view.check(proof(r2, keyOf(dropped)), dropped, NOW), 'POOL_NOT_MEMBER');
    assertCode(() => view.check(proof(r2, keyOf(MEMBERS[0]!)), MEMBERS[0]!, r2.record.expiresAt), 'POOL_ROSTER_EXPIRED');
  });

  test('the view is bounded: past max pools the least recently seen is forgotten, and a pool checked again stays', () => {
    const view = new RosterView(2);
    const pools = [poolKey, ...[45, 46].map((n) => new Ed25519Signer(new Uint8Array(32).fill(n)))];
    const rs = pools.map((signer) => roster({ signer, seq: 3 }));
    assert.equal(view.learn(rs[0]!), true);
    assert.equal(view.learn(rs[1]!), true);
    // the first pool is seen again (an older roster of it: refused, but the pool is recent now)
    assert.equal(view.learn(roster({ seq: 2 })), false);
    assert.equal(view.learn(rs[2]!), true);
    assert.equal(view.size, 2);
    assert.equal(view.newest(POOL)?.record.seq, 3, 'the pool seen again stays, with its newest roster');
    assert.equal(view.newest(didOf(pools[1]!)), undefined, 'the least recently seen is forgotten');
    assert.equal(view.newest(didOf(pools[2]!))?.record.seq, 3);
  });

  test('dispatch is signed by the coordinator it names; settlement parts sum to the price', () => {
    const m = keyOf(MEMBERS[0]!);
    const d = { pool: POOL, roster: addr('a'), job: addr('b'), offer: addr('c'), member: MEMBERS[1]!, coordinator: didOf(m), epoch: 3, issuedAt: NOW };
    assert.equal(open(seal(T.poolDispatch, d, m).bytes, T.poolDispatch).record.member, MEMBERS[1]);
    assertCode(() => seal(T.poolDispatch, { ...d, coordinator: MEMBERS[1]! }, m), 'POOL_DISPATCH_SIGNER_NOT_COORDINATOR');
    const s = { pool: POOL, roster: addr('a'), job: addr('b'), receipt: addr('d'), price: { amount: '1', currency: 'USD' }, parts: MEMBERS.map((member, i) => ({ member, weight: 1, amount: ['0.333334', '0.333333', '0.333333'][i]! })), signedAt: NOW };
    assert.ok(seal(T.poolSettlement, s, m));
    assertCode(() => seal(T.poolSettlement, { ...s, parts: s.parts.map((p) => ({ ...p, amount: '0.333333' })) }, m), 'POOL_SETTLEMENT_SUM');
  });

  test('selection scores a member’s offer by the pool’s reputation (one reputation for the pool)', async () => {
    const { select } = await import('../../../src/market/select.js');
    const r = roster();
    const m = keyOf(MEMBERS[0]!);
    const advert = seal(T.advert, { ...pooledAdvert(proof(r, m)), workloads: ['infer.llm'] }, m);
    const job = seal(T.job, { ...records.job(), requirements: {} }, buyerKey);
    const offer = seal(T.offer, { ...records.offer(), job: job.address, advert: advert.address }, m);
    const rep = { scoreOf: (did: string) => (did === POOL ? 0.9 : 0.1) };
    const res = select({ job, adverts: [advert], offers: [offer], policy: 'balanced', reputation: rep, now: NOW + 1, skewMs: 30_000 });
    assert.ok('winner' in res && res.ranked[0]!.scores.reputation === 0.9, JSON.stringify(res, (_k, v) => (v instanceof Uint8Array ? undefined : v)).slice(0, 400));
  });

  test('the market explanation counts a pool once: the member that quoted, else the first in DID order', async () => {
    const { explainMarket } = await import('../../../src/market/explain.js');
    const r = roster();
    const adverts = MEMBERS.map((d) => seal(T.advert, { ...pooledAdvert(proof(r, keyOf(d))), workloads: ['infer.llm'] }, keyOf(d)));
    const solo = seal(T.advert, { ...records.advert(), workloads: ['infer.llm'], prices: undefined }, provider);
    const job = seal(T.job, { ...records.job(), requirements: {} }, buyerKey);
    const providersIn = (offers: ReturnType<typeof seal>[]) =>
      explainMarket({ job, adverts: [...adverts, solo], offers: offers as never, now: NOW + 1, skewMs: 30_000 }).providers.map((v) => v.provider).sort();
    assert.deepEqual(providersIn([]), [MEMBERS[0]!, PROVIDER].sort());
    const offer = seal(T.offer, { ...records.offer(), job: job.address, advert: adverts[2]!.address }, keyOf(MEMBERS[2]!));
    assert.deepEqual(providersIn([offer]), [MEMBERS[2]!, PROVIDER].sort());
  });
});
