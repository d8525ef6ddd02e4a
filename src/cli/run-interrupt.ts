/**
 * Ctrl-C on `c0mpute run` through a daemon (docs/node.md "A run whose client went away"): the first closes the run's
 * stream, which the daemon takes as its client gone, and ends the command with one line saying what becomes of the
 * job (exit 130); a second, while that happens, exits at once.
 */
import { EXIT, Interrupted } from './context.js';

/** What the command heard of the run before the Ctrl-C: the job's address (`job` event) and a winner (`selection`). */
export interface RunHeard {
  job?: string;
  winner?: string;
}

/**
 * The line the first Ctrl-C ends the command with. Before a selection was heard the daemon withdraws the job
 * (RUN_CANCELLED); once one was, the provider was told it has the job, so it runs and is paid, and its output reaches
 * no one (RUN_CONTINUES). A selection the daemon signed as the Ctrl-C came (its event not heard yet) makes the job go
 * on while this says cancelled: `c0mpute jobs` shows which.
 */
export function ctrlCAnswer(heard: RunHeard): Interrupted {
  if (heard.winner !== undefined) {
    return new Interrupted(
      'RUN_CONTINUES',
      `job ${heard.job ?? '(unknown)'} goes on at ${heard.winner}: that provider was already selected, so it runs to its end and is paid for; its output is not kept (running the job again pays again). \`c0mpute jobs\` shows how it ends`,
    );
  }
  if (heard.job === undefined) return new Interrupted('RUN_CANCELLED', 'cancelled before the job was published: the daemon drops it, nothing is paid');
  return new Interrupted('RUN_CANCELLED', `job ${heard.job} cancelled: no provider was selected yet, so the daemon withdraws it and nothing is paid. \`c0mpute jobs\` shows how it ended`);
}

/**
 * Listen for Ctrl-C while a run streams: the first aborts `signal`, a second exits the process at once (130).
 * `dispose` restores Node's own handling (a Ctrl-C then ends the process).
 */
export function watchCtrlC(exit: (code: number) => void = (c) => process.exit(c)): { signal: AbortSignal; dispose: () => void } {
  const ac = new AbortController();
  const onInt = () => {
    if (ac.signal.aborted) exit(EXIT.INTERRUPTED);
    else ac.abort();
  };
  process.on('SIGINT', onInt);
  return { signal: ac.signal, dispose: () => void process.off('SIGINT', onInt) };
}
