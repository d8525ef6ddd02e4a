/**
 * Make a directory and its missing parents: what `mkdirSync(dir, { recursive: true })` is for, without its endless
 * loop. Where mkdir answers ENOENT under a parent that exists (/proc, /sys: file systems that take no new
 * directories) Node's recursive mkdir retries forever at most of a core, so `--data-dir /proc/1/x init` or
 * `--out /proc/1/x/k` never returned. Here the missing components are made one by one, each once, and every failure
 * is a C0Error with the code and field of the caller (OUTPUT_UNWRITABLE for an `--out`, DATA_DIR_INVALID for a data
 * directory, …), saying which component could not be made and why, not a bare EEXIST or ENOTDIR (a bug's exit 70).
 */
import { mkdirSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { C0Error } from '../errors.js';
import { osWords } from './os-reason.js';

export interface MakeDirsOptions {
  /** the error's code: the caller's own for this directory (OUTPUT_UNWRITABLE, DATA_DIR_INVALID, STORE_OPEN_FAILED, …) */
  code: string;
  /** the error's field (the flag or setting that named the directory), if any */
  field?: string;
  /** how the message begins, the reason following a colon (default `cannot make <dir>`) */
  what?: string;
  /** mode of each directory made (default: mkdir's, 0777 less the umask) */
  mode?: number;
}

/** 'dir', 'file' or 'other' for what is at `p` (links followed); undefined when nothing is, or it cannot be seen. */
function kind(p: string): 'dir' | 'file' | 'other' | undefined {
  try {
    const st = statSync(p);
    return st.isDirectory() ? 'dir' : st.isFile() ? 'file' : 'other';
  } catch {
    return undefined;
  }
}

const notDir = (p: string, k: ReturnType<typeof kind>): string => `${p} is ${k === 'file' ? 'a file' : 'in the way'}, not a directory`;

/**
 * Make `dir` and each missing parent. A directory already there (or made meanwhile by another process) is fine; a
 * component that is a file, or a file system that takes no new directories, or any other refusal (permission, a
 * read-only or full file system) throws a C0Error with `o.code` and nothing more is made. Returns the directories it
 * made, parents first (none when `dir` was there), for a caller that takes them away again when its work never began.
 */
export function makeDirs(dir: string, o: MakeDirsOptions): string[] {
  const target = resolve(dir);
  const fail = (reason: string, cause?: unknown): never => {
    throw new C0Error(o.code, `${o.what ?? `cannot make ${dir}`}: ${reason}`, { ...(o.field === undefined ? {} : { field: o.field }), detail: { path: target }, ...(cause === undefined ? {} : { cause }) });
  };
  // the missing components, deepest first, up to the first that exists (one step per component)
  const missing: string[] = [];
  for (let p = target; ; p = dirname(p)) {
    const k = kind(p);
    if (k === 'dir') break;
    if (k !== undefined) fail(notDir(p, k));
    missing.push(p);
    if (dirname(p) === p) break;
  }
  const made: string[] = [];
  for (const p of missing.reverse()) {
    try {
      mkdirSync(p, o.mode === undefined ? undefined : { mode: o.mode });
      made.push(p);
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      const k = kind(p);
      if (err.code === 'EEXIST' && k === 'dir') continue; // made meanwhile by someone else
      if (err.code === 'EEXIST') fail(notDir(p, k), e);
      if (err.code === 'ENOENT' && kind(dirname(p)) === 'dir') fail(`cannot make ${p} (its file system takes no new directories)`, e);
      if (err.code === 'ENOTDIR') fail(notDir(dirname(p), kind(dirname(p))), e);
      fail(`cannot make ${p}: ${osWords(err.code) ?? err.message}`, e);
    }
  }
  return made;
}
