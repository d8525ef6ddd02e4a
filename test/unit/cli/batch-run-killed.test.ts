/**
 * `c0mpute batch run` killed outright (SIGKILL, the OOM killer, a closed session: no handler runs, so no summary.json
 * is written). Before, nothing in the output directory said which lines were done: `--resume` found no summary and
 * posted, and paid for, every line again, the done ones and those in flight included, and so did a run without it.
 * Now the run keeps a journal (`journal.jsonl`) as it posts and settles lines: a run into that directory without
 * `--resume` is refused (BATCH_OUTPUT_HAS_SUMMARY), and `--resume` posts only what the journal does not record done,
 * leaving the lines in flight at the kill out (their outcome is not known here) unless `--rerun-unknown`.
 *
 * A fake daemon (fake-batch-daemon.ts): every line on one provider with 4 free slots; the first 2 lines complete, the
 * rest are held in flight (until the resume).
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EXIT } from '../../../src/cli/context.js';
import { P } from '../market/fixtures.js';
import { runNode } from './cli-run.js';
import { fakeBatchDaemon, type FakeBatchDaemon } from './fake-batch-daemon.js';
import { cliEnv } from './fake-daemon.js';

const BIN = fileURLToPath(new URL('../../../../bin/c0mpute.js', import.meta.url));
const root = mkdtempSync(join(tmpdir(), 'c0-batch-killed-'));
const daemons: FakeBatchDaemon[] = [];
after(() => {
  for (const d of daemons) d.close();
  rmSync(root, { recursive: true, force: true });
});

const W = 'builtin.sha256';
const env = cliEnv(join(root, 'unused-home'));
const until = async (ok: () => boolean) => {
  while (!ok()) await new Promise((r) => setTimeout(r, 20));
};

test('`batch run` SIGKILLed with 2 lines done and 4 in flight: --resume posts only the 4 never posted, not the 6 that may have run', async () => {
  const dataDir = join(root, 'buyer');
  const daemon = await fakeBatchDaemon(dataDir, P(954).did, { holdAfter: 2, slots: 4 });
  daemons.push(daemon);
  const file = join(root, 'b.yaml');
  writeFileSync(file, `window: 10m\nworkloads: [{ workload: ${W}, lines: 10, lineTime: 2s, maxPrice: "0.01 USD", params: "1000", inputText: "line {n}" }]\n`);
  const outDir = join(root, 'b.out');
  const cli = spawn(process.execPath, [BIN, '--data-dir', dataDir, 'batch', 'run', file, '--output-dir', outDir], { stdio: 'ignore', env });
  const exited = new Promise<void>((ok) => cli.once('close', () => ok()));
  // 2 done (their outputs kept), then the 4 slots full: lines 3–6 posted, never to settle
  // the journal, not a pause, says when both are recorded done (an output is written before its entry)
  const doneInJournal = () => {
    try {
      return readFileSync(join(outDir, 'journal.jsonl'), 'utf8').split('\n').filter((l) => l.includes('"done"')).length;
    } catch {
      return 0;
    }
  };
  await until(() => daemon.runs === 6 && readdirSync(outDir).filter((f) => f.endsWith('.out')).length === 2 && doneInJournal() >= 2);
  cli.kill('SIGKILL');
  await exited;
  assert.equal(existsSync(join(outDir, 'summary.json')), false, 'a killed command writes no summary');
  const posted = daemon.runs;

  const c0 = (...args: string[]) => runNode([BIN, '--data-dir', dataDir, 'batch', 'run', file, '--output-dir', outDir, ...args], { env, timeout: 60_000 });
  const again = await c0();
  assert.equal(again.status, EXIT.OPERATOR, again.stderr);
  assert.match(again.stderr, /^error BATCH_OUTPUT_HAS_SUMMARY: .* holds the journal of an earlier run that did not finish \(its command was killed, or failed before its summary: journal\.jsonl\): 2 of 10 lines done, 0 failed, 4 in flight when it stopped \(outcome unknown\), 4 not posted\. Run again with --resume/m);
  assert.equal(daemon.runs, posted, 'nothing posted without --resume');

  daemon.holdAfter = Infinity;
  const resumed = await c0('--resume');
  assert.equal(resumed.status, EXIT.NEGATIVE, resumed.stderr);
  assert.match(resumed.stderr, /resuming .*journal\.jsonl: 2 lines done earlier, not posted again; 4 in flight when it stopped left out .*; 4 to post/);
  assert.equal(daemon.runs, posted + 4, 'the 4 lines never posted, and only those');
  const s = JSON.parse(readFileSync(join(outDir, 'summary.json'), 'utf8')) as { done: number; resumed: { from: string; doneEarlier: number }; wholeBatch: { lines: number; done: number; unknown: number } };
  assert.deepEqual([s.done, s.resumed.doneEarlier, s.wholeBatch], [4, 2, { lines: 10, done: 6, unknown: 4, failed: 0, notPosted: 0, cost: [{ amount: '0.012', currency: 'USD' }] }]);
  assert.ok(existsSync(join(outDir, s.resumed.from)) && s.resumed.from.startsWith('journal.'), `the killed run's journal kept as ${s.resumed.from}`);
  assert.equal(existsSync(join(outDir, 'journal.jsonl')), false, 'the summary replaces the journal of a run that ended');
});
