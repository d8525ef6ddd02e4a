/**
 * `c0mpute devnet --overlay --dir D` run again once earlier runs on D have spent team-a's budget (QA qaDev F1): the
 * steward's ledger is the usage (pool/1 §6.1) and is never refilled, so the steward denies A1 at once; the scenario
 * then waited its minute for A1 to be admitted and failed DEVNET_TIMEOUT, never saying why. Now it reads the ledger it
 * continues, says so, and refuses at once with DEVNET_OVERLAY_BUDGET_SPENT naming the spent budget and the way out.
 * The earlier runs are stood in for by a ledger written here with the steward's key: 450 J of team-a's 600 J spent.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN, track } from './node-helpers.js';
import { OVERLAY, prepareOverlay } from '../../src/devnet/overlay-scenario.js';
import { devnetIdentity } from '../../src/devnet/devnet.js';
import { generateSwarmKey } from '../../src/net/node.js';
import { Ledger } from '../../src/ledger/store.js';

test('devnet --overlay on a --dir whose ledger has spent team-a\'s budget: refused at once, DEVNET_OVERLAY_BUDGET_SPENT, naming the spend and a new --dir', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-devnet-ov-budget-'));
  try {
    prepareOverlay(dir, ['steward', 'witness', 'forge', 'kiln', 'alpha', 'beta'], generateSwarmKey);
    const base = join(dir, 'steward', 'steward', OVERLAY);
    const ledger = await Ledger.open(join(base, 'ledger'), { signer: devnetIdentity(join(dir, 'steward')).signer, createdMark: join(base, 'ledger.created') });
    for (const claim of ['earlier-1', 'earlier-2']) {
      await ledger.append({ event: 'Admitted', claim, entitlement: 'team-a', class: 'sha256-batch', reserved: { uj: 250_000_000, grade: 'Estimator' }, devices: 1, borrowed_uj: 0 });
      await ledger.append({ event: 'Released', claim, actual: { uj: 225_000_000, grade: 'Estimator' } });
    }
    await ledger.close();

    const { NODE_TEST_CONTEXT: _, ...env } = process.env;
    const child = spawn(process.execPath, [BIN, 'devnet', '--overlay', '--dir', dir], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...env, C0MPUTE_LOG_LEVEL: 'warn' } });
    track(child);
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    const t0 = Date.now();
    const code = await new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c)));
    const text = `${out}\n${err}`;
    assert.equal(code, 3, text);
    assert.match(out, /^▸ the steward's ledger continues from earlier runs on this --dir: 4 entries; team-a has spent 450\.0 J of its 600\.0 J /m);
    assert.match(err, /^error DEVNET_OVERLAY_BUDGET_SPENT: team-a has spent 450\.0 J of its 600\.0 J guarantee .* only 150\.0 J is left.* a new --dir/m);
    assert.doesNotMatch(out, /team-a sends A1/, 'no job was sent');
    assert.ok(Date.now() - t0 < 45_000, `refused after ${Date.now() - t0} ms`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
