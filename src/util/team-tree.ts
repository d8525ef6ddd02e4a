/**
 * An entitlement tree's rows in tree order, for the steward's team tables (`c0mpute steward status`, the console's
 * Overlays view): each entitlement under its parent, siblings by id, with its depth and every entitlement below it.
 * A row whose parent is not among the rows is a root (nothing is lost). Pure: the CLI and the console share it.
 */

/** A team's row as the steward reports it (`GET /v1/steward` teams[]): energies in µJ. */
export interface TeamRow {
  id: string;
  parent?: string;
  priority: number;
  guarantee_uj: number;
  guarantee_devices: number;
  limit_uj?: number;
  spent_uj: number;
  reserved_uj: number;
  borrowed_uj: number;
  held_devices: number;
  open_claims: number;
}

/** One row of inTreeOrder. */
export interface TreeRow<T> {
  team: T;
  depth: number;
  /** every row below this one, in tree order (empty for a leaf) */
  below: T[];
}

export function inTreeOrder<T extends { id: string; parent?: string }>(teams: readonly T[]): Array<TreeRow<T>> {
  const ids = new Set(teams.map((t) => t.id));
  const kids = new Map<string | undefined, T[]>();
  for (const t of teams) {
    const p = t.parent !== undefined && ids.has(t.parent) && t.parent !== t.id ? t.parent : undefined;
    const list = kids.get(p);
    if (list) list.push(t);
    else kids.set(p, [t]);
  }
  for (const list of kids.values()) list.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const rows: Array<TreeRow<T>> = [];
  const seen = new Set<string>();
  const walk = (t: T, depth: number): T[] => {
    if (seen.has(t.id)) return []; // a cycle (a tree is checked for them at load; a view never loops on one)
    seen.add(t.id);
    const row: TreeRow<T> = { team: t, depth, below: [] };
    rows.push(row);
    for (const k of kids.get(t.id) ?? []) row.below.push(...walk(k, depth + 1));
    return [t, ...row.below];
  };
  for (const root of kids.get(undefined) ?? []) walk(root, 0);
  return rows;
}

/** The figures of rows summed (a parent's "all below": every row counts only the claims under its own entitlement). */
export function teamTotals(rows: ReadonlyArray<Pick<TeamRow, 'spent_uj' | 'reserved_uj' | 'borrowed_uj' | 'held_devices' | 'open_claims'>>): Pick<TeamRow, 'spent_uj' | 'reserved_uj' | 'borrowed_uj' | 'held_devices' | 'open_claims'> {
  const t = { spent_uj: 0, reserved_uj: 0, borrowed_uj: 0, held_devices: 0, open_claims: 0 };
  for (const r of rows) {
    t.spent_uj += r.spent_uj;
    t.reserved_uj += r.reserved_uj;
    t.borrowed_uj += r.borrowed_uj;
    t.held_devices += r.held_devices;
    t.open_claims += r.open_claims;
  }
  return t;
}
