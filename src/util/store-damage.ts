/**
 * What a damaged LevelDB looks like (docs/node.md "A damaged database"), for the store and for the CLI's top level.
 * Nothing here loads LevelDB: the CLI's top level imports it without loading the store (test/e2e/cli-lazy).
 */

/** A database that LevelDB reports damaged, or one whose files are there without the CURRENT that names them. */
export const STORE_CORRUPT = 'STORE_CORRUPT';

/** What the operator reads with STORE_CORRUPT: nothing is repaired or deleted by the node itself. */
export const STORE_RECOVERY = 'stop every c0mpute process on this data directory, copy the db/ directory aside, then restore it from a backup or repair it (docs/node.md "A damaged database"); the node repairs nothing itself';

/**
 * LevelDB's report of a table file it cannot read as one: a table cut short or emptied (`IO error: …/000005.ldb:
 * Invalid argument`), or gone since the open (`…: No such file or directory`). LevelDB says IO error, not Corruption,
 * for these; other IO errors (a permission, a full disk) are not the table's damage.
 */
export const TABLE_IO_DAMAGE = /^IO error: (?:.*[\\/])?\d+\.(?:ldb|sst): (?:Invalid argument|No such file or directory)$/;

/** LevelDB's reason when `e` itself is a damaged table (LEVEL_CORRUPTION, LevelDB's "Corruption: …", TABLE_IO_DAMAGE), else undefined. */
export function tableDamage(e: unknown): string | undefined {
  const { code, message } = (e ?? {}) as { code?: unknown; message?: unknown };
  const text = typeof message === 'string' ? message : undefined;
  if (code === 'LEVEL_CORRUPTION' || (code === undefined && text?.startsWith('Corruption: '))) return text ?? 'corruption';
  if ((code === 'LEVEL_IO_ERROR' || code === undefined) && text !== undefined && TABLE_IO_DAMAGE.test(text)) return text;
  return undefined;
}

/** tableDamage of `e` or of an error it was caused by (at most 5 deep). */
export function tableDamageIn(e: unknown): string | undefined {
  for (let x = e, i = 0; x && typeof x === 'object' && i < 5; x = (x as { cause?: unknown }).cause, i++) {
    const why = tableDamage(x);
    if (why !== undefined) return why;
  }
  return undefined;
}
