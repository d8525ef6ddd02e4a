/** The semantic hooks (src/node/record-hooks.ts), through the validation pipeline, on every path: gossip with and without an attachment, and sync. */
import '../../../src/polyfill.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { seal, T, type Opened } from '../../../src/records/index.js';
import { fakeClock } from '../../../src/util/clock.js';
import { silentLogger } from '../../../src/util/log.js';
import { createNetMetrics } from '../../../src/net/metrics.js';
import { RecordPipeline } from '../../../src/net/gossip-validation.js';
import { encodeMessage } from '../../../src/net/framing.js';
import { recordHooks, witnessHook, evidenceHook, notFromTheFuture, HOOK_ERR, type RecordLookups } from '../../../src/node/record-hooks.js';
import { nondeliveryHook } from '../../../src/node/reputation-trust.js';
import { signNonDelivery } from '../../../src/reputation/nondelivery.js';
import { P, advert as mAdvert, job as mJob, offer as mOffer } from '../market/fixtures.js';
import type { Selection } from '../../../src/records/index.js';
import { Ed25519Signer, didFromPublicKey } from '../../../src/records/index.js';
import { WITNESS_TYPE, EVIDENCE_TYPE, sealEntries, type EquivocationEvidence, type WitnessReceipt } from '../../../src/ledger/index.js';
import { records, provider, buyer, gateway, NOW, PROVIDER, BUYER } from '../records/fixtures.js';

const clock = fakeClock(NOW);

function setup() {
  const held = new Map<string, Opened>();
  const get = (a: string) => held.get(a) as never;
  const lookups: RecordLookups = { advert: get, offer: get, job: get, receipt: get };
  const p = new RecordPipeline({ clock, metrics: createNetMetrics(new Registry()), log: silentLogger(), hooks: recordHooks(lookups, { pendingMs: 0 }), floodLimits: { signer: {} } });
  return { p, hold: (r: Opened) => held.set(r.address, r) };
}
const reason = async (p: RecordPipeline, kind: 'offer' | 'receipt' | 'acceptance', data: Uint8Array, source: 'gossip' | 'sync' = 'gossip') => {
  const o = await p.validate(kind, data, 'peer', source);
  return `${o.verdict}:${o.reason}`;
};

test('offer: a held advert of another provider, cited without attachment, is rejected OFFER_FOREIGN_ADVERT on gossip and on sync', async () => {
  const { p, hold } = setup();
  const foreign = seal(T.advert, records.advert(), gateway);
  hold(foreign);
  const o1 = seal(T.offer, { ...records.offer(), advert: foreign.address }, provider);
  assert.equal(await reason(p, 'offer', o1.bytes), `reject:${HOOK_ERR.OFFER_FOREIGN_ADVERT}`);
  const o2 = seal(T.offer, { ...records.offer(), advert: foreign.address, durationMs: 1 }, provider);
  assert.equal(await reason(p, 'offer', o2.bytes, 'sync'), `reject:${HOOK_ERR.OFFER_FOREIGN_ADVERT}`);
});

test('offer: attached foreign advert is rejected OFFER_ADVERT_MISMATCH; own advert attached or held is accepted; unknown cited advert is ignored', async () => {
  const { p, hold } = setup();
  const foreign = seal(T.advert, records.advert(), gateway);
  const oForeign = seal(T.offer, { ...records.offer(), advert: foreign.address }, provider);
  assert.equal(await reason(p, 'offer', encodeMessage(oForeign.bytes, [foreign.bytes])), `reject:${HOOK_ERR.OFFER_ADVERT_MISMATCH}`);

  const own = seal(T.advert, records.advert(), provider);
  const oOwn = seal(T.offer, { ...records.offer(), advert: own.address }, provider);
  assert.equal(await reason(p, 'offer', encodeMessage(oOwn.bytes, [own.bytes])), 'accept:ok');

  const own2 = seal(T.advert, { ...records.advert(), seq: 8 }, provider);
  const oUnknown = seal(T.offer, { ...records.offer(), advert: own2.address }, provider);
  assert.equal(await reason(p, 'offer', oUnknown.bytes), `ignore:${HOOK_ERR.OFFER_UNKNOWN_ADVERT}`);
  hold(own2);
  assert.equal(await reason(p, 'offer', oUnknown.bytes), 'accept:ok', 'once the advert is held, the same offer is accepted (an ignore is not remembered)');
});

test('acceptance: must be signed by the buyer of the receipt it cites; an unknown receipt is ignored', async () => {
  const { p, hold } = setup();
  const receipt = seal(T.receipt, records.receipt(), provider);
  const byBuyer = seal(T.acceptance, { ...records.acceptance(), receipt: receipt.address }, buyer);
  const byOther = seal(T.acceptance, { ...records.acceptance(), receipt: receipt.address }, gateway);
  assert.equal(await reason(p, 'acceptance', byBuyer.bytes), `ignore:${HOOK_ERR.ACCEPTANCE_RECEIPT_UNKNOWN}`);
  hold(receipt);
  assert.equal(await reason(p, 'acceptance', byOther.bytes), `reject:${HOOK_ERR.ACCEPTANCE_NOT_BUYER}`);
  assert.equal(await reason(p, 'acceptance', byBuyer.bytes, 'sync'), 'accept:ok');
});

test('acceptance: validated before the receipt it cites (out of order), it waits briefly for it', async () => {
  const held = new Map<string, Opened>();
  const get = (a: string) => held.get(a) as never;
  const p = new RecordPipeline({ clock, metrics: createNetMetrics(new Registry()), log: silentLogger(), hooks: recordHooks({ advert: get, offer: get, job: get, receipt: get }, { pendingMs: 2_000, pollMs: 10 }) });
  const receipt = seal(T.receipt, { ...records.receipt(), completedAt: NOW + 7 }, provider);
  const acc = seal(T.acceptance, { ...records.acceptance(), receipt: receipt.address }, buyer);
  const pending = reason(p, 'acceptance', acc.bytes);
  setTimeout(() => held.set(receipt.address, receipt), 50);
  assert.equal(await pending, 'accept:ok');
});

test('acceptance: at most 8 wait for their receipt per peer (64 in all); past it one is looked up once and ignored, so they cannot hold the validation queue', async () => {
  const held = new Map<string, Opened>();
  const get = (a: string) => held.get(a) as never;
  const p = new RecordPipeline({ clock, metrics: createNetMetrics(new Registry()), log: silentLogger(), hooks: recordHooks({ advert: get, offer: get, job: get, receipt: get }, { pendingMs: 60_000, pollMs: 10 }), floodLimits: { signer: {} } });
  const receipts = Array.from({ length: 21 }, (_, i) => seal(T.receipt, { ...records.receipt(), completedAt: NOW + 100 + i }, provider));
  const accs = receipts.slice(0, 20).map((r) => seal(T.acceptance, { ...records.acceptance(), receipt: r.address }, buyer));
  const settled: string[] = [];
  const runs = accs.map((a, i) => p.validate('acceptance', a.bytes, 'p1', 'gossip').then((o) => void settled.push(`${i}:${o.verdict}:${o.reason}`)));
  // twelve are answered without waiting (their receipts are not held); eight wait
  for (let i = 0; i < 500 && settled.length < 12; i++) await new Promise((r) => setTimeout(r, 10));
  assert.equal(settled.length, 12);
  assert.ok(settled.every((x) => x.endsWith(`ignore:${HOOK_ERR.ACCEPTANCE_RECEIPT_UNKNOWN}`)));
  // another peer has its own eight
  const other = seal(T.acceptance, { ...records.acceptance(), receipt: receipts[20]!.address }, buyer);
  const fromP2 = p.validate('acceptance', other.bytes, 'p2', 'gossip');
  // the receipts arrive: the eight waiting (and p2's) are accepted
  for (const r of receipts) held.set(r.address, r);
  await Promise.all(runs);
  assert.equal(settled.filter((x) => x.endsWith('accept:ok')).length, 8);
  assert.equal((await fromP2).verdict, 'accept');
});

test('receipt: must match the held offer (provider, job, price) and the held job (buyer); unknown referents are let through', async () => {
  const { p, hold } = setup();
  const r0 = seal(T.receipt, { ...records.receipt(), completedAt: NOW + 1 }, provider);
  assert.equal(await reason(p, 'receipt', r0.bytes), 'accept:ok', 'offer and job unknown: cannot judge, evidence links are checked by reputation');

  const job = seal(T.job, records.job(), buyer);
  const offer = seal(T.offer, { ...records.offer(), job: job.address }, provider);
  hold(job);
  hold(offer);
  const good = seal(T.receipt, { ...records.receipt(), job: job.address, offer: offer.address }, provider);
  assert.equal(await reason(p, 'receipt', good.bytes), 'accept:ok');
  const wrongPrice = seal(T.receipt, { ...records.receipt(), job: job.address, offer: offer.address, price: { amount: '9', currency: 'USD' } }, provider);
  assert.equal(await reason(p, 'receipt', wrongPrice.bytes), `reject:${HOOK_ERR.RECEIPT_OFFER_MISMATCH}`);
  const foreignOffer = seal(T.offer, { ...records.offer(), job: job.address }, gateway);
  hold(foreignOffer);
  const r2 = seal(T.receipt, { ...records.receipt(), job: job.address, offer: foreignOffer.address }, provider);
  assert.equal(await reason(p, 'receipt', r2.bytes), `reject:${HOOK_ERR.RECEIPT_OFFER_MISMATCH}`);
  const otherJob = seal(T.job, { ...records.job(), timeoutMs: 1000 }, gateway);
  hold(otherJob);
  const r3 = seal(T.receipt, { ...records.receipt(), job: otherJob.address, offer: 'sha256:' + 'e'.repeat(64) }, provider);
  assert.equal(await reason(p, 'receipt', r3.bytes), `reject:${HOOK_ERR.RECEIPT_JOB_MISMATCH}`);
  // the receipt's workload is its market: another than the held job's is refused
  const otherWorkload = seal(T.receipt, { ...records.receipt(), job: job.address, offer: offer.address, workload: job.record.workload + '.x' }, provider);
  assert.equal(await reason(p, 'receipt', otherWorkload.bytes), `reject:${HOOK_ERR.RECEIPT_JOB_MISMATCH}`);
  assert.equal(r3.record.buyer, BUYER);
  assert.equal(r3.record.provider, PROVIDER);
});

test('receipt: a pooled receipt names the pool of the offer’s advert (accepted, also when another member signs it); naming a pool for a plain advert is rejected', async () => {
  const { proof, pooledAdvert, roster, keyOf, MEMBERS, POOL } = await import('../pools/helpers.js');
  const r = roster();
  const [a, b] = [keyOf(MEMBERS[0]!), keyOf(MEMBERS[1]!)];
  const { p, hold } = setup();
  const advert = seal(T.advert, pooledAdvert(proof(r, a)), a);
  const offer = seal(T.offer, { ...records.offer(), advert: advert.address }, a);
  hold(advert);
  hold(offer);
  const pooled = (signer: typeof a) => seal(T.receipt, { ...records.receipt(), offer: offer.address, provider: POOL, pool: proof(r, signer) }, signer);
  assert.equal(await reason(p, 'receipt', pooled(a).bytes), 'accept:ok');
  assert.equal(await reason(p, 'receipt', pooled(b).bytes), 'accept:ok', 'the next coordinator closing a job signs for the pool too');
  const plain = seal(T.advert, records.advert(), a);
  const offer2 = seal(T.offer, { ...records.offer(), advert: plain.address, durationMs: 2 }, a);
  hold(plain);
  hold(offer2);
  const claimsPool = seal(T.receipt, { ...records.receipt(), offer: offer2.address, provider: POOL, pool: proof(r, a) }, a);
  assert.equal(await reason(p, 'receipt', claimsPool.bytes), `reject:${HOOK_ERR.RECEIPT_OFFER_MISMATCH}`);
});

test('advert: a pooled advert proved by an older roster than one seen for its pool is ignored (POOL_ROSTER_STALE), also attached to an offer, or held and cited by one', async () => {
  const { proof, pooledAdvert, roster, keyOf, MEMBERS } = await import('../pools/helpers.js');
  const { p, hold } = setup();
  const r1 = roster({ seq: 1 });
  const r2 = roster({ seq: 2, members: MEMBERS.slice(0, 2).map((did) => ({ did })) });
  const dropped = keyOf(MEMBERS[2]!);
  const kept = keyOf(MEMBERS[0]!);
  const a1 = seal(T.advert, pooledAdvert(proof(r1, dropped)), dropped);
  assert.equal(await reason2(p, 'advert', a1.bytes), 'accept:ok');
  assert.equal(await reason2(p, 'advert', seal(T.advert, pooledAdvert(proof(r2, kept)), kept).bytes), 'accept:ok');
  // The member the new roster dropped keeps signing with the old one: no longer taken.
  const a1b = seal(T.advert, { ...pooledAdvert(proof(r1, dropped)), seq: 2 }, dropped);
  assert.equal(await reason2(p, 'advert', a1b.bytes), 'ignore:POOL_ROSTER_STALE');
  const offer = seal(T.offer, { ...records.offer(), advert: a1b.address }, dropped);
  assert.equal(await reason(p, 'offer', encodeMessage(offer.bytes, [a1b.bytes])), 'ignore:POOL_ROSTER_STALE');
  // its advert from before the new roster, held here, cited by an offer without attachment: the same (review s55: a
  // removed member's offer stood for the pool)
  hold(a1);
  const bare = seal(T.offer, { ...records.offer(), advert: a1.address }, dropped);
  assert.equal(await reason(p, 'offer', bare.bytes), 'ignore:POOL_ROSTER_STALE');
  // a listed member's held advert passes
  const a2 = seal(T.advert, { ...pooledAdvert(proof(r2, kept)), seq: 3 }, kept);
  hold(a2);
  assert.equal(await reason(p, 'offer', seal(T.offer, { ...records.offer(), advert: a2.address }, kept).bytes), 'accept:ok');
});

const reason2 = async (p: RecordPipeline, kind: 'advert', data: Uint8Array) => {
  const o = await p.validate(kind, data, 'peer', 'gossip');
  return `${o.verdict}:${o.reason}`;
};

test('pool-witness: on an overlay naming its witnesses, a receipt from another key or for another steward is ignored on gossip and sync; with none named every key passes, for the overlay’s steward only', async () => {
  const named = Ed25519Signer.generate();
  const rogue = Ed25519Signer.generate();
  const steward = Ed25519Signer.generate();
  const S = didFromPublicKey(steward.publicKey);
  const receipt = (w: Ed25519Signer, s = S) => seal(WITNESS_TYPE, { steward: s, length: 1, head: 'sha256:' + 'ab'.repeat(32), witnessedAt: NOW } satisfies WitnessReceipt, w).bytes;
  const pipeline = (hook: ReturnType<typeof witnessHook>) =>
    new RecordPipeline({ clock, metrics: createNetMetrics(new Registry()), log: silentLogger(), hooks: hook ? { 'pool-witness': hook } : {}, floodLimits: { signer: {} } });
  const verdict = async (p: RecordPipeline, data: Uint8Array, source: 'gossip' | 'sync' = 'gossip') => {
    const o = await p.validate('pool-witness', data, 'peer', source);
    return `${o.verdict}:${o.reason}`;
  };
  assert.equal(witnessHook({}), undefined, 'no list and no steward: no hook');
  const p = pipeline(witnessHook({ witnesses: [didFromPublicKey(named.publicKey)], steward: S }));
  assert.equal(await verdict(p, receipt(named)), 'accept:ok');
  assert.equal(await verdict(p, receipt(rogue)), `ignore:${HOOK_ERR.WITNESS_NOT_NAMED}`);
  assert.equal(await verdict(p, receipt(rogue, didFromPublicKey(Ed25519Signer.generate().publicKey)), 'sync'), `ignore:${HOOK_ERR.WITNESS_NOT_NAMED}`);
  assert.equal(await verdict(p, receipt(named, didFromPublicKey(rogue.publicKey)), 'sync'), `ignore:${HOOK_ERR.WITNESS_FOREIGN_STEWARD}`);
  // no steward configured: a named witness's receipt for any steward passes
  assert.equal(await verdict(pipeline(witnessHook({ witnesses: [didFromPublicKey(named.publicKey)] })), receipt(named, didFromPublicKey(rogue.publicKey))), 'accept:ok');
  assert.equal(await verdict(pipeline(undefined), receipt(rogue)), 'accept:ok');
  // a steward but no list: any key's receipt for that steward passes, one for another steward does not
  const st = pipeline(witnessHook({ steward: S }));
  assert.equal(await verdict(st, receipt(rogue)), 'accept:ok');
  assert.equal(await verdict(st, receipt(rogue, didFromPublicKey(named.publicKey))), `ignore:${HOOK_ERR.WITNESS_FOREIGN_STEWARD}`);
});

test('pool-evidence: on an overlay naming its steward, evidence about any other steward (a throwaway key) is ignored (no penalty: an ignore) on gossip and sync; about that steward, or with none named, it passes', async () => {
  const steward = Ed25519Signer.generate();
  const S = didFromPublicKey(steward.publicKey);
  const witness = Ed25519Signer.generate();
  const ev = (st: Ed25519Signer, n: number) => {
    const admitted = (claim: string) => ({ event: 'Admitted' as const, claim, entitlement: 'x', reserved: { uj: 1, grade: 'Estimator' as const }, devices: 1, borrowed_uj: 0 });
    const [a] = sealEntries([admitted(`a${n}`)], st, { at: NOW });
    const [b] = sealEntries([admitted(`b${n}`)], st, { at: NOW });
    return seal(EVIDENCE_TYPE, { steward: didFromPublicKey(st.publicKey), seq: 0, held: a!.bytes, conflicting: b!.bytes, observedAt: NOW } satisfies EquivocationEvidence, witness).bytes;
  };
  const pipeline = (hook: ReturnType<typeof evidenceHook>) =>
    new RecordPipeline({ clock, metrics: createNetMetrics(new Registry()), log: silentLogger(), hooks: hook ? { 'pool-evidence': hook } : {}, floodLimits: { signer: {} } });
  const outcome = async (p: RecordPipeline, data: Uint8Array, source: 'gossip' | 'sync' = 'gossip') => {
    const o = await p.validate('pool-evidence', data, 'peer', source);
    return `${o.verdict}:${o.reason}`;
  };
  assert.equal(evidenceHook({}), undefined, 'no steward named: no hook');
  const p = pipeline(evidenceHook({ steward: S }));
  assert.equal(await outcome(p, ev(steward, 1)), 'accept:ok');
  assert.equal(await outcome(p, ev(Ed25519Signer.generate(), 2)), `ignore:${HOOK_ERR.EVIDENCE_FOREIGN_STEWARD}`);
  assert.equal(await outcome(p, ev(Ed25519Signer.generate(), 3), 'sync'), `ignore:${HOOK_ERR.EVIDENCE_FOREIGN_STEWARD}`);
  assert.equal(await outcome(pipeline(undefined), ev(Ed25519Signer.generate(), 4)), 'accept:ok');
});

test('outcome evidence dated beyond now + the clock-skew window is ignored EVIDENCE_FROM_THE_FUTURE (counted, no penalty) on gossip and sync, and taken when it comes again in its time', async () => {
  const c = fakeClock(NOW);
  const held = new Map<string, Opened>();
  const get = (a: string) => held.get(a) as never;
  const registry = new Registry();
  const p = new RecordPipeline({
    clock: c,
    metrics: createNetMetrics(registry),
    log: silentLogger(),
    skewMs: 30_000,
    hooks: { ...recordHooks({ advert: get, offer: get, job: get, receipt: get }, { pendingMs: 0, skewMs: 30_000 }), nondelivery: notFromTheFuture(nondeliveryHook, 30_000) },
    floodLimits: { signer: {} },
  });
  const FUT = `ignore:${HOOK_ERR.EVIDENCE_FROM_THE_FUTURE}`;
  const rAhead = seal(T.receipt, { ...records.receipt(), startedAt: NOW + 60_000, completedAt: NOW + 61_000 }, provider);
  const rEdge = seal(T.receipt, { ...records.receipt(), startedAt: NOW + 29_000, completedAt: NOW + 30_000 }, provider);
  assert.equal(await reason(p, 'receipt', rAhead.bytes), FUT);
  assert.equal(await reason(p, 'receipt', rAhead.bytes, 'sync'), FUT);
  assert.equal(await reason(p, 'receipt', rEdge.bytes), 'accept:ok', 'within the window: an honest clock ahead of this one');
  held.set(rEdge.address, rEdge);
  const aAhead = seal(T.acceptance, { ...records.acceptance(), receipt: rEdge.address, signedAt: NOW + 365 * 86_400_000 }, buyer);
  const aEdge = seal(T.acceptance, { ...records.acceptance(), receipt: rEdge.address, signedAt: NOW + 30_000, verdict: 'disputed', reason: 'wrong output' }, buyer);
  assert.equal(await reason(p, 'acceptance', aAhead.bytes), FUT);
  assert.equal(await reason(p, 'acceptance', aEdge.bytes), 'accept:ok');
  const b = P(100);
  const prov = P(1);
  const j = mJob(b);
  const o = mOffer(prov, j, mAdvert(prov));
  const s = seal(T.selection, { job: j.address, buyer: b.did, policy: 'trusted', winner: o.address, considered: [{ provider: prov.did, offer: o.address }], decidedAt: NOW }, b.signer) as Opened<Selection>;
  const nd = signNonDelivery({ job: j, selection: s, offer: o, reason: 'unreachable', signedAt: NOW + 90_000, signer: b.signer });
  assert.equal((await p.validate('nondelivery', nd.bytes, 'peer', 'gossip')).reason, HOOK_ERR.EVIDENCE_FROM_THE_FUTURE);
  // counted in the validation metrics, as an ignore
  const m = await registry.getSingleMetric('c0mpute_net_records_total')!.get();
  const ignored = m.values.filter((v) => v.labels.reason === HOOK_ERR.EVIDENCE_FROM_THE_FUTURE && v.labels.verdict === 'ignore').reduce((x, v) => x + v.value, 0);
  assert.equal(ignored, 4);
  // an ignore is not remembered: once its time has come, the same records are taken
  c.set(NOW + 60_000);
  assert.equal(await reason(p, 'receipt', rAhead.bytes, 'sync'), 'accept:ok');
  assert.equal((await p.validate('nondelivery', nd.bytes, 'peer', 'sync')).verdict, 'accept');
});
