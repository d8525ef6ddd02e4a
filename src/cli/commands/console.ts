/** `c0mpute console`: print a one-time login URL for the running daemon's web console (docs/console.md). */
import type { Command } from 'commander';
import { requireDaemon } from '../daemon-client.js';
import { consoleLoginUrl } from '../../node/api-client.js';
import { out } from '../context.js';
import { globals } from './index.js';

export function register(program: Command): void {
  program
    .command('console')
    .description('print a one-time login URL for the running node’s web console (works once, for 10 minutes)')
    .action(async (_o: unknown, cmd: Command) => {
      const { dataDir } = globals(cmd);
      const c = requireDaemon(dataDir);
      out(await consoleLoginUrl(c.api, c.token));
    });
}
