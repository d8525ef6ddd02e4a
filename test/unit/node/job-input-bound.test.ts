/**
 * A job's input (`run --input`, `inputFile`, `market probe --input`) is never read past what a buyer sends, 16 MiB
 * (src/node/job-input.ts). Review s43 R6 F3: it was read whole first (readFileSync), base64-encoded and posted, so the
 * wrong file gave a false DAEMON_NOT_ANSWERING (100 MB), exit 70 (700 MB), or never ended (/dev/zero, a pipe).
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { parseJobFileText } from '../../../src/node/jobfile.js';
import { EXEC_MAX_INPUT_BYTES } from '../../../src/roles/exec-protocol.js';
import { refusal } from './refusal.js';

const root = mkdtempSync(join(tmpdir(), 'c0-job-input-'));
after(() => rmSync(root, { recursive: true, force: true }));
const JOB = 'workload: builtin.sha256\nparams: 10\nmaxPrice: "0.01 USD"\n';


test('a regular file over 16 MiB is INPUT_TOO_LARGE on its size, before it is read (8 GiB, sparse)', () => {
  const big = join(root, 'disk.img');
  writeFileSync(big, '');
  truncateSync(big, 8 * 1024 ** 3);
  const e = refusal(() => parseJobFileText(JOB, 'job.yaml', { input: big }));
  assert.equal(e.code, 'INPUT_TOO_LARGE', e.message);
  assert.match(e.message, new RegExp(`${big} is ${8 * 1024 ** 3} bytes; at most ${EXEC_MAX_INPUT_BYTES}`));
  // the probe only needs the size, and is refused alike
  assert.equal(refusal(() => parseJobFileText(JOB, 'job.yaml', { input: big, inputOptional: true })).code, 'INPUT_TOO_LARGE');
});

test('a file of exactly 16 MiB is read', () => {
  const edge = join(root, 'edge.bin');
  writeFileSync(edge, '');
  truncateSync(edge, EXEC_MAX_INPUT_BYTES);
  const spec = parseJobFileText(JOB, 'job.yaml', { input: edge });
  assert.equal(Buffer.from(spec.input as string, 'base64').length, EXEC_MAX_INPUT_BYTES);
});

test('a device that never ends (/dev/zero) is read only to the limit: INPUT_TOO_LARGE', () => {
  const e = refusal(() => parseJobFileText(JOB, 'job.yaml', { input: '/dev/zero' }));
  assert.equal(e.code, 'INPUT_TOO_LARGE', e.message);
  assert.match(e.message, /more than 16777216 bytes \(read no further\)/);
});

test('standard input (--input -) fed past the limit and never closed is refused once past it, not read to its end', { timeout: 120_000 }, async (t) => {
  // a child reads `-`; this side writes 16 MiB + 64 KiB and keeps the pipe open: only a read that stops at the limit ends
  const mod = new URL('../../../src/node/jobfile.js', import.meta.url).href;
  const js = `import(${JSON.stringify(mod)}).then((m) => { try { m.parseJobFileText(${JSON.stringify(JOB)}, 'job.yaml', { input: '-' }); console.log('accepted'); } catch (e) { console.log(e.code); } process.exit(0); });`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', js], { stdio: ['pipe', 'pipe', 'inherit'], signal: t.signal });
  child.on('error', () => {}); // killed when the test times out (a reader that waits for the end): it fails, not hangs
  let out = '';
  child.stdout.on('data', (b: Buffer) => (out += b.toString()));
  child.stdin.on('error', () => {}); // the child leaves with data unread
  child.stdin.write(Buffer.alloc(EXEC_MAX_INPUT_BYTES + 64 * 1024));
  await once(child, 'exit');
  child.stdin.destroy();
  assert.equal(out.trim(), 'INPUT_TOO_LARGE');
});
