/** Where a running daemon says it is (light: CLI commands read it without loading libp2p). */
import { readFileSync, realpathSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { C0Error } from '../errors.js';

export const DAEMON_FILE = 'daemon.json';

export interface DaemonInfo {
  pid: number;
  did: string;
  api: string;
  startedAt: number;
  /** When the process `pid` started, as the kernel counts it (Linux: /proc/<pid>/stat), to tell it from a later process given the same pid. */
  procStart?: string;
  /**
   * The data directory the daemon runs on, its real path (links resolved), to tell a copy of the directory (`cp -a` of
   * a running node's) from the directory itself. Absent in a file written before it was recorded: not checked.
   */
  dataDir?: string;
  /**
   * The data directory's inode number (decimal), so the same directory reached by another path (a bind mount, a
   * container's view of a volume) is still itself: a copy is another inode. Absent in older files.
   */
  dataDirIno?: string;
}

/** The real path of a data directory (what daemon.json records), or its path as given when it cannot be resolved. */
export function realDataDir(dataDir: string): string {
  try {
    return realpathSync(dataDir);
  } catch {
    return dataDir;
  }
}

/** The inode number of a data directory (DaemonInfo.dataDirIno), or undefined when it cannot be read. */
export function dataDirIno(dataDir: string): string | undefined {
  try {
    return statSync(dataDir, { bigint: true }).ino.toString();
  } catch {
    return undefined;
  }
}

/**
 * Whether a daemon.json's recorded directory is another directory than `dataDir`: another real path, and (when the
 * file records one) another inode, so a bind mount or a container's path to the same directory is not taken for a copy.
 */
function otherDirectory(info: DaemonInfo, dataDir: string): info is DaemonInfo & { dataDir: string } {
  if (typeof info.dataDir !== 'string' || info.dataDir === realDataDir(dataDir)) return false;
  return typeof info.dataDirIno !== 'string' || info.dataDirIno !== dataDirIno(dataDir);
}

/**
 * Why a daemon.json in `dataDir` that another directory's daemon wrote is not this directory's daemon (readDaemonInfo's
 * onForeign hears the file), for a message: the directory is a copy of that one, made while its daemon ran.
 */
export function foreignDaemonNote(dataDir: string, info: DaemonInfo & { dataDir: string }): string {
  return `${join(dataDir, DAEMON_FILE)} was written by the daemon (pid ${info.pid}) of ${info.dataDir}, not of this directory (a copy of that one, made while its daemon ran): it is not this directory's daemon`;
}

/**
 * The fields of a /proc/<pid>/stat line after the command name, from field 3 on: [state, ppid, pgrp, …]. The
 * command name (field 2) is in parentheses and may hold spaces and parentheses itself: the fields start after the
 * last `)`.
 */
export function statFields(stat: string): string[] {
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

function readProcFile(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/**
 * Whether the /proc mounted here numbers processes as this process's PID namespace does: the pid /proc/self/stat
 * gives (field 1) is `pid` (process.pid). Not so in a PID namespace without its own /proc (`unshare --pid --fork`
 * without `--mount-proc`, a sandbox that bind-mounts the host's /proc): /proc/self is still this process, by its pid
 * outside, but /proc/<pid> is whichever process of the outer namespace has that number, whose state and start time
 * say nothing of the process `pid` names here. False where there is no /proc.
 */
export function procIsOwn(readSelfStat: () => string | undefined = () => readProcFile('/proc/self/stat'), pid: number = process.pid): boolean {
  const stat = readSelfStat();
  if (stat === undefined) return false;
  const first = stat.slice(0, stat.indexOf(' '));
  return /^[0-9]+$/.test(first) && Number(first) === pid;
}

let ownProc: boolean | undefined;

/**
 * /proc/<pid>/stat as fields (statFields); undefined where there is no /proc, and for another process (a number)
 * where /proc is not this PID namespace's (procIsOwn): it would be another process's. /proc/self is always this one.
 */
function procStat(pid: number | 'self'): string[] | undefined {
  if (pid !== 'self' && !(ownProc ??= procIsOwn())) return undefined;
  const stat = readProcFile(`/proc/${pid}/stat`);
  return stat === undefined ? undefined : statFields(stat);
}

/**
 * The kernel's start time of process `pid` (clock ticks since boot, /proc/<pid>/stat field 22); undefined where there
 * is no /proc, and for another process where /proc is not this PID namespace's (procIsOwn): not known.
 */
export function processStart(pid: number | 'self'): string | undefined {
  return procStat(pid)?.[19];
}

/**
 * Whether process `pid` has ended but is not reaped yet: state `Z` (zombie) or `X` (dead) in /proc/<pid>/stat
 * (field 3). `process.kill(pid, 0)` still succeeds on it, until its parent waits for it (a daemon SIGKILLed under a
 * parent that never reaps: a shell wrapper as a container's PID 1). False where there is no /proc, or it is not this
 * PID namespace's (procIsOwn).
 */
export function processEnded(pid: number): boolean {
  const state = procStat(pid)?.[0];
  return state === 'Z' || state === 'X';
}

/**
 * Whether process `pid`, started at `start` ('0': not known), is gone (true), shown alive (false), or neither
 * (undefined). Its state and start time come from /proc only where /proc is this PID namespace's (procIsOwn): in one
 * without its own, /proc/<pid> is another process, and a live process is neither.
 */
export function processGone(pid: number, start: string): boolean | undefined {
  if (pid < 1) return undefined;
  try {
    process.kill(pid, 0);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ESRCH') return true;
    if (code !== 'EPERM') return undefined; // EPERM: alive, another user's
  }
  if (processEnded(pid)) return true; // killed, not yet reaped by its parent
  const now = processStart(pid);
  if (start === '0' || now === undefined) return undefined;
  return now !== start; // a later process given the same pid: the one that started at `start` is gone
}

/**
 * The daemon running on `dataDir`, from its daemon.json; undefined when there is none (no file, a file a crash left
 * half-written, or one whose process is gone). A file that is there but cannot be read (EIO from a failing disk,
 * EACCES) is DAEMON_INFO_UNREADABLE with the system's reason: whether a daemon runs is then unknown, and "none runs"
 * would send the operator to start a second one. A file whose `dataDir` is another directory than this one (resolved)
 * is none too, and `onForeign` hears it: a copy of a running node's directory (a live backup, a move to another disk)
 * took the original's daemon for its own, so `start` on the copy said DAEMON_RUNNING and `status`/`jobs` on it showed
 * the original's (QA qaOps F7).
 */
export function readDaemonInfo(dataDir: string, onForeign?: (info: DaemonInfo & { dataDir: string }) => void): DaemonInfo | undefined {
  const p = join(dataDir, DAEMON_FILE);
  let text: string;
  try {
    text = readFileSync(p, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new C0Error('DAEMON_INFO_UNREADABLE', `cannot read ${p}, so whether a daemon runs on ${dataDir} is unknown: ${(e as Error).message}`);
  }
  try {
    const info = JSON.parse(text) as DaemonInfo;
    if (otherDirectory(info, dataDir)) {
      onForeign?.(info);
      return undefined;
    }
    // left by a daemon that died: in a container the restarted one may be given the same pid (1), which is this process
    if (info.pid === process.pid) return undefined;
    process.kill(info.pid, 0); // throws when the process is gone
    // it ended (killed) and only waits for its parent to reap it: gone too
    if (processEnded(info.pid)) return undefined;
    // a live process under that pid, but started after the daemon that wrote this (the pid was given again)
    if (info.procStart !== undefined) {
      const now = processStart(info.pid);
      if (now !== undefined && now !== info.procStart) return undefined;
    }
    return info;
  } catch {
    return undefined;
  }
}
