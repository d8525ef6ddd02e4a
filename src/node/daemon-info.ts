/** Where a running daemon says it is (light: CLI commands read it without loading libp2p). */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export const DAEMON_FILE = 'daemon.json';

export interface DaemonInfo {
  pid: number;
  did: string;
  api: string;
  startedAt: number;
}

export function readDaemonInfo(dataDir: string): DaemonInfo | undefined {
  const p = join(dataDir, DAEMON_FILE);
  if (!existsSync(p)) return undefined;
  try {
    const info = JSON.parse(readFileSync(p, 'utf8')) as DaemonInfo;
    // left by a daemon that died: in a container the restarted one may be given the same pid (1), which is this process
    if (info.pid === process.pid) return undefined;
    process.kill(info.pid, 0); // throws when the process is gone
    return info;
  } catch {
    return undefined;
  }
}
