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

/** What was thrown, as the log's `err`: an Error as it is (pino's serializer keeps its type, stack and cause), anything else as text. */
function errOf(reason: unknown): unknown {
  if (reason instanceof Error) return reason;
  try {
    return { message: String(reason) };
  } catch {
    return { message: Object.prototype.toString.call(reason) }; // an object with no toString
  }
}

/** Install the handlers on `proc` (the process). Only the first bug stops the node; one during that stop is logged too. */
export function exitOnBug(o: { proc: Proc; log: Logger; stop: () => Promise<void>; graceMs?: number }): void {
  let exiting = false;
  const onBug = (kind: 'uncaughtException' | 'unhandledRejection') => (reason: unknown) => {
    // nothing here may throw: a throw in an uncaughtException handler ends the process at once (exit 7)
    try {
      o.log.fatal({ kind, err: errOf(reason) }, exiting ? 'a further bug while stopping' : 'the daemon hit a bug: stopping, then exiting 70');
    } catch {
      // the log is gone: exit all the same
    }
    if (exiting) return;
    exiting = true;
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => (timer = setTimeout(resolve, o.graceMs ?? FATAL_GRACE_MS)));
    const stopped = Promise.resolve()
      .then(() => o.stop())
      .catch((e: unknown) => void o.log.error({ err: errOf(e) }, 'stopping after the bug failed'));
    void Promise.race([stopped, grace]).finally(() => {
      clearTimeout(timer);
      o.proc.exit(FATAL_EXIT);
    });
  };
  o.proc.on('uncaughtException', onBug('uncaughtException'));
  o.proc.on('unhandledRejection', onBug('unhandledRejection'));
}
