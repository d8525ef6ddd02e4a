/**
 * A signal that aborts when any of several does, for a wait that outlives
 * none of them but ends long before some (a job's attempt beside the node's
 * stop signal).
 *
 * Not AbortSignal.any: on Node 20 every call adds an entry to each source's
 * set of dependants that is never pruned, so a source that lives as long as
 * the node (its stop signal) gains one per call for good (about 57 bytes each:
 * 57 MB per million attempts). This one listens on its sources and removes its
 * listeners when cleared or once it has aborted.
 *
 * Each wait raises its sources' listener limit by one while it listens, so
 * many concurrent waits on one source (a batch's lines beside the node's stop
 * signal) do not trip Node's "possible EventTarget memory leak" warning, while
 * a real leak of other listeners on that source still does.
 */
import { getMaxListeners, setMaxListeners } from 'node:events';

export interface LinkedSignal {
  /** Aborts, with that source's reason, when the first of the sources aborts (at once if one already has). */
  readonly signal: AbortSignal;
  /** Stop listening on the sources (the signal then aborts only if it already has): call it when the wait ends. */
  clear(): void;
}

export function linkedSignal(sources: readonly AbortSignal[]): LinkedSignal {
  const ac = new AbortController();
  const done = sources.find((s) => s.aborted);
  if (done) {
    ac.abort(done.reason);
    return { signal: ac.signal, clear: () => {} };
  }
  let listening = true;
  const onAbort = (e: Event): void => {
    clear();
    ac.abort((e.target as AbortSignal).reason);
  };
  const clear = (): void => {
    if (!listening) return;
    listening = false;
    for (const s of sources) {
      s.removeEventListener('abort', onAbort);
      raiseLimit(s, -1);
    }
  };
  for (const s of sources) {
    raiseLimit(s, 1);
    s.addEventListener('abort', onAbort);
  }
  return { signal: ac.signal, clear };
}

/** Moves a source's listener limit by `by`; an unlimited source (0) stays unlimited. */
function raiseLimit(s: AbortSignal, by: number): void {
  const max = limitOf(s);
  if (max > 0) setMaxListeners(Math.max(1, max + by), s);
}

/** A signal's listener limit; 0 (unlimited) when it was set so: Node 20's getMaxListeners throws on such a target. */
function limitOf(s: AbortSignal): number {
  try {
    return getMaxListeners(s);
  } catch {
    return 0;
  }
}

/** `p`, or undefined once `signal` aborts (whichever comes first). */
export function unlessAborted<T>(p: Promise<T>, signal: AbortSignal | undefined): Promise<T | undefined> {
  if (!signal) return p;
  if (signal.aborted) return Promise.resolve(undefined);
  return new Promise<T | undefined>((resolve, reject) => {
    const onAbort = () => resolve(undefined);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}
