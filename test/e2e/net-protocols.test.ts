import '../../src/polyfill.js';
import { test, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { lpStream } from '@libp2p/utils';
import type { Network } from '../../src/net/node.js';
import { NET_ERR } from '../../src/net/protocols.js';
import { encodeFrame } from '../../src/net/frames.js';
import { budgetForInput, DEFAULT_BUDGET, INPUT_ROOM_BYTES } from '../../src/net/byte-budget.js';
import { C0Error } from '../../src/errors.js';
import { decodeCanonical, type CborValue } from '../../src/records/cbor.js';
import { advert, link, startNode, stopAll, waitFor, sleep } from './net-helpers.js';

const nets: Network[] = [];
afterEach(async () => {
  await stopAll(nets.splice(0));
});

const ECHO = '/c0mpute/test-echo/1';

test('request followed by a stream of response frames, addressed by DID', async () => {
  const a = await startNode({ syncOnConnect: [] });
  const b = await startNode({ syncOnConnect: [] });
  nets.push(a, b);
  await b.handle(ECHO, async (reqs, ctx) => {
    assert.equal(ctx.peer.toString(), a.peerId.toString());
    for (let i = 0; i < 3; i++) await ctx.send({ progress: i });
    await ctx.send({ echo: reqs });
  });
  await a.dial(b.addrs()[0]!);
  const seen: CborValue[] = [];
  const out = await a.request(b.did, ECHO, ['hi', new Uint8Array([1, 2])], { onFrame: (f) => void seen.push(f) });
  assert.equal(out.length, 4);
  assert.deepEqual(out[0], { progress: 0 });
  assert.deepEqual(out[3], { echo: ['hi', new Uint8Array([1, 2])] });
  assert.deepEqual(seen, out);
});

test('a stream that does not open says why: NET_PROTOCOL_UNSUPPORTED from a connected peer that does not speak the protocol, NET_DIAL_FAILED from one not reached', async () => {
  const a = await startNode({ syncOnConnect: [] });
  const b = await startNode({ syncOnConnect: [] });
  nets.push(a, b);
  await a.dial(b.addrs()[0]!);
  // connected, and b serves no ECHO: the dial worked, so it is not a dial failure (QA qaNet F1: it was NET_DIAL_FAILED)
  for (const open of [() => a.request(b.did, ECHO, ['x']), () => a.openStream(b.did, ECHO)]) {
    const e = await open().then(() => assert.fail('opened'), (x: unknown) => x as C0Error);
    assert.equal(e.code, NET_ERR.PROTOCOL);
    assert.match(e.message, /does not speak it/);
  }
  const c = await startNode({ syncOnConnect: [] });
  const gone = c.addrs()[0]!;
  await c.stop();
  const e = await a.request(gone, ECHO, ['x']).then(() => assert.fail('opened'), (x: unknown) => x as C0Error);
  assert.equal(e.code, NET_ERR.DIAL);
});

test('a handler error reaches the caller as a coded error', async () => {
  const a = await startNode({ syncOnConnect: [] });
  const b = await startNode({ syncOnConnect: [] });
  nets.push(a, b);
  await b.handle(ECHO, () => {
    throw new C0Error('JOB_REFUSED', 'no thanks');
  });
  await a.dial(b.addrs()[0]!);
  await assert.rejects(a.request(b.peerId, ECHO, [1]), (e: C0Error) => e.code === 'JOB_REFUSED' && e.detail?.remote === true);
});

test('a peer cannot add outcome label values: codes from its error frames outside the known set count as remote_other', async () => {
  const victim = await startNode({ syncOnConnect: [] });
  const mallory = await startNode({ syncOnConnect: [] });
  nets.push(victim, mallory);
  let i = 0;
  // a fresh code of up to 64 characters on every stream; then one stream-level code a real node sends
  await mallory.handle(ECHO, (reqs) => {
    if (reqs[0] === 'net') throw new C0Error(NET_ERR.BUFFER_LIMIT, 'full');
    throw new C0Error('X'.repeat(40) + String(i++), 'no');
  });
  await victim.dial(mallory.addrs()[0]!);
  for (let k = 0; k < 30; k++) await assert.rejects(victim.request(mallory.peerId, ECHO, [k]), (e: C0Error) => e.code === 'X'.repeat(40) + String(k) && e.detail?.remote === true);
  await assert.rejects(victim.request(mallory.peerId, ECHO, ['net']), (e: C0Error) => e.code === NET_ERR.BUFFER_LIMIT);
  const m = await victim.metrics.registry.getSingleMetric('c0mpute_net_streams_total')!.get();
  const out = m.values.filter((v) => v.labels.protocol === ECHO && v.labels.direction === 'out');
  assert.deepEqual(out.map((v) => [v.labels.outcome, v.value]).sort(), [[NET_ERR.BUFFER_LIMIT, 1], ['remote_other', 30]]);
  // the server counts what it sent as before (its own handler's codes)
  const served = (await mallory.metrics.registry.getSingleMetric('c0mpute_net_streams_total')!.get()).values.filter((v) => v.labels.direction === 'in');
  assert.equal(served.length, 31);
});

test('16 requests at once on a connection just dialled are all served: streams that reach the listener before its connection is set up wait there, they do not reset the connection', async () => {
  // The dialler's side of a connection is ready one flight before the listener's (noise XX: the dialler is done once
  // it sends the last handshake message, and the muxer comes with the handshake), so streams opened as soon as the
  // dial returns reach the listener while it is still finishing the upgrade. libp2p keeps those "early" streams until
  // its connection takes them; past the muxer's maxEarlyStreams (10 by default) it reset the whole connection, and
  // every request failed ("Unexpected EOF", "The stream has been reset").
  for (let round = 0; round < 3; round++) {
    const a = await startNode({ syncOnConnect: [] });
    const b = await startNode({ syncOnConnect: [] });
    nets.push(a, b);
    await b.handle(ECHO, async (reqs, ctx) => void (await ctx.send({ echo: reqs })));
    const explicit = round !== 1;
    if (explicit) await a.dial(b.addrs()[0]!);
    else await a.libp2p.peerStore.merge(b.peerId, { multiaddrs: b.libp2p.getMultiaddrs() });
    // round 0 and 2: the node's dial, then 16 requests; round 1: the 16 requests dial (one connection, shared)
    const out = await Promise.allSettled(Array.from({ length: 16 }, (_, i) => a.request(b.peerId, ECHO, [i])));
    const failed = out.flatMap((r) => (r.status === 'rejected' ? [`${(r.reason as C0Error).code}: ${(r.reason as Error).message}`] : []));
    assert.deepEqual(failed, [], `round ${round}: every request is served`);
    assert.deepEqual(
      out.map((r) => (r as PromiseFulfilledResult<CborValue[]>).value),
      Array.from({ length: 16 }, (_, i) => [{ echo: [i] }]),
    );
    assert.equal(a.libp2p.getConnections(b.peerId).length, 1, 'on the one connection, still open');
    await stopAll(nets.splice(0));
  }
});

test('a frame over the size bound is refused', async () => {
  const a = await startNode({ syncOnConnect: [] });
  const b = await startNode({ syncOnConnect: [] });
  nets.push(a, b);
  let called = false;
  await b.handle(
    ECHO,
    () => {
      called = true;
    },
    { maxFrameBytes: 1024 },
  );
  await a.dial(b.addrs()[0]!);
  // the caller's own bound refuses before sending
  await assert.rejects(a.request(b.peerId, ECHO, [new Uint8Array(4096)], { limits: { maxFrameBytes: 1024 } }), (e: C0Error) => e.code === NET_ERR.FRAME_TOO_LARGE);
  // a caller with a larger bound: the server refuses the frame
  await assert.rejects(a.request(b.peerId, ECHO, [new Uint8Array(4096)], { limits: { maxFrameBytes: 1 << 20 } }), (e: C0Error) => e.code === NET_ERR.FRAME_TOO_LARGE);
  // a raw peer ignoring the framing rules altogether
  const s = await a.libp2p.dialProtocol(b.peerId, ECHO);
  const lp = lpStream(s);
  await lp.write(new Uint8Array(8192));
  const reply = decodeCanonical((await lp.read({ signal: AbortSignal.timeout(3000) })).subarray()) as CborValue[];
  assert.equal(reply[0], 2);
  assert.equal(reply[1], NET_ERR.FRAME_TOO_LARGE);
  assert.equal(called, false);
  await waitFor(async () => (await b.metrics.registry.getSingleMetricAsString('c0mpute_net_streams_total')).includes('outcome="NET_FRAME_TOO_LARGE"'));
});

test('request frames that fill the stream bound exactly are served: the end frame fits on top (maxFrameBytes each, one or four of them)', async () => {
  const a = await startNode({ syncOnConnect: [] });
  const b = await startNode({ syncOnConnect: [] });
  nets.push(a, b);
  /** A byte string whose data frame encodes to exactly n bytes. */
  const sized = (n: number): Uint8Array => {
    let p = new Uint8Array(n - 5);
    while (encodeFrame({ t: 'data', v: p }).length < n) p = new Uint8Array(p.length + 1);
    while (encodeFrame({ t: 'data', v: p }).length > n) p = p.subarray(1);
    assert.equal(encodeFrame({ t: 'data', v: p }).length, n);
    return p;
  };
  const ONE = '/c0mpute/test-one/1';
  const FOUR = '/c0mpute/test-four/1';
  await b.handle(ONE, async (reqs, ctx) => void (await ctx.send(reqs.length)), { maxFrameBytes: 1000, maxRequestFrames: 1 });
  await b.handle(FOUR, async (reqs, ctx) => void (await ctx.send(reqs.length)), { maxFrameBytes: 4096, maxRequestFrames: 4 });
  await a.dial(b.addrs()[0]!);
  for (const n of [998, 999, 1000]) assert.deepEqual(await a.request(b.peerId, ONE, [sized(n)], { limits: { maxFrameBytes: 1000 } }), [1], `one frame of ${n} bytes`);
  const full = sized(4096);
  assert.deepEqual(await a.request(b.peerId, FOUR, [full, full, full, full], { limits: { maxFrameBytes: 4096 } }), [4]);
  // the bound still holds: a fifth frame, or a larger one, is refused
  await assert.rejects(a.request(b.peerId, FOUR, [full, full, full, full, full], { limits: { maxFrameBytes: 4096 } }), (e: C0Error) => e.code === NET_ERR.BUFFER_LIMIT || e.code === NET_ERR.TOO_MANY_FRAMES);
  await assert.rejects(a.request(b.peerId, ONE, [sized(1001)], { limits: { maxFrameBytes: 2000 } }), (e: C0Error) => e.code === NET_ERR.FRAME_TOO_LARGE);
});

test('a provider taking inputs over 16 MiB can hold one: budgetForInput(maxInputBytes) fits the input and its chunk frames where the default 24 MiB per connection does not', async () => {
  const MAX_INPUT = 32 * 1024 * 1024;
  const SEALED = 60;
  const big = await startNode({ syncOnConnect: [], directBudget: budgetForInput(MAX_INPUT) });
  const dflt = await startNode({ syncOnConnect: [] });
  const caller = await startNode({ syncOnConnect: [] });
  nets.push(big, dflt, caller);
  // exec/1's request phase in small: reserve the declared input, say ready, read the chunks (provider-wiring.ts's per-stream bound)
  const INPUT = '/c0mpute/test-input/1';
  for (const n of [big, dflt]) {
    await n.handleStream(
      INPUT,
      async (ctx) => {
        const declared = (await ctx.next()) as number;
        ctx.reserve(declared);
        await ctx.send('ready');
        let got = 0;
        for (let v = await ctx.next(); v !== undefined; v = await ctx.next()) got += (v as Uint8Array).length;
        await ctx.send(got);
      },
      { maxFrameBytes: 512 * 1024, maxRequestFrames: 1 << 20, maxStreamBytes: MAX_INPUT + SEALED + 1024 * 1024 },
    );
  }
  const send = async (to: Network, declared: number): Promise<unknown> => {
    await caller.dial(to.addrs()[0]!);
    const s = await caller.openStream(to.peerId, INPUT, { limits: { maxFrameBytes: 512 * 1024 } });
    try {
      await s.send(declared);
      assert.equal(await s.next(), 'ready');
      const chunk = new Uint8Array(512 * 1024 - 16);
      for (let i = 0; i < 2; i++) await s.send(chunk);
      await s.end();
      return await s.next();
    } finally {
      await s.close();
    }
  };
  assert.equal(await send(big, MAX_INPUT + SEALED), 2 * (512 * 1024 - 16));
  // the default budget: a 32 MiB input cannot even be reserved, and a 23.75 MiB one leaves no room for a chunk frame
  // (scope connection: the error frame carries code and message only)
  const connectionFull = (e: C0Error) => e.code === NET_ERR.BUFFER_LIMIT && /this connection's streams may hold/.test(e.message);
  await assert.rejects(send(dflt, MAX_INPUT + SEALED), connectionFull);
  await assert.rejects(send(dflt, 23.75 * 1024 * 1024), connectionFull);
  // and the derived budget is the default up to 16 MiB
  assert.deepEqual(budgetForInput(16 * 1024 * 1024), DEFAULT_BUDGET);
  assert.deepEqual(budgetForInput(MAX_INPUT), { perConnectionBytes: MAX_INPUT + INPUT_ROOM_BYTES, perPeerBytes: MAX_INPUT + INPUT_ROOM_BYTES, totalBytes: 4 * (MAX_INPUT + INPUT_ROOM_BYTES) });
});

test('a caller holds no more of an answer than it takes: frames past maxResponseFrames, bytes past maxResponseBytes (16 MiB by default) fail the call', async () => {
  const a = await startNode({ syncOnConnect: [] });
  const b = await startNode({ syncOnConnect: [] });
  nets.push(a, b);
  // the server answers `[frames, size]` with that many frames of that many bytes
  await b.handle(ECHO, async (reqs, ctx) => {
    const [n, size] = reqs[0] as [number, number];
    for (let i = 0; i < n; i++) await ctx.send(new Uint8Array(size));
  });
  await a.dial(b.addrs()[0]!);
  assert.equal((await a.request(b.peerId, ECHO, [[5, 10]], { limits: { maxResponseFrames: 5 } })).length, 5);
  await assert.rejects(a.request(b.peerId, ECHO, [[6, 10]], { limits: { maxResponseFrames: 5 } }), (e: C0Error) => e.code === NET_ERR.TOO_MANY_FRAMES);
  assert.equal((await a.request(b.peerId, ECHO, [[9, 100_000]], { limits: { maxResponseBytes: 1_000_000 } })).length, 9);
  await assert.rejects(a.request(b.peerId, ECHO, [[20, 100_000]], { limits: { maxResponseBytes: 1_000_000 } }), (e: C0Error) => e.code === NET_ERR.RESPONSE_TOO_LARGE);
  // no bound named: 16 MiB (34 frames of 512 KiB are 17 MiB)
  await assert.rejects(a.request(b.peerId, ECHO, [[34, 512 * 1024]]), (e: C0Error) => e.code === NET_ERR.RESPONSE_TOO_LARGE);
  assert.equal((await a.request(b.peerId, ECHO, [[30, 512 * 1024]])).length, 30);
});

test('a stream past its deadline is aborted on both sides', async () => {
  const a = await startNode({ syncOnConnect: [] });
  const b = await startNode({ syncOnConnect: [] });
  nets.push(a, b);
  let serverSignal: AbortSignal | undefined;
  await b.handle(
    ECHO,
    async (_reqs, ctx) => {
      serverSignal = ctx.signal;
      await ctx.send('started');
      await sleep(2_000);
      await ctx.send('late');
    },
    { deadlineMs: 500 },
  );
  await a.dial(b.addrs()[0]!);
  const t0 = Date.now();
  // the caller's deadline
  await assert.rejects(a.request(b.peerId, ECHO, [], { limits: { deadlineMs: 300 } }), (e: C0Error) => e.code === NET_ERR.DEADLINE);
  assert.ok(Date.now() - t0 < 1_500);
  // the server's deadline, with a patient caller: the stream is reset
  await assert.rejects(a.request(b.peerId, ECHO, [], { limits: { deadlineMs: 5_000 } }), (e: C0Error) => e instanceof C0Error);
  assert.equal(serverSignal?.aborted, true);
});

test('a caller that resets its stream aborts the handler at once, not at the deadline; a handler that finishes sees no abort', async () => {
  const a = await startNode({ syncOnConnect: [] });
  const b = await startNode({ syncOnConnect: [] });
  nets.push(a, b);
  const signals: AbortSignal[] = [];
  await b.handleStream(
    ECHO,
    async (ctx) => {
      signals.push(ctx.signal);
      const first = await ctx.next();
      await ctx.send('started');
      if (first === 'quick') return;
      // a handler that reads no more (a provider running the job): only its signal tells it the caller left
      await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
    },
    { deadlineMs: 60_000 },
  );
  await a.dial(b.addrs()[0]!);
  const quick = await a.openStream(b.peerId, ECHO);
  await quick.send('quick');
  await quick.end();
  assert.equal(await quick.next(), 'started');
  assert.equal(await quick.next(), undefined);
  await quick.close();
  await sleep(200);
  assert.equal(signals[0]?.aborted, false, 'a handler that returned is not told its caller left');

  const s = await a.openStream(b.peerId, ECHO);
  await s.send('slow');
  assert.equal(await s.next(), 'started');
  // closing before the server's end frame resets the stream
  await s.close();
  await waitFor(() => signals[1]?.aborted === true, 10_000, 'the handler to see the reset');
  assert.equal((signals[1]!.reason as C0Error).code, NET_ERR.STREAM);
});

test('a node joining late obtains the live adverts by sync', async () => {
  const a = await startNode();
  const b = await startNode();
  nets.push(a, b);
  await link(a, b);
  await sleep(300);
  const ads = [advert(a.signer), advert(b.signer)];
  await a.publish('advert', ads[0]!.bytes);
  await b.publish('advert', ads[1]!.bytes);
  // an expired record in b's cache is not served
  await waitFor(() => a.metrics.registry.getSingleMetric('c0mpute_net_records_delivered_total') !== undefined);
  const late = await startNode();
  nets.push(late);
  const got: string[] = [];
  late.subscribe('advert', (rec, meta) => {
    assert.equal(meta.source, 'sync');
    got.push(rec.address);
  });
  await late.dial(b.addrs()[0]!);
  await waitFor(() => got.length === 2, 5_000, 'sync');
  assert.deepEqual(got.sort(), ads.map((x) => x.address).sort());
  // a second sync delivers nothing new: with the digest nothing the late node holds is even sent (sync-digest.ts)
  const r = await late.syncFrom(b.peerId, ['advert']);
  assert.equal(r.accepted, 0);
  assert.equal(r.ignored, 0);
  await sleep(100);
  assert.equal(got.length, 2);
  // fetch by address
  const f = await late.fetchRecords(a.did, [ads[0]!.address, 'sha256:' + '00'.repeat(32)]);
  assert.equal(f.length, 1);
  assert.equal(f[0]!.address, ads[0]!.address);
});

test('an answered stream whose caller never closes its side still ends: what the caller sends after the answer is dropped, the stream is reset after the linger', async () => {
  const a = await startNode({ syncOnConnect: [] });
  const b = await startNode({ syncOnConnect: [] });
  nets.push(a, b);
  // a long deadline: only the end of the answer may end these streams, after a short linger
  await b.handle(ECHO, async (reqs, ctx) => void (await ctx.send({ echo: reqs })), { deadlineMs: 60_000, answerLingerMs: 1_500 });
  await a.dial(b.addrs()[0]!);
  const streams = await Promise.all(
    Array.from({ length: 4 }, async () => {
      const s = await a.libp2p.dialProtocol(b.peerId, ECHO);
      const lp = lpStream(s);
      await lp.write(encodeFrame({ t: 'data', v: 'hi' }));
      await lp.write(encodeFrame({ t: 'end' }));
      const answer = decodeCanonical((await lp.read({ signal: AbortSignal.timeout(3000) })).subarray()) as CborValue[];
      assert.deepEqual(answer, [0, { echo: ['hi'] }]);
      const end = decodeCanonical((await lp.read({ signal: AbortSignal.timeout(3000) })).subarray()) as CborValue[];
      assert.deepEqual(end, [1]);
      // after the answer: more data, and the write side left open
      s.send(new Uint8Array(200 * 1024).fill(7));
      return s;
    }),
  );
  const open = () => b.libp2p.getConnections(a.peerId).flatMap((c) => c.streams.filter((s) => s.protocol === ECHO));
  await sleep(300);
  assert.equal(
    open().reduce((n, s) => n + s.readBufferLength, 0),
    0,
    'nothing sent after the answer is kept',
  );
  await waitFor(() => open().length === 0, 5_000, 'the answered streams to be closed on the server');
  await waitFor(() => streams.every((s) => s.status !== 'open'), 5_000, 'the caller to see its streams end');
});

test('a slow honest reader gets the whole answer: the linger after the end frame is the reader’s time, not a 2 s cut', async () => {
  const a = await startNode({ syncOnConnect: [] });
  const b = await startNode({ syncOnConnect: [] });
  nets.push(a, b);
  const SLOW = '/c0mpute-test/slow/1';
  // 100 frames of 10 KiB: the end frame is written once the rest fits the caller's receive window, seconds before it is read
  await b.handle(SLOW, async (_reqs, ctx) => {
    for (let i = 0; i < 100; i++) await ctx.send({ i, pad: new Uint8Array(10 * 1024) });
  });
  await a.dial(b.addrs()[0]!);
  let got = 0;
  // 40 ms of work a frame: 4 s in all; at a 2 s linger the stream is reset before the last frames are read
  const out = await a.request(b.peerId, SLOW, ['go'], { limits: { deadlineMs: 60_000 }, onFrame: async () => void (got++, await sleep(40)) });
  assert.equal(out.length, 100, 'every frame arrived');
  assert.equal(got, 100);
});

test('one peer’s stalled frames cannot fill the node’s byte budget: an honest peer’s request is still served', async () => {
  // a small budget, so a few streams would fill it: 2 MiB in total, 512 KiB per connection (and so per peer)
  const victim = await startNode({ syncOnConnect: [], directBudget: { totalBytes: 2 * 1024 * 1024, perConnectionBytes: 512 * 1024 } });
  const mallory = await startNode({ syncOnConnect: [] });
  const honest = await startNode({ syncOnConnect: [] });
  nets.push(victim, mallory, honest);
  await victim.handle(ECHO, async (reqs, ctx) => void (await ctx.send({ echo: reqs })), { maxFrameBytes: 64 * 1024, maxRequestFrames: 1, deadlineMs: 20_000 });
  // four connections from one key (each could hold 512 KiB: together the whole budget), 16 streams each: a 64 KiB frame declared on each and 60 KiB of it sent, then nothing
  const prefix = Uint8Array.from([0x80, 0x80, 0x04]);
  const body = new Uint8Array(60 * 1024);
  let sent = 0;
  // one connection at a time: forced dials made at once share one connection
  for (let c = 0; c < 4; c++) {
    const conn = await mallory.libp2p.dial(victim.libp2p.getMultiaddrs()[0]!, { force: true });
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        try {
          const s = await conn.newStream(ECHO);
          s.send(prefix);
          s.send(body);
          sent++;
        } catch {
          // refused (and reset) by the victim's budget: as it should be
        }
      }),
    );
  }
  await sleep(500);
  assert.ok(sent > 0);
  await honest.dial(victim.addrs()[0]!);
  assert.deepEqual(await honest.request(victim.peerId, ECHO, ['hi']), [{ echo: ['hi'] }]);
});
