/**
 * `c0mpute devnet` as a newcomer runs it: `npm start` is `devnet` on built-in
 * defaults (README). It starts its own `c0mpute start` processes, runs its jobs
 * end to end, prints the narration a newcomer reads, and stops every node
 * (exit 0, its temp dir gone). The organisation scenarios (`--overlay`,
 * `--pool`, `--training`, `--orders`) run in test/scenarios/devnet-demos.test.ts
 * (`npm run sim -- --scenarios`).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runDevnet } from './node-helpers.js';

test('devnet (npm start): a job through the whole walk, its output verified and countersigned, and the buyer’s reputation view', async () => {
  const out = await runDevnet(['--providers', '3', '--jobs', '1']);
  assert.match(out, /^▸ collected [1-9]\d* offers?\b/m);
  assert.match(out, /^▸ selection sha256:[0-9a-f]+… signed \(attempt 1\): winner \w+/m);
  assert.match(out, /^▸ verified: output matches sha256:[0-9a-f]{64}$/m);
  assert.match(out, /^▸ countersigned accepted: sha256:/m);
  assert.match(out, /^▸ output [0-9a-f]{64}$/m);
  // the winner has one completed job in the buyer's view
  const winner = /winner (\w+)/.exec(out)![1]!;
  assert.match(out, new RegExp(`^${winner}\\s+[0-9.]+\\s+1\\s+1\\s+0\\s+0\\s`, 'm'));
});
