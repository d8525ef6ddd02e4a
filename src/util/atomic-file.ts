/**
 * Replace a file whole or not at all. A file written in place (`writeFileSync(path)`) is truncated first, so a write
 * that fails midway (a full disk, a file-size limit, the process killed) leaves the operator's previous file
 * destroyed and a partial one in its place. Here the bytes go to a new temporary file in the same directory (so the
 * rename is within one file system), are flushed to disk (fsync), and only then renamed over the target, which POSIX
 * makes atomic: a reader, or a crash, sees the old file or the new one, never a mixture. On failure the temporary
 * file is removed and the target is as it was.
 *
 * An existing target keeps its permission bits. A symbolic link is followed, as a plain write follows it: the file it
 * points to is replaced, or created when the link dangles (the temporary file goes in that file's directory), and the
 * link stays a link; a loop of links is ELOOP. A target in /dev or /proc as given (/dev/stdout, /dev/fd/N,
 * /proc/self/fd/N, /dev/null), or that is not a regular file (a FIFO), has nothing to replace and is written in place:
 * a descriptor of this process that is a regular file (stdout redirected to a file) through that descriptor, so a
 * redirect's earlier content (`>>`) and later output stay (writeSystemPath). So is an existing file the caller may write in a directory it may not (no temporary file can be
 * created beside it: EACCES, EPERM), or that a rename cannot replace (a single-file bind mount, EBUSY; another
 * user's file in a sticky directory, EPERM; another file system, EXDEV), as it was before: that case has no atomic replacement, and refusing it would
 * lose a `run --output` the job was already paid for. Errors are Node's file-system errors (with `syscall` and
 * `code`), for the caller to word.
 *
 * The temporary file is `.<target name>.c0mpute-<machine>-<pid>-<start>-<random>.tmp`: hidden, named after its target
 * (a long target name is cut, with a hash of the whole), and after its writer: a hash of the host name, PID namespace
 * and kernel boot (`machine`, see MachineFacts), the process id, and when that process started (Linux:
 * /proc/<pid>/stat; `0` elsewhere). A
 * writer killed (SIGKILL, a power cut) between creating it and the rename leaves it behind, and an output can be GiBs:
 * each write of a target first removes the temporary files of that target whose writer is gone (see staleTemp), before
 * it fills its own, so crashes do not pile up. Those of a live writer of the same target are never touched (the last
 * rename wins, as with any two writers of one file); nor is any other file.
 */
import { closeSync, fstatSync, fsyncSync, lstatSync, openSync, readFileSync, readdirSync, readlinkSync, realpathSync, renameSync, rmSync, statSync, writeFileSync, writeSync, fchmodSync, type Stats } from 'node:fs';
import { createHash, randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { processGone, processStart } from '../node/daemon-info.js';

/** A temporary file whose writer cannot be shown alive (another machine, an earlier release's name) is removed once untouched this long. */
export const STALE_TEMP_AGE_MS = 24 * 3600_000;

/** The longest target name (bytes) kept whole in its temporary file's name: with the suffix, within NAME_MAX (255). */
const NAME_KEPT_BYTES = 180;

const hex8 = (s: string) => createHash('sha256').update(s).digest('hex').slice(0, 8);

/** The target's name as its temporary files carry it: whole, or a long one cut (at a character) with a hash of the whole. */
function tempStem(name: string): string {
  if (Buffer.byteLength(name) <= NAME_KEPT_BYTES) return name;
  let cut = '';
  for (const ch of name) {
    if (Buffer.byteLength(cut + ch) > NAME_KEPT_BYTES - 9) break;
    cut += ch;
  }
  return `${cut}~${hex8(name)}`;
}

/**
 * What tells this machine from another writing the same directory (a shared file system): the host name, the PID
 * namespace (/proc/self/ns/pid: containers on one host), and the kernel's boot (/proc/sys/kernel/random/boot_id). The
 * host name and namespace alone are not enough: cloned hosts and default host names are common, and every Linux
 * kernel gives its initial PID namespace the same id, so two such hosts would each judge the other's writer by a pid
 * in their own process table. Empty where not known (no /proc: not Linux).
 */
export interface MachineFacts {
  hostname: string;
  pidNamespace: string;
  bootId: string;
}

export function readMachineFacts(): MachineFacts {
  let pidNamespace = '';
  let bootId = '';
  try {
    pidNamespace = readlinkSync('/proc/self/ns/pid');
  } catch {
    // no /proc (not Linux): the host name alone
  }
  try {
    bootId = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  } catch {
    // as above
  }
  return { hostname: hostname(), pidNamespace, bootId };
}

/** The `machine` of a temporary file's name: MachineFacts, hashed. */
export function machineOf(facts: MachineFacts): string {
  return hex8(`${facts.hostname}\0${facts.pidNamespace}\0${facts.bootId}`);
}

let me: { machine: string; start: string } | undefined;
/**
 * This process as its temporary files (and a batch run's lock) name it: its machine (machineOf) and its start time
 * ('0': not known). Read once.
 */
export function writer(): { machine: string; start: string } {
  me ??= { machine: machineOf(readMachineFacts()), start: processStart('self') ?? '0' };
  return me;
}

/** `.<name>.c0mpute-<machine>-<pid>-<start>-<random>.tmp` */
const TEMP = /^c0mpute-([0-9a-f]{8})-([0-9]{1,10})-([0-9]{1,20})-[0-9a-f]{8}\.tmp$/;
/** How earlier releases named it: `.<name>.<pid>-<random>.tmp` (its writer's machine not known) */
const LEGACY_TEMP = /^[0-9]{1,10}-[0-9a-f]{8}\.tmp$/;

/**
 * Whether `entry` of the target's directory is a temporary file of that target (`stem`: tempStem of its name) left by a
 * writer that is gone. Ours, from this machine: when its process has exited (ESRCH, or a zombie), or when a later
 * process holds its pid (another start time; a container's pid 1 after a restart); one whose process is alive but
 * cannot be told from a later one (no start time, or a /proc that is not this PID namespace's) once untouched for
 * STALE_TEMP_AGE_MS. From another machine (a shared file system; this one before a reboot), or named as releases before this one named it: once untouched for STALE_TEMP_AGE_MS, a writer's pid
 * meaning nothing here. A temporary file being written is touched by every write; one whose writer is shown alive is
 * never stale.
 */
function staleTemp(entry: string, stem: string, name: string, path: string, nowMs: number): boolean {
  let gone: boolean | undefined;
  let rest: string;
  if (entry.startsWith(`.${stem}.c0mpute-`)) {
    rest = entry.slice(stem.length + 2);
    const m = TEMP.exec(rest);
    if (!m) return false;
    gone = m[1] === writer().machine ? processGone(Number(m[2]), m[3]!) : undefined;
  } else if (entry.startsWith(`.${name}.`)) {
    rest = entry.slice(name.length + 2);
    if (!LEGACY_TEMP.test(rest)) return false;
  } else return false;
  if (gone === false) return false;
  let st;
  try {
    st = lstatSync(path);
  } catch {
    return false; // already removed (another writer of the target cleaning too)
  }
  if (!st.isFile()) return false;
  return gone === true || nowMs - st.mtimeMs > STALE_TEMP_AGE_MS;
}

/** Remove the stale temporary files of target `name` in `dir` (staleTemp). Best effort: a file that cannot be removed stays, and the write goes on. */
function removeStaleTemps(dir: string, name: string): void {
  const stem = tempStem(name);
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch {
    return;
  }
  const now = Date.now();
  for (const entry of entries) {
    const p = join(dir, entry);
    if (!staleTemp(entry, stem, name, p, now)) continue;
    try {
      rmSync(p, { force: true });
    } catch {
      // not ours to remove (another user's, in a sticky directory) or a directory not writable: left as it is
    }
  }
}

/**
 * The descriptor of this process that `abs` (an absolute path, links not resolved) names: /dev/stdin, /dev/stdout,
 * /dev/stderr, /dev/fd/N, and /proc/self/fd/N, /proc/thread-self/fd/N or /proc/<this pid>/fd/N.
 */
export function ownDescriptor(abs: string): number | undefined {
  const std = ['/dev/stdin', '/dev/stdout', '/dev/stderr'].indexOf(abs);
  if (std >= 0) return std;
  const m = /^(?:\/dev\/fd|\/proc\/(?:self|thread-self|([0-9]+))\/fd)\/([0-9]{1,9})$/.exec(abs);
  if (!m || (m[1] !== undefined && Number(m[1]) !== process.pid)) return undefined;
  return Number(m[2]);
}

/**
 * Whether `path`, as given (before links are resolved), is in /dev or /proc: a device, a descriptor (/dev/stdout), a
 * kernel file, not a file the operator named to be replaced. /dev/stdout with stdout redirected to a file resolves
 * to that file, and replacing it would unlink the file the shell opened: what was there before an append (`>>`)
 * would be lost, and so would whatever the process prints after. /dev/shm is a directory of ordinary files.
 */
function systemPath(path: string): string | undefined {
  if (process.platform === 'win32') return undefined;
  const abs = resolve(path);
  if (abs.startsWith('/dev/shm/')) return undefined;
  return abs.startsWith('/dev/') || abs.startsWith('/proc/') ? abs : undefined;
}

/** All of `data` to the open descriptor `fd`, which stays open; one set non-blocking is waited on when full (EAGAIN). */
function writeAllTo(fd: number, data: Uint8Array | string): void {
  const buf = typeof data === 'string' ? Buffer.from(data) : data;
  let off = 0;
  while (off < buf.length) {
    try {
      off += writeSync(fd, buf, off, buf.length - off);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EAGAIN') throw e;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
    }
  }
}

/**
 * Write a path in /dev or /proc (systemPath) in place. One naming an open descriptor of this process that is a regular
 * file (stdout redirected to a file) is written through that descriptor, as the process's own prints are: at its
 * offset, honouring its O_APPEND (`>>`), so nothing there before is lost and the output sits between what was printed
 * before and after it. So is a socket, which Linux does not open through /proc/self/fd (ENXIO: stdout under systemd,
 * or a Node parent's pipe). Any other (a terminal, a pipe, a device) is opened and written, as a plain write does.
 */
function writeSystemPath(abs: string, path: string, data: Uint8Array | string): void {
  const fd = ownDescriptor(abs);
  if (fd !== undefined) {
    let st: Stats;
    try {
      st = fstatSync(fd);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EBADF') throw e;
      throw Object.assign(new Error(`EBADF: bad file descriptor, write '${path}'`), { code: 'EBADF', errno: -9, syscall: 'write', path });
    }
    if (st.isFile() || st.isSocket()) {
      writeAllTo(fd, data);
      return;
    }
  }
  writeFileSync(path, data);
}

/**
 * Where writeFileAtomic(`path`) would write, found without writing: a path in /dev or /proc as given; one that is there
 * and not a regular file as given (written in place); an existing file's real path; else where its links lead
 * (linkTarget). Throws what the write would meet first: ENOENT or ENOTDIR (a directory on the way missing, through
 * any links), ELOOP (a loop of links), EACCES; so a caller can refuse a path before the work whose result goes there.
 */
export function writeTarget(path: string): string {
  const w = whereWritten(path);
  if ('system' in w) statSync(dirname(w.system)); // /dev/missing/x: its directory is not there (ENOENT)
  return 'system' in w ? w.system : 'inPlace' in w ? w.inPlace : w.target;
}

/**
 * Where a write of `path` goes: a path in /dev or /proc as given (`system`: systemPath); one that is there and not a
 * regular file, as given (`inPlace`: a FIFO, a device); else the file to replace, through any links (/proc/self/fd/N
 * included), with its stat, or, none there yet, where a link there points (`target`: linkTarget). Throws what the
 * write would meet first (ELOOP for a loop of links, the kernel's own bound; ENOENT, ENOTDIR, EACCES).
 */
function whereWritten(path: string): { system: string } | { inPlace: string } | { target: string; st?: Stats } {
  const system = systemPath(path);
  if (system !== undefined) return { system };
  let st: Stats | undefined;
  try {
    st = statSync(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  if (st && !st.isFile()) return { inPlace: path };
  return st ? { target: realpathSync(path), st } : { target: linkTarget(path) };
}

export function writeFileAtomic(path: string, data: Uint8Array | string): void {
  const where = whereWritten(path);
  if ('system' in where) return writeSystemPath(where.system, path, data);
  if ('inPlace' in where) return writeFileSync(path, data);
  const { target, st } = where;
  const mode = st ? st.mode & 0o7777 : undefined;
  const dir = dirname(target);
  const name = basename(target);
  removeStaleTemps(dir, name); // before this write fills the disk further
  const w = writer();
  const tmp = join(dir, `.${tempStem(name)}.c0mpute-${w.machine}-${process.pid}-${w.start}-${randomBytes(4).toString('hex')}.tmp`);
  let fd: number | undefined;
  try {
    fd = openSync(tmp, 'wx', mode ?? 0o666);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (mode === undefined || (code !== 'EACCES' && code !== 'EPERM')) throw e;
    writeFileSync(target, data); // the directory is not ours to write: the file is replaced in place, as before
    return;
  }
  try {
    // the mode given to open is narrowed by the umask: the replaced file's own bits are set exactly
    if (mode !== undefined) fchmodSync(fd, mode);
    writeFileSync(fd, data);
    fsyncSync(fd);
    closeSync(fd);
    fd = undefined;
    try {
      renameSync(tmp, target);
    } catch (e) {
      // An existing file that cannot be replaced by a rename but can be written: a single-file bind mount (EBUSY),
      // another user's file in a sticky directory such as /tmp (EPERM), another file system (EXDEV). Written in
      // place, as before atomic replacement: losing a paid job's output would be worse than a non-atomic write.
      const code = (e as NodeJS.ErrnoException).code;
      if (mode === undefined || !['EBUSY', 'EPERM', 'EACCES', 'EXDEV'].includes(code ?? '')) throw e;
      rmSync(tmp, { force: true });
      writeFileSync(target, data);
      return;
    }
  } catch (e) {
    if (fd !== undefined) {
      try {
        closeSync(fd);
      } catch {
        // already failing: the write's error is the one reported
      }
    }
    rmSync(tmp, { force: true });
    throw e;
  }
  syncDir(dir);
}

/** Symbolic links followed in a row at most, as Linux's open follows (MAXSYMLINKS). */
const MAX_LINKS = 40;

/**
 * Where a write of `path`, which does not exist, creates its file, as open(2) would find it: through a dangling
 * symbolic link (or a chain of them), to the path it names, read relative to the link's own directory. The result's
 * directory is real (links resolved), so the temporary file goes beside the file written and the rename puts that file
 * in place, leaving the link a link; a plain write (and the in-place path) writes through the link in the same way.
 * Past MAX_LINKS links, ELOOP (a loop the kernel's stat has not already refused: one closed between the two).
 */
function linkTarget(path: string): string {
  let p = path;
  for (let links = 0; ; links++) {
    p = join(realpathSync(dirname(p)), basename(p));
    let st: Stats;
    try {
      st = lstatSync(p);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return p;
      throw e;
    }
    if (!st.isSymbolicLink()) return p; // made there since the stat: the rename replaces it, as it would have
    if (links === MAX_LINKS) {
      throw Object.assign(new Error(`ELOOP: too many symbolic links encountered, open '${path}'`), { code: 'ELOOP', syscall: 'open', path });
    }
    p = resolve(dirname(p), readlinkSync(p));
  }
}

/**
 * Make a rename (or a file created) in `dir` durable: best effort, since not every platform or file system opens or
 * syncs a directory (EISDIR, EINVAL); the file itself is synced by its writer.
 */
export function syncDir(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, 'r');
    fsyncSync(fd);
  } catch {
    // the file is complete and in place; only its survival of a power cut right now is less certain
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
