/**
 * One retry schedule per buyer, not per receipt (src/roles/provider/receipt-delivery.ts; docs/node.md "A receipt the
 * buyer did not get on the stream"; QA ffRcpt F1). Counts sends (each a dial to a buyer that is gone), not time: a
 * gone buyer with 1,000 receipts waiting costs one dial per wait (5 s doubling to 1 minute, then 15 minutes after an
 * hour out of reach), not one per receipt; a buyer that did not keep one is tried far less often; a buyer back (it
 * connects) gets everything, paced below its receipt rate limit. Before, each receipt had its own timer: 4,000 sends
 * in the first minute, 10,000 in the first hour, and 1,000 at once when the buyer connected.
 */
import { mock, test } from 'node:test';
import assert from 'node:assert/strict';
import { seal, T, type Opened, type Receipt } from '../../../src/records/index.js';
import { RECEIPT_SEND_BATCH, ReceiptDelivery, type ReceiptSendResult } from '../../../src/roles/provider/receipt-delivery.js';
import type { OfferSendOutcome } from '../../../src/net/offer-route.js';
import { silentLogger } from '../../../src/util/log.js';
import { records, provider, BUYER, NOW } from '../records/fixtures.js';

const OTHER = 'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK';
const receipt = (i: number, buyer = BUYER): Opened<Receipt> => seal(T.receipt, { ...records.receipt(), job: 'sha256:' + i.toString(16).padStart(64, '0'), buyer }, provider) as Opened<Receipt>;
const N = 1000;
const many = Array.from({ length: N }, (_, i) => receipt(i));

/** `tick(ms, step)`: the fake clock moves `ms` in steps of `step` (below the shortest wait due), settling after each. */
async function withFakeTime(f: (tick: (ms: number, step?: number) => Promise<void>, now: () => number) => Promise<void>): Promise<void> {
  mock.timers.enable({ apis: ['setTimeout'] });
  let t = 0;
  const flush = async (): Promise<void> => {
    for (let i = 0; i < 5; i++) await new Promise<void>((ok) => setImmediate(ok));
  };
  try {
    await f(
      async (ms, stepMs = 1000) => {
        await flush();
        for (let left = ms; left > 0; left -= stepMs) {
          const step = Math.min(stepMs, left);
          t += step;
          mock.timers.tick(step);
          await flush();
        }
      },
      () => NOW + t,
    );
  } finally {
    mock.timers.reset();
  }
}

test('a gone buyer with 1,000 receipts waiting: a handful of dials a minute, one timer, whatever the count', async () => {
  await withFakeTime(async (tick, now) => {
    const sent: number[] = [];
    const d = new ReceiptDelivery({ send: async () => (sent.push(now()), 'unreachable'), clock: now, log: silentLogger(), maxPending: 2 * N });
    for (const r of many) await d.deliver(r);
    assert.equal(d.size, N, 'every receipt waits');
    assert.equal(sent.length, 1, 'one dial for the buyer, not one per receipt');
    assert.equal(d.timers, 1, 'one timer for the buyer');
    await tick(60_000);
    // tries at 0, 5, 15, 35 s (then 75 s)
    assert.equal(sent.length, 4, `dials in the first minute: ${sent.length}`);
    await tick(60 * 60_000 - 60_000, 10_000);
    // 5, 10, 20, 40 s, then one a minute
    assert.ok(sent.length <= 64, `dials in the first hour: ${sent.length}`);
    const hour = sent.length;
    await tick(5 * 60 * 60_000, 60_000);
    assert.ok(sent.length - hour <= 5 * 4 + 1, `then every 15 minutes: ${sent.length - hour} in 5 hours`);
    assert.equal(d.timers, 1);
    d.stop();
    assert.equal(d.timers, 0);
  });
});

test('a buyer that did not keep a receipt (not_kept) is tried after a minute, doubling: not every 5 s', async () => {
  await withFakeTime(async (tick, now) => {
    let sends = 0;
    const d = new ReceiptDelivery({ send: async () => (sends++, 'not_kept'), clock: now, log: silentLogger(), maxPending: 2 * N });
    for (const r of many) await d.deliver(r);
    assert.equal(sends, 1);
    await tick(60_000);
    assert.equal(sends, 2, 'once more after a minute');
    await tick(9 * 60_000, 10_000);
    // 60, 120, 240, 480 s: the try at 900 s comes later
    assert.equal(sends, 4, `${sends} sends in 10 minutes`);
    d.stop();
  });
});

test('the buyer back (it connects): all its receipts go, 40 a go, paced below its rate limit; another buyer is not held up', async () => {
  await withFakeTime(async (tick, now) => {
    let back = false;
    const at: number[] = [];
    const other: string[] = [];
    const d = new ReceiptDelivery({
      send: async (buyer, r): Promise<OfferSendOutcome | ReceiptSendResult> => {
        if (buyer === OTHER) return other.push(r.address), 'accepted';
        if (!back) return 'unreachable';
        at.push(now());
        return 'accepted';
      },
      clock: now,
      log: silentLogger(),
      maxPending: 2 * N,
    });
    for (const r of many) await d.deliver(r);
    await tick(10 * 60_000, 5_000);
    back = true;
    d.onConnected(BUYER);
    await tick(0);
    await d.deliver(receipt(1, OTHER));
    assert.equal(other.length, 1, 'another buyer’s receipt goes at once');
    await new Promise<void>((ok) => setImmediate(ok));
    assert.equal(at.length, RECEIPT_SEND_BATCH, 'the first go sends one batch');
    // a second connection while paced does not send past the pace
    d.onConnected(BUYER);
    await tick(0);
    assert.equal(at.length, RECEIPT_SEND_BATCH);
    await tick(Math.ceil(N / RECEIPT_SEND_BATCH) * 5_000);
    assert.equal(at.length, N, 'every receipt delivered');
    assert.equal(d.size, 0);
    assert.equal(d.timers, 0, 'no timer left');
    // never more than a batch in any 5 s
    for (let i = RECEIPT_SEND_BATCH; i < at.length; i++) assert.ok(at[i]! - at[i - RECEIPT_SEND_BATCH]! >= 5_000, 'paced');
  });
});

test('a buyer that answers RATE_LIMITED: the go pauses and goes on, nothing is lost, no back-off', async () => {
  await withFakeTime(async (tick, now) => {
    let tokens = 10;
    const took: string[] = [];
    const d = new ReceiptDelivery({
      send: async (_, r): Promise<ReceiptSendResult> => {
        if (tokens <= 0) return { outcome: 'ignored', code: 'RATE_LIMITED' };
        tokens--;
        took.push(r.address);
        return { outcome: 'accepted' };
      },
      clock: now,
      log: silentLogger(),
      maxPending: 2 * N,
      batch: 1000,
    });
    const rs = many.slice(0, 30);
    for (const r of rs) d.restore(r, now() + 60_000);
    d.resume();
    await tick(0);
    assert.equal(took.length, 10);
    for (let i = 0; i < 3; i++) {
      tokens = 10;
      await tick(5_000);
    }
    assert.equal(took.length, 30, 'all taken');
    assert.equal(new Set(took).size, 30);
    assert.equal(d.size, 0);
  });
});

test('the connection a go dials itself is no sign of life: a buyer whose node connects and never answers is backed off, not dialled again at once (review s55)', async () => {
  for (const when of ['during the send', 'just after it'] as const) {
    await withFakeTime(async (tick, now) => {
      let sends = 0;
      // each send dials the buyer, libp2p identifies the connection (onConnected) while the send is under way or a moment
      // after it, and the buyer's handler does not answer in time
      const d: ReceiptDelivery = new ReceiptDelivery({
        send: async (buyer) => {
          sends++;
          if (when === 'during the send') d.onConnected(buyer);
          else setImmediate(() => d.onConnected(buyer));
          return 'unreachable';
        },
        clock: now,
        log: silentLogger(),
      });
      await d.deliver(receipt(1));
      await tick(60 * 60_000, 5_000);
      // during the send: ignored (tries at 0, 5, 15, 35, 75 s, then a minute); just after: one more try per wait, the
      // waits still doubling to a minute (before: a try every 5 s, 720 in the hour)
      assert.ok(sends <= (when === 'during the send' ? 64 : 128), `identified ${when}: ${sends} tries in the hour`);
      d.stop();
    });
  }
});

test('a back-off starts at its own first wait when the kind of failure changes: not reached five times, then not kept, waits a minute (review s55)', async () => {
  await withFakeTime(async (tick, now) => {
    let answer: OfferSendOutcome = 'unreachable';
    const at: number[] = [];
    const d = new ReceiptDelivery({ send: async () => (at.push(now()), answer), clock: now, log: silentLogger() });
    await d.deliver(receipt(1));
    await tick(155_000);
    // 0, 5, 15, 35, 75, 135 s
    assert.equal(at.length, 6);
    answer = 'not_kept';
    // the next try, at 195 s, is not kept: the one after comes a minute later, at 255 s, not 10 minutes later
    await tick(40_000);
    assert.equal(at.length, 7);
    await tick(60_000);
    assert.equal(at.length, 8, 'once more a minute after the first not_kept');
    d.stop();
  });
});
