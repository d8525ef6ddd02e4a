/**
 * A job's input read from a file (`run --input`, a job file's `inputFile`, `market probe --input`, a batch line's
 * input): never more than a buyer sends. Before (review s43 R6 F3), `run --input` read any file whole, then
 * base64-encoded and posted it: 100 MB gave a false DAEMON_NOT_ANSWERING, 700 MB exit 70, /dev/zero never ended.
 */
import { C0Error } from '../errors.js';
import { EXEC_MAX_INPUT_BYTES } from '../roles/exec-protocol.js';
import { readInputUpTo } from '../util/bounded-read.js';

/** INPUT_TOO_LARGE for an input of `size` bytes (`exact`), or of more than the limit (a stream stopped there). */
export function inputTooLarge(what: string, size: number, exact: boolean, field?: string): C0Error {
  return new C0Error('INPUT_TOO_LARGE', `${what} is ${exact ? `${size} bytes` : `more than ${EXEC_MAX_INPUT_BYTES} bytes (read no further)`}; at most ${EXEC_MAX_INPUT_BYTES} (providers' provider.maxInputBytes, 16 MiB by default)`, {
    ...(field === undefined ? {} : { field }),
    detail: { ...(exact ? { size } : {}), maxBytes: EXEC_MAX_INPUT_BYTES },
  });
}

/**
 * The input at `path` ('-': standard input) of at most EXEC_MAX_INPUT_BYTES: a larger regular file is INPUT_TOO_LARGE
 * before anything is read, a stream (a pipe, a FIFO, a device) once more than that has come; one that cannot be read,
 * INPUT_UNREADABLE. `what` names it in errors (default "input PATH").
 */
export function readInputFile(path: string, what = `input ${path === '-' ? 'from standard input' : path}`, field?: string): Uint8Array {
  let r: ReturnType<typeof readInputUpTo>;
  try {
    r = readInputUpTo(path, EXEC_MAX_INPUT_BYTES);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new C0Error('INPUT_UNREADABLE', `cannot read ${what}: ${code === 'ENOENT' ? 'no such file' : (e as Error).message}`, field === undefined ? {} : { field });
  }
  if ('problem' in r) throw inputTooLarge(what, r.size, r.exact, field);
  return r.bytes;
}
