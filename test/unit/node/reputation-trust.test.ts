/** The daemon's reputation wiring: the `reputation` config section and its defaults, trust sources, and the non-delivery gossip check. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseConfig } from '../../../src/node/config.js';
import { nondeliveryHook, trustFor } from '../../../src/node/reputation-trust.js';
import { verdictOf } from '../../../src/net/gossip-validation.js';
import { signNonDelivery } from '../../../src/reputation/index.js';
import { seal, T, type NonDelivery, type Opened, type Selection } from '../../../src/records/index.js';
import { codeOf } from '../../../src/errors.js';
import { NOW, P, advert, job, offer } from '../market/fixtures.js';

test('the reputation section: safe defaults (first-hand only on an overlay without an allowlist), DIDs checked', () => {
  const c = parseConfig({});
  assert.deepEqual(c.reputation, { trustedBuyers: [], overlayMembers: true, dealtWith: false, secondHandWeight: 0.5, maxEvidence: 100_000, maxEvidenceBytes: 64 * 1024 * 1024 });
  assert.deepEqual(trustFor(c, c.network), { trustedBuyers: [], dealtWith: false, secondHandWeight: 0.5 });
  assert.equal(codeOf(() => parseConfig({ reputation: { trustedBuyers: ['did:key:nope'] } })), 'CONFIG_INVALID');
  assert.equal(codeOf(() => parseConfig({ reputation: { secondHandWeight: 0 } })), 'CONFIG_INVALID');
  assert.equal(codeOf(() => parseConfig({ reputation: { everyone: true } })), 'CONFIG_INVALID');
  // an overlay's allowlist joins the operator's list, unless overlayMembers is off
  const [a, b, m] = [P(1).did, P(2).did, P(3).did];
  const withList = parseConfig({ network: { allowlist: [m] }, reputation: { trustedBuyers: [b, a] } });
  assert.deepEqual(trustFor(withList, withList.network).trustedBuyers, [a, b, m].sort());
  const off = parseConfig({ network: { allowlist: [m] }, reputation: { trustedBuyers: [a], overlayMembers: false, dealtWith: true } });
  assert.deepEqual(trustFor(off, off.network), { trustedBuyers: [a], dealtWith: true, secondHandWeight: 0.5 });
});

test('gossip: a non-delivery that links is accepted; one that does not is rejected with its code', async () => {
  const buyer = P(100);
  const prov = P(1);
  const j = job(buyer);
  const o = offer(prov, j, advert(prov));
  const s = seal(T.selection, { job: j.address, buyer: buyer.did, policy: 'trusted', winner: o.address, considered: [{ provider: prov.did, offer: o.address }], decidedAt: NOW }, buyer.signer) as Opened<Selection>;
  const ctx = { kind: 'nondelivery' as const, source: 'gossip' as const, from: 'x', attachments: [], now: NOW };
  const nd = signNonDelivery({ job: j, selection: s, offer: o, reason: 'refused', detail: 'EXEC_BUSY', signedAt: NOW + 5, signer: buyer.signer });
  await nondeliveryHook(nd, ctx);
  // the same proof signed by someone who is not the job's buyer
  const stranger = seal(T.nondelivery, { ...nd.record }, P(7).signer) as Opened<NonDelivery>;
  let err: unknown;
  try {
    await nondeliveryHook(stranger, ctx);
  } catch (e) {
    err = e;
  }
  assert.deepEqual(verdictOf(err), { verdict: 'reject', reason: 'NONDELIVERY_NOT_BUYER' });
});

test('reputation.maxEvidence: at least 1,000 records, a whole number', () => {
  assert.equal(parseConfig({ reputation: { maxEvidence: 5_000 } }).reputation.maxEvidence, 5_000);
  assert.equal(codeOf(() => parseConfig({ reputation: { maxEvidence: 10 } })), 'CONFIG_INVALID');
  assert.equal(codeOf(() => parseConfig({ reputation: { maxEvidence: 1.5e4 + 0.5 } })), 'CONFIG_INVALID');
  // and by bytes: at least 4 MiB
  assert.equal(parseConfig({ reputation: { maxEvidenceBytes: 8 * 1024 * 1024 } }).reputation.maxEvidenceBytes, 8 * 1024 * 1024);
  assert.equal(codeOf(() => parseConfig({ reputation: { maxEvidenceBytes: 1024 * 1024 } })), 'CONFIG_INVALID');
});
