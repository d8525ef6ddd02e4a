/** `c0mpute devnet` (what `npm start` runs): a local network of node processes and a narrated job. */
import type { Command } from 'commander';
import { POLICIES } from '../../records/kinds.js';
import type { DevnetOpts } from './devnet-actions.js';

export function register(program: Command): void {
  program
    .command('devnet')
    .description('start a local network of node processes, run a job through the whole walk and narrate it (npm start)')
    .option('--providers <n>', 'number of providers (≥ 3)', '4')
    .option('--policy <policy>', `buyer policy (${POLICIES.join(', ')})`, 'balanced')
    .option('--jobs <n>', 'jobs to run one after another', '2')
    .option('--keep', 'keep the network running after the jobs (Ctrl-C stops it)')
    .option('--dir <dir>', 'where the nodes keep their data (default: a temporary directory, removed at the end)')
    .option('--start-timeout <seconds>', 'how long a node may take to start, and the buyers to see the market (default 120; a node that exits fails at once)')
    .option('--overlay', 'the organisation scenario: a private overlay with a pool/1 steward, two teams, providers and a witness')
    .option('--orders', 'the matching scenario: presence, a probe, open orders with leases, a designated order, a batch of 120 lines planned and run')
    .option('--pool', 'the pooled-provider scenario: a pool of three members beside two providers; member choice, output guard, coordinator killed mid-job (docs/pools.md)')
    .option('--training', 'the training scenario: three worker processes train a model with witnessed epoch roots, then a two-stage pipeline')
    .action(async (o: DevnetOpts, cmd: Command) => {
      // a wrong flag is refused before the devnet's modules load (about a second of CPU)
      const flags = await import('./devnet-flags.js');
      flags.checkDevnetFlags(o, new Set(flags.WALK_OPTIONS.filter((k) => cmd.getOptionValueSource(k) === 'cli')));
      await (await import('./devnet-actions.js')).devnet(o);
    });
}
