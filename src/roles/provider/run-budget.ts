/**
 * How long accepted work may run (docs/node.md "Provider", "Running"): the job's `timeoutMs`, cut at its deadline. A
 * timer ends the work there (EXEC_TIMEOUT); and work whose run ended past that time is not done in time, whatever it
 * returned. The timer alone does not ensure that: a provider process stopped (SIGSTOP, a paused VM, a machine too busy
 * to run it) while the work runs does nothing until it runs again, and then the work's own end (its timer, a child's
 * exit read off the pipes) and the deadline's timer are due together. Node runs due timers in the order they were
 * due, and a run whose end came first clears the deadline's timer before it fires: a provider stopped 30 s past a
 * deadline signed `completed`, dated 16 s after the deadline, with the full price (QA qaRep F4). So the run's end is
 * checked against its time too: on the wall clock against the job's deadline (a time in a signed record: docs/node.md
 * "Clocks: wall and monotonic"), and on the monotonic clock against the time it was given (a duration this provider
 * measures for itself, as its timer does). Pure.
 */
import type { Job } from '../../records/kinds.js';

/** The time accepted work is given from `now` (wall clock), ms: the job's timeout, cut at its deadline; at least 1. */
export function runBudgetMs(job: Pick<Job, 'timeoutMs' | 'deadline'>, now: number): number {
  return Math.max(1, Math.min(job.timeoutMs, job.deadline - now));
}

/**
 * The failure (EXEC_TIMEOUT) of work that returned only after its time: its end (`completedAt`, wall clock) is past
 * the job's deadline, or it ran (`ranMs`, monotonic) longer than it was given (`budgetMs`). Undefined when it ended in time.
 */
export function overran(o: { deadline: number; completedAt: number; ranMs: number; budgetMs: number }): { code: 'EXEC_TIMEOUT'; message: string } | undefined {
  if (o.completedAt > o.deadline) {
    return { code: 'EXEC_TIMEOUT', message: `the work ended ${o.completedAt - o.deadline} ms after the job's deadline (by this provider's clock), so it was not done in time` };
  }
  if (o.ranMs > o.budgetMs) {
    return { code: 'EXEC_TIMEOUT', message: `the work ended after ${Math.ceil(o.ranMs)} ms, past its time of ${o.budgetMs} ms (the job's timeout, cut at its deadline), so it was not done in time` };
  }
  return undefined;
}
