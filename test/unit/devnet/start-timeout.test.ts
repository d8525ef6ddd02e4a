/**
 * The devnet's start-up wait (src/devnet/devnet.ts `DevnetOptions.startTimeoutMs`, `c0mpute devnet --start-timeout`):
 * it was a fixed 30 s per node, and on a loaded 2-core machine nodes took 27–35 s to start, so half the runs failed
 * DEVNET_TIMEOUT with no error. The default is now 120 s (a node that exits still fails at once, DEVNET_NODE_EXITED),
 * and the wait is what the devnet is given: a node that is alive but has not started by then fails DEVNET_TIMEOUT
 * naming the wait, its log and the log's end.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEVNET_START_TIMEOUT_MS, Devnet, type DevnetOptions } from '../../../src/devnet/devnet.js';
import { C0Error, codeOf } from '../../../src/errors.js';
import { startTimeoutMs } from '../../../src/cli/commands/devnet-actions.js';

test('the default start-up wait is long enough for a loaded machine: 120 s', () => {
  assert.equal(DEVNET_START_TIMEOUT_MS, 120_000);
});

test('--start-timeout <seconds>: 1 to 3600 whole seconds, else DEVNET_BAD_OPTION; unset, the default', () => {
  assert.equal(startTimeoutMs(undefined), 120_000);
  assert.equal(startTimeoutMs('300'), 300_000);
  for (const bad of ['0', '3601', '1.5', '-5', 'abc', '', '1e3']) assert.equal(codeOf(() => startTimeoutMs(bad)), 'DEVNET_BAD_OPTION', bad);
});

test('a node alive but not started within the given wait: DEVNET_TIMEOUT when that wait is up, naming it, with the log’s end', async () => {
  const d = mkdtempSync(join(tmpdir(), 'c0-devnet-bin-'));
  const bin = join(d, 'node.cjs');
  // a stand-in node that starts slowly: it logs, then never writes daemon.json
  writeFileSync(bin, "console.log('opening the store (slow disk)'); setInterval(() => {}, 1000);\n");
  const o: DevnetOptions = { providers: 0, policy: 'balanced', jobs: 0, keep: false, bin, print: () => {}, startTimeoutMs: 1500 };
  const net = new Devnet(o);
  try {
    const n = net.spawn('atlas', 'provider', {}, 1);
    const t0 = Date.now();
    const err = await net.apiOf(n).then(
      () => assert.fail('apiOf resolved for a node that never started'),
      (e: unknown) => e,
    );
    const took = Date.now() - t0;
    assert.ok(err instanceof C0Error, String(err));
    assert.equal(err.code, 'DEVNET_TIMEOUT', err.message);
    assert.ok(took >= 1400 && took < 10_000, `gave up after ${took} ms`);
    assert.match(err.message, /atlas to start within 1\.5 s \(--start-timeout\)/);
    assert.match(err.message, /opening the store \(slow disk\)/);
  } finally {
    await net.stop();
    rmSync(d, { recursive: true, force: true });
  }
});
