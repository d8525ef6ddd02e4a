/**
 * A closed standard output or error (`c0mpute … | head -1`) ends the command
 * quietly: no `EPIPE` stack trace, the exit code the command had set (0 if
 * none). Writes after the reader left cannot reach anyone, so there is
 * nothing left to do. Only the CLI entry point installs this.
 */
export function quietOnClosedPipe(streams: NodeJS.WriteStream[] = [process.stdout, process.stderr], exit: (code: number) => void = (c) => process.exit(c)): void {
  for (const s of streams) {
    s.on('error', (e: NodeJS.ErrnoException) => {
      if (e.code === 'EPIPE' || e.code === 'ERR_STREAM_DESTROYED') exit(typeof process.exitCode === 'number' ? process.exitCode : 0);
      else throw e;
    });
  }
}
