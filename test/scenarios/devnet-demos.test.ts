/**
 * The devnet's organisation scenarios as a newcomer runs them (`npm start -- --pool`, `--training`, `--orders`,
 * `--overlay`; docs/pools.md, docs/training.md, docs/matching.md "The orders devnet scenario", docs/overlays.md): each
 * starts its own `c0mpute start` processes, runs its scenario to the end, prints what a newcomer reads, and stops every
 * node (exit 0, its temp dir gone).
 *
 * Long scenarios (6 to 8 daemons each, about 110 s of the suite together), so they run in `npm run sim -- --scenarios`,
 * not in `npm test` (which must stay well inside CI's 20 minutes on 2 cores): what each shows is tested piece by piece
 * in `npm test` (test/e2e/pools*.test.ts, training*.test.ts, orders.test.ts, batch-run.test.ts, steward-*.test.ts),
 * and `npm start` itself (test/e2e/devnet-cli.test.ts) and the devnet's refusals and Ctrl-C
 * (test/e2e/devnet-scenarios.test.ts) stay there.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Decimal } from 'decimal.js';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { BIN, runDevnet, track } from '../e2e/node-helpers.js';

/**
 * A scenario with `--keep`: once it says the network keeps running, its nodes are checked to be running, then Ctrl-C:
 * exit 130, every node stopped, and the directory kept (it is removed here).
 */
async function runKept(args: string[]): Promise<string> {
  const { NODE_TEST_CONTEXT: _, ...env } = process.env;
  const child = spawn(process.execPath, [BIN, 'devnet', ...args, '--keep'], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...env, C0MPUTE_LOG_LEVEL: 'warn' } });
  track(child);
  let out = '';
  let err = '';
  let running = 0;
  child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    out += d;
    const dir = /in (\/\S+c0mpute-devnet-\S+?)[\s,]/.exec(out)?.[1];
    if (!running && dir && /^Ctrl-C stops every node; /m.test(out)) {
      running = spawnSync('pgrep', ['-f', dir], { encoding: 'utf8' }).stdout.trim().split('\n').filter(Boolean).length;
      child.kill('SIGINT');
    }
  });
  const t = setTimeout(() => child.kill('SIGINT'), 180_000);
  const code = await new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c)));
  clearTimeout(t);
  const dir = /in (\/\S+c0mpute-devnet-\S+?)[\s,]/.exec(out)?.[1];
  try {
    assert.equal(code, 130, `${out}\n${err}`);
    assert.ok(running >= 2, `its nodes ran on after the scenario (${running} processes)`);
    assert.ok(dir && out.includes(`▸ every node stopped; ${dir} stays (--keep); remove it when done`), out);
    assert.ok(existsSync(dir), 'the directory stays');
    assert.equal(spawnSync('pgrep', ['-f', dir], { encoding: 'utf8' }).stdout.trim(), '', 'no node left');
  } finally {
    if (dir) rmSync(dir, { recursive: true, force: true });
  }
  return out;
}

test('devnet --pool --keep: member choice, a failed member output failed over, the coordinator killed mid-job, settlements that sum; the network kept running until Ctrl-C', async () => {
  const out = await runKept(['--pool']);
  // kept (it was stopped anyway, its temporary directory left without a word: QA qaDev F5)
  assert.match(out, /^the network keeps running in \S+\.$/m);
  assert.match(out, /^ {2}node bin\/c0mpute\.js --data-dir \S+\/m\d pool-provider status$/m);
  assert.equal((out.match(/^ {2}completed: keccak256\(/gm) ?? []).length, 3, out);
  assert.match(out, /^ {2}completed; attempts: m\d: failed: POOL_OUTPUT_EMPTY; solo\d: completed$/m);
  assert.match(out, /^ {2}buyer: completed$/m);
  assert.match(out, /closed the dispatch from its trail with a failed receipt \(POOL_COORDINATOR_LOST\)$/m);
  const sum = /^ {2}settlements sum to ([0-9.]+) USD = (\d+) completed jobs × ([0-9.]+) USD$/m.exec(out);
  assert.ok(sum, out);
  assert.ok(new Decimal(sum[1]!).equals(new Decimal(sum[3]!).times(sum[2]!)), sum[0]);
  // and the members' earnings, as the status lists them, add up to it
  const earned = [...out.matchAll(/^ {2}m\d +weight \d .* earned ([0-9.]+) USD$/gm)].map((m) => m[1]!);
  assert.equal(earned.length, 3, out);
  assert.ok(earned.reduce((a, x) => a.plus(x), new Decimal(0)).equals(sum[1]!), `${earned.join(' + ')} = ${sum[1]}`);
  assert.match(out, /^=== outcomes: completed, completed, completed, completed, completed ===$/m);
});

test('devnet --training: bit-identical weights on every worker, the flooding peer refused, a two-stage pipeline', async () => {
  const out = await runDevnet(['--training']);
  assert.match(out, /→ bit-identical on every worker$/m);
  assert.match(out, /worker 1 refused them before reading them: 5 × TRAIN_NOT_MEMBER$/m);
  assert.match(out, /: refused as not a member; worker 1 ignored 0 step commitments;/);
  assert.equal((out.match(/^ {2}epoch \d root sha256:[0-9a-f]{64} signed by the elected coordinator/gm) ?? []).length, 3, out);
  assert.match(out, /output bit-identical to the single-process forward/);
});

test('devnet --orders: presence, a rotating probe and a 120-line batch run to the end', async () => {
  const out = await runDevnet(['--orders']);
  assert.match(out, /^presence {2}3 providers live, 6 free slots/m);
  const first = (n: number) => new RegExp(`^probe ${n}: 1\\. (\\w+) `, 'm').exec(out)?.[1];
  assert.ok(['kite', 'lark'].includes(first(1)!), out);
  assert.ok(['kite', 'lark'].includes(first(2)!) && first(2) !== first(1), 'equal prices take turns');
  assert.match(out, /plan total: 120 lines, 0\.24 USD/);
  assert.match(out, /^batch: 120 of 120 lines done, 0 failed/m);
});

test('devnet --overlay: a steward admits and denies, the ledger is witnessed by the named witness to its length', async () => {
  const out = await runDevnet(['--overlay']);
  assert.match(out, /^=== outcomes: B1 denied, A1 completed, A2 completed ===$/m);
  const len = /^length (\d+), head sha256:[0-9a-f]{64}$/m.exec(out)?.[1];
  assert.ok(len && Number(len) >= 4, out);
  assert.match(out, new RegExp(`^attestation: witnessed by witness to length ${len}$`, 'm'));
});
