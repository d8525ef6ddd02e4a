/**
 * The daemon's last word on a bug (docs/node.md "The daemon"): an exception
 * nothing caught, or a rejection nothing handled, is logged as one `fatal`
 * line with its stack, in the log's own format (Node's own report is free text
 * on stderr, which a JSON log pipeline mangles or drops). The node is then
 * given a few seconds to stop (the network closed, the stores closed,
 * daemon.json removed; every acknowledged write is on disk either way, so a
 * stop that hangs or fails loses nothing), and the process exits 70, the code
 * of a bug, for its supervisor to restart it.
 *
 * A store that cannot go on in this process (store/db.ts: after a failed write the database was reopened, and a
 * holder found on disk another state than the one it keeps in memory) stops the node the same way, with its own
 * fatal line and exit 75 (EX_TEMPFAIL): not a bug; the restart's open replays what is on disk.
 */
import type { Logger } from '../util/log.js';
import { onStoreFatal } from '../store/db.js';

/** Exit code of a bug (EXIT.INTERNAL in src/cli/context.ts). */
export const FATAL_EXIT = 70;
/** Exit code of a store that cannot go on in process (EXIT.STORE in src/cli/context.ts). */
export const STORE_EXIT = 75;
/** How long the node may take to stop after a bug before the process exits regardless. */
export const FATAL_GRACE_MS = 5_000;

type Proc = Pick<NodeJS.Process, 'on' | 'exit'>;

/** What was thrown, as the log's `err`: an Error as it is (pino's serializer keeps its type, stack and cause), anything else as text. */
export function errOf(reason: unknown): unknown {
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
  const stopThenExit = (code: number) => {
    exiting = true;
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => (timer = setTimeout(resolve, o.graceMs ?? FATAL_GRACE_MS)));
    const stopped = Promise.resolve()
      .then(() => o.stop())
      .catch((e: unknown) => void o.log.error({ err: errOf(e) }, 'stopping after the bug failed'));
    void Promise.race([stopped, grace]).finally(() => {
      clearTimeout(timer);
      o.proc.exit(code);
    });
  };
  const onBug = (kind: 'uncaughtException' | 'unhandledRejection') => (reason: unknown) => {
    // nothing here may throw: a throw in an uncaughtException handler ends the process at once (exit 7)
    try {
      o.log.fatal({ kind, err: errOf(reason) }, exiting ? 'a further bug while stopping' : 'the daemon hit a bug: stopping, then exiting 70');
    } catch {
      // the log is gone: exit all the same
    }
    if (exiting) return;
    stopThenExit(FATAL_EXIT);
  };
  o.proc.on('uncaughtException', onBug('uncaughtException'));
  o.proc.on('unhandledRejection', onBug('unhandledRejection'));
  onStoreFatal((e) => {
    try {
      o.log.fatal({ kind: 'store', code: e.code, err: e.message }, 'a store cannot go on in this process: stopping, then exiting 75 (the restart recovers it)');
    } catch {
      // the log is gone: exit all the same
    }
    if (!exiting) stopThenExit(STORE_EXIT);
  });
}
