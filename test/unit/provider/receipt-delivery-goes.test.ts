/**
 * Goes under way at once over all buyers are bounded (RECEIPT_GOES_AT_ONCE, src/roles/provider/receipt-delivery.ts;
 * docs/node.md "A receipt the buyer did not get on the stream"): a provider restarted with receipts waiting for 200
 * buyers that are gone dials 8 at a time, not all 200 at once (before, `resume` started every go together, filling
 * libp2p's dial queue ahead of the node's own dials); the rest wait their turn in order, and a buyer that shows a sign
 * of life while it waits goes next. Counts sends in flight, not time.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { seal, T, type Opened, type Receipt } from '../../../src/records/index.js';
import { RECEIPT_GOES_AT_ONCE, ReceiptDelivery } from '../../../src/roles/provider/receipt-delivery.js';
import type { OfferSendOutcome } from '../../../src/net/offer-route.js';
import { silentLogger } from '../../../src/util/log.js';
import { records, provider, NOW } from '../records/fixtures.js';
import { P } from '../market/fixtures.js';

const buyer = (i: number) => P(5000 + i).did;
const receipt = (i: number): Opened<Receipt> => seal(T.receipt, { ...records.receipt(), job: 'sha256:' + i.toString(16).padStart(64, '0'), buyer: buyer(i) }, provider) as Opened<Receipt>;

test('200 buyers gone, restored at a restart: 8 dials at a time, in order, and a buyer that connects while it waits goes next', async () => {
  const N = 200;
  let inFlight = 0;
  let most = 0;
  const order: string[] = [];
  const waiting: Array<(o: OfferSendOutcome) => void> = [];
  const d = new ReceiptDelivery({
    send: (did) => {
      order.push(did);
      inFlight++;
      most = Math.max(most, inFlight);
      // a dial to a buyer that is gone: it waits for its timeout
      return new Promise<OfferSendOutcome>((ok) => waiting.push((o) => (inFlight--, ok(o))));
    },
    clock: () => NOW,
    log: silentLogger(),
  });
  for (let i = 0; i < N; i++) d.restore(receipt(i), NOW + 60_000);
  d.resume();
  assert.equal(inFlight, RECEIPT_GOES_AT_ONCE, 'the first goes, no more');
  assert.deepEqual(d.goes, { going: RECEIPT_GOES_AT_ONCE, waiting: N - RECEIPT_GOES_AT_ONCE });
  // buyer 150 connects while it waits for its turn: it goes as the next turn comes, before 8..149
  d.onConnected(buyer(150));
  assert.equal(inFlight, RECEIPT_GOES_AT_ONCE, 'a sign of life takes no turn of its own');
  const settle = async () => {
    for (let i = 0; i < 5; i++) await new Promise<void>((ok) => setImmediate(ok));
  };
  waiting.shift()!('unreachable');
  await settle();
  assert.equal(order.at(-1), buyer(150), 'the buyer that connected goes first');
  // the rest in the order they came, never more than 8 at once
  while (waiting.length) {
    waiting.shift()!(order.length % 2 ? 'unreachable' : 'accepted');
    await settle();
  }
  assert.equal(most, RECEIPT_GOES_AT_ONCE, `at most ${RECEIPT_GOES_AT_ONCE} sends in flight: ${most}`);
  assert.equal(order.length, N, 'every buyer tried once');
  assert.deepEqual(order.slice(RECEIPT_GOES_AT_ONCE + 1, RECEIPT_GOES_AT_ONCE + 4), [buyer(8), buyer(9), buyer(10)]);
  assert.deepEqual(d.goes, { going: 0, waiting: 0 });
  d.stop();
});

test('a receipt handed over while 200 gone buyers wait their turn goes first: its buyer is likely there (review s56)', async () => {
  const N = 200;
  const order: string[] = [];
  const waiting: Array<(o: OfferSendOutcome) => void> = [];
  const d = new ReceiptDelivery({ send: (did) => (order.push(did), new Promise<OfferSendOutcome>((ok) => waiting.push(ok))), clock: () => NOW, log: silentLogger() });
  for (let i = 0; i < N; i++) d.restore(receipt(i), NOW + 60_000);
  d.resume();
  // a job just ended here and its exec stream broke: its receipt is handed over
  void d.deliver(receipt(N));
  await new Promise<void>((ok) => setImmediate(ok));
  assert.equal(d.goes.waiting, N - RECEIPT_GOES_AT_ONCE + 1);
  waiting.shift()!('unreachable');
  for (let i = 0; i < 5; i++) await new Promise<void>((ok) => setImmediate(ok));
  assert.equal(order.at(-1), buyer(N), 'sent at the first turn, not after 192 gone buyers');
  d.stop();
  assert.deepEqual(d.goes.waiting, 0, 'stop leaves no buyer waiting');
});
