import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EvidenceStore, LiveReputation, deriveReputation, type Evidence } from '../../../src/reputation/index.js';
import type { Opened } from '../../../src/records/index.js';
import { closeDb, openDb, sub } from '../../../src/store/db.js';
import { NOW, P, acceptance, advert, job, offer, receipt, shuffle } from '../market/fixtures.js';

// Derivation counts one verdict per (buyer, receipt): the latest (a tie goes to the dispute, then the lower address).
// The store keeps only that one per (signer, receipt), in any arrival order, across a restart too.

const SELF = P(110), BUYER = P(111), PROV = P(112), OTHER = P(113);
let n = 0;
const outcome = () => {
  const o = offer(PROV, job(BUYER, { nonce: new Uint8Array([n & 0xff, (n++ >> 8) & 0xff, 110]) }), advert(PROV));
  return { o, r: receipt(PROV, BUYER, o, { startedAt: NOW, completedAt: NOW + 1_000 }) };
};
/** A buyer re-signing its verdict: accepted and disputed, varying signedAt; the latest two at one time (the dispute wins). */
const verdicts = (r: Opened, by = BUYER) => [
  ...Array.from({ length: 20 }, (_, i) => acceptance(by, r as never, i % 3 === 0 ? 'disputed' : 'accepted', { signedAt: NOW + 2_000 + i })),
  acceptance(by, r as never, 'disputed', { signedAt: NOW + 2_019 }),
];
const opts = { self: SELF.did, trust: { trustedBuyers: [BUYER.did] } };
const all = (s: EvidenceStore): Evidence => ({ receipts: s.receipts.values(), acceptances: s.acceptances.values(), offers: s.offers.values(), nondeliveries: s.nondeliveries.values() });

test('the evidence store keeps one verdict per (signer, receipt): the one derivation counts, in any order, one add or many', async () => {
  for (let seed = 1; seed <= 5; seed++) {
    const { o, r } = outcome();
    const mine = verdicts(r);
    const theirs = verdicts(r, OTHER); // anyone may sign acceptances of any receipt: one of theirs is kept too, counting for nothing
    const everything = [r, o, ...mine, ...theirs];
    const expected = deriveReputation({ receipts: [r], offers: [o], acceptances: [...mine, ...theirs] } as Evidence, opts).all();
    const apart = new EvidenceStore(undefined, { max: 1_000, self: SELF.did });
    let added = 0;
    for (const x of shuffle(everything, seed)) added += await apart.add(x);
    const together = new EvidenceStore(undefined, { max: 1_000, self: SELF.did });
    assert.ok((await together.add(...shuffle(everything, seed + 100))) <= 4);
    for (const s of [apart, together]) {
      assert.equal(s.acceptances.size, 2, `seed ${seed}: one verdict per signer`);
      const kept = s.acceptancesOf(r.address).find((a) => a.signer === BUYER.did)!;
      assert.equal(kept.record.signedAt, NOW + 2_019);
      assert.equal(kept.record.verdict, 'disputed');
      assert.deepEqual(deriveReputation(all(s), opts).all(), expected, `seed ${seed}`);
    }
    assert.ok(added < everything.length);
    // a later verdict replaces the held one (counted as new); an earlier or equal one is dropped (not new)
    assert.equal(await apart.add(acceptance(BUYER, r as never, 'accepted', { signedAt: NOW + 1_500 })), 0);
    assert.equal(apart.derive(opts).get(PROV.did).disputes, 0.5);
    const later = acceptance(BUYER, r as never, 'accepted', { signedAt: NOW + 3_000 });
    assert.equal(await apart.add(later), 1);
    assert.deepEqual(apart.acceptancesOf(r.address).filter((a) => a.signer === BUYER.did), [later]);
    assert.equal(apart.derive(opts).get(PROV.did).successes, 0.5);
  }
});

test('a verdict replaced is deleted on disk with the add; a store from before keeps the one that counts at open and deletes the rest', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-ev-verdict-'));
  try {
    const { o, r } = outcome();
    const many = shuffle([...verdicts(r), ...verdicts(r, OTHER)], 7);
    const keys = async (db: Awaited<ReturnType<typeof openDb>>) => {
      const out: string[] = [];
      for await (const k of sub(db, 'reputation-evidence').keys()) out.push(k as string);
      return out.filter((k) => k.startsWith('acceptance!'));
    };
    let db = await openDb(dir);
    // as a previous version stored them: every one under its own key
    await sub(db, 'reputation-evidence').batch([r, o, ...many].map((x) => ({ type: 'put' as const, key: `${x.type === 'c0mpute.receipt/1' ? 'receipt' : x.type === 'c0mpute.offer/1' ? 'offer' : 'acceptance'}!${x.address}`, value: x.bytes })));
    const expected = deriveReputation({ receipts: [r], offers: [o], acceptances: many } as Evidence, opts).all();
    let s = await EvidenceStore.open(db);
    assert.equal(s.acceptances.size, 2);
    assert.deepEqual(s.derive(opts).all(), expected, 'nothing that counts is lost');
    await closeDb(db);
    db = await openDb(dir);
    assert.equal((await keys(db)).length, 2, 'the superseded ones are gone on disk');
    s = await EvidenceStore.open(db);
    assert.deepEqual(s.derive(opts).all(), expected);
    // a replacing verdict: the held one is deleted in the same batch
    const later = acceptance(BUYER, r as never, 'disputed', { signedAt: NOW + 5_000 });
    assert.equal(await s.add(later), 1);
    await closeDb(db);
    db = await openDb(dir);
    const left = await keys(db);
    assert.equal(left.length, 2);
    assert.ok(left.includes(`acceptance!${later.address}`));
    await closeDb(db);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a derivation as of a decision reports its cost (onDerive, asOf)', async () => {
  const clock = NOW + 10_000;
  const s = new EvidenceStore(undefined, { max: 1_000, self: SELF.did, clock: () => clock });
  const { o, r } = outcome();
  await s.add(r, o, acceptance(BUYER, r, 'accepted', { signedAt: clock + 25_000 })); // dated ahead, inside the skew window
  const seen: Array<[boolean, number, boolean | undefined]> = [];
  const view = new LiveReputation(s, opts, { onDerive: (_ms, full, providers, asOf) => void seen.push([full, providers, asOf]) });
  view.get();
  view.asOf(clock);
  assert.deepEqual(seen, [
    [true, 1, undefined],
    [false, 1, true],
  ]);
});
