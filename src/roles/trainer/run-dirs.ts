/**
 * The run directories a provider's training member jobs leave (builtin `builtin.train-member`, member-job.ts;
 * docs/training.md "A training run bought as a gang"): `<data dir>/train/<run>/`, each with its signed records,
 * status.json and weights. A member job marks its directory as its own (`member-job.json`: the job's input hash, when
 * it started and ended), so that, on the provider's node:
 *
 * - **at start** (`reconcileRunDirs`), a run a crash or kill left (marked, never ended, not running in this process)
 *   is ended: its status.json, which still says `training` at the last step written, says `stopped` with what its
 *   job's receipt says (`EXEC_PROVIDER_CRASHED`, signed by the crash recovery for the job's run note), or
 *   TRAIN_INTERRUPTED when no receipt of its job is known here;
 * - **with the job history** (`TrainRunDirs.pruneHistory`, history.keepDays past the run's end), a finished run's
 *   directory is emptied. Never a run in progress (running in this process, or not ended). What stays is its
 *   `member-job.json`, marked `prunedAt`: a tombstone, so the run is still not restarted over records it signed and
 *   dropped (record-file.ts refuseEvidence, TRAIN_RUN_EXISTS): a second run would sign other step commitments for the
 *   same steps, and a witness could countersign a second root for one (view, epoch).
 *
 * A directory without the marker (a `c0mpute train join` run in the same data directory, or a member job of a build
 * before the marker) is never touched.
 */
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../../util/log.js';
import { MEMBER_JOB_FILE, replaceFile } from './record-file.js';

/** What a member job keeps in its run directory (`member-job.json`). */
export interface MemberJobMark {
  /** The job's input hash (`sha256:…`: the run bundle as the job carried it): links the directory to the job's receipt. */
  inputHash: string;
  startedAt: number;
  /** When the job's run ended (the job's end, or the start that found it interrupted). */
  endedAt?: number;
  /** How it ended, when the start that found it interrupted set it. */
  ended?: { code: string; message: string };
  /** When its records were dropped with the job history (a tombstone: the run is not restarted here). */
  prunedAt?: number;
}

/** Run directories of member jobs running in this process (never reconciled nor pruned). */
const running = new Set<string>();

/** A member job runs in `dir` from now until `release` (member-job.ts). */
export function markRunning(dir: string): () => void {
  running.add(dir);
  return () => running.delete(dir);
}

export function isRunning(dir: string): boolean {
  return running.has(dir);
}

/** The mark in `dir`, or undefined (none, or unreadable: not treated as a member job's). */
export function readMark(dir: string): MemberJobMark | undefined {
  const p = join(dir, MEMBER_JOB_FILE);
  if (!existsSync(p)) return undefined;
  try {
    const m = JSON.parse(readFileSync(p, 'utf8')) as MemberJobMark;
    return typeof m?.inputHash === 'string' && Number.isSafeInteger(m.startedAt) ? m : undefined;
  } catch {
    return undefined;
  }
}

/** Write the mark in `dir` whole (replaced by a rename: a reader sees the last complete one). */
export function writeMark(dir: string, m: MemberJobMark): void {
  replaceFile(join(dir, MEMBER_JOB_FILE), JSON.stringify(m));
}

/** The run directories under `root` (the provider's `<data dir>/train`), by name. */
function runDirs(root: string): string[] {
  if (!existsSync(root)) return [];
  return readdirSync(root, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
}

/** How the job of an interrupted run ended, as its receipt (or the receipt about to be signed for it) says. */
export type EndedLookup = (inputHash: string) => { code: string; message: string; job?: string } | undefined;

/** The code a run gets when no receipt of its job is known here. */
export const TRAIN_INTERRUPTED = 'TRAIN_INTERRUPTED';

/**
 * At the provider's start: end each member job's run a crash or kill left (marked, not ended, not running here). A
 * status.json that says `joining` or `training` says `stopped` with `stopReason` as `ended` tells (else
 * TRAIN_INTERRUPTED), the step it stopped at kept; the mark gets `endedAt` (now) and `ended`. Returns the runs ended.
 * A directory it cannot write is logged and left (tried again at the next start).
 */
export function reconcileRunDirs(root: string, o: { now: number; ended: EndedLookup; log: Logger }): number {
  let n = 0;
  for (const name of runDirs(root)) {
    const dir = join(root, name);
    const mark = readMark(dir);
    if (!mark || mark.endedAt !== undefined || mark.prunedAt !== undefined || isRunning(dir)) continue;
    const found = o.ended(mark.inputHash);
    const ended = found ? { code: found.code, message: found.message } : { code: TRAIN_INTERRUPTED, message: 'the node stopped while this run was training, and no receipt of its job is known here' };
    try {
      const statusPath = join(dir, 'status.json');
      let step: unknown;
      // what the worker itself wrote last, when it had ended the run before the node stopped (QA ffTrainDay2 F6)
      let before: { status: string; code?: string } | undefined;
      if (existsSync(statusPath)) {
        const s = JSON.parse(readFileSync(statusPath, 'utf8')) as Record<string, unknown>;
        step = s.step;
        const own = s.stopReason as { code?: unknown; message?: unknown } | undefined;
        if (s.status === 'joining' || s.status === 'training') replaceFile(statusPath, JSON.stringify({ ...s, status: 'stopped', stopReason: ended }, null, 2));
        else if (s.status === 'stopped' && own?.code !== ended.code) {
          // the worker stopped the run (its buyer gone, say) and the node was killed before the job's receipt was
          // signed: the receipt the recovery signs is the job's outcome, so the status says it too, keeping the
          // worker's own reason beside it; before, the status kept the worker's code while the receipt said another
          before = { status: 'stopped', ...(typeof own?.code === 'string' ? { code: own.code } : {}) };
          replaceFile(statusPath, JSON.stringify({ ...s, stopReason: { ...ended, worker: own ?? null } }, null, 2));
        } else if (s.status === 'done') before = { status: 'done' };
      }
      writeMark(dir, { ...mark, endedAt: o.now, ended });
      const fields = { run: name, step, code: ended.code, ...(found?.job ? { job: found.job } : {}) };
      if (before?.status === 'done') {
        // the run finished, but the node stopped before the job's receipt was signed: the status stays done (the run's
        // weights are real), and the log says the job's receipt does not (its output was never delivered)
        o.log.warn(fields, 'a training run this provider was a member of had finished, but the node stopped before its job’s receipt was signed: the status says done, the job’s receipt says failed');
      } else if (before) {
        o.log.warn({ ...fields, workerCode: before.code }, 'a training run this provider was a member of had stopped, and the node stopped before its job’s receipt was signed: its status now says the receipt’s code, the worker’s own beside it (stopReason.worker)');
      } else {
        o.log.warn(fields, 'a training run this provider was a member of was interrupted (the node stopped while it trained): its status now says stopped, as its job’s receipt does');
      }
      n++;
    } catch (e) {
      o.log.warn({ run: name, err: (e as Error).message }, 'could not mark an interrupted training run as stopped; tried again at the next start');
    }
  }
  return n;
}

/**
 * The member jobs' run directories as job history (history-prune.ts stores): a run that ended before `before` is
 * emptied, its mark kept as a tombstone (`prunedAt`). Written first, so a process killed midway leaves a tombstone, and
 * the next pass removes what is left. `removed` counts run directories; `after` is the last directory's name.
 */
export class TrainRunDirs {
  constructor(
    readonly root: string,
    private readonly clock: () => number,
  ) {}

  async pruneHistory(before: number, max = 1000, after?: string): Promise<{ removed: number; more: boolean; after?: string }> {
    let removed = 0;
    let last: string | undefined;
    for (const name of runDirs(this.root)) {
      if (after !== undefined && name <= after) continue;
      if (removed >= max) return { removed, more: true, ...(last !== undefined ? { after: last } : {}) };
      last = name;
      const dir = join(this.root, name);
      const mark = readMark(dir);
      if (!mark || mark.endedAt === undefined || mark.endedAt >= before || isRunning(dir)) continue;
      const left = readdirSync(dir).filter((f) => f !== MEMBER_JOB_FILE);
      if (mark.prunedAt !== undefined && left.length === 0) continue;
      if (mark.prunedAt === undefined) writeMark(dir, { ...mark, prunedAt: this.clock() });
      for (const f of left) rmSync(join(dir, f), { recursive: true, force: true });
      removed++;
    }
    return { removed, more: false, ...(last !== undefined ? { after: last } : {}) };
  }
}
