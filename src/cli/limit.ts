/**
 * How many entries a long listing shows (`--limit <n>`, `--all`; summary.ts
 * summarises the rest). Light: commands say the default in their help.
 */
import { UsageError } from './context.js';

/** Entries listed before the rest is summarised (`--limit` changes it, `--all` lifts it). */
export const DEFAULT_LIST_LIMIT = 12;

export const num = (n: number): string => n.toLocaleString('en-US');

/**
 * `--limit <n>` and `--all` together say two things: refused, CLI_OPTIONS_CONFLICT (exit 2), as the CLI refuses other
 * options that contradict each other (`--open` with `--designated`). Before (QA, reputation and audit pass, F12),
 * `--all` won silently.
 */
export function refuseLimitWithAll(o: { all?: boolean; limit?: string }): void {
  if (o.all && o.limit !== undefined) throw new UsageError('CLI_OPTIONS_CONFLICT', '--limit lists that many, --all every one: give one of them', { field: 'limit' });
}

/** Parse `--limit <n>` / `--all` into a limit; both together are CLI_OPTIONS_CONFLICT. */
export function listLimit(o: { all?: boolean; limit?: string }): number {
  refuseLimitWithAll(o);
  if (o.all) return Infinity;
  if (o.limit === undefined) return DEFAULT_LIST_LIMIT;
  const n = Number(o.limit);
  if (!/^[0-9]{1,9}$/.test(o.limit) || !Number.isInteger(n)) throw new UsageError('CLI_BAD_LIMIT', `--limit takes a whole number of entries, got "${o.limit.slice(0, 40)}"`, { field: 'limit' });
  return n;
}
