/**
 * Reading files someone else may have put in a directory (a `market export` handed over for audit): a file is read
 * only if it is a regular file, and only up to a bound, whatever its size says; a directory is walked without
 * following links into other directories. Before (second-round review s39): a FIFO blocked the reader for ever, a
 * link to /proc/kallsyms (size 0) was read whole past a 64 KiB bound, and two links back to the directory made a
 * recursive listing run until the heap ran out.
 */
import { closeSync, constants, fstatSync, openSync, readdirSync, readSync } from 'node:fs';
import { join } from 'node:path';

export type BoundedRead = { bytes: Uint8Array } | { problem: 'not-regular' } | { problem: 'too-large'; size: number };

/**
 * `path`'s bytes when it is a regular file (a link to one counts) of at most `maxBytes`: opened without blocking (a
 * FIFO or a device answers at once, and is refused on the open file's own type, so it cannot be swapped in after a
 * check), and read to `maxBytes` + 1 at most (a file whose size says 0 but reads on, as /proc files do, is stopped
 * there). System errors (no such file, a link loop, EAGAIN on a file with nothing to read yet) are thrown as they are.
 */
export function readRegularFile(path: string, maxBytes: number): BoundedRead {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return { problem: 'not-regular' };
    if (st.size > maxBytes) return { problem: 'too-large', size: st.size };
    return readUpTo(fd, maxBytes);
  } finally {
    closeSync(fd);
  }
}

/**
 * What is left to read on `fd`, up to `maxBytes`: read in chunks and stopped at `maxBytes` + 1 (then 'too-large' with
 * the bytes read so far as `size`, a lower bound), so a device that never ends (/dev/zero) or a pipe fed more than
 * that is not read whole. A descriptor opened non-blocking (a terminal or pipe on stdin can be) that has nothing yet
 * is waited on, 10 ms at a time.
 */
export function readUpTo(fd: number, maxBytes: number): { bytes: Uint8Array } | { problem: 'too-large'; size: number } {
  const chunks: Buffer[] = [];
  let total = 0;
  for (;;) {
    const chunk = Buffer.allocUnsafe(Math.min(64 * 1024, maxBytes + 1 - total));
    let n: number;
    try {
      n = readSync(fd, chunk, 0, chunk.length, null);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EAGAIN') throw e;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
      continue;
    }
    if (n === 0) break;
    chunks.push(chunk.subarray(0, n));
    total += n;
    if (total > maxBytes) return { problem: 'too-large', size: total };
  }
  return { bytes: new Uint8Array(Buffer.concat(chunks, total)) };
}

/**
 * An input of at most `maxBytes` from `path`, or from standard input for '-': a regular file larger than that is
 * refused on its size before a byte is read; anything else (standard input, a FIFO, a device, /proc) is read with
 * readUpTo. 'too-large' carries the file's size (`exact`), or for a stream the bytes read before it stopped (more
 * than `maxBytes`, not its size). System errors (no such file, a directory) are thrown as they are.
 */
export function readInputUpTo(path: string, maxBytes: number): { bytes: Uint8Array } | { problem: 'too-large'; size: number; exact: boolean } {
  const stdin = path === '-';
  const fd = stdin ? 0 : openSync(path, 'r');
  try {
    const st = fstatSync(fd);
    if (st.isFile() && st.size > maxBytes) return { problem: 'too-large', size: st.size, exact: true };
    const r = readUpTo(fd, maxBytes);
    return 'bytes' in r ? r : { ...r, exact: false };
  } finally {
    if (!stdin) closeSync(fd);
  }
}

/** Past either bound a walk stops with WalkTooLarge. */
export interface WalkBounds {
  maxEntries: number;
  maxDepth: number;
}

export class WalkTooLarge extends Error {
  constructor(readonly what: 'entries' | 'depth', readonly bound: number) {
    super(what === 'entries' ? `more than ${bound} entries` : `directories nested deeper than ${bound}`);
  }
}

/**
 * Every name under `dir` that is not a directory, relative to it ('a/b' below a subdirectory), in listing order:
 * subdirectories are entered, links are listed as names and never followed into (a link to a directory is a name the
 * caller finds is not a regular file). Throws WalkTooLarge past `bounds`, and the listing's system errors.
 */
export function walkNames(dir: string, bounds: WalkBounds): string[] {
  const out: string[] = [];
  let seen = 0;
  const walk = (rel: string, depth: number) => {
    if (depth > bounds.maxDepth) throw new WalkTooLarge('depth', bounds.maxDepth);
    for (const d of readdirSync(rel ? join(dir, rel) : dir, { withFileTypes: true })) {
      if (++seen > bounds.maxEntries) throw new WalkTooLarge('entries', bounds.maxEntries);
      const name = rel ? `${rel}/${d.name}` : d.name;
      if (d.isDirectory()) walk(name, depth + 1);
      else out.push(name);
    }
  };
  walk('', 0);
  return out;
}
