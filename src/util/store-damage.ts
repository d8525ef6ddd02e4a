/**
 * What a damaged LevelDB looks like (docs/node.md "A damaged database"), for the store and for the CLI's top level.
 * Nothing here loads LevelDB: the CLI's top level imports it without loading the store (test/e2e/cli-lazy).
 */

/** A database that LevelDB reports damaged, or one whose files are there without the CURRENT that names them. */
export const STORE_CORRUPT = 'STORE_CORRUPT';

/**
 * Whether `e` is this node's store failing (a STORE_* code: a failed write, a read it cannot do, a reopen under way, a
 * database closed or damaged), not anything a record or a peer did: the validator ignores such a record rather than
 * rejecting it, and the delivery queue and the outcome writes summarise it rather than log it per record.
 */
export function isStoreFailure(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('STORE_');
}

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

/** `f` of `e` or of the first error it was caused by (at most 5 deep) for which `f` gives something. */
function inCauses<T>(e: unknown, f: (x: unknown) => T | undefined): T | undefined {
  for (let x = e, i = 0; x && typeof x === 'object' && i < 5; x = (x as { cause?: unknown }).cause, i++) {
    const found = f(x);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** tableDamage of `e` or of an error it was caused by (at most 5 deep). */
export function tableDamageIn(e: unknown): string | undefined {
  return inCauses(e, tableDamage);
}

/**
 * A read of the database that LevelDB could not make for a reason that is not damage: a table it may not open (a
 * permission: a file left root-owned by a `sudo c0mpute start`), an I/O error of the disk (EIO). Not a bug (exit 70,
 * a supervisor's restart loop): the operator's to fix; the CLI exits 3 and the API answers 500.
 */
export const STORE_READ_FAILED = 'STORE_READ_FAILED';

/** The OS's words in LevelDB's IO error (strerror) and the code they stand for. */
const OS_CODES: Record<string, string> = {
  'Permission denied': 'EACCES',
  'Operation not permitted': 'EPERM',
  'Input/output error': 'EIO',
  'Read-only file system': 'EROFS',
  'No space left on device': 'ENOSPC',
  'Too many open files': 'EMFILE',
  'Stale file handle': 'ESTALE',
};

/** What a failed read was: LevelDB's message, the file it names and the OS's reason (with its code when known). */
export interface ReadFailure {
  message: string;
  file?: string;
  reason?: string;
  errno?: string;
}

/** LevelDB's IO error `e` itself (LEVEL_IO_ERROR, "IO error: …") that is not a damaged table, else undefined. */
export function readFailure(e: unknown): ReadFailure | undefined {
  const { code, message } = (e ?? {}) as { code?: unknown; message?: unknown };
  if (typeof message !== 'string' || tableDamage(e) !== undefined) return undefined;
  if (code !== 'LEVEL_IO_ERROR' && !(code === undefined && message.startsWith('IO error: '))) return undefined;
  const m = /^IO error: (.*): ([^:]+)$/.exec(message);
  if (!m) return { message };
  const errno = OS_CODES[m[2]!];
  return { message, file: m[1]!, reason: m[2]!, ...(errno ? { errno } : {}) };
}

/** readFailure of `e` or of an error it was caused by (at most 5 deep). */
export function readFailureIn(e: unknown): ReadFailure | undefined {
  return inCauses(e, readFailure);
}

/** The operator's text for a failed read of the database at `path`. */
export function readFailedMessage(path: string, f: ReadFailure): string {
  const why = f.reason ? `${f.reason.toLowerCase()}${f.errno ? ` (${f.errno})` : ''} on ${f.file}` : f.message;
  const advice =
    f.errno === 'EACCES' || f.errno === 'EPERM'
      ? `give the files back to the user the node runs as (a start as another user, e.g. \`sudo c0mpute start\`, leaves files only that user can read: \`chown -R <user> ${path}\`)`
      : 'check the disk and the file (the kernel log for an I/O error)';
  return `a read of the database at ${path} failed: ${why}; nothing was changed: ${advice}, then run the command again`;
}
