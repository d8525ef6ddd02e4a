/** Where a running daemon says it is (light: CLI commands read it without loading libp2p). */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export const DAEMON_FILE = 'daemon.json';

export interface DaemonInfo {
  pid: number;
  did: string;
  api: string;
  startedAt: number;
  /** When the process `pid` started, as the kernel counts it (Linux: /proc/<pid>/stat), to tell it from a later process given the same pid. */
  procStart?: string;
}

/** The kernel's start time of process `pid` (clock ticks since boot, /proc/<pid>/stat field 22); undefined where there is no /proc. */
export function processStart(pid: number | 'self'): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // the command name (field 2) is in parentheses and may hold spaces: count fields after its closing one
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

export function readDaemonInfo(dataDir: string): DaemonInfo | undefined {
  const p = join(dataDir, DAEMON_FILE);
  if (!existsSync(p)) return undefined;
  try {
    const info = JSON.parse(readFileSync(p, 'utf8')) as DaemonInfo;
    // left by a daemon that died: in a container the restarted one may be given the same pid (1), which is this process
    if (info.pid === process.pid) return undefined;
    process.kill(info.pid, 0); // throws when the process is gone
    // a live process under that pid, but started after the daemon that wrote this (the pid was given again)
    if (info.procStart !== undefined) {
      const now = processStart(info.pid);
      if (now !== undefined && now !== info.procStart) return undefined;
    }
    return info;
  } catch {
    return undefined;
  }
}
