/**
 * Ctrl-C on `c0mpute batch run` (docs/node.md "A run whose client went away"): before, Node's default ended the
 * command with no line and no summary.json. Now the first Ctrl-C posts no more lines, closes the lines' streams in
 * flight (the daemon takes each as its client gone), writes summary.json as when the daemon is lost (`stopped`, the
 * lines `unknown` / `not-posted`) and ends with one line, BATCH_INTERRUPTED, exit 130.
 *
 * A fake daemon (fake-batch-daemon.ts): it plans every line on one provider with two free slots and holds each
 * `/v1/run` stream open after naming its order.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable } from 'node:stream';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { P } from '../market/fixtures.js';
import { fakeBatchDaemon, type FakeBatchDaemon } from './fake-batch-daemon.js';

const BIN = fileURLToPath(new URL('../../../../bin/c0mpute.js', import.meta.url));
const root = mkdtempSync(join(tmpdir(), 'c0-batch-ctrl-c-'));
const daemons: FakeBatchDaemon[] = [];
after(() => {
  for (const d of daemons) d.close();
  rmSync(root, { recursive: true, force: true });
});

/**
 * `batch run` of 4 lines against a fake daemon (its own data directory `name`, provider `P(seed)`) that holds each
 * line's stream open: resolves once two lines are in flight, with the command's stderr so far and its exit.
 */
async function batchInFlight(name: string, seed: number): Promise<{ daemon: FakeBatchDaemon; cli: ChildProcessByStdio<null, Readable, Readable>; outDir: string; err: () => string; exited: Promise<number | null> }> {
  const dataDir = join(root, name);
  const daemon = await fakeBatchDaemon(dataDir, P(seed).did, { hold: true, slots: 2 });
  daemons.push(daemon);
  const file = join(root, `${name}.yaml`);
  writeFileSync(file, 'window: 10m\nworkloads: [{ workload: builtin.sha256, lines: 4, lineTime: 2s, maxPrice: "0.01 USD", params: "1000", inputText: "line {n}" }]\n');
  const outDir = join(root, `${name}.out`);
  const env: NodeJS.ProcessEnv = { ...process.env, C0MPUTE_HOME: join(root, 'unused-home') };
  delete env.NODE_TEST_CONTEXT;
  const cli = spawn(process.execPath, [BIN, '--data-dir', dataDir, 'batch', 'run', file, '--output-dir', outDir], { stdio: ['ignore', 'pipe', 'pipe'], env });
  let err = '';
  cli.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
  const exited = new Promise<number | null>((ok) => cli.once('close', (code) => ok(code)));
  while (daemon.runs < 2) await new Promise((r) => setTimeout(r, 50));
  return { daemon, cli, outDir, err: () => err, exited };
}

test('Ctrl-C on `batch run`: streams in flight closed, summary.json written (stopped BATCH_INTERRUPTED), one line, exit 130', async () => {
  const { daemon, cli, outDir, err, exited } = await batchInFlight('buyer', 951);
  cli.kill('SIGINT');
  const code = await exited;
  assert.equal(code, 130, err());
  assert.match(err(), /^error BATCH_INTERRUPTED: the batch was interrupted with Ctrl-C: 0 of 4 lines done, 2 in flight \(their streams closed: .*\), 2 not posted; outputs in .*, per line in .*summary\.json$/m);
  while (daemon.closed < 2) await new Promise((r) => setTimeout(r, 20)); // both streams in flight closed
  assert.equal(daemon.runs, 2, 'nothing posted after the Ctrl-C');
  const s = JSON.parse(readFileSync(join(outDir, 'summary.json'), 'utf8')) as { stopped: { code: string }; unknown: number; notPosted: number; perLine: Array<{ status: string; job?: string }> };
  assert.equal(s.stopped.code, 'BATCH_INTERRUPTED');
  assert.deepEqual([s.unknown, s.notPosted], [2, 2]);
  assert.deepEqual(s.perLine.filter((l) => l.status === 'unknown').map((l) => l.job !== undefined), [true, true], 'the jobs in flight named');
});

test('SIGTERM on `batch run` (kill, systemd, a CI runner) stops it as Ctrl-C does: summary.json written, so `--resume` pays no done line again; exit 143', async () => {
  // before (QA ffGang F1) only SIGINT was handled: SIGTERM killed the command with no line and no summary.json, and a
  // `--resume` then posted, and paid for, every line again
  const { cli, outDir, err, exited } = await batchInFlight('buyer-term', 952);
  cli.kill('SIGTERM');
  const code = await exited;
  assert.equal(code, 143, err());
  assert.match(err(), /^✘ SIGTERM: no more lines are posted; closing the 2 in flight$/m);
  assert.match(err(), /^error BATCH_INTERRUPTED: the batch was interrupted with SIGTERM: 0 of 4 lines done, 2 in flight/m);
  const s = JSON.parse(readFileSync(join(outDir, 'summary.json'), 'utf8')) as { stopped: { code: string; message: string }; unknown: number; notPosted: number; perLine: Array<{ status: string; detail?: string }> };
  assert.deepEqual([s.stopped.code, s.stopped.message, s.unknown, s.notPosted], ['BATCH_INTERRUPTED', 'interrupted with SIGTERM', 2, 2]);
  assert.ok(s.perLine.filter((l) => l.status === 'not-posted').every((l) => l.detail === 'not posted: the run was interrupted with SIGTERM'), JSON.stringify(s.perLine));
});

test('SIGHUP with its output gone (the terminal closed, `| tee` ended): summary.json still written, exit 129, no EPIPE end', async () => {
  // review s54: the first line after the signal failed (EPIPE: exit 0 at once; EIO: a crash) before summary.json
  const { cli, outDir, exited } = await batchInFlight('buyer-hup', 953);
  // nobody reads the command's output any more
  cli.stdout.destroy();
  cli.stderr.destroy();
  cli.kill('SIGHUP');
  assert.equal(await exited, 129);
  const s = JSON.parse(readFileSync(join(outDir, 'summary.json'), 'utf8')) as { stopped: { code: string; message: string } };
  assert.deepEqual([s.stopped.code, s.stopped.message], ['BATCH_INTERRUPTED', 'interrupted with SIGHUP']);
});
