/**
 * The entitlement tree read against the ledger (docs/overlays.md "Editing the tree"). The tree is configuration and
 * the ledger is the only source of usage (pool/1 §6.1): an edit of the tree changes neither what was spent nor under
 * which entitlement. Two edits leave the tree and the ledger disagreeing, and both are said at start (the tree is read
 * once, at start: there is no reload):
 *
 * - an entitlement the ledger charges (released claims, or claims still open) that the tree no longer has
 *   (`STEWARD_TREE_LACKS_ENTITLEMENT`, one line naming each with its spend). Its usage stays in the ledger and in
 *   `steward status` (`notInTree`), so the figures still add up to the ledger's; no new claim is admitted under it.
 * - a guarantee below what its entitlement has settled already (`STEWARD_GUARANTEE_BELOW_SETTLED`): a guarantee
 *   lowered past it, or surplus borrowed and overruns charged under the old one. Settled spend never shrinks within a
 *   ledger, so from now on every claim of that entitlement runs on surplus only (observed estimates, a weight above 0,
 *   within its share and limit) and an unobserved one is denied UNOBSERVED_EXCEEDS_GUARANTEE.
 *
 * Before (QA qaUp F3), a team taken out of the tree vanished from `steward status` and `GET /v1/steward`, the
 * "(all below)" total shrank by its spend, and nothing was logged. Pure but for the logger.
 */
import type { Tree } from '../pool/tree.js';
import type { UsageBook } from '../pool/usage.js';
import type { Logger } from '../util/log.js';
import { joulesText } from '../util/joules.js';

/** A `steward status` row of an entitlement the ledger charges and the tree lacks (`notInTree[]`): energies in µJ. */
export interface NotInTreeRow {
  id: string;
  used_uj: number;
  spent_uj: number;
  reserved_uj: number;
  borrowed_uj: number;
  held_devices: number;
  open_claims: number;
}

/** The figures of one entitlement as the ledger has them: reservations and borrowing of its open claims summed. */
export function ledgerFigures(book: UsageBook, id: string): Omit<NotInTreeRow, 'id'> {
  const u = book.usage(id);
  let reserved = 0;
  let borrowed = 0;
  let open = 0;
  for (const c of book.open.values()) {
    if (c.entitlement !== id) continue;
    reserved += c.reserved.uj;
    borrowed += c.borrowed_uj;
    open++;
  }
  return { used_uj: u.usedUj, spent_uj: u.usedUj - reserved, reserved_uj: reserved, borrowed_uj: borrowed, held_devices: u.heldDevices, open_claims: open };
}

/** Every entitlement the ledger has charged (released or open claims) that `tree` lacks, by id. */
export function notInTree(tree: Tree, book: UsageBook): NotInTreeRow[] {
  const ids = new Set<string>();
  // every open claim's entitlement is among these too: UsageBook sets it on the claim's Admitted
  for (const id of book.entitlements.keys()) if (!tree.entitlements.has(id)) ids.add(id);
  return [...ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)).map((id) => ({ id, ...ledgerFigures(book, id) }));
}

/** Entitlements of `tree` whose settled spend (released claims) is past their guarantee, by id. */
export function guaranteesBelowSettled(tree: Tree, book: UsageBook): Array<{ id: string; guarantee_uj: number; settled_uj: number }> {
  const out: Array<{ id: string; guarantee_uj: number; settled_uj: number }> = [];
  for (const e of [...tree.entitlements.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))) {
    const settled = book.usage(e.id).settledUj;
    if (settled > e.guarantee_uj) out.push({ id: e.id, guarantee_uj: e.guarantee_uj, settled_uj: settled });
  }
  return out;
}

/** Say at start where the tree (`treeFile`) and the ledger disagree (the module's comment); nothing when they agree. */
export function warnTreeAgainstLedger(tree: Tree, book: UsageBook, log: Logger, overlay: string, treeFile: string): void {
  const lacking = notInTree(tree, book);
  if (lacking.length) {
    const list = lacking.map((r) => `${r.id} (spent ${joulesText(r.spent_uj)}${r.open_claims ? `, ${r.open_claims} open claim${r.open_claims === 1 ? '' : 's'} reserving ${joulesText(r.reserved_uj)}` : ''})`).join(', ');
    log.warn(
      { code: 'STEWARD_TREE_LACKS_ENTITLEMENT', overlay, tree: treeFile, entitlements: lacking.map((r) => ({ id: r.id, spent_uj: r.spent_uj, reserved_uj: r.reserved_uj, open_claims: r.open_claims })) },
      `the ledger charges ${lacking.length === 1 ? 'an entitlement' : `${lacking.length} entitlements`} the tree no longer has: ${list}. Their usage stays in the ledger and is shown under "not in the tree" by c0mpute steward status; no new claim is admitted under them (put them back in ${treeFile} to claim again)`,
    );
  }
  const below = guaranteesBelowSettled(tree, book);
  if (below.length) {
    const list = below.map((b) => `${b.id} settled ${joulesText(b.settled_uj)}, guarantee ${joulesText(b.guarantee_uj)}`).join('; ');
    log.warn(
      { code: 'STEWARD_GUARANTEE_BELOW_SETTLED', overlay, tree: treeFile, entitlements: below },
      `guarantee below what is settled already: ${list}. Settled spend never shrinks within a ledger, so every further claim of ${below.length === 1 ? 'it' : 'these'} runs on surplus only (observed estimates, over_quota_weight above 0, within its share and limit); an unobserved one is denied UNOBSERVED_EXCEEDS_GUARANTEE`,
    );
  }
}
