/**
 * Ctrl-C on `c0mpute run` (docs/node.md "A run whose client went away"). Through a daemon the first closes the run's
 * stream, which the daemon takes as its client gone, and ends the command with one line saying what becomes of the
 * job (exit 130); a second, while that happens, exits at once. Without a daemon (the node in the command's own
 * process) the first withdraws a job no provider was selected for yet (RUN_CANCELLED), or says that a selected one
 * runs to its end here (goesOnHere); a second stops the node, breaking the run off (RUN_BROKEN_OFF); a third exits.
 */
import { divertErrors } from './pipe.js';
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
 * on while this says cancelled: `c0mpute jobs` shows which. `where`: 'here' for the node in this process, which
 * withdrew the job itself before this is said (a selected job goes on there instead: goesOnHere).
 */
export function ctrlCAnswer(heard: RunHeard, where: 'daemon' | 'here' = 'daemon', by?: RunStopSignal): Interrupted {
  if (where === 'here') {
    if (heard.job === undefined) return interruptedBy(by, 'RUN_CANCELLED', 'cancelled before the job was published: nothing was sent, nothing is paid');
    return interruptedBy(by, 'RUN_CANCELLED', `job ${heard.job} cancelled: no provider was selected yet, so it was withdrawn and nothing is paid. \`c0mpute jobs\` shows how it ended`);
  }
  if (heard.winner !== undefined) {
    return interruptedBy(by, 'RUN_CONTINUES', `job ${heard.job ?? '(unknown)'} goes on at ${heard.winner}: that provider was already selected, so it runs to its end and is paid for; its output is not kept (running the job again pays again). \`c0mpute jobs\` shows how it ends`);
  }
  if (heard.job === undefined) return interruptedBy(by, 'RUN_CANCELLED', 'cancelled before the job was published: the daemon drops it, nothing is paid');
  return interruptedBy(by, 'RUN_CANCELLED', `job ${heard.job} cancelled: no provider was selected yet, so the daemon withdraws it and nothing is paid. \`c0mpute jobs\` shows how it ended`);
}

/**
 * The line the first Ctrl-C prints on a run in this process whose provider was already selected (at once, or when the
 * selection's event comes after it): the run goes on to its end and its result is printed as usual.
 */
export function goesOnHere(heard: RunHeard): string {
  return `▸ Ctrl-C: job ${heard.job ?? '(unknown)'} goes on at ${heard.winner ?? '(unknown)'}: that provider was already selected, so the job runs to its end here and is paid for; Ctrl-C again breaks it off now`;
}

/**
 * The line a second Ctrl-C ends a run in this process with, once its provider was selected: the node stopped under
 * the run, which broke it off before its receipt (nothing accepted, the provider not blamed: no non-delivery signed).
 */
export function brokenOff(heard: RunHeard): Interrupted {
  return new Interrupted(
    'RUN_BROKEN_OFF',
    `job ${heard.job ?? '(unknown)'} broken off at ${heard.winner ?? '(unknown)'}: the node stopped before the job ended, so nothing was accepted and the provider is not blamed for it (no non-delivery signed). \`c0mpute jobs\` shows what is held`,
  );
}

/** The stop signals a run's command takes as the operator's Ctrl-C (the devnet takes the same three). */
export const RUN_STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
export type RunStopSignal = (typeof RUN_STOP_SIGNALS)[number];
/** 128 + the signal's number, as a shell reports a process the signal ended. */
export const RUN_SIGNAL_EXIT: Record<RunStopSignal, number> = { SIGINT: EXIT.INTERRUPTED, SIGTERM: 143, SIGHUP: 129 };

/** How a command's last line names the stop: `Ctrl-C` for SIGINT, else the signal (`SIGTERM`). */
export function stopWord(by: RunStopSignal | undefined): string {
  return by === undefined || by === 'SIGINT' ? 'Ctrl-C' : by;
}

/** The Interrupted a stop by `by` ends the command with: exit 128 + its number (130 for Ctrl-C, 143 SIGTERM, 129 SIGHUP). */
export function interruptedBy(by: RunStopSignal | undefined, code: string, message: string): Interrupted {
  return new Interrupted(code, message, { exit: RUN_SIGNAL_EXIT[by ?? 'SIGINT'] });
}

/**
 * Listen for Ctrl-C while a run streams: the first aborts `signal`, a second exits the process at once (130).
 * SIGTERM (kill, systemd, a CI runner, timeout(1)) and SIGHUP (the terminal closed) are taken the same way, and `by`
 * says which came first. Before (QA ffGang F1) only SIGINT was: a `batch run` sent SIGTERM died at once with Node's
 * default, wrote no summary.json (so `--resume` posted, and paid for, every line again) and said nothing.
 * `dispose` restores Node's own handling (a Ctrl-C then ends the process).
 */
export function watchCtrlC(exit: (code: number) => void = (c) => process.exit(c)): { signal: AbortSignal; by: () => RunStopSignal | undefined; dispose: () => void } {
  const ac = new AbortController();
  let first: RunStopSignal | undefined;
  const handlers = RUN_STOP_SIGNALS.map((sig) => {
    const on = () => {
      if (ac.signal.aborted) exit(RUN_SIGNAL_EXIT[sig]);
      else {
        first = sig;
        // the terminal gone (SIGHUP), or the reader of a pipe (`| tee` gets the same Ctrl-C): what is printed from here
        // may not be written (EIO, EPIPE), and must not end the command before its clean-up (summary.json, the gang's
        // release) and its exit code; a write that fails is dropped (review s54)
        for (const s of [process.stdout, process.stderr]) divertErrors(s, () => {});
        // the reason names the stop (runBatch says `interrupted with SIGTERM`)
        ac.abort(sig);
      }
    };
    process.on(sig, on);
    return [sig, on] as const;
  });
  return { signal: ac.signal, by: () => first, dispose: () => handlers.forEach(([sig, on]) => void process.off(sig, on)) };
}
