/**
 * The training worker's signed records on disk (docs/training.md "Starting a
 * run"): each is written once and synced (`writeRecord`; an existing file is
 * TRAIN_RUN_EXISTS, never overwritten), and a run directory already holding
 * step or epoch commitments or countersignatures is not trained in again
 * (`refuseEvidence`). Part of src/roles/trainer/worker.ts.
 */
import { closeSync, existsSync, fsyncSync, openSync, readdirSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { C0Error } from '../../errors.js';

/** Where a worker keeps the run's signed records: a run directory holding any is refused (TRAIN_RUN_EXISTS). */
const EVIDENCE = ['steps', 'epochs', 'witnessed'];

/**
 * A run is not restarted over its own evidence: a second `train join` on a
 * directory that holds step or epoch commitments or countersignatures would
 * redo the run from epoch 0 and sign other records for the same steps and
 * epochs. TRAIN_RUN_EXISTS names the directory; nothing in it is changed.
 */
export function refuseEvidence(dir: string): void {
  for (const sub of EVIDENCE) {
    const d = join(dir, sub);
    if (existsSync(d) && readdirSync(d).length > 0) {
      throw new C0Error('TRAIN_RUN_EXISTS', `${d} already holds this run’s signed records: a run is not restarted over them (sign a new run with train start, or move ${dir} away; nothing was changed)`, { detail: { path: d } });
    }
  }
}

/** Write a signed record once, synced: an existing file is never overwritten (TRAIN_RUN_EXISTS). */
export function writeRecord(path: string, bytes: Uint8Array): void {
  let fd: number;
  try {
    fd = openSync(path, 'wx');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') throw new C0Error('TRAIN_RUN_EXISTS', `${path} already exists; a signed record is never overwritten`, { detail: { path } });
    throw e;
  }
  try {
    writeSync(fd, bytes);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
