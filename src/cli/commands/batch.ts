/**
 * `c0mpute batch plan batch.yaml` (docs/matching.md "Batch plans"; issue #12
 * "Batch plans"): asks the running daemon to plan a batch against its
 * live-provider view (`POST /v1/batch/plan`). Nothing is signed or sent. A
 * batch the live network cannot take in its window is a negative answer
 * (exit 1, `error BATCH_EXCEEDS_CAPACITY: …` with the shortfall per workload);
 * a bad batch file is an operator error (exit 3, BATCH_FIELD_INVALID …).
 */
import type { Command } from 'commander';
import { C0Error } from '../../errors.js';
import { apiCall } from '../../node/api-client.js';
import { shortDid } from '../../market/short-did.js';
import { formatMoney } from '../../records/money.js';
import type { BatchPlan } from '../../matching/batch-plan.js';
import { BATCH_CEILING_MAX } from '../../matching/batch-limits.js';
import { plural } from '../../util/text.js';
import { NegativeAnswer, out, outJson, UsageError } from '../context.js';
import { overlayQuery, requireDaemon } from '../daemon-client.js';
import { globals } from './index.js';
import { registerBatchRun } from './batch-run.js';

/** The most `--ceiling` takes (nine digits: a per-provider ceiling past any window's lines); the API takes the same. */
export const CEILING_MAX = BATCH_CEILING_MAX;

export function register(program: Command): void {
  const batch = program.command('batch').description('plan batches of many lines across the live providers');
  batch
    .command('plan <file>')
    .description('how many lines of batch.yaml each live provider takes, at its ask, before anything is signed')
    .option('--ceiling <lines>', 'per-provider ceiling on lines in one plan (default 64)')
    .option('--overlay <name>', 'the overlay (default: the node’s first)')
    .option('--json', 'machine-readable output')
    .action(async (file: string, o: { ceiling?: string; overlay?: string; json?: boolean }, cmd: Command) => {
      const { dataDir } = globals(cmd);
      const { readBatchFile } = await import('../batchfile.js');
      const b = readBatchFile(file);
      let ceiling: number | undefined;
      if (o.ceiling !== undefined) {
        // at least one: a ceiling of 0 places nothing, and was refused as capacity (QA s49); the bound said
        if (!/^[0-9]{1,9}$/.test(o.ceiling) || Number(o.ceiling) < 1) throw new UsageError('BATCH_FIELD_INVALID', `--ceiling must be a whole number of lines from 1 to ${CEILING_MAX}, got "${o.ceiling.slice(0, 40)}"`, { field: 'ceiling' });
        ceiling = Number(o.ceiling);
      }
      const c = requireDaemon(dataDir);
      let plan: BatchPlan;
      try {
        plan = (await apiCall(c.api, c.token, 'POST', `/v1/batch/plan${overlayQuery(o.overlay)}`, { batch: b, ...(ceiling === undefined ? {} : { ceiling }) })) as BatchPlan;
      } catch (e) {
        if (e instanceof C0Error && (e.code === 'BATCH_EXCEEDS_CAPACITY' || e.code === 'BATCH_NO_PROVIDER' || e.code === 'BATCH_MAX_PRICE_BELOW_ASK')) throw new NegativeAnswer([`error ${e.code}: ${e.message}`], 'stderr');
        throw e;
      }
      if (o.json) return outJson(plan);
      for (const l of renderPlan(plan)) out(l);
    });
  registerBatchRun(batch);
}

/** The human view: per workload a table of providers (lines, ask, cost), then per-provider and overall totals. */
export function renderPlan(p: BatchPlan): string[] {
  const lines: string[] = [];
  let wl = '';
  for (const a of p.assignments) {
    if (a.workload !== wl) {
      wl = a.workload;
      lines.push(`${wl}`, `  ${'provider'.padEnd(22)} ${'lines'.padStart(7)}  ${'ask'.padEnd(24)} cost`);
    }
    lines.push(`  ${shortDid(a.provider).padEnd(22)} ${String(a.lines).padStart(7)}  ${`${formatMoney(a.ask)}/${a.unit}`.padEnd(24)} ${formatMoney(a.cost)}`);
  }
  lines.push('per provider');
  for (const v of p.providers) lines.push(`  ${shortDid(v.provider).padEnd(22)} ${String(v.lines).padStart(7)}  ${v.cost.map(formatMoney).join(' + ')}`);
  lines.push(`total: ${plural(p.lines, 'line')} over ${plural(p.providers.length, 'provider')}, ${p.totals.map(formatMoney).join(' + ')}`);
  return lines;
}
