/**
 * The training worker's signed records on disk (docs/training.md "Starting a
 * run"): each is written once and synced, whole or not at all (`writeRecord`;
 * an existing file is TRAIN_RUN_EXISTS, never overwritten; a refused write
 * DATA_DIR_UNWRITABLE), status.json is replaced whole (`replaceFile`), and a run directory already holding
 * step or epoch commitments or countersignatures is not trained in again
 * (`refuseEvidence`). Part of src/roles/trainer/worker.ts.
 */
import { closeSync, existsSync, fsyncSync, linkSync, openSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { C0Error } from '../../errors.js';
import { osReason } from '../../util/os-reason.js';
import { interruptedPid } from './worker-gone.js';

/** Where a worker keeps the run's signed records: a run directory holding any is refused (TRAIN_RUN_EXISTS). */
const EVIDENCE = ['steps', 'epochs', 'witnessed'];

/** A provider's member job's mark in its run directory (run-dirs.ts); once `prunedAt`, a tombstone of the run's records. */
export const MEMBER_JOB_FILE = 'member-job.json';

/**
 * A run is not restarted over its own evidence: a second `train join` on a
 * directory that holds step or epoch commitments or countersignatures would
 * redo the run from epoch 0 and sign other records for the same steps and
 * epochs. TRAIN_RUN_EXISTS names the directory; nothing in it is changed.
 */
export function refuseEvidence(dir: string): void {
  // the records were signed here and dropped with the job history (run-dirs.ts): the same holds for them
  const mark = join(dir, MEMBER_JOB_FILE);
  if (existsSync(mark)) {
    let prunedAt: unknown;
    try {
      prunedAt = (JSON.parse(readFileSync(mark, 'utf8')) as { prunedAt?: unknown }).prunedAt;
    } catch {
      prunedAt = undefined;
    }
    if (prunedAt !== undefined) {
      throw new C0Error('TRAIN_RUN_EXISTS', `${dir} held this run’s signed records, dropped with the job history (history.keepDays): a run is not restarted over them (sign a new run with train start; nothing was changed)`, { detail: { path: mark } });
    }
  }
  for (const sub of EVIDENCE) {
    const d = join(dir, sub);
    if (existsSync(d) && readdirSync(d).length > 0) {
      const gone = lastWorkerGone(dir);
      const was = gone === undefined ? '' : ` The run was interrupted: its worker process ${gone} is gone, though status.json says training.`;
      throw new C0Error('TRAIN_RUN_EXISTS', `${d} already holds this run’s signed records: a run is not restarted over them (sign a new run with train start, or move ${dir} away; nothing was changed).${was}`, { detail: { path: d, ...(gone === undefined ? {} : { interrupted: true }) } });
    }
  }
}

/** The pid of the run's last worker when its status still says joining/training and that process is gone (status.ts interruptedPid). */
function lastWorkerGone(dir: string): number | undefined {
  try {
    return interruptedPid(JSON.parse(readFileSync(join(dir, 'status.json'), 'utf8')) as { status?: unknown; pid?: unknown });
  } catch {
    return undefined;
  }
}

const isOsError = (e: unknown) => typeof (e as NodeJS.ErrnoException | undefined)?.syscall === 'string';

/** A write the file system refused (a full disk, a read-only mount, a quota) is the operator's to fix: DATA_DIR_UNWRITABLE with the OS reason, as for the node's own files (src/node/data-files.ts). */
function unwritable(path: string, e: unknown): unknown {
  return isOsError(e) ? new C0Error('DATA_DIR_UNWRITABLE', `cannot write ${path}: ${osReason(e)}`, { field: 'dataDir', detail: { path }, cause: e }) : e;
}

/** The temporary file beside `path` that a write goes through (its name keeps the file's own at its end). */
const tmpFor = (path: string) => join(dirname(path), `.tmp.${process.pid}.${basename(path)}`);

/** Write all of `bytes` to `path` through a temporary file beside it, synced, linked into place (never over an existing file), the directory synced; the temporary file is removed whatever happens (one a killed process left is truncated). */
function writeThrough(path: string, bytes: Uint8Array): void {
  const tmp = tmpFor(path);
  try {
    const fd = openSync(tmp, 'w', 0o600);
    try {
      for (let off = 0; off < bytes.length; ) off += writeSync(fd, bytes, off, bytes.length - off);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    linkSync(tmp, path);
  } finally {
    rmSync(tmp, { force: true });
  }
  syncDir(dirname(path));
}

function syncDir(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, 'r');
    fsyncSync(fd);
  } catch {
    /* a directory that cannot be synced (some file systems) is left to the OS */
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * Write a signed record once, synced: written whole to a temporary file and
 * linked into place, so `path` either holds the whole record or does not
 * exist (a full disk or a kill mid-write leaves nothing). An existing file is
 * never overwritten (TRAIN_RUN_EXISTS); a write the file system refuses is
 * DATA_DIR_UNWRITABLE with the OS reason.
 */
export function writeRecord(path: string, bytes: Uint8Array): void {
  if (existsSync(path)) throw exists(path);
  try {
    writeThrough(path, bytes);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') throw exists(path);
    throw unwritable(path, e);
  }
}

const exists = (path: string) => new C0Error('TRAIN_RUN_EXISTS', `${path} already exists; a signed record is never overwritten`, { detail: { path } });

/** Replace `path` (a status file, written often) whole by a rename, not synced: a reader sees the last complete one, never a torn one. A refused write is DATA_DIR_UNWRITABLE. */
export function replaceFile(path: string, text: string): void {
  const tmp = tmpFor(path);
  try {
    writeFileSync(tmp, text);
    renameSync(tmp, path);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw unwritable(path, e);
  }
}
