/**
 * Whether a run's worker process is gone (docs/training.md "Status"; re-exported by status.ts, kept apart so the
 * worker's restart check reads it without the status schema).
 *
 * The process of a status that still says `joining` or `training` but is gone (a `train join` killed by SIGKILL, a
 * power cut): its pid, else undefined (the run ended, the process is alive, or a status of a build before `pid`).
 * `train status` and a refused restart (TRAIN_RUN_EXISTS) say the run was interrupted; the file is not changed (a
 * provider's member job is ended at its next start, run-dirs.ts). A pid reused by another process reads as alive.
 */
export function interruptedPid(s: { status?: unknown; pid?: unknown }): number | undefined {
  if ((s.status !== 'joining' && s.status !== 'training') || typeof s.pid !== 'number' || !Number.isSafeInteger(s.pid) || s.pid <= 0) return undefined;
  try {
    process.kill(s.pid, 0);
    return undefined;
  } catch (e) {
    // EPERM: it exists, as another user's
    return (e as NodeJS.ErrnoException).code === 'ESRCH' ? s.pid : undefined;
  }
}
