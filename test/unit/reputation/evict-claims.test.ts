import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EvidenceStore } from '../../../src/reputation/index.js';
import type { Opened } from '../../../src/records/index.js';
import { NOW, P, acceptance, advert, job, offer, receipt, type Party } from '../market/fixtures.js';

// Eviction ranks a job's outcome by whose evidence it is; a receipt's `buyer` and an acceptance by someone other than
// the receipt's buyer are claims any key can make, and must not rank (or drag out) what a trusted buyer signed.

const SELF = P(90), TRUSTED = P(91), HONEST = P(92), STRANGER = P(93);
let n = 0;
const nonce = () => new Uint8Array([n & 0xff, (n++ >> 8) & 0xff, 90]);
/** A job TRUSTED ran on HONEST and accepted: receipt, offer, TRUSTED's verdict. */
const history = (t: number) => {
  const o = offer(HONEST, job(TRUSTED, { nonce: nonce() }), advert(HONEST));
  const r = receipt(HONEST, TRUSTED, o, { startedAt: NOW, completedAt: NOW + t });
  return { o, r, a: acceptance(TRUSTED, r, 'accepted', { signedAt: NOW + t + 1 }) };
};
const view = (s: EvidenceStore) => s.derive({ self: SELF.did, trust: { trustedBuyers: [TRUSTED.did] } }).get(HONEST.did);

for (const status of ['failed', 'completed'] as const) {
  test(`evidence eviction: ${status} receipts from fresh keys naming a trusted buyer that never countersigned them go before that buyer's own history`, async () => {
    let clockNow = NOW + 1e9;
    const s = new EvidenceStore(undefined, { max: 20, self: SELF.did, trusted: [TRUSTED.did], clock: () => clockNow });
    const jobs = [1_000, 2_000, 3_000].map(history);
    for (const x of jobs) await s.add(x.r, x.o, x.a);
    assert.equal(view(s).successes, 1.5);
    // newer than the history, each from a throwaway provider key, each naming TRUSTED as its buyer (TRUSTED signed nothing)
    for (let i = 0; i < 40; i++) {
      const p: Party = P(400 + i);
      clockNow += 1;
      await s.add(receipt(p, TRUSTED, offer(p, job(STRANGER, { nonce: nonce() }), advert(p)), { status, startedAt: clockNow - 10, completedAt: clockNow }));
    }
    assert.ok(s.size <= 20, `held ${s.size}`);
    for (const x of jobs) assert.ok(s.receipts.has(x.r.address) && s.acceptances.has(x.a.address) && s.offers.has(x.o.address), 'the trusted buyer’s countersigned jobs stay');
    assert.equal(view(s).successes, 1.5);
  });
}

test('evidence eviction: acceptances by others than a receipt’s buyer do not ride in its outcome: they count for nothing and go first', async () => {
  const clockNow = NOW + 1e9;
  const s = new EvidenceStore(undefined, { max: 20, self: SELF.did, trusted: [TRUSTED.did], clock: () => clockNow });
  const jobs = [1_000, 2_000, 3_000].map(history);
  for (const x of jobs) await s.add(x.r, x.o, x.a);
  // fresh keys countersign the newest trusted receipt: anyone may sign an acceptance of any receipt
  const riders: Array<Opened> = [];
  for (let i = 0; i < 20; i++) riders.push(acceptance(P(500 + i), jobs[2]!.r, 'accepted', { signedAt: NOW + 5_000 + i }));
  for (const a of riders) await s.add(a);
  assert.ok(s.size <= 20, `held ${s.size}`);
  for (const x of jobs) assert.ok(s.receipts.has(x.r.address) && s.acceptances.has(x.a.address) && s.offers.has(x.o.address), 'the trusted buyer’s jobs stay');
  assert.ok(riders.some((a) => !s.acceptances.has(a.address)), 'the riders went');
  assert.equal(view(s).successes, 1.5);
});

// With reputation.dealtWith, a buyer this node served counts as derivation counts it: only once it accepted a job here,
// and then below a trusted buyer. Before (review s41, second round), serving a buyer once (a job it never accepted, too)
// ranked every outcome naming it, with its own verdict, as a trusted buyer's, and its flood from fresh provider keys
// (newer) pushed out the trusted buyer's real history though it weighed nothing, or little, in the view.
for (const served of ['failed', 'accepted'] as const) {
  test(`evidence eviction with dealtWith: a buyer served once (${served}) floods outcomes from fresh provider keys; a trusted buyer's history stays`, async () => {
    let clockNow = NOW + 1e9;
    const s = new EvidenceStore(undefined, { max: 30, self: SELF.did, trusted: [TRUSTED.did], dealtWith: true, clock: () => clockNow });
    const jobs = [1_000, 2_000, 3_000].map(history);
    for (const x of jobs) await s.add(x.r, x.o, x.a);
    // this node ran one job for STRANGER, which it accepted (or which failed, never accepted)
    const so = offer(SELF, job(STRANGER, { nonce: nonce() }), advert(SELF));
    const sr = receipt(SELF, STRANGER, so, { status: served === 'failed' ? 'failed' : 'completed', startedAt: NOW, completedAt: NOW + 100 });
    await s.add(sr, so, ...(served === 'accepted' ? [acceptance(STRANGER, sr, 'accepted', { signedAt: NOW + 101 })] : []));
    // then fresh provider keys' receipts naming STRANGER, each with STRANGER's own acceptance, newer than the history
    for (let i = 0; i < 40; i++) {
      const p: Party = P(600 + i);
      clockNow += 1;
      const r = receipt(p, STRANGER, offer(p, job(STRANGER, { nonce: nonce() }), advert(p)), { startedAt: clockNow - 10, completedAt: clockNow });
      await s.add(r, acceptance(STRANGER, r, 'accepted', { signedAt: clockNow + 1 }));
    }
    assert.ok(s.size <= 30, `held ${s.size}`);
    for (const x of jobs) assert.ok(s.receipts.has(x.r.address) && s.acceptances.has(x.a.address) && s.offers.has(x.o.address), 'the trusted buyer’s countersigned jobs stay');
    assert.ok(s.receipts.has(sr.address), 'this node’s own job stays');
    assert.equal(s.derive({ self: SELF.did, trust: { trustedBuyers: [TRUSTED.did], dealtWith: true } }).get(HONEST.did)?.successes, 1.5);
  });
}
