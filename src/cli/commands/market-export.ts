/**
 * `c0mpute market export --job J --out DIR`: the records a decision about a job rests on (src/node/job-records.ts),
 * a file each, for `c0mpute market audit --selection S --records DIR` here or anywhere (docs/market.md §9). Asks the
 * running daemon (`GET /v1/jobs/:job/records`), else reads the data directory itself.
 */
import type { Command } from 'commander';
import { globals } from './index.js';
import type { ExportOpts } from './market-export-actions.js';

export function registerExport(program: Command): void {
  const market = program.commands.find((c) => c.name() === 'market') ?? program.command('market').description('the market: offline selection, explanation and audit from record files');
  market
    .command('export')
    .description('write the records a decision about a job rests on (the job, its selections, the offers and adverts they weighed, the evidence about those providers, its receipts) a file each, for `market audit`')
    .requiredOption('--job <job>', 'the job’s address (sha256:…), as `c0mpute jobs` lists it, or a file holding the job record')
    .requiredOption('--out <dir>', 'directory to write them to (made if missing); export.json, written last, lists them with each selection’s audit options: a directory without it is not a whole export')
    .option('--overlay <name>', 'the overlay (default: the node’s first)')
    .option('--json', 'machine-readable summary')
    .action(async (o: ExportOpts, cmd: Command) => (await import('./market-export-actions.js')).exportAction(o, globals(cmd).dataDir));
}
