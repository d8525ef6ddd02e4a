/** How CLI commands find the running daemon of a data directory: daemon.json and the token file. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { C0Error } from '../errors.js';
import { foreignDaemonNote, readDaemonInfo, type DaemonInfo } from '../node/daemon-info.js';
import { TOKEN_FILE, noteDaemonPid } from '../node/api-client.js';

export interface DaemonClient {
  api: string;
  token: string;
}

/**
 * The running daemon on `dataDir`, or undefined when none runs. A daemon that runs (its daemon.json names a live
 * process) but whose API token cannot be read (the file removed, emptied, made a directory, unreadable) is
 * API_TOKEN_UNREADABLE: "no daemon" would send a command to the offline path (STORE_LOCKED) and the operator to start
 * a second daemon (DAEMON_RUNNING).
 */
export function daemonClient(dataDir: string, onForeign?: (info: DaemonInfo & { dataDir: string }) => void): DaemonClient | undefined {
  const info = readDaemonInfo(dataDir, onForeign);
  if (!info || !info.api) return undefined;
  const tokenPath = join(dataDir, TOKEN_FILE);
  const unreadable = (why: string) =>
    new C0Error(
      'API_TOKEN_UNREADABLE',
      `a daemon (pid ${info.pid}) runs on ${dataDir}, but its API token ${tokenPath} ${why}; put back the file the daemon wrote (a regular file, mode 0600), or remove what is there and restart the daemon (\`kill ${info.pid}\`, then \`c0mpute start --data-dir ${dataDir}\`), which writes a new one`,
      { field: 'api.token' },
    );
  let token: string;
  try {
    token = readFileSync(tokenPath, 'utf8').trim();
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    throw unreadable(err.code === 'ENOENT' ? 'is missing' : `cannot be read: ${err.message}`);
  }
  if (token.length === 0) throw unreadable('is empty');
  // a daemon that does not answer in time is named by its pid (DAEMON_NOT_ANSWERING)
  noteDaemonPid(info.api, info.pid);
  return { api: info.api, token };
}

/**
 * The running daemon on `dataDir`; DAEMON_NOT_RUNNING when none runs, saying so when the daemon.json there is another
 * directory's (a copy of a running node's directory: readDaemonInfo), with that directory in the error's detail.
 */
export function requireDaemon(dataDir: string): DaemonClient {
  let foreign: (DaemonInfo & { dataDir: string }) | undefined;
  const c = daemonClient(dataDir, (i) => (foreign = i));
  if (!c) {
    const why = foreign ? `: ${foreignDaemonNote(dataDir, foreign)}` : '';
    throw new C0Error('DAEMON_NOT_RUNNING', `no daemon is running on ${dataDir}${why}; start one with \`c0mpute start --data-dir ${dataDir}\``, foreign ? { detail: { daemonDataDir: foreign.dataDir, pid: foreign.pid } } : undefined);
  }
  return c;
}

/** `?overlay=name` for an API path, or nothing. */
export function overlayQuery(overlay: string | undefined): string {
  return overlay ? `?overlay=${encodeURIComponent(overlay)}` : '';
}
