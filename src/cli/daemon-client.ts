/** How CLI commands find the running daemon of a data directory: daemon.json and the token file. */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { C0Error } from '../errors.js';
import { readDaemonInfo } from '../node/daemon-info.js';
import { TOKEN_FILE, noteDaemonPid } from '../node/api-client.js';

export interface DaemonClient {
  api: string;
  token: string;
}

/** The running daemon on `dataDir`, or undefined when none runs. */
export function daemonClient(dataDir: string): DaemonClient | undefined {
  const info = readDaemonInfo(dataDir);
  if (!info || !info.api) return undefined;
  const tokenPath = join(dataDir, TOKEN_FILE);
  if (!existsSync(tokenPath)) return undefined;
  // a daemon that does not answer in time is named by its pid (DAEMON_NOT_ANSWERING)
  noteDaemonPid(info.api, info.pid);
  return { api: info.api, token: readFileSync(tokenPath, 'utf8').trim() };
}

/** The running daemon on `dataDir`; DAEMON_NOT_RUNNING when none runs. */
export function requireDaemon(dataDir: string): DaemonClient {
  const c = daemonClient(dataDir);
  if (!c) throw new C0Error('DAEMON_NOT_RUNNING', `no daemon is running on ${dataDir}; start one with \`c0mpute start --data-dir ${dataDir}\``);
  return c;
}

/** `?overlay=name` for an API path, or nothing. */
export function overlayQuery(overlay: string | undefined): string {
  return overlay ? `?overlay=${encodeURIComponent(overlay)}` : '';
}
