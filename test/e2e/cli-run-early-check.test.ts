/**
 * `c0mpute run` with no daemon checks the job spec before it starts a node (docs/node.md "Control API"): what the run
 * would refuse before publishing anything (the policy's needs, the input's size, an overlay this node is not on) is
 * said at once, as the daemon's control API says it. Before, the in-process node started first and waited up to
 * --wait (10 s) for a market, so the refusal came about 12 s late. Here the data directory has no identity, so a
 * node could not even start: the refusal shows the spec was checked first.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { c0mpute } from './node-helpers.js';

const root = mkdtempSync(join(tmpdir(), 'c0-run-check-'));
after(() => rmSync(root, { recursive: true, force: true }));

test('run with no daemon refuses a bad spec before starting a node', async () => {
  const dir = join(root, 'buyer');
  mkdirSync(dir);
  const job = join(root, 'job.yaml');
  writeFileSync(job, 'workload: builtin.sha256\nmaxPrice: 0.1 USD\ndeadline: 30s\npolicy: private\ninput: hello\n');
  const r = await c0mpute(dir, ['run', job, '--listen', '/ip4/127.0.0.1/tcp/0']);
  assert.equal(r.code, 3, r.out + r.err);
  assert.match(r.err, /^error POLICY_PRIVATE_NEEDS_ALLOWLIST: /m);
  const o = await c0mpute(dir, ['run', job, '--policy', 'balanced', '--overlay', 'nope', '--listen', '/ip4/127.0.0.1/tcp/0']);
  assert.equal(o.code, 3, o.out + o.err);
  assert.match(o.err, /^error OVERLAY_NOT_FOUND: /m);
});
