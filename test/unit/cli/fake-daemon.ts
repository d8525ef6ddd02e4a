/**
 * A fake daemon for CLI tests: a data directory whose daemon.json names a local HTTP server (and a live process, the
 * test runner's parent) with an API token, so the CLI talks to `handler` as it would to a running daemon.
 */
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export async function fakeDaemon(dataDir: string, handler: RequestListener): Promise<Server> {
  const server = createServer(handler);
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  mkdirSync(dataDir, { recursive: true });
  writeFileSync(join(dataDir, 'api.token'), 'token\n', { mode: 0o600 });
  writeFileSync(join(dataDir, 'daemon.json'), JSON.stringify({ pid: process.ppid, api: `127.0.0.1:${(server.address() as AddressInfo).port}` }));
  return server;
}

/** The environment a CLI run under test gets: this one, its home at `home`, and not inside this runner's test context. */
export function cliEnv(home: string): NodeJS.ProcessEnv {
  const e: NodeJS.ProcessEnv = { ...process.env, C0MPUTE_HOME: home };
  delete e.NODE_TEST_CONTEXT;
  return e;
}
