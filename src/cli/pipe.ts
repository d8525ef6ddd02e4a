/**
 * A closed standard output or error (`c0mpute … | head -1`) ends the command
 * quietly: no `EPIPE` stack trace, the exit code the command had set (0 if
 * none). Writes after the reader left cannot reach anyone, so there is
 * nothing left to do. Only the CLI entry point installs this.
 *
 * A daemon is not a command that prints and ends: `start` diverts its standard
 * output's errors (divertErrors) so that a banner it cannot write (stdout on a
 * full disk, `start >node.log` with the disk full; a closed pipe) is dropped
 * and the node goes on. Before (review s42 R3 F3), a full disk made the
 * banner's ENOSPC a bug exit (70), and a closed pipe ended the daemon with 0,
 * without its orderly stop.
 */
const diverted = new WeakMap<NodeJS.WritableStream, (e: NodeJS.ErrnoException) => void>();

export function quietOnClosedPipe(streams: NodeJS.WriteStream[] = [process.stdout, process.stderr], exit: (code: number) => void = (c) => process.exit(c)): void {
  for (const s of streams) {
    s.on('error', (e: NodeJS.ErrnoException) => {
      const to = diverted.get(s);
      if (to) to(e);
      else if (e.code === 'EPIPE' || e.code === 'ERR_STREAM_DESTROYED') exit(typeof process.exitCode === 'number' ? process.exitCode : 0);
      else throw e;
    });
  }
}

/** `stream`'s write errors go to `to` (once each: a stream that failed is destroyed, and later writes fail the same way) instead of ending the process. */
export function divertErrors(stream: NodeJS.WritableStream, to: (e: NodeJS.ErrnoException) => void): void {
  let told = false;
  diverted.set(stream, (e) => {
    if (told) return;
    told = true;
    to(e);
  });
}
