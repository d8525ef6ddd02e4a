/**
 * `c0mpute batch run batch.yaml [--input-dir D] [--output-dir D]
 * [--concurrency N] [--json]` (docs/matching.md "Batch runs"; issue #12):
 * plans the batch on the running daemon, then runs every line as an order
 * designated to its planned provider (src/matching/batch-run.ts over the
 * control API, src/node/batch-client.ts), re-planning the lines of a provider
 * that fails. Outputs land in `<output-dir>/<line>.out`, the summary (every
 * receipt, the exact cost) in `<output-dir>/summary.json`; while it runs, what is
 * known of each line is appended to `<output-dir>/journal.jsonl`, so a command
 * killed outright still leaves it for `--resume` (src/cli/batch-resume.ts).
 *
 * Exit: 0 every line done; 1 a negative answer (the batch is refused before
 * anything is signed, or some lines failed: each is named); 3 bad input (the
 * batch file, an input file, a flag value, an output directory that cannot be
 * made: OUTPUT_UNWRITABLE before any line is posted), as every command's operator errors,
 * or the run lost its daemon (DAEMON_STREAM_LOST, DAEMON_UNREACHABLE,
 * DAEMON_NOT_ANSWERING, JOB_INTERRUPTED): it stops, blames no provider, and
 * its summary says which lines were done, in flight, or never posted.
 * Ctrl-C (docs/node.md "A run whose client went away"): no more lines are
 * posted, the lines' streams in flight close (the daemon withdraws those no
 * provider was selected for yet and lets the others run to their end), the
 * summary is written as when the daemon is lost, and one line,
 * BATCH_INTERRUPTED, ends the command (exit 130); a second Ctrl-C exits at once.
 * SIGTERM and SIGHUP do the same (exit 143, 129).
 */
import { existsSync, renameSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, extname, join, resolve } from 'node:path';
import type { Command } from 'commander';
import { C0Error } from '../../errors.js';
import { shortDid } from '../../market/short-did.js';
import { formatMoney } from '../../records/money.js';
import { runBatch, BATCH_INTERRUPTED, BATCH_RUN_CONCURRENCY, BATCH_RUN_MAX_CONCURRENCY, type BatchRunEvent, type BatchRunSummary } from '../../matching/batch-run.js';
import { jsonReplacer, NegativeAnswer, out, outputDir as makeOutputDir, UsageError, writingTo } from '../context.js';
import { interruptedBy, stopWord, watchCtrlC } from '../run-interrupt.js';
import { printable } from '../../util/text.js';
import { requireDaemon } from '../daemon-client.js';
import { globals } from './index.js';
import { CEILING_MAX, renderPlan } from './batch.js';

interface RunFlags {
  inputDir?: string;
  outputDir?: string;
  concurrency?: string;
  ceiling?: string;
  overlay?: string;
  json?: boolean;
  resume?: boolean;
  rerunUnknown?: boolean;
}

const whole = (flag: string, v: string, min: number, max = Number.MAX_SAFE_INTEGER): number => {
  if (!/^[0-9]{1,9}$/.test(v) || Number(v) < min || Number(v) > max) throw new UsageError('BATCH_FIELD_INVALID', `${flag} must be a whole number${min ? ` ≥ ${min}` : ''}${max < Number.MAX_SAFE_INTEGER ? ` and ≤ ${max}` : ''}, got "${v.slice(0, 40)}"`, { field: flag.slice(2) });
  return Number(v);
};

/**
 * Where a resumed run keeps the earlier record (`summary.json`, or the journal of a run that was killed):
 * summary.<its start>.json (journal.<its start>.jsonl), never over a file already there.
 */
function keptName(dir: string, startedAt: number | undefined, [name, ext] = ['summary', 'json']): string {
  const base = `${name}.${startedAt ?? Date.now()}`;
  let p = join(dir, `${base}.${ext}`);
  for (let i = 2; existsSync(p); i++) p = join(dir, `${base}-${i}.${ext}`);
  return p;
}

/**
 * The progress line of a provider struck off: the line that failed there, or, struck because its presence lapsed (no
 * line failed: `line` is empty), that alone. Before, the latter read "failed line : gone: its presence lapsed" (QA
 * qaMatch F8).
 */
export function providerFailedLine(e: Extract<BatchRunEvent, { e: 'provider-failed' }>, names: (did: string) => string): string {
  const what = e.line ? `failed line ${e.line}: ${e.reason}` : `struck off: ${e.reason.replace(/^gone: /, '')}`;
  return `✘ provider ${names(e.provider)} ${what}; its waiting lines are re-planned without it`;
}

export function registerBatchRun(batch: Command): void {
  batch
    .command('run <file>')
    .description('plan batch.yaml, then run every line as an order designated to its planned provider, re-planning the lines of a provider that fails')
    .option('--input-dir <dir>', 'where the lines’ input files are (default: the batch file’s directory)')
    .option('--output-dir <dir>', 'where outputs and summary.json go (default: <batch file without .yaml>.out beside it)')
    .option('--concurrency <n>', `lines in flight at once, over all providers (default ${BATCH_RUN_CONCURRENCY}, at most ${BATCH_RUN_MAX_CONCURRENCY}; per provider at most its free slots)`)
    .option('--ceiling <lines>', 'per-provider ceiling on lines in one plan (default 64)')
    .option('--overlay <name>', 'the overlay (default: the node’s first)')
    .option('--resume', 'the output directory holds an earlier run’s summary.json: post only the lines it does not record done (the earlier summary is kept)')
    .option('--rerun-unknown', 'with --resume: post again the lines that were in flight when the earlier run stopped (check `c0mpute jobs` first: they may have completed and been paid)')
    .option('--json', 'progress events and the summary as JSON lines on stdout')
    .action(async (file: string, o: RunFlags, cmd: Command) => {
      const { dataDir } = globals(cmd);
      const [{ readBatchRunFile }, { apiBatchPorts, batchLines, withLineInputs }] = await Promise.all([import('../batchfile.js'), import('../../node/batch-client.js')]);
      const { batch: fromFile, run } = readBatchRunFile(file);
      const concurrency = o.concurrency === undefined ? BATCH_RUN_CONCURRENCY : whole('--concurrency', o.concurrency, 1, BATCH_RUN_MAX_CONCURRENCY);
      const ceiling = o.ceiling === undefined ? undefined : whole('--ceiling', o.ceiling, 1, CEILING_MAX);
      const inputDir = resolve(o.inputDir ?? dirname(file));
      const outputDir = resolve(o.outputDir ?? join(dirname(file), `${basename(file, extname(file))}.out`));
      const allLines = batchLines(fromFile, run, inputDir);
      if (o.rerunUnknown && !o.resume) throw new UsageError('BATCH_FIELD_INVALID', '--rerun-unknown goes with --resume', { field: 'rerun-unknown' });
      // An earlier run's summary here is its only record of which lines were done, in flight or never posted: a run
      // into the same directory re-ran and re-paid every line and overwrote it (QA pass on matching, session 49).
      const summaryFile = join(outputDir, 'summary.json');
      const { readEarlierSummary, readUnfinishedRun, withUnposted, journalWriter, JOURNAL, earlierCounts, resumeSelection, subsetBatch, batchIdentity, checkSameBatch, identityChanges, wholeBatch, lockHolder, lockOutputDir, outputInUse } = await import('../batch-resume.js');
      // another run writing this directory now: its journal is not a killed run's, and resuming from it would post its lines again
      const holder = lockHolder(outputDir);
      if (holder !== undefined) throw outputInUse(outputDir, holder);
      // which batch this is: its content, not its path (docs/matching.md "Running it again")
      const identity = batchIdentity(run, allLines);
      // A journal left here is the newest record: its run was killed before it wrote a summary (it carries the
      // entries of any summary.json it resumed from).
      const journalFile = join(outputDir, JOURNAL);
      const unfinished = existsSync(journalFile);
      const recordFile = unfinished ? journalFile : summaryFile;
      const earlier = unfinished ? withUnposted(readUnfinishedRun(journalFile), identity, allLines.map((l) => l.id)) : existsSync(summaryFile) ? readEarlierSummary(summaryFile) : undefined;
      if (earlier && !o.resume) {
        const other = earlier.identity ? identityChanges(earlier.identity, identity).length > 0 : earlier.batch !== undefined && earlier.batch !== resolve(file);
        throw new C0Error(
          'BATCH_OUTPUT_HAS_SUMMARY',
          `${outputDir} holds ${unfinished ? `the journal of an earlier run that did not finish (its command was killed, or failed before its summary: ${JOURNAL})` : 'the summary of an earlier run'}${other ? ` of another batch${earlier.batch ? ` (${earlier.batch})` : ''}` : ''}: ${earlierCounts(earlier)}. Run again with --resume to post only the lines it does not record done, or give another --output-dir; nothing was posted`,
          { field: 'output-dir' },
        );
      }
      if (earlier) checkSameBatch(earlier, identity, resolve(file), allLines.map((l) => l.id), recordFile);
      const resumed = earlier ? resumeSelection(earlier, allLines, o.rerunUnknown === true) : undefined;
      const lines = resumed ? resumed.run : allLines;
      if (resumed) {
        const left = resumed.unknown.length ? `; ${resumed.unknown.length} in flight when it stopped left out (outcome unknown here: check \`c0mpute jobs\`${resumed.unknown.some((u) => u.job) ? ` for ${resumed.unknown.filter((u) => u.job).slice(0, 5).map((u) => `${u.id} (job ${u.job})`).join(', ')}${resumed.unknown.length > 5 ? ', …' : ''}` : ''}, then --rerun-unknown to post them again)` : '';
        process.stderr.write(printable(`resuming ${recordFile}: ${resumed.done} line${resumed.done === 1 ? '' : 's'} done earlier, not posted again${left}; ${lines.length} to post`) + '\n');
        if (lines.length === 0) {
          if (resumed.unknown.length) throw new NegativeAnswer([`✘ nothing posted: ${resumed.unknown.length} line${resumed.unknown.length === 1 ? '' : 's'} left out with outcome unknown (see above); the rest were done`], 'stderr');
          out(`batch: every line was done by the earlier run; nothing to post`);
          return;
        }
      }
      // the planner prices a per-MiB ask by the largest line's input, as its provider will claim it
      const b = withLineInputs(resumed ? subsetBatch(fromFile, lines) : fromFile, lines);
      // Made now, before anything is asked of the daemon, as `run --output` is checked (checkWritable): one that cannot
      // be made (a file there or in its path, /proc) is OUTPUT_UNWRITABLE at once. Found only at the first line's
      // delivery, the lines' jobs ran and were paid for, and their outputs were thrown away.
      const made = makeOutputDir(outputDir, 'output-dir');
      // one run writes a directory at a time (BATCH_OUTPUT_IN_USE), held until its summary is written
      const unlock = lockOutputDir(outputDir);
      // A batch that ends with nothing written (no daemon, refused before anything is signed) leaves no directory it
      // made behind: each is taken away again while empty, deepest first (rmdir never removes one that holds a file).
      const unmake = () => {
        unlock();
        for (const d of [...made].reverse()) {
          try {
            rmdirSync(d);
          } catch {
            return;
          }
        }
      };
      let c: ReturnType<typeof requireDaemon>;
      try {
        c = requireDaemon(dataDir);
      } catch (e) {
        unmake();
        throw e;
      }
      // Ctrl-C: the run stops (runBatch's signal) and the ports close the lines' streams; a second exits at once
      const ctrlC = watchCtrlC();
      const names = shortDid;
      const total = lines.length;
      const say = (s: string) => process.stderr.write(printable(s) + '\n');
      const onEvent = (e: BatchRunEvent) => {
        if (o.json) {
          if (e.e !== 'progress') out(JSON.stringify(e, jsonReplacer));
          return;
        }
        if (e.e === 'planned') for (const l of renderPlan(e.plan)) out(l);
        else if (e.e === 'line') {
          const mark = e.status === 'done' ? '✔' : e.status === 'retry' ? '↻' : e.status === 'unknown' ? '?' : '✘';
          const what = e.status === 'done' ? 'done by' : e.status === 'retry' ? 'to re-plan after' : e.status === 'unknown' ? (ctrlC.signal.aborted ? `in flight at ${stopWord(ctrlC.by())}, its stream closed, at` : 'outcome unknown (the daemon was lost) at') : 'failed at';
          say(`${mark} ${e.line} ${what} ${names(e.provider)}${e.status === 'unknown' && e.job ? `, job ${e.job}` : ''}${e.detail ? ` (${e.detail})` : ''}`);
        } else if (e.e === 'stopped' && e.code === BATCH_INTERRUPTED) {
          say(`✘ ${stopWord(ctrlC.by())}: no more lines are posted${e.inFlight ? `; closing the ${e.inFlight} in flight` : ''}`);
        } else if (e.e === 'stopped') {
          say(`✘ lost the daemon (${e.code}: ${e.message}): no more lines are posted and no provider is blamed${e.inFlight ? `; waiting for the ${e.inFlight} in flight` : ''}`);
        } else if (e.e === 'provider-failed') say(providerFailedLine(e, names));
        else if (e.e === 'replanned') say(`↻ re-planned ${e.lines} line${e.lines === 1 ? '' : 's'} without ${e.excluded.map(names).join(', ')}: ${e.assignments.map((a) => `${names(a.provider)} ${a.lines}`).join(', ')}${e.deferred ? `; ${e.deferred} back to re-plan (their provider failed meanwhile)` : ''}`);
        else if (e.e === 'replan-refused') say(`✘ ${e.lines} line${e.lines === 1 ? '' : 's'} could not be re-planned: ${e.reason}`);
        else if (e.e === 'progress' && e.total === total) say(`▸ ${e.done + e.failed}/${e.total}: ${e.done} done, ${e.failed} failed, ${e.replanned} re-planned, ${e.inFlight} in flight`);
      };
      // the journal a killed run leaves (its header written as the first line is posted); an earlier one is kept aside first
      const keptJournal = unfinished ? keptName(outputDir, earlier?.startedAt, ['journal', 'jsonl']) : undefined;
      const record = journalWriter(
        journalFile,
        () => ({ batch: resolve(file), identity, startedAt: Date.now(), ...(resumed ? { resumed: { carried: resumed.carried } } : {}) }),
        () => keptJournal && renameSync(journalFile, keptJournal),
      );
      const ports = { ...apiBatchPorts({ api: c.api, token: c.token, ...(o.overlay ? { overlay: o.overlay } : {}), ...(ceiling === undefined ? {} : { ceiling }), outputDir, onEvent, signal: ctrlC.signal }), record };
      let summary: BatchRunSummary;
      try {
        await ports.refreshSlots();
        summary = await runBatch({ batch: b, lines, concurrency, signal: ctrlC.signal }, ports);
      } catch (e) {
        unmake();
        if (e instanceof C0Error && (e.code === 'BATCH_EXCEEDS_CAPACITY' || e.code === 'BATCH_NO_PROVIDER' || e.code === 'BATCH_MAX_PRICE_BELOW_ASK')) throw new NegativeAnswer([`error ${e.code}: ${e.message}`], 'stderr');
        throw e;
      } finally {
        ctrlC.dispose();
      }
      /** The stop signal that interrupted the run (Ctrl-C, SIGTERM, SIGHUP), if one did. */
      const by = ctrlC.by();
      // a resumed run keeps the earlier summary beside its own (summary.<its start>.json), never over it; after a killed
      // run, the summary before it (if any) too, and the resume is from that run's journal, kept aside
      /** The start of the summary a killed run resumed from, to name it when kept: never an error once the lines are paid for (review s57). */
      const startOf = (path: string): { startedAt?: number } | undefined => {
        try {
          return readEarlierSummary(path);
        } catch {
          return undefined; // kept under this run's time instead
        }
      };
      const keptSummary = existsSync(summaryFile) ? keptName(outputDir, (unfinished ? startOf(summaryFile) : earlier)?.startedAt) : undefined;
      const kept = unfinished ? keptJournal : keptSummary;
      // the top-level figures are this run's; `wholeBatch` adds the lines carried from the runs before (QA qaMatch F2)
      const entire = wholeBatch(summary, resumed?.carried ?? []);
      writingTo(summaryFile, () => {
        // made before the first line (above); made again if removed since
        makeOutputDir(outputDir, 'output-dir');
        if (keptSummary) renameSync(summaryFile, keptSummary);
        const resumedFrom = resumed && kept ? { resumed: { from: basename(kept), doneEarlier: resumed.done, leftOutUnknown: resumed.unknown, carried: resumed.carried } } : {};
        writeFileSync(summaryFile, JSON.stringify({ batch: resolve(file), identity, outputDir, wholeBatch: entire, ...resumedFrom, ...summary }, jsonReplacer, 2) + '\n');
      });
      // the summary is the run's whole record now: this run's journal goes; a killed run's, if this one posted nothing
      // (so never set it aside), is kept as the summary's `resumed.from` names it
      if (keptJournal && !existsSync(keptJournal)) renameSync(journalFile, keptJournal);
      else rmSync(journalFile, { force: true });
      unlock();
      const cost = summary.cost.map(formatMoney).join(' + ') || 'nothing';
      if (o.json) out(JSON.stringify({ e: 'summary', summary: { ...summary, wholeBatch: entire, file: summaryFile } }, jsonReplacer));
      else {
        const stopped = summary.stopped ? `, ${summary.unknown} in flight when ${summary.stopped.code === BATCH_INTERRUPTED ? 'interrupted' : 'the daemon was lost'}, ${summary.notPosted} not posted` : '';
        out(`batch: ${summary.lines} lines${resumed ? ` posted on resuming (${resumed.done} done earlier)` : ''}, ${summary.done} done, ${summary.failed} failed${stopped}, ${summary.replanned} re-planned; ${summary.receipts.length} receipts; cost ${cost}${resumed ? ' (this run)' : ''}`);
        if (resumed) out(`the whole batch: ${entire.done} of ${entire.lines} lines done, cost ${entire.cost.map(formatMoney).join(' + ') || 'nothing'}${entire.unpriced ? ` and ${entire.unpriced} done line${entire.unpriced === 1 ? '' : 's'} whose price the earlier summaries do not say` : ''} (every run into ${outputDir})`);
        out(`outputs in ${outputDir}, summary in ${summaryFile}${kept ? ` (the earlier one kept as ${basename(kept)})` : ''}`);
      }
      if (summary.stopped?.code === BATCH_INTERRUPTED) {
        throw interruptedBy(
          by,
          BATCH_INTERRUPTED,
          `the batch was interrupted with ${stopWord(by)}: ${summary.done} of ${summary.lines} lines done, ${summary.unknown} in flight (their streams closed: the daemon withdraws those no provider was selected for yet and lets the others run to their end; their outcome: \`c0mpute jobs\`), ${summary.notPosted} not posted${summary.failed ? `, ${summary.failed} failed` : ''}; outputs in ${outputDir}, per line in ${summaryFile}`,
        );
      }
      if (summary.stopped) {
        // the daemon's own error, as `c0mpute run` reports it (exit 3): not a negative answer about the lines
        const { code, message } = summary.stopped;
        throw new C0Error(code, `the batch stopped because it lost the daemon: ${message}. ${summary.done} of ${summary.lines} lines done, ${summary.unknown} in flight (their outcome: \`c0mpute jobs\` once the daemon is back), ${summary.notPosted} not posted${summary.failed ? `, ${summary.failed} failed` : ''}; no provider was blamed for it; per line in ${summaryFile}`);
      }
      if (resumed?.unknown.length && !summary.failed) {
        throw new NegativeAnswer([`✘ ${resumed.unknown.length} line${resumed.unknown.length === 1 ? '' : 's'} left out with outcome unknown (in flight when the earlier run stopped): check \`c0mpute jobs\`, then --resume --rerun-unknown`], 'stderr');
      }
      if (summary.failed) {
        const failed = summary.perLine.filter((l) => l.status === 'failed');
        throw new NegativeAnswer([`✘ ${failed.length} of ${summary.lines} lines failed: ${failed.slice(0, 10).map((l) => `${l.id} (${l.detail ?? '?'})`).join('; ')}${failed.length > 10 ? ` (+${failed.length - 10} more in summary.json)` : ''}`], 'stderr');
      }
    });
}
