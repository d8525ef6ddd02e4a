/**
 * The daemon's own files in its data directory (daemon.json, api.token, the config copy `init` writes): a write the
 * file system refuses (a full disk, a read-only mount, a directory owned by another user) is the operator's to fix,
 * DATA_DIR_UNWRITABLE (exit 3) with the OS reason, not a bug (exit 70).
 */
import { closeSync, fsyncSync, openSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { C0Error } from '../errors.js';
import { osReason } from '../util/os-reason.js';

const isOsError = (e: unknown) => typeof (e as NodeJS.ErrnoException | undefined)?.syscall === 'string';

/** Run `write`, which writes `what` at `path` in the data directory: an OS refusal is DATA_DIR_UNWRITABLE. */
export function writingDataFile<T>(path: string, what: string, write: () => T): T {
  try {
    return write();
  } catch (e) {
    if (!isOsError(e)) throw e;
    throw new C0Error('DATA_DIR_UNWRITABLE', `cannot write ${what} ${path}: ${osReason(e)}`, { field: 'dataDir', cause: e });
  }
}

/**
 * Check, before the node starts its network, that the data directory takes a write: a small file written, synced and
 * removed. A full or read-only directory stops the start here, with the reason, rather than once the node is up.
 */
export function checkDataDirWritable(dataDir: string): void {
  const p = join(dataDir, `.c0-write-check-${process.pid}`);
  writingDataFile(dataDir, 'to the data directory', () => {
    try {
      const fd = openSync(p, 'w', 0o600);
      try {
        writeSync(fd, Buffer.alloc(4096));
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
    } finally {
      rmSync(p, { force: true });
    }
  });
}
