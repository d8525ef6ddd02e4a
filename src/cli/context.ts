/**
 * What every command shares: the data directory, output helpers, exit codes.
 * Only src/cli prints to the terminal.
 */
import { homedir, userInfo } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { lstatSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import { C0Error } from '../errors.js';
import { printable } from '../util/text.js';
import { writeFileAtomic, writeTarget } from '../util/atomic-file.js';
import { osWords } from '../util/os-reason.js';
import { makeDirs } from '../util/make-dirs.js';
import { readFailureIn, tableDamageIn, type ReadFailure } from '../util/store-damage.js';

/** Exit codes (documented in the README, "CLI"). */
export const EXIT = {
  OK: 0,
  /** A negative answer: a record is invalid, a job failed, no provider is eligible, an audit does not reproduce. */
  NEGATIVE: 1,
  /** The command line is wrong (unknown flag, missing argument, a bad option value: a UsageError). */
  USAGE: 2,
  /** Operator-caused error: a bad input file, config, key, data directory, or an unreachable daemon. */
  OPERATOR: 3,
  /** A bug: an unexpected exception (run with C0MPUTE_DEBUG=1 for the stack). */
  INTERNAL: 70,
  /** The daemon's store failed a write and could not go on in that process (STORE_REOPEN_REFUSED): a restart recovers it. */
  STORE: 75,
  /** Interrupted with Ctrl-C (SIGINT) before it was done: 128 + SIGINT, as a shell reports it. */
  INTERRUPTED: 130,
} as const;

/**
 * A wrong command line found by the command rather than by commander: a bad option value (`--limit 0`, `--wait x`,
 * `devnet --jobs 0`), options that do not go together. Printed as `error CODE: …` like any C0Error, with its own stable
 * code (CLI_BAD_LIMIT, DEVNET_BAD_OPTION, …), and exits 2 (EXIT.USAGE), as commander's USAGE_* errors do; a bad value in
 * a file (a job file's policy) stays an operator error (exit 3).
 */
export class UsageError extends C0Error {}

/**
 * An option value that names nothing (`--role ""`, a unit's `--config "$CFG"` or `--data-dir "$DIR"` with the variable
 * unset): a wrong command line, USAGE_EMPTY_VALUE (exit 2). Before (reviews s40 F9, s40 round 2 F3, s41 rvE) such a
 * value was dropped, and the command ran as if the flag were not there: on the config's roles or API address, on the
 * built-in defaults, on the default data directory. `takes`: what the flag takes ('a value', 'a file', 'a directory');
 * `field`: the error's field (the flag's name unless given). The one error every such check throws; which values name
 * nothing is the option's (nonEmpty: blank; a list: no item; --config: the empty string only).
 */
export function emptyValue(flag: string, v: string, takes = 'a value', field = flag.slice(2)): UsageError {
  return new UsageError('USAGE_EMPTY_VALUE', `${flag} takes ${takes}; got "${v.slice(0, 40)}", which names none`, { field });
}

/** A single-valued option's parser: a blank value (empty, or spaces only) is emptyValue. */
export function nonEmpty(flag: string, takes?: string, field?: string): (v: string) => string {
  return (v) => {
    if (v.trim() === '') throw emptyValue(flag, v, takes, field);
    return v;
  };
}

/**
 * An operator error that is an interruption (Ctrl-C at a prompt): printed as `error CODE: …` like any, exit 130, or
 * `exit` (128 + the signal's number: 143 for a run stopped with SIGTERM, 129 with SIGHUP).
 */
export class Interrupted extends C0Error {
  readonly exit: number | undefined;
  constructor(code: string, message: string, opts: { field?: string; detail?: Record<string, unknown>; cause?: unknown; exit?: number } = {}) {
    const { exit, ...rest } = opts;
    super(code, message, rest);
    this.exit = exit;
  }
}

/**
 * The operator's home directory: os.homedir() (`$HOME`), else, when that is empty (`HOME=` set but empty) or not an
 * absolute path, the user's home in the password database. Neither absolute is DATA_DIR_INVALID: a relative home
 * would put the data directory under whichever directory the command runs in.
 */
export function homeDirectory(home: () => string = homedir, userHome: () => string = () => userInfo().homedir): string {
  const h = home();
  if (isAbsolute(h)) return h;
  let u = '';
  try {
    u = userHome();
  } catch {
    // no entry in the password database for this uid (a container run with an arbitrary --user)
  }
  if (isAbsolute(u)) return u;
  throw new C0Error(
    'DATA_DIR_INVALID',
    `no home directory for the default data directory: HOME is ${h === '' ? 'empty' : `"${h.slice(0, 80)}", not an absolute path,`} and the user has no home in the password database; set HOME, or give the data directory with C0MPUTE_HOME or --data-dir`,
    { field: 'HOME' },
  );
}

/**
 * A data directory as given, in C0MPUTE_HOME (`source` 'C0MPUTE_HOME') or with --data-dir ('--data-dir'), its leading
 * `~` expanded. A quoted `~` reaches here unexpanded (C0MPUTE_HOME='~/x', a systemd Environment= or ExecStart= line,
 * `--data-dir '~/x'`): taken as it reads, the home directory, not a directory named `~` under the current one.
 * `~name` (another user's home) is DATA_DIR_INVALID: the shell's expansion is not redone here, and taken literally it
 * made `./~name`. Any other path is returned as given.
 */
export function expandDataDir(dir: string, source: 'C0MPUTE_HOME' | '--data-dir', home: () => string = homeDirectory): string {
  if (dir === '~' || dir.startsWith('~/')) return join(home(), dir.slice(1));
  if (dir.startsWith('~')) {
    const given = source === 'C0MPUTE_HOME' ? `C0MPUTE_HOME=${dir.slice(0, 80)}` : `--data-dir ${dir.slice(0, 80)}`;
    throw new C0Error('DATA_DIR_INVALID', `${given}: another user's home (~name) is not expanded; give the full path`, { field: source === 'C0MPUTE_HOME' ? source : 'dataDir' });
  }
  return dir;
}

export function defaultDataDir(env: NodeJS.ProcessEnv = process.env, home: () => string = homeDirectory): string {
  const dir = env.C0MPUTE_HOME;
  if (!dir) return join(home(), '.c0mpute');
  return resolve(expandDataDir(dir, 'C0MPUTE_HOME', home));
}

export interface GlobalOpts {
  dataDir: string;
  json?: boolean;
}

/** Write a line to stdout. */
export function out(s: string): void {
  // what is printed often quotes other nodes' text: its control characters are escaped (printable.ts)
  const t = printable(s, true);
  process.stdout.write(t.endsWith('\n') ? t : t + '\n');
}

export function outJson(v: unknown): void {
  process.stdout.write(JSON.stringify(v, jsonReplacer, 2) + '\n');
}

/** JSON for records: bytes as hex, bigints as strings. */
export function jsonReplacer(_k: string, v: unknown): unknown {
  if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('hex');
  if (typeof v === 'bigint') return v.toString();
  if (v && typeof v === 'object' && (v as { type?: string }).type === 'Buffer' && Array.isArray((v as { data?: unknown }).data)) {
    return Buffer.from((v as { data: number[] }).data).toString('hex');
  }
  return v;
}

/** Read a file argument, `-` meaning stdin. Errors are operator errors with a code. */
export function readInput(path: string): Uint8Array {
  try {
    return new Uint8Array(path === '-' ? readFileSync(0) : readFileSync(path));
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new C0Error('INPUT_UNREADABLE', `cannot read ${path === '-' ? 'standard input' : path}: ${code === 'ENOENT' ? 'no such file' : (e as Error).message}`);
  }
}

function isDirectory(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

/** Why a file cannot be written, in words (for OUTPUT_UNWRITABLE). */
function writeProblem(e: NodeJS.ErrnoException): string {
  if (e.code === 'ENOENT' || e.code === 'ENOTDIR') return 'its directory does not exist';
  if (e.code === 'EISDIR') return 'it is a directory';
  if (e.code === 'EEXIST') return 'a file of that name is in the way (a directory is needed)';
  if (e.code === 'EPERM') return 'permission denied';
  const words = osWords(e.code);
  if (words) return words;
  if (e.code === 'EFBIG') return 'the file would pass the size limit';
  if (e.code === 'EBADF') return 'it names a descriptor that is not open for writing';
  if (e.code === 'ELOOP') return 'its path is a loop of symbolic links (or more than 40 in a row)';
  return e.message;
}

/** `its directory does not exist`, naming where `path` points when it is a symbolic link (a dangling one's target's directory). */
function missingDirectory(path: string): string {
  let link: string | undefined;
  try {
    if (lstatSync(path).isSymbolicLink()) link = readlinkSync(path);
  } catch {
    // not there, or not readable: said as a plain path
  }
  return link === undefined ? 'its directory does not exist' : `it is a symbolic link to ${link}, whose directory does not exist`;
}

/**
 * Why a write of `path` would fail before it is tried (atomic-file.ts writeTarget, through any symbolic links): a
 * directory on the way missing, a loop of links, no permission; undefined when it can be tried.
 */
function targetProblem(path: string): string | undefined {
  try {
    writeTarget(path);
    return undefined;
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    if (typeof err.syscall !== 'string' && typeof err.code !== 'string') throw e;
    return err.code === 'ENOENT' || err.code === 'ENOTDIR' ? missingDirectory(path) : writeProblem(err);
  }
}

/**
 * Run `write`, which writes the file argument `path` (an `--out FILE` and the
 * like): a file-system error is an operator error with a code,
 * OUTPUT_UNWRITABLE (exit 3), not a bug.
 */
export function writingTo<T>(path: string, write: () => T): T {
  try {
    return write();
  } catch (e) {
    if (typeof (e as NodeJS.ErrnoException).syscall !== 'string') throw e;
    const err = e as NodeJS.ErrnoException;
    if (err.code === 'ENOENT' || err.code === 'ENOTDIR') {
      // in a directory that is there (/proc, a file system that takes no new files): not a missing directory (QA
      // ffBuyerDay2); through symbolic links, the directory is the one they lead to
      throw new C0Error('OUTPUT_UNWRITABLE', `cannot write ${path}: ${targetProblem(path) ?? `the file system there takes no new file of that name (${err.code})`}`, { field: 'out' });
    }
    throw new C0Error('OUTPUT_UNWRITABLE', `cannot write ${path}: ${writeProblem(err)}`, { field: 'out' });
  }
}

/**
 * Write a file argument (`--out FILE`, `ledger fetch … FILE` and the like) whole or not at all: a new file beside it,
 * synced, then renamed over it (util/atomic-file.ts), so a write that fails midway (a full disk) leaves an existing
 * file as it was. Errors are OUTPUT_UNWRITABLE, saying the file was left unchanged.
 */
export function writeOutput(path: string, data: Uint8Array | string): void {
  try {
    writingTo(path, () => writeFileAtomic(path, data));
  } catch (e) {
    if (e instanceof C0Error && e.code === 'OUTPUT_UNWRITABLE') throw new C0Error(e.code, `${e.message} (nothing written: any file there is unchanged)`, { field: 'out' });
    throw e;
  }
}

/**
 * An output directory (`--out DIR`, `batch run --output-dir DIR`): made (with its parents) if missing, before the work
 * whose files go there; one that cannot be made or is not a directory is OUTPUT_UNWRITABLE (exit 3), like every other
 * `--out`. `field`: the flag that named it. Returns the directories made, parents first (makeDirs).
 *
 * Not `mkdirSync(dir, { recursive: true })`, which retries forever under /proc (`--out /proc/x` hung at a third of a
 * core): makeDirs (src/util/make-dirs.ts) makes the missing components one by one, each once.
 */
export function outputDir(dir: string, field = 'out'): string[] {
  return makeDirs(dir, { code: 'OUTPUT_UNWRITABLE', field, what: `cannot write ${dir}` });
}

/**
 * Before work whose result goes to `path`: refuse at once (OUTPUT_UNWRITABLE) a directory, or a path the write could
 * not reach (targetProblem: a directory on the way missing, through any symbolic links, a loop of links).
 */
export function checkWritable(path: string): void {
  if (isDirectory(path)) throw new C0Error('OUTPUT_UNWRITABLE', `cannot write ${path}: it is a directory`, { field: 'out' });
  // through any symbolic links, as the write goes: a dangling one's target's directory, a loop
  const problem = targetProblem(path);
  if (problem !== undefined) throw new C0Error('OUTPUT_UNWRITABLE', `cannot write ${path}: ${problem}`, { field: 'out' });
}

/** A negative answer that is not an error: print and exit 1 (e.g. `record verify` on an invalid record). */
export class NegativeAnswer extends Error {
  /** `stderr` for an answer that is an error message rather than the command's output (e.g. `run`'s final failure) */
  constructor(
    readonly lines: string[],
    readonly stream: 'stdout' | 'stderr' = 'stdout',
  ) {
    super(lines.join('\n'));
  }
}

/**
 * What an error thrown out of a command is to the CLI, the one classification src/cli/program.ts `report` prints by
 * and isBug asks: already reported, a negative answer, a C0Error (the operator's: a usage error, a refusal), a damaged
 * or unreadable store (the operator's to fix, with what was found), or else a bug (`internal error`, exit 70).
 * Commander's own parse errors are report's to tell first (no command's action throws one).
 */
export type ErrorKind =
  | { kind: 'reported'; e: Reported }
  | { kind: 'negative'; e: NegativeAnswer }
  | { kind: 'c0'; e: C0Error }
  | { kind: 'damaged'; damaged: string }
  | { kind: 'unreadable'; failed: ReadFailure }
  | { kind: 'bug' };

export function errorKind(e: unknown): ErrorKind {
  if (e instanceof Reported) return { kind: 'reported', e };
  if (e instanceof NegativeAnswer) return { kind: 'negative', e };
  if (e instanceof C0Error) return { kind: 'c0', e };
  const damaged = tableDamageIn(e);
  if (damaged !== undefined) return { kind: 'damaged', damaged };
  const failed = readFailureIn(e);
  if (failed !== undefined) return { kind: 'unreadable', failed };
  return { kind: 'bug' };
}

/** What the CLI calls a bug (`internal error`, exit 70): errorKind's `bug`. */
export function isBug(e: unknown): boolean {
  return errorKind(e).kind === 'bug';
}

/**
 * An error the command has already reported in its own words, for the CLI to exit `exit` and print nothing more: a
 * bug thrown out of `start`, which the daemon logs as its `fatal` line in the log's own format.
 */
export class Reported extends Error {
  constructor(
    readonly exit: number,
    cause: unknown,
  ) {
    super('already reported', { cause });
  }
}

/** An option or argument that must be a DID: a wrong one is a wrong command line (exit 2), with the code `code`. */
export async function requireDidArg(v: string, what: string, code: string): Promise<void> {
  const { parseDid } = await import('../records/did.js');
  try {
    parseDid(v);
  } catch (e) {
    // why, too: a did:key that does not decode (a character lost in a copy) is not "not a did:key"
    throw new UsageError(code, `${what} must be a did:key naming an Ed25519 key, got "${String(v).slice(0, 80)}": ${(e as Error).message}`, { field: what.replace(/^--/, '') });
  }
}
