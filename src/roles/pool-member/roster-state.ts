/**
 * The roster a running pool member acts on, and the newest one it has heard of
 * (docs/pools.md "A new roster reaches running members"; issue #13 "a member
 * can leave", "add and remove members"). Pure: no I/O, no clock.
 *
 * - `adopt(roster, membership)`: this member's own countersignature of a
 *   higher-seq roster of the same pool (from `pool-provider join` on a running
 *   node, or loaded at start). The chain is verified for this member
 *   (verifyPoolProof); a lower or equal seq is refused (POOL_ROSTER_STALE), a
 *   roster of another pool too (POOL_WRONG_POOL), one past its `expiresAt` at
 *   `now` too (POOL_ROSTER_EXPIRED: buyers refuse its adverts, so acting on it
 *   would stop the pool). From then on the member signs
 *   with it, counts as live only members on the same seq, and elects among them.
 * - `heard(roster)`: a higher-seq roster of this pool that another member sent
 *   (`op: roster`, or a ping answer). The member cannot sign with it (it has not
 *   countersigned it): it stops quoting until it joins it, and when the roster
 *   no longer lists it, it is removed and stops for good (until a later roster
 *   lists it and it joins). One past its `expiresAt` at `now` is ignored (it
 *   would stop this member quoting for a roster nobody can act on).
 * - `leave(roster, membership)`: this member's own signed `left` membership
 *   (`pool-provider leave` on a running node; docs/pools.md "A member leaves a
 *   running pool"), of the roster in use or a newer one of the pool. From then
 *   on `left` is set: the member neither quotes nor runs dispatches for the
 *   pool, until it adopts (joins) a newer roster. A state can also start left
 *   (its membership file is the `left` one).
 * - `memberLeft(from, roster, membership)`: another member's `left` record it
 *   sent. The member is out of this member's active list and election while
 *   its left seq ≥ the seq in use (a newer roster it joins counts again). The
 *   record is kept (`leftRecordOf`): a member that calls after it left (its
 *   disk restored from before the leave) is handed it back, and adopts it.
 */
import { C0Error } from '../../errors.js';
import type { Opened } from '../../records/envelope.js';
import type { PoolMembership, PoolRoster } from '../../records/kinds.js';
import { verifyPoolProof } from '../../pools/chain.js';
import { duration, isoTime } from '../../market/say.js';

export class RosterState {
  readonly pool: string;
  #roster: Opened<PoolRoster>;
  #membership: Opened<PoolMembership>;
  #newest: Opened<PoolRoster>;
  #left: { roster: Opened<PoolRoster>; membership: Opened<PoolMembership> } | undefined;
  /** Other members that sent their `left` record: DID → the record (the roster it left and its membership), the highest seq kept. */
  #othersLeft = new Map<string, { roster: Opened<PoolRoster>; membership: Opened<PoolMembership> }>();

  constructor(
    private did: string,
    roster: Opened<PoolRoster>,
    membership: Opened<PoolMembership>,
  ) {
    const leaving = membership.record.status === 'left';
    this.pool = verifyPoolProof({ roster: roster.bytes, membership: membership.bytes }, did, leaving ? 'left' : 'member').pool;
    this.#roster = this.#newest = roster;
    this.#membership = membership;
    if (leaving) this.#left = { roster, membership };
  }

  /** This member's own `left` record, when it has left the pool (it neither quotes nor runs dispatches for it). */
  get left(): { roster: Opened<PoolRoster>; membership: Opened<PoolMembership> } | undefined {
    return this.#left;
  }

  /** Whether `member` sent its `left` record for the roster in use (or a newer one). */
  hasLeft(member: string): boolean {
    if (member === this.did) return this.#left !== undefined;
    return (this.#othersLeft.get(member)?.roster.record.seq ?? -1) >= this.#roster.record.seq;
  }

  /** The `left` record `member` sent, while it keeps that member out (hasLeft): handed back to it when it calls again. */
  leftRecordOf(member: string): { roster: Opened<PoolRoster>; membership: Opened<PoolMembership> } | undefined {
    return member !== this.did && this.hasLeft(member) ? this.#othersLeft.get(member) : undefined;
  }

  get roster(): Opened<PoolRoster> {
    return this.#roster;
  }

  get membership(): Opened<PoolMembership> {
    return this.#membership;
  }

  get seq(): number {
    return this.#roster.record.seq;
  }

  /** The newest roster of this pool heard of (≥ the one acted on). */
  get newest(): Opened<PoolRoster> {
    return this.#newest;
  }

  /** Whether a newer roster exists that this member has not joined: it must not quote for the pool. */
  get behind(): boolean {
    return this.#newest.record.seq > this.#roster.record.seq;
  }

  /** A roster of this pool this member holds (the one in use, the newest heard, the one it left), by address. */
  rosterOf(address: string): Opened<PoolRoster> | undefined {
    return [this.#roster, this.#newest, this.#left?.roster].find((x) => x?.address === address);
  }

  /** Whether the newest roster heard of no longer lists this member. */
  get removed(): boolean {
    return !this.#newest.record.members.some((m) => m.did === this.did);
  }

  /** Act on this member's own countersignature of a newer roster. Returns the roster replaced. */
  adopt(roster: Opened<PoolRoster>, membership: Opened<PoolMembership>, now: number): Opened<PoolRoster> {
    if (roster.signer !== this.pool) throw new C0Error('POOL_WRONG_POOL', `the roster is pool ${roster.signer}'s, not ${this.pool}'s`, { field: 'roster' });
    if (roster.record.seq <= this.#roster.record.seq) throw new C0Error('POOL_ROSTER_STALE', `roster seq ${roster.record.seq} is not newer than seq ${this.#roster.record.seq} in use`, { field: 'roster' });
    if (now >= roster.record.expiresAt) throw rosterExpired(roster, now);
    verifyPoolProof({ roster: roster.bytes, membership: membership.bytes }, this.did);
    const old = this.#roster;
    this.#roster = roster;
    this.#membership = membership;
    this.#left = undefined;
    if (roster.record.seq >= this.#newest.record.seq) this.#newest = roster;
    return old;
  }

  /**
   * Act on this member's own `left` record (of the roster in use or a newer
   * one): POOL_WRONG_POOL, POOL_ROSTER_STALE (an older roster), the chain codes
   * (POOL_MEMBERSHIP_NOT_SIGNER, POOL_MEMBERSHIP_WRONG_ROSTER,
   * POOL_MEMBERSHIP_NOT_LEFT, POOL_NOT_MEMBER). Leaving again is a no-op (the first record stays).
   */
  leave(roster: Opened<PoolRoster>, membership: Opened<PoolMembership>): { roster: Opened<PoolRoster>; membership: Opened<PoolMembership> } {
    if (roster.signer !== this.pool) throw new C0Error('POOL_WRONG_POOL', `the roster is pool ${roster.signer}'s, not ${this.pool}'s`, { field: 'roster' });
    if (roster.record.seq < this.#roster.record.seq) throw new C0Error('POOL_ROSTER_STALE', `roster seq ${roster.record.seq} is older than seq ${this.#roster.record.seq} in use`, { field: 'roster' });
    verifyPoolProof({ roster: roster.bytes, membership: membership.bytes }, this.did, 'left');
    if (this.#left) return this.#left;
    this.#left = { roster, membership };
    if (roster.record.seq > this.#newest.record.seq) this.#newest = roster;
    return this.#left;
  }

  /** Note another member's `left` record (its chain checked); true when it newly drops that member from the active list. */
  memberLeft(from: string, roster: Opened<PoolRoster>, membership: Opened<PoolMembership>): boolean {
    if (roster.signer !== this.pool) throw new C0Error('POOL_WRONG_POOL', `the roster is pool ${roster.signer}'s, not ${this.pool}'s`, { field: 'roster' });
    verifyPoolProof({ roster: roster.bytes, membership: membership.bytes }, from, 'left');
    const was = this.hasLeft(from);
    const kept = this.#othersLeft.get(from);
    if (!kept || roster.record.seq > kept.roster.record.seq) this.#othersLeft.set(from, { roster, membership });
    return !was && this.hasLeft(from);
  }

  /** Note a roster another member sent; true when it is newer than any heard before. */
  heard(roster: Opened<PoolRoster>, now: number): boolean {
    if (roster.signer !== this.pool || roster.record.seq <= this.#newest.record.seq || now >= roster.record.expiresAt) return false;
    this.#newest = roster;
    return true;
  }
}

/** POOL_ROSTER_EXPIRED for a roster past its `expiresAt` at `now` (docs/pools.md "Roster expiry"). */
export function rosterExpired(roster: Opened<PoolRoster>, now: number): C0Error {
  return new C0Error('POOL_ROSTER_EXPIRED', `roster seq ${roster.record.seq} (${roster.address}) expired at ${isoTime(roster.record.expiresAt)} (${duration(now - roster.record.expiresAt)} ago): sign a renewed one (pool-provider roster) and join that`, { field: 'roster' });
}
