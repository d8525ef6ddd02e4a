import { processEnded, processStart } from '../../node/daemon-info.js';

/**
 * Whether a run's worker process is gone (docs/training.md "Status"; re-exported by status.ts, kept apart so the
 * worker's restart check reads it without the status schema).
 *
 * The process of a status that still says `joining` or `training` but is gone (a `train join` killed by SIGKILL, a
 * power cut): its pid, else undefined (the run ended, the process is alive, or a status of a build before `pid`).
 * `train status` and a refused restart (TRAIN_RUN_EXISTS) say the run was interrupted; the file is not changed (a
 * provider's member job is ended at its next start, run-dirs.ts). A process that ended but is not reaped yet (a
 * zombie) is gone; so is one whose pid was given to a later process, told by the kernel's start time (`procStart`,
 * Linux /proc) where the status has it: a status of an older build, or a machine without /proc, reads a reused pid
 * as alive.
 */
export function interruptedPid(s: { status?: unknown; pid?: unknown; procStart?: unknown }): number | undefined {
  if ((s.status !== 'joining' && s.status !== 'training') || typeof s.pid !== 'number' || !Number.isSafeInteger(s.pid) || s.pid <= 0) return undefined;
  try {
    process.kill(s.pid, 0);
  } catch (e) {
    // EPERM: it exists, as another user's
    return (e as NodeJS.ErrnoException).code === 'ESRCH' ? s.pid : undefined;
  }
  if (processEnded(s.pid)) return s.pid;
  if (typeof s.procStart === 'string') {
    const now = processStart(s.pid);
    if (now !== undefined && now !== s.procStart) return s.pid;
  }
  return undefined;
}
