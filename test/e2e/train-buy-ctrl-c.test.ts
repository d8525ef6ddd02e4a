/**
 * Ctrl-C on `c0mpute train buy --entitlement` (docs/node.md "A run whose client went away"). Before, Node's default
 * ended the command with no line and the gang's claim was never released: the steward held its reservation (and
 * devices) until the claim's deadline. Now the command closes its member streams, releases the claim with the receipts
 * so far (POST /v1/gang/release) and ends with one line, TRAIN_GANG_INTERRUPTED, exit 130.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BIN, sleep, track, waitFor, withLogs } from './node-helpers.js';
import { startOrg, stewardStatus, type Org } from './steward-helpers.js';

const TREE = `entitlements:
  - { id: ml, guarantee_uj: 50000000000, guarantee_devices: 3, over_quota_weight: 0, priority: 0 }
`;

let org: Org | undefined;
after(() => org?.c.destroy());

test('Ctrl-C on `train buy --entitlement`: the gang claim is released before the command ends (TRAIN_GANG_INTERRUPTED, 130)', async () => {
  org = await startOrg('train-buy-ctrl-c', { providers: 1, buyers: ['b'], tree: TREE });
  const o = org;
  await withLogs(o.c, async () => {
    const b = o.buyers.b!;
    const yamlPath = join(b.dir, 'run.yaml');
    writeFileSync(yamlPath, ['name: gang', 'model: { layers: [4, 16, 3] }', 'seed: 3', 'stepsPerEpoch: 6', 'epochs: 3', 'timeoutMs: 20000'].join('\n'));
    // The member is a provider that does not sell train.member: its job collects offers for the whole window (5 s), so
    // the Ctrl-C comes while it is in flight and before any provider is selected.
    const member = o.providers[0]!.did;
    const cli = spawn(process.execPath, [BIN, '--data-dir', b.dir, 'train', 'buy', yamlPath, '--members', member, '--entitlement', 'ml', '--energy', '1000000000', '--no-reference'], { stdio: ['ignore', 'pipe', 'pipe'] });
    track(cli);
    let err = '';
    cli.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    const exited = new Promise<number | null>((resolve) => cli.once('close', (code) => resolve(code)));
    const gangs = async () => ((await stewardStatus(o.steward)) as unknown as { gangs: Array<{ claim: string }> }).gangs;
    await waitFor('the gang admitted', async () => / under ml: Admit/.test(err) && (await gangs()).length === 1, 60_000);

    // A second gang asked of a steward that does not answer (stopped): a Ctrl-C while the daemon waits for its verdict
    // withdraws the claim at once and ends the command (before: it waited for the answer, up to the claim's deadline).
    const yaml2 = join(b.dir, 'run2.yaml');
    writeFileSync(yaml2, ['name: gang-two', 'model: { layers: [4, 16, 3] }', 'seed: 4', 'stepsPerEpoch: 6', 'epochs: 3', 'timeoutMs: 20000'].join('\n'));
    o.steward.child.kill('SIGSTOP');
    let err2 = '';
    let exited2: Promise<number | null>;
    try {
      const cli2 = spawn(process.execPath, [BIN, '--data-dir', b.dir, 'train', 'buy', yaml2, '--members', member, '--entitlement', 'ml', '--energy', '1000000000', '--no-reference'], { stdio: ['ignore', 'pipe', 'pipe'] });
      track(cli2);
      cli2.stderr.setEncoding('utf8').on('data', (d: string) => (err2 += d));
      exited2 = new Promise<number | null>((resolve) => cli2.once('close', (code) => resolve(code)));
      await waitFor('the second gang asked for', () => /^▸ run sha256:/m.test(err2));
      await sleep(500);
      cli2.kill('SIGINT');
    } finally {
      o.steward.child.kill('SIGCONT');
    }
    assert.equal(await exited2, 130, err2);
    assert.match(err2, /error TRAIN_GANG_INTERRUPTED: gang sha256:[0-9a-f]{64} interrupted with Ctrl-C while the steward decided its claim: no member job was sent, and the claim was withdrawn \(steward: (yes|no)\)/);
    assert.doesNotMatch(err2, /gang claim .* under ml/, 'no verdict was waited for');
    await waitFor('only the first gang held', async () => (await gangs()).length === 1);

    cli.kill('SIGINT');
    assert.equal(await exited, 130, err);
    assert.match(err, /error TRAIN_GANG_INTERRUPTED: gang sha256:[0-9a-f]{64} interrupted with Ctrl-C: 0 of 1 member jobs done; 1 in flight, their streams closed .*; the gang's claim was released with the 0 receipts so far \(steward: yes\)/);
    // released by the time the command ended, not at the claim's deadline
    assert.deepEqual(await gangs(), []);
  });
});
