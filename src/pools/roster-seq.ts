/**
 * The seq `pool-provider roster` signs a new roster with (docs/pools.md "Operating a pool"). Members keep the roster
 * with the highest seq they hold and refuse one of the same or a lower seq (`POOL_ROSTER_STALE`): a roster signed
 * again under a seq already used would be ignored by every member holding the earlier one, and two rosters of one
 * pool with the same seq leave members and verifiers disagreeing about which is in force. So a seq that is not
 * greater than the highest this machine knows the pool signed is refused.
 */
import { C0Error } from '../errors.js';

/** The highest seq known locally for the pool's rosters, and where it was seen (for the message). */
export interface KnownRosterSeq {
  seq: number;
  where: string;
}

/**
 * `requested` (the `--seq` option as typed; undefined: the known seq plus one) checked against `known` (the
 * highest seq among the rosters of this pool found locally; undefined: none). Throws POOL_ROSTER_SEQ_INVALID (not a
 * non-negative integer) or POOL_ROSTER_SEQ_NOT_NEWER (not greater than the known seq).
 */
export function nextRosterSeq(requested: string | undefined, known: KnownRosterSeq | undefined): number {
  if (requested === undefined) return (known?.seq ?? 0) + 1;
  const seq = /^\d+$/.test(requested.trim()) ? Number(requested.trim()) : NaN;
  if (!Number.isSafeInteger(seq)) throw new C0Error('POOL_ROSTER_SEQ_INVALID', `--seq ${JSON.stringify(requested)} is not a non-negative integer`, { field: 'seq' });
  if (known && seq <= known.seq) {
    throw new C0Error(
      'POOL_ROSTER_SEQ_NOT_NEWER',
      `--seq ${seq} is not greater than ${known.seq}, the seq of this pool's roster ${known.where}: members holding that roster would ignore this one (POOL_ROSTER_STALE); use --seq ${known.seq + 1}, or leave --seq out`,
      { field: 'seq', detail: { known: known.seq } },
    );
  }
  return seq;
}
