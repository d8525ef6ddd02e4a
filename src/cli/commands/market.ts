/**
 * `c0mpute market select|explain|audit`: offline market decisions from record
 * files (a directory of envelopes of any kind). Records that do not verify are
 * listed as refused with their codes and take no part in the decision.
 *
 * The `market` command itself is left free for a live view of a running
 * daemon (another command module can attach an action to it).
 */
import type { Command } from 'commander';
import { UsageError } from '../context.js';
import { DEFAULT_LIST_LIMIT } from '../limit.js';
import { registerProbe } from './market-probe.js';
import { registerExport } from './market-export.js';
import type { AuditOpts, ExplainOpts, SelectOpts } from './market-actions.js';

export function parseAt(s: string | undefined): number {
  if (s === undefined) return Date.now();
  if (/^[0-9]{1,16}$/.test(s)) return Number(s);
  const t = Date.parse(s);
  if (Number.isNaN(t)) throw new UsageError('MARKET_BAD_TIME', `--at takes milliseconds since the epoch or an ISO date, got "${s}"`, { field: 'at' });
  return t;
}

/** The buyer's trust sources (docs/market.md "Reputation and its threat model"): `market select` and `market audit` alike. */
const TRUSTED_BUYERS_HELP = 'comma-separated buyer DIDs whose receipts count second-hand (default: the job buyer’s own evidence only)';
const SKEW_HELP = 'the clock-skew window in ms: the deciding node’s network.clockSkewMs (default 30000)';
const SECOND_HAND_HELP = 'weight of one second-hand outcome, above 0 and at most 1 (reputation.secondHandWeight; default 0.5)';
const DEALT_WITH_HELP = 'count buyers the job’s buyer ran jobs for as a provider (reputation.dealtWith)';

export function register(program: Command): void {
  registerProbe(program);
  registerExport(program);
  const market = program.commands.find((c) => c.name() === 'market') ?? program.command('market').description('the market: offline selection, explanation and audit from record files');

  market
    .command('select')
    .description('select a winner for a job from record files: the ranked table, the winner and why, or why nobody is eligible (exit 1)')
    .requiredOption('--job <job>', 'the job: an envelope file, or its address among the records')
    .requiredOption('--records <dir>', 'directory of record envelopes (adverts, offers, receipts, acceptances, …)')
    .option('--policy <policy>', 'cheapest | fastest | balanced | trusted | private', 'balanced')
    .option('--at <time>', 'decide as of this time (ms since the epoch or ISO date; default now)')
    .option('--out <file>', 'sign the selection with the node key and write the envelope here')
    .option('--delegation <delegation>', 'sign as a gateway under this delegation (file or address among the records)')
    .option('--trusted-buyers <dids>', TRUSTED_BUYERS_HELP)
    .option('--second-hand-weight <w>', SECOND_HAND_HELP)
    .option('--dealt-with', DEALT_WITH_HELP)
    .option('--skew-ms <ms>', SKEW_HELP)
    .option('--json', 'machine-readable output')
    .action(async (opts: SelectOpts, cmd: Command) => (await import('./market-actions.js')).selectAction(opts, cmd));

  market
    .command('explain')
    .description('eligibility of every known provider for a job, every failed requirement, and what binds')
    .requiredOption('--job <job>', 'the job: an envelope file, or its address among the records')
    .requiredOption('--records <dir>', 'directory of record envelopes')
    .option('--at <time>', 'as of this time (ms since the epoch or ISO date; default now)')
    .option('--json', 'machine-readable output')
    .option('--limit <n>', `list this many providers, then count the rest (default ${DEFAULT_LIST_LIMIT})`)
    .option('--all', 'list every provider')
    .option('--skew-ms <ms>', SKEW_HELP)
    .action(async (opts: ExplainOpts) => (await import('./market-actions.js')).explainAction(opts));

  market
    .command('audit')
    .description('recompute a selection from the records alone: exit 0 when it reproduces, 1 with what differs (or, for a `market export` directory, a record its export.json lists that is not there)')
    .requiredOption('--selection <selection>', 'the selection: an envelope file, or its address among the records')
    .requiredOption('--records <dir>', 'directory of record envelopes')
    .option('--steward <did...>', 'DIDs of stewards allowed to decide')
    .option('--trusted-buyers <dids>', TRUSTED_BUYERS_HELP)
    .option('--second-hand-weight <w>', SECOND_HAND_HELP)
    .option('--dealt-with', DEALT_WITH_HELP)
    .option('--skew-ms <ms>', SKEW_HELP)
    .option('--complete', 'fail (exit 1, AUDIT_EXPORT_UNMARKED) on a directory without a `market export`’s export.json, a cut-short or hand-made one; without it, a warning')
    .option('--json', 'machine-readable output')
    .action(async (opts: AuditOpts) => (await import('./market-actions.js')).auditAction(opts));
}

