/**
 * The devnet names its nodes everywhere (QA qaDev F8, F9): the selection's "why:" line (built by the market with DID
 * fragments) and a broken-off run's message (with a whole DID) showed keys the newcomer could not map to the names
 * the rest of the narration uses; and a second day on a --dir showed a provider whose key an earlier run left, not
 * started now, as an unexplained fragment. `Devnet.named` writes every DID it knows as its node's name, and
 * `earlierRun` finds what an earlier run left.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Devnet } from '../../../src/devnet/devnet.js';
import { createIdentity } from '../../../src/node/identity.js';
import { shortDid } from '../../../src/util/did-text.js';

test('named: the why line\'s fragments and a whole DID become the nodes\' names; an earlier run\'s node not started now is "(not started)"', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-devnet-names-'));
  const bin = join(dir, 'node.cjs');
  writeFileSync(bin, '');
  const dynamo = createIdentity(join(dir, 'dynamo')).did;
  createIdentity(join(dir, 'buyer'));
  const net = new Devnet({ providers: 1, policy: 'balanced', jobs: 1, keep: false, dir, bin, print: () => {} });
  try {
    assert.deepEqual(net.earlierRun(['atlas', 'buyer']), { kept: ['buyer'], absent: ['dynamo'] });
    const atlas = net.spawn('atlas', 'provider', {}, 1).did;
    assert.equal(
      net.named(`why: ${shortDid(atlas)} wins under balanced at 0.004 USD, 1.5 s: total 0.800 vs 0.700 for ${shortDid(dynamo)}: cheaper`),
      'why: atlas wins under balanced at 0.004 USD, 1.5 s: total 0.800 vs 0.700 for dynamo (not started): cheaper',
    );
    assert.equal(net.named(`✘ the run was broken off (the job was running at ${atlas}, which is not blamed for it)`), '✘ the run was broken off (the job was running at atlas, which is not blamed for it)');
    assert.equal(net.names()(dynamo), 'dynamo (not started)');
    const other = createIdentity(join(dir, 'x', 'y')).did;
    assert.equal(net.named(`from ${shortDid(other)}`), `from ${shortDid(other)}`, 'a DID it does not know stays as it is');
  } finally {
    await net.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
