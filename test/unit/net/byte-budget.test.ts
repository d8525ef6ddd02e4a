/**
 * The direct protocols' byte budget (src/net/byte-budget.ts; docs/network.md
 * "Direct streams: limits and framing"): per stream, per connection and in
 * total, each refusing with NET_BUFFER_LIMIT and its scope, nothing reserved
 * by a refused request, everything released when a stream ends.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ByteBudget } from '../../../src/net/byte-budget.js';
import type { C0Error } from '../../../src/errors.js';

const refused = (scope: string) => (e: C0Error) => e.code === 'NET_BUFFER_LIMIT' && (e.detail as { scope?: string })?.scope === scope;

test('per stream, per connection and total bounds, each with its scope', () => {
  const b = new ByteBudget({ totalBytes: 100, perConnectionBytes: 60 });
  const s1 = b.open('c1', 50);
  s1.reserve(40);
  assert.throws(() => s1.reserve(11), refused('stream'));
  const s2 = b.open('c1', 50);
  assert.throws(() => s2.reserve(21), refused('connection'));
  s2.reserve(20);
  assert.equal(b.usedBy('c1'), 60);
  const s3 = b.open('c2', 50);
  s3.reserve(40);
  assert.throws(() => b.open('c3', 50).reserve(1), refused('total'));
  assert.equal(b.used, 100);
  // A stream that ends gives everything back; it cannot reserve again.
  s1.close();
  assert.equal(b.used, 60);
  assert.equal(b.usedBy('c1'), 20);
  assert.throws(() => s1.reserve(1), refused('stream'));
  s2.release(5);
  assert.equal(b.usedBy('c1'), 15);
  s2.close();
  s3.close();
  assert.equal(b.used, 0);
  assert.equal(b.usedBy('c1'), 0);
});
