/**
 * `c0mpute devnet`'s flags checked before the devnet's own modules load (they take about a second of CPU): a wrong
 * combination is refused at once, as any other usage error (DEVNET_BAD_OPTION, POLICY_UNKNOWN).
 */
import { POLICIES } from '../../records/kinds.js';
import { UsageError } from '../context.js';
import type { DevnetOpts } from './devnet-actions.js';

/** The scenarios, one at a time. */
export const DEVNET_SCENARIOS = ['overlay', 'orders', 'pool', 'training'] as const;

/** `--start-timeout <seconds>`: a whole number of seconds from 1 to 3600, as ms; undefined when not given. */
export function startTimeoutFlag(v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const s = Number(v);
  if (!/^[0-9]{1,4}$/.test(v) || s < 1 || s > 3600) throw new UsageError('DEVNET_BAD_OPTION', `--start-timeout must be a whole number of seconds from 1 to 3600, got "${v.slice(0, 40)}"`, { field: 'start-timeout' });
  return s * 1000;
}

/** The default walk's own options: a scenario runs its own nodes, policies and jobs, and takes none of them. */
export const WALK_OPTIONS = ['providers', 'policy', 'jobs'] as const;

const NOT_FOR_SCENARIO: Record<(typeof WALK_OPTIONS)[number], string> = {
  providers: 'it starts its own nodes',
  policy: "its buyers' policies are the scenario's own",
  jobs: 'it runs its own jobs',
};

/**
 * Refuses what `c0mpute devnet` cannot run, before anything starts. `given`: which of the walk's options
 * (WALK_OPTIONS) were given on the command line, not left at their defaults. Their values are checked whether or not
 * a scenario is given (an invalid one is never run past); one given with a scenario is refused, naming the option and
 * the scenario, rather than ignored (QA qaDev F6).
 */
export function checkDevnetFlags(o: DevnetOpts, given: ReadonlySet<string> = new Set()): void {
  const scenarios = DEVNET_SCENARIOS.filter((k) => o[k]);
  if (scenarios.length > 1) throw new UsageError('DEVNET_BAD_OPTION', `one scenario at a time: --${scenarios.join(' and --')} were given together`);
  if (o.training && o.keep) throw new UsageError('DEVNET_BAD_OPTION', '--keep does not apply to --training: its workers stop when the run ends');
  startTimeoutFlag(o.startTimeout);
  if (o.training && o.startTimeout !== undefined) throw new UsageError('DEVNET_BAD_OPTION', '--start-timeout does not apply to --training: it starts no node daemons');
  const providers = Number(o.providers);
  const jobs = Number(o.jobs);
  if (!Number.isInteger(providers) || providers < 3 || providers > 30) throw new UsageError('DEVNET_BAD_OPTION', '--providers must be a whole number from 3 to 30', { field: 'providers' });
  if (!Number.isInteger(jobs) || jobs < 1 || jobs > 20) throw new UsageError('DEVNET_BAD_OPTION', '--jobs must be a whole number from 1 to 20', { field: 'jobs' });
  if (!(POLICIES as readonly string[]).includes(o.policy)) throw new UsageError('POLICY_UNKNOWN', `unknown policy "${o.policy}"; one of ${POLICIES.join(', ')}`);
  const scenario = scenarios[0];
  const extra = WALK_OPTIONS.find((k) => given.has(k));
  if (scenario && extra) throw new UsageError('DEVNET_BAD_OPTION', `--${extra} does not apply to --${scenario}: ${NOT_FOR_SCENARIO[extra]} (--${extra} is for the default devnet)`, { field: extra });
}
