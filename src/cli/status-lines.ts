/**
 * The lines `c0mpute status` prints for a field of the daemon's status (`--json` prints the answer as it is): a list
 * as its items (`none` when empty; a long one an item a line), a mapping as `key value` pairs (one a line when its
 * values are mappings themselves: gossip's topics, the overlays), a value as it is. Before (QA qaOps F12) roles, addrs,
 * gossip and provider were printed as raw JSON.
 */

/**
 * The words a status field is said with where its key would mislead (`--json` keeps the key). `evidence` counts the
 * outcome records reputation is derived from (receipts, acceptances, non-deliveries); beside a witness's `⚠ evidence
 * 1 pair kept` (equivocation) on the same screen, "evidence 99" read as 99 proofs against stewards (QA qaUp F7).
 */
const LABELS: Readonly<Record<string, string>> = { evidence: 'outcomes held' };

/** How a status field's key is said (LABELS), else the key itself. */
export function statusLabel(key: string): string {
  return Object.hasOwn(LABELS, key) ? LABELS[key]! : key;
}

/** A value on one line: a list's items joined, a mapping's `key value` pairs (a nested one in parentheses). */
export function inline(v: unknown): string {
  if (Array.isArray(v)) return v.length === 0 ? 'none' : v.map(inline).join(', ');
  if (v !== null && typeof v === 'object') {
    const e = Object.entries(v).filter(([, x]) => x !== undefined);
    if (e.length === 0) return 'none';
    return e.map(([k, x]) => `${statusLabel(k)} ${x !== null && typeof x === 'object' && !Array.isArray(x) ? `(${inline(x)})` : inline(x)}`).join(', ');
  }
  return String(v);
}

/** How long a line's value may be before a list is said an item a line. */
const WIDE = 100;

/** The lines for one field, its label padded to `pad`. */
export function statusLines(key: string, v: unknown, pad = 15): string[] {
  const label = statusLabel(key).padEnd(pad);
  const blank = ''.padEnd(pad);
  if (Array.isArray(v)) {
    const one = inline(v);
    if (one.length <= WIDE) return [`${label} ${one}`];
    return v.map((x, i) => `${i === 0 ? label : blank} ${inline(x)}`);
  }
  if (v !== null && typeof v === 'object') {
    const e = Object.entries(v).filter(([, x]) => x !== undefined);
    if (e.length > 0 && e.some(([, x]) => x !== null && typeof x === 'object' && !Array.isArray(x))) {
      const w = Math.max(...e.map(([k]) => k.length));
      return e.map(([k, x], i) => `${i === 0 ? label : blank} ${k.padEnd(w)}  ${inline(x)}`);
    }
  }
  return [`${label} ${inline(v)}`];
}

/**
 * The `build` line of `c0mpute status`: the running daemon's build as it reports it, and whether it is this command's
 * (`mine`, buildText). A daemon started before an upgrade runs the earlier build until it is restarted: a build that
 * differs is said beside it, and a daemon from before build ids, which reports none, gets the line too. Before, such a
 * daemon's status had no build line at all, and one that differed read like the upgraded build's.
 */
export function daemonBuildLine(reported: unknown, mine: string, pad = 15): string {
  const label = 'build'.padEnd(pad);
  if (typeof reported !== 'string') return `${label} (not reported: the daemon runs a build from before build ids, not this command's ${mine}; restart it to run this build)`;
  // an id unknown on either side (dist/src compiled after the last bundle) tells nothing: the same text is no match
  if (/\(build unknown/.test(reported) || /\(build unknown/.test(mine)) return `${label} ${reported} (whether it is this command's build cannot be told: a build id is unknown; npm run build)`;
  if (reported === mine) return `${label} ${reported}`;
  return `${label} ${reported} (not this command's ${mine}: the daemon runs the build it was started with; restart it to run this one)`;
}
