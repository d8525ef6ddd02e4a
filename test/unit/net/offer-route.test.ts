/** The receiving side of /c0mpute/offer/1 and /c0mpute/outcome/1 (src/net/offer-route.ts) with a fake pipeline: what each refuses before validation, and what it hands on; and the sending side's bound on exchanges at a time. */
import '../../../src/polyfill.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Ed25519Signer, seal, T } from '../../../src/records/index.js';
import { encodeMessage } from '../../../src/net/framing.js';
import { directHandler, OFFER_ERR, OFFER_ROUTE, OUTCOME_ERR, OUTCOME_ROUTE, SEND_CONCURRENCY, sendDirect, type DirectRoute } from '../../../src/net/offer-route.js';
import { Slots } from '../../../src/util/serial.js';
import { C0Error } from '../../../src/errors.js';
import { records, provider as fixtureProvider } from '../records/fixtures.js';
import { Registry } from 'prom-client';
import { peerIdFromDid } from '../../../src/node/peer-id.js';
import { didFromPublicKey } from '../../../src/records/did.js';
import type { ValidationOutcome } from '../../../src/net/gossip-validation.js';
import type { CborValue } from '../../../src/records/cbor.js';

const now = Date.now();
const provider = Ed25519Signer.generate();
const ad = seal(T.advert, { seq: 1, issuedAt: now, expiresAt: now + 600_000, workloads: ['infer.llm'], tier: 'standard', region: 'eu-west', hardware: { cpuCores: 8, memoryMiB: 16_384 } }, provider);
const of = seal(T.offer, { job: 'sha256:' + 'ab'.repeat(32), advert: ad.address, price: { amount: '1', currency: 'USD' }, durationMs: 1000, issuedAt: now, startBy: now + 60_000, expiresAt: now + 30_000 }, provider);
const msg = encodeMessage(of.bytes, [ad.bytes]);

/** `kept`: what the node's handling of an accepted record comes to (default: kept at once). */
function run(frames: CborValue[], from: Ed25519Signer, verdict: ValidationOutcome['verdict'] = 'accept', route: DirectRoute = OFFER_ROUTE, kept: () => Promise<boolean> = async () => true) {
  const calls = { validated: 0, accepted: 0, sent: [] as CborValue[], kinds: [] as string[], strikes: [] as string[], admits: [] as string[] };
  const h = directHandler(route, {
    validate: async (kind) => (calls.validated++, calls.kinds.push(kind), { verdict, reason: verdict === 'accept' ? 'ok' : 'SOME_CODE', fresh: [] }),
    accept: () => (calls.accepted++, kept()),
    strike: (peer) => void calls.strikes.push(peer),
    admit: (kind, peer) => (calls.admits.push(`${kind} ${peer}`), true),
  });
  const ctx = { peer: peerIdFromDid(didFromPublicKey(from.publicKey)), signal: new AbortController().signal, send: async (f: CborValue) => void calls.sent.push(f) };
  return { calls, done: Promise.resolve().then(() => h(frames, ctx as never)) };
}

test('an offer from its signer is validated and handed on; the verdict is answered', async () => {
  const { calls, done } = run([msg], provider);
  await done;
  assert.deepEqual([calls.validated, calls.accepted], [1, 1]);
  assert.deepEqual(calls.sent, [{ verdict: 'accept', reason: 'ok' }]);
  const ig = run([msg], provider, 'ignore');
  await ig.done;
  assert.deepEqual([ig.calls.accepted, ig.calls.sent], [0, [{ verdict: 'ignore', reason: 'SOME_CODE' }]]);
});

test('refused before validation: another peer’s offer (OFFER_NOT_FROM_PEER), not an offer message (OFFER_BAD_REQUEST); a rejected one answers its code', async () => {
  const other = run([msg], Ed25519Signer.generate());
  await assert.rejects(other.done, { code: OFFER_ERR.NOT_FROM_PEER });
  assert.equal(other.calls.validated, 0);
  for (const frames of [[], [msg, msg], [{ not: 'bytes' }], [new Uint8Array([1, 2, 3])]] as CborValue[][]) {
    const bad = run(frames, provider);
    await assert.rejects(bad.done, { code: OFFER_ERR.BAD_REQUEST });
    assert.equal(bad.calls.validated, 0);
  }
  const rej = run([msg], provider, 'reject');
  await assert.rejects(rej.done, { code: 'SOME_CODE' });
  assert.equal(rej.calls.accepted, 0);
});

const buyer = Ed25519Signer.generate();
const sel = seal(T.selection, { job: 'sha256:' + 'ab'.repeat(32), buyer: didFromPublicKey(buyer.publicKey), policy: 'cheapest', winner: of.address, considered: [{ offer: of.address, provider: didFromPublicKey(provider.publicKey) }], decidedAt: now }, buyer);
const acc = seal(T.acceptance, { receipt: 'sha256:' + 'cd'.repeat(32), verdict: 'accepted', signedAt: now }, buyer);

test('outcome/1 takes a selection or an acceptance from its signer, each validated as its own kind', async () => {
  for (const [rec, kind] of [[sel, 'selection'], [acc, 'acceptance']] as const) {
    const { calls, done } = run([encodeMessage(rec.bytes, [])], buyer, 'accept', OUTCOME_ROUTE);
    await done;
    assert.deepEqual([calls.validated, calls.accepted, calls.kinds], [1, 1, [kind]]);
    assert.deepEqual(calls.sent, [{ verdict: 'accept', reason: 'ok' }]);
  }
});

test('outcome/1 refuses before validation: an offer (OUTCOME_WRONG_KIND), another peer’s selection (OUTCOME_NOT_FROM_PEER), not a message (OUTCOME_BAD_REQUEST)', async () => {
  const offerOn = run([msg], provider, 'accept', OUTCOME_ROUTE);
  await assert.rejects(offerOn.done, { code: OUTCOME_ERR.WRONG_KIND });
  const relayed = run([encodeMessage(sel.bytes, [])], provider, 'accept', OUTCOME_ROUTE);
  await assert.rejects(relayed.done, { code: OUTCOME_ERR.NOT_FROM_PEER });
  const junk = run([new Uint8Array([1, 2, 3])], buyer, 'accept', OUTCOME_ROUTE);
  await assert.rejects(junk.done, { code: OUTCOME_ERR.BAD_REQUEST });
  for (const r of [offerOn, relayed, junk]) assert.equal(r.calls.validated, 0);
  // and offer/1 takes no selection
  const selOn = run([encodeMessage(sel.bytes, [])], buyer);
  await assert.rejects(selOn.done, { code: OFFER_ERR.BAD_REQUEST });
});

test('sends share the node’s places: two sends of 20 recipients each run at most SEND_CONCURRENCY exchanges at a time, and each recipient’s outcome is its own', async () => {
  let running = 0;
  let most = 0;
  const deps = {
    registry: new Registry(),
    slots: new Slots(SEND_CONCURRENCY),
    call: async (peer: unknown) => {
      running++;
      most = Math.max(most, running);
      await new Promise((r) => setTimeout(r, 2));
      running--;
      if (String(peer) === String(peerIdFromDid(dids[3]!))) throw new Error('no route');
      return [{ verdict: 'accept' }] as CborValue[];
    },
  };
  const dids = Array.from({ length: 40 }, () => didFromPublicKey(Ed25519Signer.generate().publicKey));
  const [x, y] = await Promise.all([sendDirect(deps, OUTCOME_ROUTE, 'selection', dids.slice(0, 20), msg), sendDirect(deps, OUTCOME_ROUTE, 'selection', dids.slice(20), msg)]);
  assert.equal(most, SEND_CONCURRENCY, 'the bound holds across the two sends');
  assert.equal(Object.keys(x).length + Object.keys(y).length, 40);
  assert.equal(x[dids[3]!], 'unreachable');
  assert.equal(Object.values(x).filter((o) => o === 'accepted').length + Object.values(y).filter((o) => o === 'accepted').length, 39);
});

test('what the sender pays: a strike for a malformed message, another key’s record or a rejected one; a rate token for a kind the route does not carry; nothing for an accepted or ignored record', async () => {
  const me = peerIdFromDid(didFromPublicKey(provider.publicKey)).toString();
  const cases: Array<[string, ReturnType<typeof run>, number, number]> = [
    ['accepted', run([msg], provider), 0, 0],
    ['ignored (a duplicate, a late offer)', run([msg], provider, 'ignore'), 0, 0],
    ['rejected (a bad signature)', run([msg], provider, 'reject'), 1, 0],
    ['another key’s offer', run([msg], Ed25519Signer.generate()), 1, 0],
    ['not a message', run([new Uint8Array([1, 2, 3])], provider), 1, 0],
    ['two frames', run([msg, msg], provider), 1, 0],
    ['an offer on outcome/1', run([msg], provider, 'accept', OUTCOME_ROUTE), 0, 1],
    ['a selection on offer/1', run([encodeMessage(sel.bytes, [])], buyer), 0, 1],
  ];
  for (const [what, r, strikes, admits] of cases) {
    await r.done.catch(() => undefined);
    assert.equal(r.calls.strikes.length, strikes, `${what}: strikes`);
    assert.equal(r.calls.admits.length, admits, `${what}: rate tokens`);
  }
  assert.deepEqual(cases[2]![1].calls.strikes, [me], 'the sending peer is charged');
});

const receipt = seal(T.receipt, records.receipt(), fixtureProvider);

test('accept is answered only once the node handled the record; one it did not keep is answered its route’s NOT_KEPT code, not accept, at no cost to the sender', async () => {
  let handled!: (kept: boolean) => void;
  const later = run([encodeMessage(receipt.bytes, [])], fixtureProvider, 'accept', OUTCOME_ROUTE, () => new Promise<boolean>((r) => (handled = r)));
  await new Promise((r) => setImmediate(r));
  assert.equal(later.calls.accepted, 1);
  assert.deepEqual(later.calls.sent, [], 'no answer while the handlers have not taken it');
  handled(true);
  await later.done;
  assert.deepEqual(later.calls.sent, [{ verdict: 'accept', reason: 'ok' }]);

  for (const [route, code] of [[OUTCOME_ROUTE, OUTCOME_ERR.NOT_KEPT], [OFFER_ROUTE, OFFER_ERR.NOT_KEPT]] as const) {
    const frames = [route === OFFER_ROUTE ? msg : encodeMessage(receipt.bytes, [])];
    const lost = run(frames, route === OFFER_ROUTE ? provider : fixtureProvider, 'accept', route, async () => false);
    await assert.rejects(lost.done, { code });
    assert.deepEqual(lost.calls.sent, [], 'never answered accept');
    assert.deepEqual(lost.calls.strikes, [], 'an honest sender is not charged');
  }
});

test('the sender takes a recipient’s NOT_KEPT as not_kept (send again later), any other error frame as rejected', async () => {
  const to = didFromPublicKey(Ed25519Signer.generate().publicKey);
  const answer = (code: string) => ({
    registry: new Registry(),
    call: async (): Promise<CborValue[]> => {
      throw new C0Error(code, 'refused', { detail: { remote: true } });
    },
  });
  assert.deepEqual(await sendDirect(answer(OUTCOME_ERR.NOT_KEPT), OUTCOME_ROUTE, 'receipt', [to], msg), { [to]: 'not_kept' });
  assert.deepEqual(await sendDirect(answer(OFFER_ERR.NOT_KEPT), OFFER_ROUTE, 'offer', [to], msg), { [to]: 'not_kept' });
  assert.deepEqual(await sendDirect(answer(OUTCOME_ERR.WRONG_KIND), OUTCOME_ROUTE, 'receipt', [to], msg), { [to]: 'rejected' });
  const d = answer(OUTCOME_ERR.NOT_KEPT);
  await sendDirect(d, OUTCOME_ROUTE, 'receipt', [to], msg);
  assert.match(await d.registry.getSingleMetricAsString('c0mpute_outcomes_direct_total'), /kind="receipt",outcome="not_kept"\} 1/);
});

test('the sender learns why each recipient did not take a record: its error frame’s code, or this side’s (NET_DEADLINE)', async () => {
  const to = didFromPublicKey(Ed25519Signer.generate().publicKey);
  const failing = (e: Error) => ({
    registry: new Registry(),
    call: async (): Promise<CborValue[]> => {
      throw e;
    },
  });
  const codes: Record<string, string> = {};
  assert.deepEqual(await sendDirect(failing(new C0Error('NET_DEADLINE', 'no answer in 10000 ms')), OFFER_ROUTE, 'offer', [to], msg, codes), { [to]: 'unreachable' });
  assert.deepEqual(codes, { [to]: 'NET_DEADLINE' });
  assert.deepEqual(await sendDirect(failing(new C0Error('OFFER_EXPIRED', 'expired', { detail: { remote: true } })), OFFER_ROUTE, 'offer', [to], msg, codes), { [to]: 'rejected' });
  assert.deepEqual(codes, { [to]: 'OFFER_EXPIRED' });
  const ok = { registry: new Registry(), call: async (): Promise<CborValue[]> => [{ verdict: 'accept' }] };
  const none: Record<string, string> = {};
  assert.deepEqual(await sendDirect(ok, OFFER_ROUTE, 'offer', [to], msg, none), { [to]: 'accepted' });
  assert.deepEqual(none, {});
  // an `ignore` verdict's reason (QA qaPnet F2: RECORD_FROM_FUTURE, which only the sender's clock can put right); text that is no code is not taken
  const ignoring = (reason: unknown) => ({ registry: new Registry(), call: async (): Promise<CborValue[]> => [{ verdict: 'ignore', reason } as CborValue] });
  const why: Record<string, string> = {};
  assert.deepEqual(await sendDirect(ignoring('RECORD_FROM_FUTURE'), OFFER_ROUTE, 'offer', [to], msg, why), { [to]: 'ignored' });
  assert.deepEqual(why, { [to]: 'RECORD_FROM_FUTURE' });
  const odd: Record<string, string> = {};
  await sendDirect(ignoring('you are\nlate'), OFFER_ROUTE, 'offer', [to], msg, odd);
  assert.deepEqual(odd, {});
});
