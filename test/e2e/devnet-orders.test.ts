/**
 * `c0mpute devnet --orders` (`npm start -- --orders`; docs/matching.md "The
 * orders devnet scenario") as a smoke test: the scenario starts its own
 * nodes, shows presence, probes twice (the equally priced two rotate), runs a
 * 120-line batch to the end, and stops every node (exit 0, its temp dir gone).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runDevnet } from './node-helpers.js';

test('devnet --orders: presence, a rotating probe and a 120-line batch run to the end', async () => {
  const out = await runDevnet(['--orders']);
  assert.match(out, /^presence {2}3 providers live, 6 free slots/m);
  const first = (n: number) => new RegExp(`^probe ${n}: 1\\. (\\w+) `, 'm').exec(out)?.[1];
  assert.ok(['kite', 'lark'].includes(first(1)!), out);
  assert.ok(['kite', 'lark'].includes(first(2)!) && first(2) !== first(1), 'equal prices take turns');
  assert.match(out, /plan total: 120 lines, 0\.24 USD/);
  assert.match(out, /^batch: 120 of 120 lines done, 0 failed/m);
});
