/**
 * The daemon's last word on a bug (docs/node.md "The daemon"): an exception
 * nothing caught, or a rejection nothing handled, is logged as one `fatal`
 * line with its stack, in the log's own format (Node's own report is free text
 * on stderr, which a JSON log pipeline mangles or drops). The node is then
 * given a few seconds to stop (the network closed, the stores closed,
 * daemon.json removed; every acknowledged write is on disk either way, so a
 * stop that hangs or fails loses nothing), and the process exits 70, the code
 * of a bug, for its supervisor to restart it.
 */
import type { Logger } from '../util/log.js';

/** Exit code of a bug (EXIT.INTERNAL in src/cli/context.ts). */
export const FATAL_EXIT = 70;
/** How long the node may take to stop after a bug before the process exits regardless. */
export const FATAL_GRACE_MS = 5_000;

type Proc = Pick<NodeJS.Process, 'on' | 'exit'>;

function describe(reason: unknown): Record<string, unknown> {
  if (reason instanceof Error) return { message: reason.message, ...(reason.stack ? { stack: reason.stack } : {}), ...((reason as { code?: unknown }).code !== undefined ? { code: (reason as { code?: unknown }).code } : {}) };
  return { message: String(reason) };
}

/** Install the handlers on `proc` (the process). Only the first bug stops the node; one during that stop is logged too. */
export function exitOnBug(o: { proc: Proc; log: Logger; stop: () => Promise<void>; graceMs?: number }): void {
  let exiting = false;
  const onBug = (kind: 'uncaughtException' | 'unhandledRejection') => (reason: unknown) => {
    o.log.fatal({ kind, err: describe(reason), exiting: !exiting }, exiting ? 'a further bug while stopping' : 'the daemon hit a bug: stopping, then exiting 70');
    if (exiting) return;
    exiting = true;
    const grace = new Promise<void>((resolve) => setTimeout(resolve, o.graceMs ?? FATAL_GRACE_MS));
    void Promise.race([o.stop().catch((e: unknown) => void o.log.error({ err: (e as Error).message }, 'stopping after the bug failed')), grace]).finally(() => o.proc.exit(FATAL_EXIT));
  };
  o.proc.on('uncaughtException', onBug('uncaughtException'));
  o.proc.on('unhandledRejection', onBug('unhandledRejection'));
}
