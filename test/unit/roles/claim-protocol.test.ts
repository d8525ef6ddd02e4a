/**
 * `/c0mpute/claim/1` off the network (src/roles/claim-protocol.ts): the
 * request frame's shape and bounds, the checks before a claim reaches the
 * buyer's inbox (rate, opens, sent by its signer, an order this node takes
 * claims on), arrival numbering, and the claimant's check of the answer.
 * Also the job spec's `order` on /v1/run (parseJobSpec).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ClaimDesk, parseClaimAnswer, parseClaimRequest } from '../../../src/roles/claim-protocol.js';
import { seal, T, type Claim, type Opened } from '../../../src/records/index.js';
import { MAX_ENVELOPE_BYTES } from '../../../src/records/envelope.js';
import { peerIdFromDid } from '../../../src/node/peer-id.js';
import { parseJobSpec } from '../../../src/node/control.js';
import { codeOf } from '../../../src/errors.js';
import type { CborValue } from '../../../src/records/cbor.js';
import { signClaimRefusal } from '../../../src/matching/first-claim.js';
import { NOW, P, advert, job } from '../market/fixtures.js';
import { fakeClock } from '../../../src/util/clock.js';
import { silentLogger } from '../../../src/util/log.js';
import { FloodGuard } from '../../../src/net/flood-limits.js';
import { AbusePolicy, AbuseReports } from '../../../src/net/peer-abuse.js';

const BUYER = P(100);
const J = job(BUYER, { order: {} });
const claimBy = (n: number, jobAddr = J.address): Opened<Claim> => seal(T.claim, { job: jobAddr, advert: advert(P(n)).address, price: { amount: '1', currency: 'USD' }, issuedAt: NOW }, P(n).signer);

async function call(desk: ClaimDesk, from: number, frames: CborValue[]): Promise<{ sent: CborValue[]; error?: string }> {
  const sent: CborValue[] = [];
  try {
    await desk.handler()(frames, { peer: peerIdFromDid(P(from).did), signal: new AbortController().signal, send: async (f) => void sent.push(f) });
    return { sent };
  } catch (e) {
    return { sent, error: codeOf(() => { throw e; }) };
  }
}

describe('claim/1 framing and checks', () => {
  it('parses one {t:claim} frame with envelope-sized fields, and nothing else', () => {
    const c = claimBy(1);
    assert.deepEqual(parseClaimRequest({ t: 'claim', claim: c.bytes }).claim, c.bytes);
    assert.equal(codeOf(() => parseClaimRequest({ t: 'offer', claim: c.bytes })), 'NET_BAD_REQUEST');
    assert.equal(codeOf(() => parseClaimRequest({ t: 'claim', claim: 'x' })), 'NET_BAD_REQUEST');
    assert.equal(codeOf(() => parseClaimRequest({ t: 'claim', claim: new Uint8Array(MAX_ENVELOPE_BYTES + 1) })), 'NET_BAD_REQUEST');
    assert.equal(codeOf(() => parseClaimRequest({ t: 'claim', claim: c.bytes, advert: 7 })), 'NET_BAD_REQUEST');
  });

  it('refuses, before the inbox and unsigned: a second frame, a claim that does not open, one relayed by another peer, an unknown order', async () => {
    const desk = new ClaimDesk(() => NOW);
    const inbox = desk.inbox(J.address);
    const c = claimBy(1);
    assert.equal((await call(desk, 1, [{ t: 'claim', claim: c.bytes }, { t: 'claim', claim: c.bytes }])).error, 'NET_BAD_REQUEST');
    const bad = Uint8Array.from(c.bytes);
    bad[bad.length - 1]! ^= 1;
    assert.equal((await call(desk, 1, [{ t: 'claim', claim: bad }])).error, 'CLAIM_INVALID');
    assert.equal((await call(desk, 2, [{ t: 'claim', claim: c.bytes }])).error, 'CLAIM_NOT_FROM_PEER');
    assert.equal((await call(desk, 1, [{ t: 'claim', claim: claimBy(1, job(BUYER, { nonce: new Uint8Array([7]) }).address).bytes }])).error, 'ORDER_UNKNOWN');
    inbox.close();
    assert.equal((await call(desk, 1, [{ t: 'claim', claim: c.bytes }])).error, 'ORDER_UNKNOWN', 'a closed order takes no claims');
    assert.deepEqual(Object.fromEntries(desk.refusedEarly), { CLAIM_INVALID: 1, CLAIM_NOT_FROM_PEER: 1, ORDER_UNKNOWN: 2 });
  });

  it('numbers claims in arrival order and sends the buyer’s answer back on the stream', async () => {
    const desk = new ClaimDesk(() => NOW);
    const inbox = desk.inbox(J.address);
    const p1 = call(desk, 1, [{ t: 'claim', claim: claimBy(1).bytes }]);
    const p2 = call(desk, 2, [{ t: 'claim', claim: claimBy(2).bytes }]);
    const sig = new AbortController().signal;
    const a1 = (await inbox.next(sig))!;
    const a2 = (await inbox.next(sig))!;
    assert.deepEqual([a1.seq, a2.seq], [1, 2]);
    const r = signClaimRefusal(J, { address: claimBy(2).address, provider: P(2).did }, 'ORDER_TAKEN', claimBy(1).address, NOW, BUYER.signer);
    a2.answer({ t: 'refused', refusal: r.bytes });
    a1.answer({ t: 'won', selection: new Uint8Array([1]) });
    const [o1, o2] = await Promise.all([p1, p2]);
    assert.deepEqual(o1.sent, [{ t: 'won', selection: new Uint8Array([1]) }]);
    const got = parseClaimAnswer(o2.sent[0], BUYER.did, J.address, claimBy(2).address);
    assert.equal(got.won, false);
    // the claimant checks who signed the answer and what it is about
    assert.equal(codeOf(() => parseClaimAnswer(o2.sent[0], P(9).did, J.address, claimBy(2).address)), 'CLAIM_BAD_ANSWER');
    assert.equal(codeOf(() => parseClaimAnswer(o2.sent[0], BUYER.did, J.address, claimBy(1).address)), 'CLAIM_BAD_ANSWER');
    inbox.close();
  });

  it('limits each peer’s claims (token bucket): past the burst NET_RATE_LIMITED, other peers unaffected', async () => {
    const desk = new ClaimDesk(() => NOW, { peer: { ratePerSec: 1, burst: 3 } });
    desk.inbox(J.address);
    const junk = { t: 'claim', claim: new Uint8Array([1, 2, 3]) };
    const codes = [];
    for (let i = 0; i < 5; i++) codes.push((await call(desk, 1, [junk])).error);
    assert.deepEqual(codes, ['CLAIM_INVALID', 'CLAIM_INVALID', 'CLAIM_INVALID', 'NET_RATE_LIMITED', 'NET_RATE_LIMITED']);
    assert.equal((await call(desk, 2, [junk])).error, 'CLAIM_INVALID');
  });

  it('a peer that keeps hitting the claim rate limit raises its peer-abuse score and is disconnected and banned by the network’s policy', async () => {
    const c = fakeClock(NOW);
    const guard = new FloodGuard({ abuseHalfLifeMs: 60_000 }, c);
    const reports = new AbuseReports();
    const hung: string[] = [];
    const policy = new AbusePolicy(guard, { disconnectAt: 10, banMs: 60_000, reports }, c, silentLogger(), (p) => void hung.push(p));
    const desk = new ClaimDesk(c, { peer: { ratePerSec: 1, burst: 3 }, monoClock: c, onRateLimited: reports.report }); // the fake time drives the buckets too: the 15 calls take no time
    desk.inbox(J.address);
    const junk = { t: 'claim', claim: new Uint8Array([1, 2, 3]) };
    const flooder = peerIdFromDid(P(1).did).toString();
    const honest = peerIdFromDid(P(2).did).toString();
    for (let i = 0; i < 3; i++) await call(desk, 2, [junk]);
    for (let i = 0; i < 12; i++) await call(desk, 1, [junk]);
    assert.equal(policy.appSpecificScore(flooder), -9, '3 claims in the burst, 9 over the limit: 9 abuse points (gossipsub P5)');
    assert.equal(policy.appSpecificScore(honest), -0, 'a peer within its claim rate earns nothing');
    assert.equal(policy.denied(flooder), false);
    await call(desk, 1, [junk]);
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(hung, [flooder], 'the 10th over-limit claim reaches disconnectAt: hung up');
    assert.equal(policy.denied(flooder), true, 'and refused by the gater for banMs');
    assert.equal(policy.denied(honest), false);
    c.advance(60_000);
    assert.equal(policy.denied(flooder), false, 'the ban ends');
  });
});

/** The claim's stream's outcome, or 'hung' when it has none within `ms` (its real deadline is 15 s away). */
const within = <T>(p: Promise<T>, ms = 200): Promise<T | 'hung'> => Promise.race([p, new Promise<'hung'>((r) => setTimeout(() => r('hung'), ms))]);

describe('claims left waiting when an inbox or the node closes', () => {
  it('a claim still waiting when its run’s inbox closes is answered ORDER_UNKNOWN at once, not left to its stream’s deadline', async () => {
    const desk = new ClaimDesk(() => NOW);
    const inbox = desk.inbox(J.address);
    const waiting = call(desk, 1, [{ t: 'claim', claim: claimBy(1).bytes }]); // queued: the buyer is not reading
    inbox.close();
    assert.deepEqual(await within(waiting), { sent: [], error: 'ORDER_UNKNOWN' });
  });

  it('the node’s stop (ClaimDesk.close): every waiting claim gets NODE_CLOSING, the buyer’s waiting next() ends, new claims are refused NODE_CLOSING', async () => {
    const desk = new ClaimDesk(() => NOW);
    const J2 = job(BUYER, { order: {}, nonce: new Uint8Array([9]) });
    desk.inbox(J.address);
    const reading = desk.inbox(J2.address);
    const queued = [call(desk, 1, [{ t: 'claim', claim: claimBy(1).bytes }]), call(desk, 2, [{ t: 'claim', claim: claimBy(2).bytes }])];
    const next = reading.next(new AbortController().signal); // the buyer of J2 waits for a claim
    desk.close();
    assert.deepEqual(await within(Promise.all(queued)), [{ sent: [], error: 'NODE_CLOSING' }, { sent: [], error: 'NODE_CLOSING' }]);
    assert.equal(await within(next), undefined, 'the buyer waiting on the inbox is woken with nothing');
    assert.equal(await within(reading.next(new AbortController().signal)), undefined, 'and a closed inbox never blocks again');
    assert.equal(desk.open(J.address), false);
    assert.equal((await call(desk, 3, [{ t: 'claim', claim: claimBy(3).bytes }])).error, 'NODE_CLOSING');
    assert.equal(desk.refusedEarly.get('NODE_CLOSING'), 1);
    // an inbox asked for after the stop takes nothing and blocks nobody
    const late = desk.inbox(J2.address);
    assert.equal(await within(late.next(new AbortController().signal)), undefined);
    assert.equal(desk.open(J2.address), false);
  });

  it('a claim whose stream ends before the buyer reads it leaves the queue (it is not judged for nobody, nor holds a place)', async () => {
    const desk = new ClaimDesk(() => NOW, { maxQueued: 1 });
    const inbox = desk.inbox(J.address);
    const gone = new AbortController();
    const sent: CborValue[] = [];
    const served = Promise.resolve(desk.handler()([{ t: 'claim', claim: claimBy(1).bytes }], { peer: peerIdFromDid(P(1).did), signal: gone.signal, send: async (f) => void sent.push(f) })).catch((e: unknown) => (e as { code: string }).code);
    gone.abort(); // the claimant's stream reached its deadline, or it hung up
    assert.equal(await served, 'CLAIM_UNANSWERED');
    const next = call(desk, 2, [{ t: 'claim', claim: claimBy(2).bytes }]);
    const a = await within(inbox.next(new AbortController().signal));
    assert.notEqual(a, 'hung');
    assert.equal((a as { from: string }).from, peerIdFromDid(P(2).did).toString(), 'the next claim read is the live one, and the dead one did not fill the one place');
    (a as { answer: (f: unknown) => void }).answer({ t: 'won', selection: new Uint8Array([1]) });
    assert.deepEqual((await next).sent, [{ t: 'won', selection: new Uint8Array([1]) }]);
    assert.deepEqual(sent, []);
  });
});

describe('the job spec’s order (/v1/run)', () => {
  const base = { workload: 'builtin.sha256', deadlineMs: 1000, maxPrice: '1 USD' };
  it('takes {} (an open bid) or {designated: DID}; anything else is JOB_SPEC_INVALID naming the field', () => {
    assert.deepEqual(parseJobSpec({ ...base, order: {} }).order, {});
    assert.deepEqual(parseJobSpec({ ...base, order: { designated: P(1).did } }).order, { designated: P(1).did });
    assert.equal(parseJobSpec(base).order, undefined);
    for (const order of [[], 'open', { designated: 'did:key:nope' }, { designated: 5 }, { bid: '1' }]) assert.equal(codeOf(() => parseJobSpec({ ...base, order })), 'JOB_SPEC_INVALID', JSON.stringify(order));
  });
});
