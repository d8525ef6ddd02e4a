/**
 * `c0mpute devnet --orders` (`npm start -- --orders`; docs/matching.md "The
 * orders devnet scenario") as a smoke test: the scenario starts its own
 * nodes, shows presence, probes twice (the equally priced two rotate), runs a
 * 120-line batch to the end, and stops every node (exit 0, its temp dir gone).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { BIN } from './node-helpers.js';

test('devnet --orders: presence, a rotating probe and a 120-line batch run to the end', async () => {
  const child = spawn(process.execPath, [BIN, 'devnet', '--orders'], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, C0MPUTE_LOG_LEVEL: 'warn' } });
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
  const t = setTimeout(() => child.kill('SIGINT'), 180_000);
  const code = await new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c)));
  clearTimeout(t);
  assert.equal(code, 0, `${out}\n${err}`);
  assert.match(out, /^presence {2}3 providers live, 6 free slots/m);
  const first = (n: number) => new RegExp(`^probe ${n}: 1\\. (\\w+) `, 'm').exec(out)?.[1];
  assert.ok(['kite', 'lark'].includes(first(1)!), out);
  assert.ok(['kite', 'lark'].includes(first(2)!) && first(2) !== first(1), 'equal prices take turns');
  assert.match(out, /plan total: 120 lines, 0\.24 USD/);
  assert.match(out, /^batch: 120 of 120 lines done, 0 failed/m);
  const dir = /in (\/\S+c0mpute-devnet-\S+)\n/.exec(out)?.[1];
  assert.ok(dir && !existsSync(dir), 'the scenario removed its directory');
});
