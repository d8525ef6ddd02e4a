/**
 * The buyer's side of an open order (src/roles/buyer-orders.ts runOrder, fed by
 * the real claim desk, src/roles/claim-protocol.ts) opens each arriving claim
 * once: the desk opens it to check it, the buyer keeps that opened record for
 * the decision, the selection, the store and the evidence, and a winner does
 * not make it judge the earlier claims again. Counted as signature checks:
 * the verify of either backend src/records/ed25519.ts uses, wrapped for the
 * test: libsodium's (sodium-native's exported function) and node:crypto's
 * `verify` (syncBuiltinESMExports updates the binding ed25519.ts imports), per
 * claim signature.
 *
 * @own-process: the verifies are wrapped from the module's load to the end of the run (scripts/run-tests.mjs).
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import type * as NodeCrypto from 'node:crypto';
import { ClaimDesk, parseClaimAnswer } from '../../../src/roles/claim-protocol.js';
import { MAX_CLAIM_SUMMARIES, MAX_LISTED_REFUSALS, runOrder, type ArrivedClaim, type OrderPorts } from '../../../src/roles/buyer-orders.js';
import type { BuyerDeps, BuyerEvent, JobSpec } from '../../../src/roles/buyer.js';
import { Ed25519Signer, open, seal, T, type Claim, type Opened, type Selection } from '../../../src/records/index.js';
import type { CborValue } from '../../../src/records/cbor.js';
import { peerIdFromDid } from '../../../src/node/peer-id.js';
import { silentLogger } from '../../../src/util/log.js';
import { sodium } from '../../../src/util/sodium.js';
import { NOW, P, advert, job } from '../market/fixtures.js';

const cjsCrypto = createRequire(import.meta.url)('node:crypto') as typeof NodeCrypto;
const realVerify = cjsCrypto.verify;
/** Signatures either backend was asked to verify, hex, in order. */
const verified: string[] = [];
cjsCrypto.verify = ((...args: Parameters<typeof realVerify>) => {
  const sig = args[3] as unknown as Uint8Array | undefined;
  if (sig) verified.push(Buffer.from(sig).toString('hex'));
  return (realVerify as (...a: unknown[]) => unknown)(...args);
}) as typeof realVerify;
// the process's one sodium-native object, whose functions the records code calls (src/util/sodium.ts)
if (!sodium) throw new Error('this test counts libsodium verifies: sodium-native must load');
const na = sodium;
const realSodiumVerify = na.crypto_sign_verify_detached;
na.crypto_sign_verify_detached = (sig, msg, pub) => {
  verified.push(Buffer.from(sig).toString('hex'));
  return realSodiumVerify(sig, msg, pub);
};
syncBuiltinESMExports();
after(() => {
  cjsCrypto.verify = realVerify;
  na.crypto_sign_verify_detached = realSodiumVerify;
  syncBuiltinESMExports();
});

/** How many times this envelope's signature was verified (an envelope carries its 64-byte signature verbatim). */
const checksOf = (c: Opened<Claim>): number => verified.filter((s) => Buffer.from(c.bytes).includes(Buffer.from(s, 'hex'))).length;

const BUYER = P(200);
const J = job(BUYER, { order: {} });
const claimBy = (n: number, price = '1'): Opened<Claim> => seal(T.claim, { job: J.address, advert: advert(P(n)).address, price: { amount: price, currency: 'USD' }, issuedAt: NOW }, P(n).signer);
const spec = { workload: 'infer.llm', order: {} } as unknown as JobSpec;

function deps(stored: Opened[]): BuyerDeps {
  return {
    signer: BUYER.signer,
    did: BUYER.did,
    clock: () => NOW,
    log: silentLogger(),
    adverts: (did: string) => [201, 202, 203].map((n) => advert(P(n))).find((a) => a.signer === did),
    store: async (r: Opened) => void stored.push(r),
    publish: async () => {},
  } as unknown as BuyerDeps;
}

describe('an open order opens each arriving claim once', () => {
  it('through the claim desk: the desk’s open is the only one — refused, winning and late claims alike', async () => {
    const desk = new ClaimDesk(() => NOW);
    const send = (n: number, c: Opened<Claim>) => {
      const sent: CborValue[] = [];
      const served = desk.handler()([{ t: 'claim', claim: c.bytes }], { peer: peerIdFromDid(P(n).did), signal: new AbortController().signal, send: async (f: CborValue) => void sent.push(f) });
      return Promise.resolve(served).then(() => sent[0]);
    };
    const [over, win, late] = [claimBy(201, '2'), claimBy(202), claimBy(203)];
    const stored: Opened[] = [];
    const events: BuyerEvent[] = [];
    let lateAnswer: Promise<CborValue | undefined> | undefined;
    verified.length = 0;
    const result = await (async () => {
      const run = runOrder(deps(stored), desk, J, spec, (e) => events.push(e), async () => {
        // A claim arriving while the work runs: answered ORDER_TAKEN.
        lateAnswer = send(203, late);
        await lateAnswer;
        return { outcome: 'failed' };
      });
      const first = send(201, over);
      await new Promise((r) => setImmediate(r));
      const second = send(202, win);
      const [a1, a2] = await Promise.all([first, second]);
      assert.equal(parseClaimAnswer(a1, BUYER.did, J.address, over.address).won, false);
      assert.equal(parseClaimAnswer(a2, BUYER.did, J.address, win.address).won, true);
      return run;
    })();
    const a3 = parseClaimAnswer(await lateAnswer, BUYER.did, J.address, late.address);
    assert.equal(a3.won, false);
    assert.equal(!a3.won && a3.refusal.record.code, 'ORDER_TAKEN');
    // The decision is the same as before: the first valid claim won, the selection lists the arrivals up to it.
    assert.equal(result.selection!.record.winner, win.address);
    assert.deepEqual(result.selection!.record.arrivals!.map((x) => [x.seq, x.claim]), [[1, over.address], [2, win.address]]);
    assert.deepEqual(result.claims!.map((c) => [c.seq, c.verdict, c.code]), [[1, 'refused', 'CLAIM_PRICE_OVER_BID'], [2, 'won', undefined], [3, 'refused', 'ORDER_TAKEN']]);
    assert.ok(stored.some((r) => r.address === over.address) && stored.some((r) => r.address === win.address), 'the listed claims are stored');
    assert.ok(result.evidence!.some((b) => Buffer.from(b).equals(Buffer.from(win.bytes))));
    // Each claim's signature was checked once, by the desk.
    assert.deepEqual([checksOf(over), checksOf(win), checksOf(late)], [1, 1, 1]);
  });

  it('from an inbox that hands over bytes alone: the buyer opens each claim once', async () => {
    const [over, win] = [claimBy(201, '2'), claimBy(202)];
    const queue: ArrivedClaim[] = [over, win].map((c, i) => ({ seq: i + 1, receivedAt: NOW, claim: c.bytes, from: '', answer: () => {} }));
    const ports: OrderPorts = { inbox: () => ({ next: async () => queue.shift(), close: () => {} }) };
    verified.length = 0;
    const result = await runOrder(deps([]), ports, J, spec, () => {}, async () => ({ outcome: 'failed' }));
    assert.equal(result.selection!.record.winner, win.address);
    assert.deepEqual([checksOf(over), checksOf(win)], [1, 1]);
  });
});

describe('an open order flooded with refused claims', () => {
  it(`can still be won: the selection lists the first ${MAX_LISTED_REFUSALS} refused claims and the winner, the result keeps ${MAX_CLAIM_SUMMARIES} outcomes and counts the rest`, async () => {
    // the worst case for the selection's size: every refused claim from a key of its own (an arrival and a
    // `considered` entry each), then enough from one key to pass the outcomes the result keeps
    const keys = Array.from({ length: MAX_LISTED_REFUSALS + 10 }, () => Ed25519Signer.generate());
    const byKey = keys.map((k) => seal(T.claim, { job: J.address, advert: advert(P(201)).address, price: { amount: '2', currency: 'USD' }, issuedAt: NOW }, k));
    const byOne = Array.from({ length: MAX_CLAIM_SUMMARIES }, (_, i) => seal(T.claim, { job: J.address, advert: advert(P(201)).address, price: { amount: '2', currency: 'USD' }, issuedAt: NOW - i }, P(201).signer));
    const over = [...byKey, ...byOne];
    const n = over.length;
    const win = claimBy(202);
    const queue: ArrivedClaim[] = [...over, win].map((c, i) => ({ seq: i + 1, receivedAt: NOW, claim: c.bytes, opened: c, from: '', answer: () => {} }));
    const ports: OrderPorts = { inbox: () => ({ next: async () => queue.shift(), close: () => {} }) };
    const result = await runOrder(deps([]), ports, J, spec, () => {}, async () => ({ outcome: 'failed' }));
    // the signed bytes open: the winner, the provider it runs with and every node can read it
    const sel = open(result.selection!.bytes, T.selection).record as Selection;
    assert.equal(sel.winner, win.address);
    assert.equal(sel.arrivals!.length, MAX_LISTED_REFUSALS + 1);
    assert.deepEqual(sel.arrivals!.at(-1)!.claim, win.address);
    assert.equal(sel.arrivals![0]!.claim, over[0]!.address, 'the first ones are listed');
    assert.equal(result.claims!.length, MAX_CLAIM_SUMMARIES + 1, 'the outcomes kept, and the winner');
    assert.equal(result.claims!.at(-1)!.verdict, 'won');
    assert.equal(result.claimsOmitted, n + 1 - (MAX_CLAIM_SUMMARIES + 1));
  });
});

describe('the winning claim sent again', () => {
  it('gets the same won answer and selection again, not an ORDER_TAKEN refusal naming itself', async () => {
    // The claimer resends the same claim bytes when it got no answer (a NET_* error, a failed stream:
    // src/roles/provider/claimer.ts); an ORDER_TAKEN would have it free its slot while the exec is on its way.
    const win = claimBy(202);
    const answers: Array<{ seq: number; frame: Parameters<ArrivedClaim['answer']>[0] }> = [];
    const arrival = (seq: number): ArrivedClaim => ({ seq, receivedAt: NOW + seq, claim: win.bytes, from: '', answer: (frame) => void answers.push({ seq, frame }) });
    const queue: ArrivedClaim[] = [arrival(1)];
    let resend: (() => void) | undefined;
    const ports: OrderPorts = {
      inbox: () => ({
        next: async (signal: AbortSignal) => {
          if (queue.length) return queue.shift();
          if (signal.aborted) return undefined;
          return new Promise<ArrivedClaim | undefined>((resolve) => {
            signal.addEventListener('abort', () => resolve(undefined));
            resend = () => resolve(arrival(2));
          });
        },
        close: () => {},
      }),
    };
    const stored: Opened[] = [];
    const events: BuyerEvent[] = [];
    const result = await runOrder(deps(stored), ports, J, spec, (e) => events.push(e), async () => {
      resend?.();
      await new Promise((r) => setImmediate(r));
      return { outcome: 'failed' };
    });
    assert.deepEqual(answers.map((a) => [a.seq, a.frame.t]), [[1, 'won'], [2, 'won']]);
    const [first, again] = answers.map((a) => a.frame as { t: 'won'; selection: Uint8Array });
    assert.ok(Buffer.from(again!.selection).equals(Buffer.from(first!.selection)), 'the same selection bytes: nothing new signed');
    assert.equal(parseClaimAnswer({ t: 'won', selection: again!.selection } as unknown as CborValue, BUYER.did, J.address, win.address).won, true);
    assert.equal(result.selection!.record.winner, win.address);
    // one decision: one outcome, one selection stored
    assert.deepEqual(result.claims!.map((c) => [c.seq, c.verdict]), [[1, 'won']]);
    assert.equal(stored.filter((r) => r.type === T.selection).length, 1);
    assert.equal(events.filter((e) => e.e === 'claim').length, 1);
  });
});
