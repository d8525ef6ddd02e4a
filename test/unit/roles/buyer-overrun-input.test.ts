/**
 * The overrun does not run while the input is on the wire (third-round review, a bandwidth-shaping proxy between real
 * daemons): the buyer's "sent" fires once its own buffers took the input (~1 s after the stream opened for a 2 MiB
 * input on a 64 KiB/s link that needed 32 s), and a provider can promise keepalives only in `accepted`, once the
 * whole input arrived. The buyer counted the overrun from "sent" (15 s + the quote + the input at 128 KiB/s), so it
 * gave an honest provider up EXEC_PROVIDER_OVERRAN while the input was still arriving, within the provider's own input
 * rule (30 s + the input at 128 KiB/s), and signed a `timeout` non-delivery against it. Now the quote's overrun counts
 * from `accepted`, and the input phase before it is bounded by the provider's own rule and the grace (inputLimitMs).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hashHex } from '../../../src/records/address.js';
import type { ExecFrame } from '../../../src/roles/exec-protocol.js';
import { NOW, P, advert, offer, receipt } from '../market/fixtures.js';
import { buyerOnFakes, fakeSpec, abortedBy as aborted } from './buyer-fakes.js';

const ME = P(930);
const A = P(931);
const INPUT = new Uint8Array([1, 2, 3, 4]);
const OUTPUT = new Uint8Array([7, 7]);

/** A (quoting 1 ms, promising no keepalives) takes its input `onWireMs` after the buyer "sent" it, then does as `after` says. */
async function run(onWireMs: number, after: 'deliver' | 'silent') {
  const f: ReturnType<typeof buyerOnFakes> = buyerOnFakes(ME, {
    providers: [A],
    policy: 'balanced',
    offerFor: (p, job) => offer(p, job, advert(p), { durationMs: 1 }),
    exec: () => {
      throw new Error('replaced below');
    },
    deps: {
      // the grace scaled down as in buyer-fakes' runAgainstWinner, and a provider's input base with it (30 s by default)
      overrunGraceMs: 50,
      inputBaseMs: 2_000,
      exec: async function* (_did: string, _p: string, _req: unknown, signal: AbortSignal, heard?: (f: ExecFrame) => void, sent?: () => void, opened?: () => void) {
        opened?.();
        heard?.({ t: 'ready' });
        // the buyer's buffers took the input at once: it is still on the wire, and the provider has not got it yet
        sent?.();
        await Promise.race([new Promise((ok) => setTimeout(ok, onWireMs)), aborted(signal)]);
        yield { t: 'accepted', startedAt: NOW };
        if (after === 'silent') {
          await aborted(signal);
          return;
        }
        yield { t: 'output', data: OUTPUT };
        const r = receipt(A, ME, f.candidate(A)!.offer, { workload: 'infer.llm', inputHash: hashHex(INPUT), outputHash: hashHex(OUTPUT) });
        yield { t: 'receipt', receipt: r.bytes };
      },
    },
  });
  const result = await f.buyer.run(fakeSpec({ input: INPUT, policy: 'balanced' }));
  return { result, nondeliveries: f.nondeliveries() };
}

test('a provider whose input arrives later than grace + quote + the input at 128 KiB/s after "sent", within its own input rule, is not given up and not blamed', { timeout: 20_000 }, async () => {
  // 400 ms on the wire: past 50 ms + 1 ms + 1 ms (the overrun counted from "sent"), inside 2 s + 1 ms + 50 ms
  const r = await run(400, 'deliver');
  assert.equal(r.result.status, 'completed', JSON.stringify(r.result.attempts));
  assert.equal(r.result.attempts.length, 1);
  assert.equal(r.nondeliveries.length, 0, 'no non-delivery is signed');
});

test('once it accepted, a provider that promised no keepalives is still held to its quote, counted from its accepted', { timeout: 20_000 }, async () => {
  const r = await run(400, 'silent');
  assert.equal(r.result.status, 'failed');
  assert.equal(r.result.attempts[0]!.outcome, 'provider overran its quote: EXEC_PROVIDER_OVERRAN');
  assert.equal(r.nondeliveries.length, 1);
});
