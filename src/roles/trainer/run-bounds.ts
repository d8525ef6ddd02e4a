/**
 * The bounds of a training run (review s43 R4 F2), kept where both read them: a provider's member job
 * (builtin.train-member, member-job.ts) refuses a run past them EXEC_BAD_INPUT, and `train start` / a run bundle read
 * for `train join` or `train reference` refuses one as TRAIN_RUN_FILE (run-file.ts): before, `train start` signed a run
 * of 84 M weights and 10^8 steps, `train join` sat at 780 MB waiting for members and `train reference` would have run
 * for ever (QA pass on training, session 49).
 */
import { C0Error } from '../../errors.js';
import type { TrainRun } from '../../training/record-kinds.js';
import { checkJobModel, checkJobRows } from '../../training/model.js';

/** The most steps (epochs × stepsPerEpoch) a member job runs: a synced step commitment of about 4 KiB each, so at most about 400 MiB of them. */
export const MAX_MEMBER_STEPS = 100_000;

/**
 * A run a member job takes, checked before anything is allocated (review s43 R4 F2: a run of 33.6 M weights took a
 * provider to 2.2 GB and minutes of compute per step): the model within the jobs' bound (MAX_JOB_PARAMS weights, as
 * builtin.mlp-pipeline), the batch × its widest layer within MAX_JOB_ACTIVATIONS, at most MAX_MEMBER_STEPS steps;
 * EXEC_BAD_INPUT naming the run's field past them.
 */
export function checkMemberBounds(run: Pick<TrainRun, 'model' | 'batch' | 'epochs' | 'stepsPerEpoch'>): void {
  const shape = { layers: run.model.layers };
  checkJobModel(shape, 'model.layers');
  checkJobRows(shape, run.batch, 'batch');
  const steps = run.epochs * run.stepsPerEpoch;
  if (steps > MAX_MEMBER_STEPS) throw new C0Error('EXEC_BAD_INPUT', `epochs: ${run.epochs} epochs × ${run.stepsPerEpoch} steps is ${steps} steps; a member job runs at most ${MAX_MEMBER_STEPS}`, { field: 'epochs' });
}

