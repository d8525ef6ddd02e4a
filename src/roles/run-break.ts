/**
 * What breaks a buyer's run off (Buyer.run): the node's stop, at any point, and the run's client leaving (the
 * control API's `/v1/run` caller closed its connection: a Ctrl-C on `c0mpute run`), but only until the run commits:
 * until a selection is signed (the steward asked to select, on a managed overlay) or an open order's winner is told.
 * Before that nothing was asked of a provider, so the job is withdrawn (JOB_INTERRUPTED; a steward's claim is
 * released); after it the provider was told it has the job, so the run goes on to its end as if the client were
 * still there (docs/node.md "A run whose client went away").
 */
import { C0Error } from '../errors.js';
import { linkedSignal, type LinkedSignal } from '../util/signals.js';

export class RunBreak {
  readonly #ac = new AbortController();
  readonly #stop: AbortSignal;
  #link: LinkedSignal;
  #committed = false;
  #byClient = false;

  /** `stop`: the node's stop; `gone`: aborts when the run's client went away. */
  constructor(stop: AbortSignal, gone?: AbortSignal) {
    this.#stop = stop;
    this.#link = this.#listen(gone ? [stop, gone] : [stop]);
  }

  #listen(sources: AbortSignal[]): LinkedSignal {
    const link = linkedSignal(sources);
    const fire = () => {
      if (this.#ac.signal.aborted) return;
      // the client leaving counts only before the run committed; the node's stop always
      if (this.#stop.aborted) this.#ac.abort(this.#stop.reason);
      else if (!this.#committed) {
        this.#byClient = true;
        this.#ac.abort(new C0Error('JOB_INTERRUPTED', 'the run’s client went away'));
      }
    };
    if (link.signal.aborted) fire();
    else link.signal.addEventListener('abort', fire, { once: true });
    return link;
  }

  /** Aborts when the run is broken off (with the node's stop's reason, or JOB_INTERRUPTED for its client). */
  get signal(): AbortSignal {
    return this.#ac.signal;
  }

  get aborted(): boolean {
    return this.#ac.signal.aborted;
  }

  /** Broken off because its client went away (not the node's stop). */
  get byClient(): boolean {
    return this.#byClient;
  }

  get committed(): boolean {
    return this.#committed;
  }

  /**
   * The point of no return: from here only the node's stop breaks the run off. Returns false (and commits nothing)
   * when the run was broken off already: the caller ends it instead. Synchronous, so nothing comes between the check
   * and the commit.
   */
  commit(): boolean {
    if (this.#ac.signal.aborted) return false;
    if (this.#committed) return true;
    this.#committed = true;
    this.#link.clear();
    this.#link = this.#listen([this.#stop]);
    return true;
  }

  /** Stop listening on the node's stop and the client's signal: call it when the run ended. */
  clear(): void {
    this.#link.clear();
  }
}
