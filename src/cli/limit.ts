/**
 * How many entries a long listing shows (`--limit <n>`, `--all`; summary.ts
 * summarises the rest). Light: commands say the default in their help.
 */
import { UsageError } from './context.js';

/** Entries listed before the rest is summarised (`--limit` changes it, `--all` lifts it). */
export const DEFAULT_LIST_LIMIT = 12;

export const num = (n: number): string => n.toLocaleString('en-US');

/** Parse `--limit <n>` / `--all` into a limit. */
export function listLimit(o: { all?: boolean; limit?: string }): number {
  if (o.all) return Infinity;
  if (o.limit === undefined) return DEFAULT_LIST_LIMIT;
  const n = Number(o.limit);
  if (!/^[0-9]{1,9}$/.test(o.limit) || !Number.isInteger(n)) throw new UsageError('CLI_BAD_LIMIT', `--limit takes a whole number of entries, got "${o.limit.slice(0, 40)}"`, { field: 'limit' });
  return n;
}
