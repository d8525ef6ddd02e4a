/**
 * Refusals on train/1 cost the sender (review s40 A F2; src/roles/trainer/worker.ts
 * `#onCommit`, `#ignore`, IGNORED_COMMIT_RATE, IGNORED_EVENT_RATE). Before, a
 * replayed valid commitment was opened (its signature checked), shown as an
 * `ignored` event (a line of `train join`) and counted however often it came:
 * 25,824 in 20 s. Now a member's commitments this worker ignores take a token
 * each, past IGNORED_COMMIT_RATE more are refused TRAIN_RATE_LIMITED unopened;
 * `ignored` events are shown within IGNORED_EVENT_RATE (all still counted, the
 * next shown says how many were not); and with the node's abuse score wired,
 * a commitment that does not open is a strike and keys outside the run are
 * reported past REFUSED_RATE. A real worker on a two-member run, its network a
 * stub handing the test the train/1 handler and its `admit`, as the network
 * applies it; clocks are fake, so no bucket refills unless the test says so.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { stringify } from 'yaml';
import type { C0Error } from '../../../src/errors.js';
import type { ProtocolHandler, ServeOptions } from '../../../src/net/protocols.js';
import { REFUSED_RATE } from '../../../src/net/peer-abuse.js';
import { IGNORED_COMMIT_RATE, IGNORED_EVENT_RATE, TrainerWorker, type TrainerEvent } from '../../../src/roles/trainer/worker.js';
import { buildRun } from '../../../src/roles/trainer/run-file.js';
import { seal } from '../../../src/records/envelope.js';
import { TRAIN_T, type TrainStep } from '../../../src/training/record-kinds.js';
import { peerIdFromDid } from '../../../src/node/peer-id.js';
import { fakeClock } from '../../../src/util/clock.js';
import { tempDir } from '../ledger/helpers.js';
import { NOW, P } from '../market/fixtures.js';

test('replayed commitments past the rate are refused unopened; ignored events are bounded; the abuse score hears of junk and strangers', async () => {
  const self = P(320);
  const other = P(321);
  const t = tempDir('c0-train-flood-');
  try {
    const spe = 5;
    const yaml = stringify({ name: 'pair', model: { layers: [4, 8, 3] }, seed: 1, stepsPerEpoch: spe, epochs: 1, members: [self, other].map((m, i) => ({ did: m.did, addr: `/ip4/127.0.0.1/tcp/${i + 1}` })) });
    const run = buildRun(yaml, self.signer, NOW).bundle.run;
    let handler: ProtocolHandler | undefined;
    let admit: ServeOptions['admit'];
    const net = {
      did: self.did,
      handle: async (_p: string, h: ProtocolHandler, _l: unknown, o?: ServeOptions) => {
        handler = h;
        admit = o?.admit;
      },
      request: async () => [],
    };
    const mono = fakeClock(0);
    const events: TrainerEvent[] = [];
    const strikes: string[] = [];
    const reports: string[] = [];
    const abuse = { invalid: (p: string) => void strikes.push(p), report: (p: string) => void reports.push(p) };
    const w = new TrainerWorker({ signer: self.signer, did: self.did, run, addrs: {}, dir: t.dir, clock: fakeClock(NOW), monoClock: mono, net: net as never, abuse, onEvent: (e) => void events.push(e) });
    await w.start();
    const ctx = { peer: peerIdFromDid(other.did), signal: new AbortController().signal, send: async () => {} };
    // a valid commitment of the other member for a step of a later epoch than the run has: ignored each time it comes
    const step: TrainStep = { run: run.address, view: 0, step: 7 * spe, grad: 'sha256:' + '1'.repeat(64), weights: 'sha256:' + '2'.repeat(64), lossMicro: 1, signedAt: NOW };
    const env = seal(TRAIN_T.step, step as never, other.signer);
    const burst = IGNORED_COMMIT_RATE(spe).burst;
    const codes = new Map<string, number>();
    for (let i = 0; i < burst + 50; i++) {
      try {
        await handler!([{ k: 'commit' }, env.bytes], ctx as never);
        codes.set('ok', (codes.get('ok') ?? 0) + 1);
      } catch (e) {
        const c = (e as C0Error).code;
        codes.set(c, (codes.get(c) ?? 0) + 1);
      }
    }
    assert.deepEqual(Object.fromEntries(codes), { ok: burst, TRAIN_RATE_LIMITED: 50 });
    assert.equal(w.ignoredCount, burst, 'the refused ones were not opened nor counted as ignored');
    const shown = () => events.filter((e) => e.e === 'ignored') as Array<Extract<TrainerEvent, { e: 'ignored' }>>;
    assert.equal(shown().length, IGNORED_EVENT_RATE.burst, 'ignored events within their burst');
    assert.ok(reports.length > 0 && reports.length <= 50 - REFUSED_RATE.burst + 1, `${reports.length} reports past the free refusals`);
    assert.ok(reports.every((p) => p === ctx.peer.toString()));
    // a second later: one more token each; the next event shown counts the ones not shown
    mono.advance(1_000);
    await handler!([{ k: 'commit' }, env.bytes], ctx as never);
    const last = shown().at(-1)!;
    assert.equal(last.unshown, burst - IGNORED_EVENT_RATE.burst);
    assert.equal(w.ignoredCount, burst + 1);

    // junk no member sends is a strike (mono advanced so the member has tokens again)
    mono.advance(60_000);
    await handler!([{ k: 'commit' }, new Uint8Array([1, 2, 3])], ctx as never);
    assert.deepEqual(strikes, [ctx.peer.toString()]);

    // keys outside the run: refused by admit before their request is read; free up to REFUSED_RATE, then reported
    const before = reports.length;
    const stranger = peerIdFromDid(P(322).did);
    for (let i = 0; i < REFUSED_RATE.burst + 5; i++) assert.equal(admit?.(stranger)?.code, 'TRAIN_NOT_MEMBER');
    assert.equal(admit?.(ctx.peer), undefined, 'a member is admitted');
    assert.equal(reports.length - before, 5);
    await w.stop();
  } finally {
    t.cleanup();
  }
});
