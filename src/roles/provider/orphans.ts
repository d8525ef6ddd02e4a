/**
 * The provider's record of the process groups its `exec` executor started
 * (docs/node.md "Orphaned work after a crash"). Each running group is written
 * to the data directory when it is spawned (before any input reaches it) and
 * removed when it exits. A provider killed with `kill -9` cannot kill its
 * children, so they are re-parented and run on; on the next start the provider
 * reads what is left, ends each group that is still the same process (its
 * leader's start time in /proc/<pid>/stat matches, or the leader is gone but
 * members of the group remain: Linux does not reuse a pid while it names a
 * process group), SIGTERM then SIGKILL, and reports each so the provider can
 * sign the failed receipt.
 */
import { readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { monotonicClock, type Clock } from '../../util/clock.js';
import { makeDirs } from '../../util/make-dirs.js';

export interface GroupRecord {
  /** The group leader's pid (the executor's child); the group id is the same (it is spawned detached). */
  pid: number;
  pgid: number;
  /** The job's address. */
  job: string;
  /** When the work started, ms since the epoch. */
  startedAt: number;
  /** The leader's start time, clock ticks since boot (/proc/<pid>/stat field 22): tells a reused pid apart. */
  procStart: string;
  /** The job and offer envelopes (base64), so a later start can sign the failed receipt. */
  jobEnvelope?: string;
  offerEnvelope?: string;
}

/** Fields of /proc/<pid>/stat after the command name: [state, ppid, pgrp, session, …]. */
function statFields(pid: number): string[] | undefined {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return s.slice(s.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** A live process's start time (field 22), or undefined when it is gone or a zombie. */
export function procStartTime(pid: number): string | undefined {
  const f = statFields(pid);
  if (!f || f[0] === 'Z' || f[0] === 'X') return undefined;
  return f[19];
}

/** Live (not zombie) members of process group `pgid`. */
export function groupMembers(pgid: number): number[] {
  const out: number[] = [];
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return out;
  }
  for (const n of names) {
    if (!/^[0-9]+$/.test(n)) continue;
    const f = statFields(Number(n));
    if (f && f[2] === String(pgid) && f[0] !== 'Z' && f[0] !== 'X') out.push(Number(n));
  }
  return out;
}

export type ReapOutcome = 'killed' | 'exited' | 'not-ours';

export class ProcessRegistry {
  /**
   * `monoClock` (default `monotonicClock`, src/util/clock.ts) times the grace between SIGTERM and SIGKILL in reap():
   * a wall clock stepped back would hold the provider's start as long, one stepped forward cut the grace short.
   */
  constructor(
    readonly dir: string,
    private readonly monoClock: Clock = monotonicClock,
  ) {}

  /** Record a running group (written atomically, synchronously: the record exists before the work gets its input). */
  add(rec: GroupRecord): void {
    // not mkdirSync's recursive form, which never returns under /proc (src/util/make-dirs.ts)
    makeDirs(this.dir, { code: 'DATA_DIR_UNWRITABLE', field: 'dataDir', what: `cannot record process group ${rec.pid} in ${this.dir}` });
    const f = join(this.dir, `${rec.pid}.json`);
    writeFileSync(`${f}.tmp`, JSON.stringify(rec), { mode: 0o600 });
    renameSync(`${f}.tmp`, f);
  }

  remove(pid: number): void {
    rmSync(join(this.dir, `${pid}.json`), { force: true });
  }

  list(): GroupRecord[] {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return [];
    }
    const out: GroupRecord[] = [];
    for (const n of names) {
      if (!n.endsWith('.json')) continue;
      try {
        out.push(JSON.parse(readFileSync(join(this.dir, n), 'utf8')) as GroupRecord);
      } catch {
        rmSync(join(this.dir, n), { force: true });
      }
    }
    return out;
  }

  /**
   * End what a previous run left: every recorded group that is still the
   * same process gets SIGTERM, then SIGKILL after `graceMs` (monotonic). Each record is
   * removed and reported with what was found.
   */
  async reap(graceMs = 2_000): Promise<Array<{ rec: GroupRecord; outcome: ReapOutcome }>> {
    const out: Array<{ rec: GroupRecord; outcome: ReapOutcome }> = [];
    for (const rec of this.list()) {
      const start = procStartTime(rec.pid);
      let outcome: ReapOutcome;
      if (start !== undefined && start !== rec.procStart) outcome = 'not-ours';
      else if (groupMembers(rec.pgid).length === 0) outcome = 'exited';
      else {
        outcome = 'killed';
        signalGroup(rec.pgid, 'SIGTERM');
        const end = this.monoClock() + graceMs;
        while (groupMembers(rec.pgid).length && this.monoClock() < end) await new Promise((r) => setTimeout(r, 50));
        if (groupMembers(rec.pgid).length) signalGroup(rec.pgid, 'SIGKILL');
      }
      this.remove(rec.pid);
      out.push({ rec, outcome });
    }
    return out;
  }
}

function signalGroup(pgid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(-pgid, sig);
  } catch {
    /* already gone */
  }
}
