/**
 * The evidence store writes the adds that come while a batch is on its way to disk together, in the next synced batch
 * (src/reputation/store.ts #drain): one synced write a record held a node to some 60 outcomes a second, and a flood of
 * them waited in the delivery queue (review s42 R3 F1). Each add is still told, once on disk, how many of its records
 * were new; a batch that fails fails every add in it, with STORE_WRITE_FAILED whose message does not repeat its cause's
 * (a logged error shows its causes after it: R3 F2). A fake sublevel (it counts the batches and holds each until let go).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EvidenceStore } from '../../../src/reputation/index.js';
import type { Opened } from '../../../src/records/index.js';
import type { Sub } from '../../../src/store/db.js';
import { P, advert, job, offer, receipt } from '../market/fixtures.js';

const PROV = P(1);

function outcomes(n: number): Array<{ o: Opened; r: Opened }> {
  const a = advert(PROV);
  return Array.from({ length: n }, (_, i) => {
    const buyer = P(100 + i);
    const o = offer(PROV, job(buyer), a);
    return { o, r: receipt(PROV, buyer, o) };
  });
}

/** A sublevel whose batches wait until `release()`; `fail` makes the next ones fail as a full disk does. */
function fakeSub() {
  const batches: unknown[][] = [];
  let gate: { promise: Promise<void>; open: () => void } | undefined;
  const hold = () => {
    let open!: () => void;
    const promise = new Promise<void>((r) => (open = r));
    gate = { promise, open };
  };
  const s = {
    fail: undefined as Error | undefined,
    batches,
    hold,
    release: () => gate?.open(),
    async batch(ops: unknown[]) {
      batches.push(ops);
      await gate?.promise;
      if (s.fail) throw s.fail;
    },
  };
  return s;
}

test('adds made while a batch is written go together in the next one, each told its own count of new records', async () => {
  const sub = fakeSub();
  const store = new EvidenceStore(sub as unknown as Sub);
  const xs = outcomes(200);
  sub.hold();
  const first = store.add(xs[0]!.r, xs[0]!.o);
  // let the first batch start (held at the gate), then 199 more adds, one a record pair, and one repeating a record
  await new Promise((r) => setImmediate(r));
  assert.equal(sub.batches.length, 1);
  const rest = xs.slice(1).map(({ r, o }) => store.add(r, o));
  const again = store.add(xs[1]!.r);
  const pending = store.pending;
  sub.release();
  assert.equal(await first, 2);
  assert.deepEqual(await Promise.all(rest), xs.slice(1).map(() => 2), 'each add told its own count');
  assert.equal(await again, 0, 'a record an earlier add stored is not new');
  // the first batch alone, then the 199 waiting adds at most 256 records a batch: 398 records in 2, the repeat in the last
  assert.equal(sub.batches.length, 3, `batches: ${sub.batches.length}`);
  assert.deepEqual(sub.batches.map((b) => b.length), [2, 256, 142]);
  assert.equal(store.receipts.size, 200);
  assert.equal(store.offers.size, 200);
  assert.equal(pending, 2 + 199 * 2 + 1, 'records on their way to disk');
  await store.settled();
  assert.equal(store.pending, 0);
});

test('a batch that fails fails every add in it with STORE_WRITE_FAILED, its cause kept and not repeated in its message; nothing is kept', async () => {
  const sub = fakeSub();
  const store = new EvidenceStore(sub as unknown as Sub);
  const xs = outcomes(3);
  const cause = new Error('IO error: 000003.log: No space left on device');
  sub.fail = cause;
  const adds = xs.map(({ r }) => store.add(r));
  const results = await Promise.allSettled(adds);
  assert.equal(sub.batches.length, 1, 'made together: one batch');
  for (const res of results) {
    assert.equal(res.status, 'rejected');
    const e = (res as PromiseRejectedResult).reason as Error & { code: string; cause: unknown };
    assert.equal(e.code, 'STORE_WRITE_FAILED');
    assert.equal(e.cause, cause);
    assert.ok(!e.message.includes(cause.message), `the cause's message is not repeated: ${e.message}`);
  }
  assert.equal(store.receipts.size, 0);
  assert.equal(store.pending, 0);
  sub.fail = undefined;
  assert.deepEqual(await Promise.all(xs.map(({ r }) => store.add(r))), [1, 1, 1], 'taken once the disk takes writes');
});
