/**
 * The record cache's bounds (src/net/record-cache.ts, docs/network.md "The record cache's bounds"): bytes per
 * kind and in all beside the count, oldest first; a cached record never pins a larger buffer; a kind with no
 * validity window is kept a time-to-live, not until pushed out.
 */
import '../../../src/polyfill.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { Ed25519Signer, seal, T, type Opened } from '../../../src/records/index.js';
import { didFromPublicKey } from '../../../src/records/did.js';
import { MemoryRecordCache, RECORD_CACHE_DEFAULTS, compactBytes } from '../../../src/net/record-cache.js';
import type { TopicKind } from '../../../src/net/topics.js';

const NOW = 1_700_000_000_000;
const buyer = Ed25519Signer.generate();
const BUYER = didFromPublicKey(buyer.publicKey);
const addr = (i: number | string) => 'sha256:' + createHash('sha256').update(String(i)).digest('hex');

/** A selection-shaped record of `size` envelope bytes (the cache reads type, signer, address and record only). */
function big(i: number, size: number, type: string = T.selection): Opened {
  const bytes = new Uint8Array(size).fill(i & 0xff);
  return { type, signer: BUYER, address: addr(`${type}-${i}`), record: { job: addr(`job-${i}`) }, bytes } as unknown as Opened;
}

function selection(i: number): Opened {
  const offer = addr(`offer-${i}`);
  return seal(T.selection, { job: addr(`job-${i}`), buyer: BUYER, policy: 'cheapest', winner: offer, considered: [{ provider: BUYER, offer }], decidedAt: NOW }, buyer);
}

test('a flood of large records stays inside the per-kind byte budget, oldest out first; small records still go by count', () => {
  const t = NOW;
  const c = new MemoryRecordCache({ clock: () => t });
  const size = 48_000;
  const n = 1_000; // 48 MB offered, far under the count bound
  for (let i = 0; i < n; i++) c.add('selection', big(i, size));
  const budget = RECORD_CACHE_DEFAULTS.maxBytesPerKind;
  assert.ok(c.bytesHeld('selection') <= budget, `${c.bytesHeld('selection')} bytes held over a budget of ${budget}`);
  const kept = Math.floor(budget / size);
  assert.equal(c.live('selection', t, 1e9).length, kept);
  assert.equal(c.get(addr(`${T.selection}-${n - kept - 1}`)), undefined, 'the oldest went');
  assert.ok(c.get(addr(`${T.selection}-${n - kept}`)), 'the newest stayed');
  assert.ok(c.get(addr(`${T.selection}-${n - 1}`)));
  // ordinary records: the count bound, as before (4 096 of 1 KiB is 4 MiB, inside the byte budget)
  for (let i = 0; i < 5_000; i++) c.add('receipt', big(i, 1_024, T.receipt));
  assert.equal(c.live('receipt', t, 1e9).length, RECORD_CACHE_DEFAULTS.maxPerKind);
  assert.equal(c.bytesHeld('receipt'), RECORD_CACHE_DEFAULTS.maxPerKind * 1_024);
});

test('the byte budget over all kinds evicts from the kind holding the most; every kind keeps its own budget', () => {
  const t = NOW;
  const c = new MemoryRecordCache({ clock: () => t, maxBytesPerKind: 1_000_000, maxBytes: 2_500_000 });
  const kinds: TopicKind[] = ['selection', 'receipt', 'acceptance', 'nondelivery'];
  const types = [T.selection, T.receipt, T.acceptance, T.nondelivery];
  for (let i = 0; i < 400; i++) for (const [k, kind] of kinds.entries()) c.add(kind, big(i, 10_000, types[k]));
  assert.ok(c.bytesHeld() <= 2_500_000, `${c.bytesHeld()} bytes held in all`);
  for (const kind of kinds) {
    assert.ok(c.bytesHeld(kind) <= 1_000_000, `${kind}: ${c.bytesHeld(kind)}`);
    assert.ok(c.bytesHeld(kind) >= 500_000, `${kind} was not emptied by the others' flood: ${c.bytesHeld(kind)}`);
  }
  // a kind flooded alone pays for the whole budget itself: the older records of a smaller kind stay
  const d = new MemoryRecordCache({ clock: () => t, maxBytesPerKind: 1_000_000, maxBytes: 1_400_000 });
  for (let i = 0; i < 50; i++) d.add('receipt', big(i, 10_000, T.receipt));
  for (let i = 0; i < 1_000; i++) d.add('selection', big(i, 10_000));
  assert.equal(d.bytesHeld('receipt'), 500_000, 'the receipts stayed');
  assert.equal(d.bytesHeld('selection'), 900_000);
  assert.equal(d.bytesHeld(), 1_400_000);
});

test('a cached record does not pin the larger buffer it was a view into; a whole buffer is not copied', () => {
  const c = new MemoryRecordCache({ clock: () => NOW });
  const sel = selection(1);
  // as gossipsub hands it: the envelope is a subarray of the whole RPC message
  const rpc = new Uint8Array(1 << 20);
  rpc.set(sel.bytes, 4_096);
  const view = rpc.subarray(4_096, 4_096 + sel.bytes.length);
  assert.equal(view.buffer.byteLength, 1 << 20);
  c.add('selection', { ...sel, bytes: view });
  const held = c.get(sel.address)!;
  assert.deepEqual(held, sel.bytes);
  assert.equal(held.buffer.byteLength, sel.bytes.length, 'only the record is kept alive');
  assert.equal(c.bytesHeld('selection'), sel.bytes.length);
  // a record that is its whole buffer is kept as it is
  const other = selection(2);
  assert.equal(other.bytes.buffer.byteLength, other.bytes.length);
  c.add('selection', other);
  assert.equal(c.get(other.address), other.bytes);
  assert.equal(compactBytes(other.bytes), other.bytes);
});

test('a kind with no validity window is kept its time-to-live from when it was added; a windowed kind keeps its window', () => {
  let t = NOW;
  const c = new MemoryRecordCache({ clock: () => t, ttlMs: 3_600_000 });
  const a = selection(1);
  c.add('selection', a);
  const off = seal(T.offer, { job: addr('j'), advert: addr('a'), price: { amount: '1', currency: 'USD' }, durationMs: 1_000, issuedAt: NOW, startBy: NOW + 7_200_000, expiresAt: NOW + 7_200_000 }, buyer);
  c.add('offer', off);
  t = NOW + 3_599_999;
  assert.equal(c.get(a.address), a.bytes);
  assert.deepEqual(c.live('selection', t, 10), [a.bytes]);
  t = NOW + 3_600_000;
  assert.equal(c.get(a.address), undefined, 'gone at the end of its time-to-live');
  assert.deepEqual(c.live('selection', t, 10), []);
  assert.equal(c.bytesHeld('selection'), 0);
  assert.equal(c.get(off.address), off.bytes, 'an offer goes by its own expiry');
  // lapsed records are dropped as others arrive, without a live() sweep
  const b = selection(2);
  c.add('selection', b);
  t += 3_600_000;
  c.add('selection', selection(3));
  assert.equal(c.bytesHeld('selection'), selection(3).bytes.length);
  assert.deepEqual(c.live('offer', t, 10), [], 'the offer expired at its own time');
});
