/**
 * When a node derives its reputation view again (docs/market.md "When the view
 * is derived again"). `deriveReputation` is a pass over all held evidence:
 * about 3 µs a record here, so a third of a second at the default bound of
 * 100,000 records, on the event loop. A node that counts second-hand evidence
 * hears other buyers' outcomes all the time; re-deriving at every decision
 * after each of them would spend the loop on it. So:
 *
 * - **first-hand evidence** (a record of this node's own dealings: one it
 *   signed, or one naming it as buyer or provider) makes the next read derive
 *   again, at once: a provider that just failed this node counts in its next
 *   decision;
 * - **second-hand evidence** marks the view out of date, and a read derives
 *   again once the view is at least `refreshMs` old: the larger of
 *   SECOND_HAND_REFRESH_MS and the last derivation's cost over
 *   DERIVE_SHARE, so deriving takes at most that share of the loop however
 *   much evidence is held and however fast it arrives.
 *
 * A view read between refreshes lacks at most the second-hand outcomes of the
 * last `refreshMs`, against a history of thousands.
 */
import type { ReputationTable } from './derive.js';

/** Second-hand evidence re-derives the view at most this often (ms). */
export const SECOND_HAND_REFRESH_MS = 2_000;
/** And at most this share of the event loop goes to deriving it (the interval grows with the derivation's cost). */
export const DERIVE_SHARE = 0.05;

export interface ReputationCacheOptions {
  /** Monotonic ms (default performance.now). */
  clock?: () => number;
  /** Default SECOND_HAND_REFRESH_MS. */
  minRefreshMs?: number;
  /** Default DERIVE_SHARE. */
  share?: number;
  /** Told of each derivation's cost in ms (metrics). */
  onDerive?: (ms: number) => void;
}

export class ReputationCache {
  readonly #derive: () => ReputationTable;
  readonly #clock: () => number;
  readonly #minMs: number;
  readonly #share: number;
  readonly #onDerive: ((ms: number) => void) | undefined;
  #table: ReputationTable | undefined;
  #at = 0;
  #costMs = 0;
  /** Second-hand evidence arrived since the table was derived. */
  #behind = false;
  /** Derivations so far (tests, diagnostics). */
  derivations = 0;

  constructor(derive: () => ReputationTable, opts: ReputationCacheOptions = {}) {
    this.#derive = derive;
    this.#clock = opts.clock ?? (() => performance.now());
    this.#minMs = opts.minRefreshMs ?? SECOND_HAND_REFRESH_MS;
    this.#share = opts.share ?? DERIVE_SHARE;
    this.#onDerive = opts.onDerive;
  }

  /** The view: derived again when first-hand evidence changed, or when second-hand evidence did and the view is refreshMs old. */
  get(): ReputationTable {
    if (this.#table && this.#behind && this.#clock() - this.#at >= this.refreshMs) this.#table = undefined;
    if (this.#table) return this.#table;
    const t0 = performance.now();
    const table = this.#derive();
    this.#costMs = performance.now() - t0;
    this.#table = table;
    this.#at = this.#clock();
    this.#behind = false;
    this.derivations++;
    this.#onDerive?.(this.#costMs);
    return table;
  }

  /** Evidence arrived: first-hand makes the next read derive again; second-hand once the view is refreshMs old. */
  changed(firstHand: boolean): void {
    if (firstHand) this.#table = undefined;
    else this.#behind = true;
  }

  /** How old the view may grow while second-hand evidence waits (ms). */
  get refreshMs(): number {
    return Math.max(this.#minMs, this.#costMs / this.#share);
  }

  /** Whether second-hand evidence is waiting for the next refresh. */
  get behind(): boolean {
    return this.#table !== undefined && this.#behind;
  }
}
