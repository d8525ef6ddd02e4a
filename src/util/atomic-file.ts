/**
 * Replace a file whole or not at all. A file written in place (`writeFileSync(path)`) is truncated first, so a write
 * that fails midway (a full disk, a file-size limit, the process killed) leaves the operator's previous file
 * destroyed and a partial one in its place. Here the bytes go to a new temporary file in the same directory (so the
 * rename is within one file system), are flushed to disk (fsync), and only then renamed over the target, which POSIX
 * makes atomic: a reader, or a crash, sees the old file or the new one, never a mixture. On failure the temporary
 * file is removed and the target is as it was.
 *
 * An existing target keeps its permission bits; a symbolic link is followed (the file it points to is replaced, the
 * link stays). A target that is not a regular file (a device such as /dev/stdout, a FIFO) has nothing to replace and is
 * written in place. So is an existing file the caller may write in a directory it may not (no temporary file can be
 * created beside it: EACCES, EPERM), or that a rename cannot replace (a single-file bind mount, EBUSY; another
 * user's file in a sticky directory, EPERM; another file system, EXDEV), as it was before: that case has no atomic replacement, and refusing it would
 * lose a `run --output` the job was already paid for. Errors are Node's file-system errors (with `syscall` and
 * `code`), for the caller to word.
 */
import { closeSync, fsyncSync, openSync, realpathSync, renameSync, rmSync, statSync, writeFileSync, fchmodSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { basename, dirname, join } from 'node:path';

export function writeFileAtomic(path: string, data: Uint8Array | string): void {
  let target = path;
  let mode: number | undefined;
  try {
    const st = statSync(path);
    if (!st.isFile()) {
      writeFileSync(path, data);
      return;
    }
    target = realpathSync(path);
    mode = st.mode & 0o7777;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  const dir = dirname(target);
  const tmp = join(dir, `.${basename(target)}.${process.pid}-${randomBytes(4).toString('hex')}.tmp`);
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
