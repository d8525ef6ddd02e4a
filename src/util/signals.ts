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
 */
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
  const onAbort = (e: Event): void => {
    clear();
    ac.abort((e.target as AbortSignal).reason);
  };
  const clear = (): void => {
    for (const s of sources) s.removeEventListener('abort', onAbort);
  };
  for (const s of sources) s.addEventListener('abort', onAbort);
  return { signal: ac.signal, clear };
}
