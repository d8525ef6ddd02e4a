/**
 * A receipt sent directly whose buyer was not reached is sent again after a wait, not only when that buyer connects
 * again (src/roles/provider/receipt-delivery.ts; docs/node.md "A receipt the buyer did not get on the stream"): a
 * buyer whose receipt handler outlasts outcome/1's deadline is still connected, so its next connection may be far off.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { seal, T, type Opened, type Receipt } from '../../../src/records/index.js';
import { ReceiptDelivery } from '../../../src/roles/provider/receipt-delivery.js';
import type { OfferSendOutcome } from '../../../src/net/offer-route.js';
import { silentLogger } from '../../../src/util/log.js';
import { records, provider, addr, BUYER, NOW } from '../records/fixtures.js';

const receipt = (job: string): Opened<Receipt> => seal(T.receipt, { ...records.receipt(), job, buyer: BUYER }, provider) as Opened<Receipt>;
const settle = () => new Promise((r) => setImmediate(r));

/** Resolves once `cond` holds after a send; rejects with `what` after a generous give-up (the retry is a 1 ms wait). */
function sends(onSend: { f: () => void }, cond: () => boolean, what: string): Promise<void> {
  return new Promise<void>((res, rej) => {
    const giveUp = setTimeout(() => rej(new Error(what)), 10_000);
    onSend.f = () => {
      if (!cond()) return;
      clearTimeout(giveUp);
      res();
    };
  });
}

test('a buyer not reached (still connected: its handler outlasted the deadline) is sent its receipt again after a wait, without a new connection', async () => {
  const dropped: string[] = [];
  const keep = { save: async () => undefined, drop: async (a: string) => void dropped.push(a) };
  const answers: OfferSendOutcome[] = ['unreachable', 'unreachable', 'accepted'];
  const sent: string[] = [];
  const onSend = { f: () => undefined as void };
  let inFlight = 0;
  let overlapped = false;
  const d = new ReceiptDelivery({
    send: async (_, r) => {
      if (inFlight++ > 0) overlapped = true;
      sent.push(r.address);
      await settle();
      inFlight--;
      onSend.f();
      return answers.shift() ?? 'unreachable';
    },
    clock: () => NOW,
    log: silentLogger(),
    keep,
    retryMs: 1,
  });
  const r = receipt(addr('1'));
  const third = sends(onSend, () => sent.length === 3, 'no retry after an unreachable try: the receipt waits for a connection that does not come');
  // the retry timer is unref'd (it must not hold a stopping process): this test holds the event loop open meanwhile
  const hold = setInterval(() => undefined, 1_000);
  await d.deliver(r);
  assert.equal(d.size, 1, 'kept after the first try');
  // the buyer's connection meanwhile does not send it twice at once (the `sending` guard)
  d.onConnected(BUYER);
  try {
    await third;
  } finally {
    clearInterval(hold);
  }
  await settle();
  assert.deepEqual(sent, [r.address, r.address, r.address]);
  assert.equal(overlapped, false, 'never two sends of one receipt at once');
  assert.equal(d.size, 0, 'delivered once the buyer took it');
  assert.deepEqual(dropped, [r.address], 'and only then out of the keep');
});

test('a receipt not reached for is still bounded by keepMs: the retry past it drops it unsent', async () => {
  let now = NOW;
  const dropped: string[] = [];
  const sent: string[] = [];
  const onSend = { f: () => undefined as void };
  let lapsed: () => void = () => undefined;
  const gone = new Promise<void>((res) => (lapsed = res));
  const d = new ReceiptDelivery({
    send: async (_, r) => {
      sent.push(r.address);
      onSend.f();
      return 'unreachable';
    },
    clock: () => now,
    log: silentLogger(),
    keep: {
      save: async () => undefined,
      drop: async (a) => {
        dropped.push(a);
        lapsed();
      },
    },
    keepMs: 60_000,
    retryMs: 1,
  });
  const r = receipt(addr('2'));
  const second = sends(onSend, () => sent.length === 2, 'no retry after an unreachable try');
  const hold = setInterval(() => undefined, 1_000);
  try {
    await d.deliver(r);
    await second;
    // past its keep: the next retry forgets it instead of sending
    now += 60_001;
    const giveUp = setTimeout(() => lapsed(), 10_000);
    await gone;
    clearTimeout(giveUp);
  } finally {
    clearInterval(hold);
  }
  assert.deepEqual(dropped, [r.address], 'dropped once lapsed');
  assert.equal(d.size, 0);
  assert.equal(sent.length, 2, 'not sent after it lapsed');
  d.stop();
});

test('stop clears the retry of a receipt not reached for', async () => {
  const sent: string[] = [];
  const d = new ReceiptDelivery({ send: async (_, r) => (sent.push(r.address), 'unreachable'), clock: () => NOW, log: silentLogger(), retryMs: 60_000 });
  await d.deliver(receipt(addr('3')));
  d.stop();
  assert.equal(d.size, 0);
  assert.equal(sent.length, 1);
});
