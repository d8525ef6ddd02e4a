/**
 * Claim streams a silent buyer takes and never answers (for the claimer's tests): each fails with `code` at the
 * stream's 15 s deadline, when the test's clock passes it and it calls `expire`.
 */
import { C0Error } from '../../../src/errors.js';
import type { ClaimOutcome } from '../../../src/roles/claim-protocol.js';

export class SilentStreams {
  #open: Array<[number, (e: Error) => void]> = [];

  constructor(private readonly code: string) {}

  /** A stream opened at `now`, never answered. */
  hang(now: number): Promise<ClaimOutcome> {
    return new Promise<ClaimOutcome>((_, reject) => this.#open.push([now + 15_000, reject]));
  }

  /** Fail the streams whose deadline `now` has passed. */
  expire(now: number): void {
    for (const h of this.#open.splice(0)) {
      if (h[0] <= now) h[1](new C0Error(this.code, 'stream deadline'));
      else this.#open.push(h);
    }
  }

  /** Streams still open. */
  get size(): number {
    return this.#open.length;
  }
}
