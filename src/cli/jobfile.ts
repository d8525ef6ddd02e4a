/**
 * `c0mpute run job.yaml` and `market probe job.yaml` (docs/jobfile.md): read the
 * job file from disk; its schema and the spec it becomes are shared with the
 * daemon's console (src/node/jobfile.ts).
 */
import { readFileSync } from 'node:fs';
import { C0Error } from '../errors.js';
import { parseJobFileText, type JobFileOptions } from '../node/jobfile.js';

/** Returns the JSON job spec the daemon's /v1/run takes (input as base64). */
export function readJobFile(path: string, opts: JobFileOptions = {}): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new C0Error('JOB_FILE_UNREADABLE', `cannot read ${path}: ${code === 'ENOENT' ? 'no such file' : (e as Error).message}`);
  }
  return parseJobFileText(text, path, opts);
}
