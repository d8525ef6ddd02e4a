/**
 * A winner whose link stalls while its work runs (partition33 #2): the buyer noticed only when libp2p's pings dropped
 * the connection, 38–45 s later, past the runner-up's 30 s offer, so the failover found every runner-up lapsed and the
 * run failed with most of its deadline left. Now the buyer asks for keepalives (`keepalive: true` in the header); a
 * provider that promises them (`keepaliveMs` in `accepted`) and then sends no frame for silenceLimitMs has its attempt
 * given up (EXEC_PROVIDER_SILENT, an `unreachable` non-delivery) and the buyer fails over while the runner-up's offer
 * holds. A provider that promised nothing (one before keepalives) is not watched for its silence: it is held to its
 * quote instead (buyer-overrun.test.ts).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { BuyerEvent } from '../../../src/roles/buyer.js';
import { C0Error } from '../../../src/errors.js';
import { EXEC_KEEPALIVE_MAX_MS, EXEC_KEEPALIVE_MIN_MS, EXEC_KEEPALIVE_MS, execExchange, parseExecFrame, parseExecHeader, silenceLimitMs } from '../../../src/roles/exec-protocol.js';
import { decodeCanonical, encodeCanonical } from '../../../src/records/cbor.js';
import { NOW, P } from '../market/fixtures.js';
import { buyerOnFakes, fakeSpec, abortedBy as aborted } from './buyer-fakes.js';

const ME = P(800);
const A = P(801);
const B = P(802);

test('a winner that promised keepalives and then went silent is given up after the silence limit, and the buyer fails over to the runner-up', { timeout: 20_000 }, async () => {
  const requests: unknown[] = [];
  const t0 = Date.now();
  let silentAt = 0;
  const execs: string[] = [];
  const f = buyerOnFakes(ME, {
    providers: [A, B],
    exec: () => {
      throw new Error('replaced below');
    },
    deps: {
      exec: (did: string, _p: string, req: unknown, signal: AbortSignal) => {
        requests.push(req);
        execs.push(did);
        return (async function* () {
          if (did === A.did) {
            yield { t: 'accepted', startedAt: NOW, keepaliveMs: 100 };
            yield { t: 'keepalive' };
            yield { t: 'progress', message: 'working' };
            // the link stalls: nothing more arrives, and the stream stays open
            silentAt = Date.now();
            await aborted(signal);
          }
          // the runner-up is reached; it fails its stream too (this test is about reaching it)
          throw new C0Error('NET_STREAM_FAILED', 'runner-up reached');
        })();
      },
    },
  });
  const events: BuyerEvent[] = [];
  const result = await f.buyer.run(fakeSpec({ deadlineMs: 600_000 }), (e) => events.push(e));
  assert.deepEqual(execs, [A.did, B.did], 'failed over to the runner-up');
  assert.equal((requests[0] as { keepalive?: boolean }).keepalive, true, 'the buyer asks for keepalives');
  const a = result.attempts[0]!;
  assert.equal(a.provider, A.did);
  assert.equal(a.outcome, 'provider unreachable or gone: EXEC_PROVIDER_SILENT');
  assert.ok(a.nondelivery, 'an unreachable non-delivery is signed');
  const waited = Date.now() - silentAt;
  assert.ok(waited >= silenceLimitMs(100) - 20 && waited < 5_000, `gave up ${waited} ms after the last frame (limit ${silenceLimitMs(100)} ms)`);
  assert.ok(Date.now() - t0 < 10_000);
  assert.ok(events.some((e) => e.e === 'failover' && e.from === A.did));
});

test('a winner that promised nothing (a provider before keepalives) is not given up for its silence within its quote', { timeout: 20_000 }, async () => {
  const f = buyerOnFakes(ME, {
    providers: [A, B],
    exec: async function* (did) {
      if (did === A.did) {
        yield { t: 'accepted', startedAt: NOW };
        // silent for several times the silence limit of the shortest interval a provider may promise (its quote,
        // 60 s, is far from overrun)
        await new Promise((r) => setTimeout(r, silenceLimitMs(100) * 4));
        throw new C0Error('EXEC_TEST_DONE', 'the silent run ended by itself');
      }
      throw new C0Error('NET_STREAM_FAILED', 'runner-up reached');
    },
  });
  const result = await f.buyer.run(fakeSpec({ deadlineMs: 600_000 }), () => {});
  assert.equal(result.attempts[0]!.outcome, 'provider unreachable or gone: EXEC_TEST_DONE');
});

test('keepalives and progress keep a promised attempt alive past the silence limit; output and receipt end the watch', { timeout: 20_000 }, async () => {
  const f = buyerOnFakes(ME, {
    providers: [A],
    exec: async function* () {
      yield { t: 'accepted', startedAt: NOW, keepaliveMs: 100 };
      for (let i = 0; i < 8; i++) {
        await new Promise((r) => setTimeout(r, 100));
        yield i % 2 ? { t: 'keepalive' } : { t: 'progress', message: `step ${i}` };
      }
      yield { t: 'output', data: new Uint8Array(1) };
      // output is paced by the link from here, not by keepalives
      await new Promise((r) => setTimeout(r, silenceLimitMs(100) * 2));
      throw new C0Error('EXEC_TEST_DONE', 'ended after the output');
    },
  });
  const result = await f.buyer.run(fakeSpec({ deadlineMs: 600_000 }), () => {});
  assert.equal(result.attempts[0]!.outcome, 'provider unreachable or gone: EXEC_TEST_DONE');
});

test('the last keepalive (the work ended) ends the watch: a first output chunk slower than the silence limit on a slow link is waited for', { timeout: 20_000 }, async () => {
  const f = buyerOnFakes(ME, {
    providers: [A],
    exec: () => {
      throw new Error('replaced below');
    },
    deps: {
      exec: (_did: string, _p: string, _req: unknown, signal: AbortSignal) =>
        (async function* () {
          yield { t: 'accepted', startedAt: NOW, keepaliveMs: 100 };
          yield { t: 'keepalive' };
          yield { t: 'keepalive', last: 'yes' };
          // the first 256 KiB chunk crawls over the link: nothing whole arrives for twice the silence limit (a watch
          // still armed ends the stream meanwhile, as it does a real one)
          await Promise.race([new Promise((r) => setTimeout(r, silenceLimitMs(100) * 2)), aborted(signal)]);
          throw new C0Error('EXEC_TEST_DONE', 'ended after the slow transfer');
        })(),
    },
  });
  const result = await f.buyer.run(fakeSpec({ deadlineMs: 600_000 }), () => {});
  assert.equal(result.attempts[0]!.outcome, 'provider unreachable or gone: EXEC_TEST_DONE');
});

/** A channel that answers `frames` after the request and records what the exchange does with it. */
function recordingChannel(frames: unknown[]) {
  const did: string[] = [];
  const ch = {
    send: async () => void did.push('send'),
    end: async () => void did.push('end'),
    next: async () => frames.shift(),
    closeWrite: async () => void did.push('closeWrite'),
    close: async () => void did.push('close'),
  };
  return { ch, did };
}

test('a buyer that asked for keepalives acknowledges the receipt it read by closing its writing side, then closes; without the receipt, or without asking, it does not', async () => {
  const req = (keepalive: boolean) => ({ t: 'exec' as const, selection: new Uint8Array(1), job: new Uint8Array(1), offer: new Uint8Array(1), input: new Uint8Array(4), keepalive });
  const answer = () => [{ t: 'accepted', startedAt: NOW, keepaliveMs: 100 }, { t: 'keepalive', last: 'yes' }, { t: 'output', data: new Uint8Array(2) }, { t: 'receipt', receipt: new Uint8Array(3) }];
  const upTo = async (ch: ReturnType<typeof recordingChannel>['ch'], r: ReturnType<typeof req>, stopAt: string) => {
    for await (const raw of execExchange(ch, r)) if ((raw as { t: string }).t === stopAt) break;
  };
  const acked = recordingChannel(answer());
  await upTo(acked.ch, req(true), 'receipt');
  assert.deepEqual(acked.did.slice(-2), ['closeWrite', 'close']);
  // gave up before the receipt (at its output, as a watch or a budget would): a reset only, no acknowledgement
  const early = recordingChannel(answer());
  await upTo(early.ch, req(true), 'output');
  assert.ok(!early.did.includes('closeWrite'));
  assert.equal(early.did.at(-1), 'close');
  // a request that did not ask: the reset after the receipt is its acknowledgement, as before
  const old = recordingChannel(answer());
  await upTo(old.ch, req(false), 'receipt');
  assert.ok(!old.did.includes('closeWrite'));
});

test('the frames: `keepalive` parses; an `accepted` whose keepaliveMs is not a positive number promises nothing; the interval is clamped', () => {
  assert.deepEqual(parseExecFrame({ t: 'keepalive' }), { t: 'keepalive' });
  assert.deepEqual(parseExecFrame({ t: 'keepalive', last: 'yes' }), { t: 'keepalive', last: 'yes' });
  assert.deepEqual(parseExecFrame({ t: 'keepalive', last: 'no' }), { t: 'keepalive' });
  assert.deepEqual(parseExecFrame({ t: 'accepted', startedAt: 5, keepaliveMs: 5000 }), { t: 'accepted', startedAt: 5, keepaliveMs: 5000 });
  for (const bad of [0, -1, Number.NaN, '5000', Number.POSITIVE_INFINITY]) assert.deepEqual(parseExecFrame({ t: 'accepted', startedAt: 5, keepaliveMs: bad }), { t: 'accepted', startedAt: 5 });
  assert.equal(silenceLimitMs(EXEC_KEEPALIVE_MS), 15_000);
  assert.equal(silenceLimitMs(1), 3 * EXEC_KEEPALIVE_MIN_MS);
  assert.equal(silenceLimitMs(10 * 3600_000), 3 * EXEC_KEEPALIVE_MAX_MS);
});

test('the header execExchange sends asks for keepalives as canonical CBOR takes it (a text enum: CBOR has no booleans here), and a provider reads it', async () => {
  const sent: unknown[] = [];
  const ch = {
    send: async (f: never) => void sent.push(f),
    end: async () => {},
    next: async () => undefined,
    closeWrite: async () => {},
    close: async () => {},
  };
  const req = { t: 'exec' as const, selection: new Uint8Array(1), job: new Uint8Array(1), offer: new Uint8Array(1), input: new Uint8Array(4), keepalive: true };
  for await (const _ of execExchange(ch, req)) void _;
  const wire = decodeCanonical(encodeCanonical(sent[0] as never));
  assert.equal(parseExecHeader(wire).keepalive, 'yes');
});
