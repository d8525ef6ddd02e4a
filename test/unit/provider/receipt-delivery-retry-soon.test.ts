/**
 * A receipt sent directly to a buyer whose node was frozen (SIGSTOP, a paused VM) while the exec stream waited for
 * its acknowledgement: the direct send times out with the buyer still connected (its connection outlived the
 * freeze), so no new connection sends it (src/roles/provider/receipt-delivery.ts; docs/node.md "A receipt the buyer
 * did not get on the stream"). Its first retry comes after RECEIPT_RETRY_MS (5 s), doubling from there. Before (QA
 * ffGang F5) the first retry came after a minute: a buyer frozen 50 s got its receipt 56 s after it ran again, and
 * `c0mpute jobs` said "no receipt" meanwhile, while the docs said "within a second".
 */
import { mock, test } from 'node:test';
import assert from 'node:assert/strict';
import { seal, T, type Opened, type Receipt } from '../../../src/records/index.js';
import { RECEIPT_RETRY_MS, ReceiptDelivery } from '../../../src/roles/provider/receipt-delivery.js';
import type { OfferSendOutcome } from '../../../src/net/offer-route.js';
import { silentLogger } from '../../../src/util/log.js';
import { records, provider, addr, BUYER, NOW } from '../records/fixtures.js';

test('a buyer not reached (frozen, still connected) is sent its receipt again 5 s later, then at 10 s, 20 s… (not after a minute)', async () => {
  mock.timers.enable({ apis: ['setTimeout'] });
  try {
    const answers: OfferSendOutcome[] = ['unreachable', 'unreachable', 'accepted'];
    const sent: number[] = [];
    let t = 0;
    const d = new ReceiptDelivery({ send: async () => (sent.push(t), answers.shift() ?? 'unreachable'), clock: () => NOW, log: silentLogger() });
    const r = seal(T.receipt, { ...records.receipt(), job: addr('1'), buyer: BUYER }, provider) as Opened<Receipt>;
    await d.deliver(r);
    assert.deepEqual(sent, [0]);
    const tick = async (ms: number) => {
      t += ms;
      mock.timers.tick(ms);
      for (let i = 0; i < 5; i++) await new Promise<void>((ok) => queueMicrotask(ok));
    };
    await tick(4_999);
    assert.deepEqual(sent, [0], 'not before the first wait');
    await tick(1);
    assert.deepEqual(sent, [0, 5_000], 'the first retry 5 s after the failed try');
    await tick(9_999);
    assert.equal(sent.length, 2);
    await tick(1);
    assert.deepEqual(sent, [0, 5_000, 15_000], 'then after 10 s (doubling)');
    await tick(0);
    assert.equal(d.size, 0, 'delivered: no longer waiting');
    assert.equal(RECEIPT_RETRY_MS, 5_000);
  } finally {
    mock.timers.reset();
  }
});
