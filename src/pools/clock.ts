/**
 * The members' clocks, compared (docs/pools.md "Clocks and the election"). Pure: every time is a parameter.
 *
 * Epochs are on each member's wall clock (choice.ts epochOf), and a buyer drops an offer dated more than its clock-skew
 * window (network.clockSkewMs, 30 s by default) after its own now (RECORD_FROM_FUTURE). A member whose clock is that far
 * off would still be elected in its epochs, and every job in them would get no offer (QA qaPnet F2). So each member
 * estimates the others' clocks from its pings (the answer carries the callee's wall clock, `now`), and leaves out of the
 * election a member whose clock is off the pool's by more than that window.
 *
 * - A sample: the callee's `now` minus this member's wall clock at the middle of the round trip (sent at `sentAt`, the
 *   round trip measured on the monotonic clock): `now − (sentAt + rtt / 2)`. Its error is at most rtt / 2 (a ping is
 *   given up after livenessMs).
 * - The pool's clock: the median of the live members' clocks this member knows (its own at offset 0; a member whose
 *   answers carry no `now`, a build before it, is not counted), the mean of the two middle ones for an even count.
 * - A member is skewed when its clock is more than the window from the pool's. If that is every member counted (no
 *   majority agreeing), no one can be singled out and nobody is left out. Either way, when the clocks of the members
 *   still electable span more than the window (two members 35 s apart: the pool's clock is their middle, 17.5 s from
 *   each), the verdict says `split`: their offers may be dropped in some epochs, and nothing here can tell whose clock
 *   is wrong, so every member warns and none is left out for it.
 *
 * Every member computes the same: the differences between clocks do not depend on whose clock they are read against
 * (offsets from one member's clock are those from another's shifted by one constant, and a median shifts with them), so
 * the skewed member finds itself skewed and leaves itself out of its own election. Only the estimates' error (each
 * within half its round trip) can make two members judge differently, for a clock within milliseconds of the window.
 */

/** One estimate of another member's clock: its offset from this member's (ms, positive = ahead) and the round trip it came from. */
export interface ClockSample {
  offsetMs: number;
  rttMs: number;
}

/** The estimate from one ping: the callee's `now` against this member's wall clock at the middle of the round trip. */
export function clockSample(sentAt: number, rttMs: number, theirNow: number): ClockSample {
  const rtt = Math.max(0, rttMs);
  return { offsetMs: Math.round(theirNow - (sentAt + rtt / 2)), rttMs: Math.round(rtt) };
}

export interface ClockVerdict {
  /** Each counted member's clock minus the pool's (ms, positive = ahead), in the order given. */
  deviation: Map<string, number>;
  /** The members left out of the election for their clock. */
  skewed: Set<string>;
  /** The clocks of the members counted and not skewed span more than the window: they disagree, and nobody can be singled out. */
  split: boolean;
}

/** The median of a non-empty list (the mean of the two middle values for an even count). */
function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/**
 * Judge the clocks of the members given: `offsets` maps each (this member included, at 0) to its clock's offset from
 * this member's; members without an estimate are simply not in it. `windowMs`: the clock-skew window buyers apply.
 */
export function judgeClocks(offsets: ReadonlyMap<string, number>, windowMs: number): ClockVerdict {
  const deviation = new Map<string, number>();
  if (offsets.size === 0) return { deviation, skewed: new Set(), split: false };
  const m = median([...offsets.values()]);
  for (const [did, o] of offsets) deviation.set(did, o - m);
  const off = [...deviation].filter(([, d]) => Math.abs(d) > windowMs).map(([did]) => did);
  const skewed = new Set(off.length === deviation.size ? [] : off);
  const kept = [...deviation].filter(([did]) => !skewed.has(did)).map(([, d]) => d);
  return { deviation, skewed, split: Math.max(...kept) - Math.min(...kept) > windowMs };
}

/** A signed offset as words: "45.0 s ahead of", "1.2 s behind". */
export function offsetWords(ms: number): string {
  return `${(Math.abs(ms) / 1000).toFixed(1)} s ${ms >= 0 ? 'ahead of' : 'behind'}`;
}
