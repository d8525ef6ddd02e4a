/**
 * `c0mpute run --output FILE` when FILE cannot be written once the job is done (docs/node.md "Files the CLI writes"):
 * the job was bought (its receipt accepted) and the daemon keeps no outputs, so the bytes are kept elsewhere before
 * the error is said: `<data dir>/outputs/<job>.out`, else a fresh directory under the system's temporary directory.
 * Before (QA ffBuyerDay2 F1) they were dropped: a directory removed while the job ran, a full disk or a path under
 * /proc lost an output that was paid for, and running the job again pays again.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { C0Error } from '../errors.js';
import { writeFileAtomic } from '../util/atomic-file.js';
import { makeDirs } from '../util/make-dirs.js';

/** The file name an output is kept under: the job's address without its `sha256:`. */
function keptName(job: string): string {
  return `${job.replace(/^sha256:/, '').replace(/[^0-9a-zA-Z]/g, '') || 'job'}.out`;
}

/** Where the output went: the first of the data directory's `outputs/` and a temporary directory that takes it. */
function keepOutput(output: Uint8Array, job: string, dataDir: string): { path?: string; problems: string[] } {
  const problems: string[] = [];
  const name = keptName(job);
  try {
    const dir = join(dataDir, 'outputs');
    makeDirs(dir, { code: 'OUTPUT_UNWRITABLE', field: 'output', what: `cannot write ${dir}`, mode: 0o700 });
    const path = join(dir, name);
    writeFileAtomic(path, output);
    // only the operator reads it, whatever mode an `outputs/` made earlier has (a sealed input's output too)
    chmodSync(path, 0o600);
    return { path, problems };
  } catch (e) {
    problems.push((e as Error).message);
  }
  let tmp: string | undefined;
  try {
    // a directory of its own (0700), so nobody else on the machine reads or replaces it
    tmp = mkdtempSync(join(tmpdir(), 'c0mpute-output-'));
    const path = join(tmp, name);
    writeFileSync(path, output, { mode: 0o600 });
    return { path, problems };
  } catch (e) {
    problems.push((e as Error).message);
    // a part written (a full disk) is no output: not left behind while the message says it is lost
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  }
  return { problems };
}

/**
 * The error of an `--output` write that failed after the job was bought (`err`, OUTPUT_UNWRITABLE), with the output
 * kept elsewhere when it could be (keepOutput), and said where; still OUTPUT_UNWRITABLE (exit 3): the file asked for
 * was not written.
 */
export function outputNotWritten(err: C0Error, output: Uint8Array, job: string, outputHash: string | undefined, dataDir: string): C0Error {
  const kept = keepOutput(output, job, dataDir);
  const what = `the job's output (${output.length} bytes) was bought: its receipt is accepted, and running the job again pays again`;
  const message = kept.path
    ? `${err.message}; ${what}, so it is kept in ${kept.path} instead: move it where you want it`
    : `${err.message}; ${what}, and it could not be kept anywhere else either (${kept.problems.join('; ')}): it is lost${outputHash ? ` (its hash ${outputHash})` : ''}`;
  return new C0Error('OUTPUT_UNWRITABLE', message, { field: 'output', ...(kept.path ? { detail: { kept: kept.path } } : {}) });
}
