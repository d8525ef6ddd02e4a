/**
 * A receipt the exec stream could not deliver goes to its buyer directly (src/roles/provider/receipt-delivery.ts;
 * docs/node.md "A receipt the buyer did not get on the stream"): sent at once; one its buyer could not be reached for
 * waits for that buyer's next connection, bounded in count and age; a buyer that answered (or refused) is not asked
 * again.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { seal, T, type Opened, type Receipt } from '../../../src/records/index.js';
import { RECEIPT_DELIVERY_KEEP_MS, ReceiptDelivery, type ReceiptSendResult } from '../../../src/roles/provider/receipt-delivery.js';
import type { OfferSendOutcome } from '../../../src/net/offer-route.js';
import { silentLogger } from '../../../src/util/log.js';
import { records, provider, addr, BUYER, NOW } from '../records/fixtures.js';

const receipt = (job: string, buyer = BUYER): Opened<Receipt> => seal(T.receipt, { ...records.receipt(), job, buyer }, provider) as Opened<Receipt>;

function setup(answers: OfferSendOutcome[], o: { maxPending?: number; keepMs?: number; retryMs?: number } = {}) {
  let now = NOW;
  const sent: Array<{ buyer: string; job: string }> = [];
  const d = new ReceiptDelivery({
    send: async (buyer, r) => {
      sent.push({ buyer, job: r.record.job });
      return answers.shift() ?? 'unreachable';
    },
    clock: () => now,
    log: silentLogger(),
    ...o,
  });
  return { d, sent, advance: (ms: number) => (now += ms) };
}
const settle = () => new Promise((r) => setImmediate(r));

test('a receipt is sent to its buyer at once; delivered, it is not kept', async () => {
  const { d, sent } = setup(['accepted']);
  await d.deliver(receipt(addr('1')));
  assert.deepEqual(sent, [{ buyer: BUYER, job: addr('1') }]);
  assert.equal(d.size, 0);
});

test('a buyer not reached gets its receipt when it connects again, and only then', async () => {
  const { d, sent } = setup(['unreachable', 'accepted']);
  await d.deliver(receipt(addr('1')));
  assert.equal(d.size, 1, 'kept for the buyer’s return');
  assert.deepEqual(d.waitingFor(), [BUYER]);
  d.onConnected('did:key:z6MkSomeoneElse');
  await settle();
  assert.equal(sent.length, 1, 'another peer’s connection sends nothing');
  d.onConnected(BUYER);
  await settle();
  assert.equal(sent.length, 2, 'sent when the buyer connected');
  assert.equal(d.size, 0, 'and not kept once delivered');
  d.onConnected(BUYER);
  await settle();
  assert.equal(sent.length, 2, 'not sent twice');
});

test('a buyer that took the receipt but could not keep it (not_kept: OUTCOME_NOT_KEPT) is sent it again, after a wait and when it connects, until it keeps it', async () => {
  const saved: string[] = [];
  const dropped: string[] = [];
  const keep = { save: async (r: Opened<Receipt>) => void saved.push(r.address), drop: async (a: string) => void dropped.push(a) };
  const now = NOW;
  const answers: OfferSendOutcome[] = ['not_kept', 'not_kept', 'accepted'];
  const sent: string[] = [];
  let wake: () => void = () => undefined;
  const d = new ReceiptDelivery({
    send: async (_, r) => {
      sent.push(r.address);
      wake();
      return answers.shift() ?? 'unreachable';
    },
    clock: () => now,
    log: silentLogger(),
    keep,
    retryMs: 1,
    notKeptRetryMs: 1,
  });
  const r = receipt(addr('1'));
  const third = new Promise<void>((res) => (wake = () => sent.length === 3 && res()));
  await d.deliver(r);
  assert.equal(d.size, 1, 'still waiting: the buyer did not keep it');
  assert.deepEqual(dropped, [], 'and still on disk');
  // the first retry comes after its wait; the second after twice that; the third try is kept. The retry timer is
  // unref'd (it must not hold a stopping process): this test holds the event loop open meanwhile.
  const hold = setInterval(() => undefined, 1_000);
  await third.finally(() => clearInterval(hold));
  await settle();
  assert.deepEqual(sent, [r.address, r.address, r.address]);
  assert.equal(d.size, 0, 'delivered once the buyer kept it');
  assert.deepEqual(dropped, [r.address], 'and only then out of the keep');
  assert.deepEqual(saved, [r.address]);

  // its buyer's connection sends it too (the wait may be long)
  const e = setup(['not_kept', 'accepted'], { retryMs: 60_000 });
  await e.d.deliver(receipt(addr('2')));
  assert.equal(e.d.size, 1);
  e.d.onConnected(BUYER);
  await settle();
  assert.equal(e.sent.length, 2);
  assert.equal(e.d.size, 0);
  // stop clears a pending retry (nothing keeps the process, nothing is sent after)
  const f = setup(['not_kept'], { retryMs: 60_000 });
  await f.d.deliver(receipt(addr('3')));
  f.d.stop();
  assert.equal(f.d.size, 0);
});

test('a buyer that refuses the receipt (a node before this version: OUTCOME_WRONG_KIND) is not asked again', async () => {
  const { d, sent } = setup(['rejected']);
  await d.deliver(receipt(addr('1')));
  assert.equal(d.size, 0);
  d.onConnected(BUYER);
  await settle();
  assert.equal(sent.length, 1);
});

test('bounded: past maxPending the oldest goes; past keepMs a receipt is dropped unsent', async () => {
  const { d, sent, advance } = setup([], { maxPending: 2, keepMs: 60_000 });
  for (const c of ['1', '2', '3']) await d.deliver(receipt(addr(c)));
  assert.equal(d.size, 2);
  assert.equal(sent.length, 1, 'one try for the buyer: the later receipts wait in its schedule');
  d.onConnected(BUYER);
  await settle();
  assert.deepEqual(sent.slice(1).map((s) => s.job), [addr('2')], 'the oldest was dropped; the go ends at the first not reached');
  advance(60_001);
  d.onConnected(BUYER);
  await settle();
  assert.equal(d.size, 0, 'lapsed');
  assert.equal(sent.length, 2, 'nothing sent after the entries lapsed');
  assert.equal(d.timers, 0, 'and no timer left');
});

test('a receipt of this node’s own job is not sent; after stop nothing is', async () => {
  const { d, sent } = setup([]);
  const mine = new ReceiptDelivery({ send: async () => 'accepted', clock: () => NOW, log: silentLogger(), self: BUYER });
  await mine.deliver(receipt(addr('1')));
  assert.equal(mine.size, 0);
  d.stop();
  await d.deliver(receipt(addr('2')));
  assert.equal(sent.length, 0);
});

test('with a keep, a waiting receipt is saved, restored after a restart, and dropped once its buyer answers or it lapses', async () => {
  const kept = new Map<string, number>();
  const keep = {
    save: async (r: Opened<Receipt>, until: number) => void kept.set(r.address, until),
    drop: async (address: string) => void kept.delete(address),
  };
  let now = NOW;
  const answers: OfferSendOutcome[] = ['unreachable', 'unreachable'];
  const first = new ReceiptDelivery({ send: async () => answers.shift() ?? 'unreachable', clock: () => now, log: silentLogger(), keep, keepMs: 60_000 });
  const a = receipt(addr('1'));
  const b = receipt(addr('2'));
  await first.deliver(a);
  await first.deliver(b);
  assert.deepEqual([...kept.keys()], [a.address, b.address], 'both kept on disk while their buyer is away');
  first.stop();
  assert.equal(kept.size, 2, 'stopping keeps them for the next start');

  const sent: string[] = [];
  const second = new ReceiptDelivery({ send: async (_, r) => (sent.push(r.address), 'accepted'), clock: () => now, log: silentLogger(), keep, keepMs: 60_000 });
  now += 30_000;
  second.restore(a, kept.get(a.address)!);
  second.restore(receipt(addr('3')), now - 1);
  assert.equal(second.size, 1, 'a lapsed entry is not restored');
  second.onConnected(BUYER);
  await settle();
  assert.deepEqual(sent, [a.address], 'the restored receipt goes out when its buyer connects');
  assert.deepEqual([...kept.keys()], [b.address], 'and leaves the keep once delivered');
  second.restore(b, kept.get(b.address)!);
  now += 30_001;
  second.onConnected('did:key:z6MkSomeoneElse');
  assert.equal(second.size, 0);
  assert.equal(kept.size, 0, 'a lapsed receipt leaves the keep');
});

test('the delivery log says the buyer’s node took the receipt (`delivery: taken`), never `outcome: accepted`, which read as a verdict', async () => {
  const lines: Array<{ fields: Record<string, unknown>; msg: string }> = [];
  const log = { ...silentLogger(), info: (fields: Record<string, unknown>, msg: string) => void lines.push({ fields, msg }) } as unknown as ReturnType<typeof silentLogger>;
  const answers: OfferSendOutcome[] = ['accepted', 'ignored'];
  const d = new ReceiptDelivery({ send: async () => answers.shift()!, clock: () => NOW, log });
  await d.deliver(receipt(addr('1')));
  await d.deliver(receipt(addr('2')));
  assert.deepEqual(lines.map((l) => [l.fields.delivery, l.fields.outcome]), [['taken', undefined], ['ignored', undefined]]);
  assert.match(lines[0]!.msg, /its node took it \(no verdict implied\)/);
  assert.match(lines[1]!.msg, /it held it already/);
});

test('a receipt the buyer ignored for now (RATE_LIMITED, QUEUE_FULL, a failing store…) is kept and sent again; only a copy it holds (or one not its own) is done (QA ffRcpt F2)', async () => {
  const dropped: string[] = [];
  const keep = { save: async () => undefined, drop: async (a: string) => void dropped.push(a) };
  for (const code of ['RATE_LIMITED', 'QUEUE_FULL', 'STORE_WRITE_FAILED', 'VERIFY_WORKER_FAILED']) {
    const answers: ReceiptSendResult[] = [{ outcome: 'ignored', code }, { outcome: 'accepted' }];
    const sent: string[] = [];
    const d = new ReceiptDelivery({ send: async (_, r) => (sent.push(r.address), answers.shift()!), clock: () => NOW, log: silentLogger(), keep, retryMs: 1, notKeptRetryMs: 1 });
    const r = receipt(addr('1'));
    await d.deliver(r);
    assert.equal(d.size, 1, `${code}: the buyer did not take it: still waiting`);
    assert.deepEqual(dropped, [], `${code}: and still on disk`);
    for (let i = 0; i < 200 && sent.length < 2; i++) await new Promise((res) => setTimeout(res, 5));
    await settle();
    assert.equal(sent.length, 2, `${code}: sent again`);
    assert.equal(d.size, 0);
    assert.deepEqual(dropped.splice(0), [r.address]);
    d.stop();
  }
  // a copy it holds, or one it says is not its own: done
  for (const code of ['DUPLICATE', 'RECEIPT_NOT_OWN_JOB', undefined]) {
    const d = new ReceiptDelivery({ send: async () => ({ outcome: 'ignored', ...(code ? { code } : {}) }), clock: () => NOW, log: silentLogger(), keep });
    await d.deliver(receipt(addr('2')));
    assert.equal(d.size, 0, `${code}: done`);
    dropped.splice(0);
  }
});

test('a buyer back after days (3 days away) still gets its receipt when it connects; past 7 days it lapses (QA ffRcpt F3)', async () => {
  const { d, sent, advance } = setup(['unreachable', 'accepted']);
  await d.deliver(receipt(addr('1')));
  advance(3 * 24 * 60 * 60_000);
  d.onConnected(BUYER);
  await settle();
  assert.equal(sent.length, 2, 'sent when the buyer came back');
  assert.equal(d.size, 0, 'and delivered');
  const e = setup([]);
  await e.d.deliver(receipt(addr('2')));
  e.advance(RECEIPT_DELIVERY_KEEP_MS + 1);
  e.d.onConnected(BUYER);
  await settle();
  assert.equal(e.sent.length, 1, 'not sent once lapsed');
  assert.equal(e.d.size, 0);
  assert.equal(RECEIPT_DELIVERY_KEEP_MS, 7 * 24 * 60 * 60_000);
  e.d.stop();
  d.stop();
});
