/**
 * The roster a running pool member acts on, and the newest one it has heard of
 * (docs/pools.md "A new roster reaches running members"; issue #13 "a member
 * can leave", "add and remove members"). Pure: no I/O, no clock.
 *
 * - `adopt(roster, membership)`: this member's own countersignature of a
 *   higher-seq roster of the same pool (from `pool-provider join` on a running
 *   node, or loaded at start). The chain is verified for this member
 *   (verifyPoolProof); a lower or equal seq is refused (POOL_ROSTER_STALE), a
 *   roster of another pool too (POOL_WRONG_POOL). From then on the member signs
 *   with it, counts as live only members on the same seq, and elects among them.
 * - `heard(roster)`: a higher-seq roster of this pool that another member sent
 *   (`op: roster`, or a ping answer). The member cannot sign with it (it has not
 *   countersigned it): it stops quoting until it joins it, and when the roster
 *   no longer lists it, it is removed and stops for good (until a later roster
 *   lists it and it joins).
 */
import { C0Error } from '../../errors.js';
import type { Opened } from '../../records/envelope.js';
import type { PoolMembership, PoolRoster } from '../../records/kinds.js';
import { verifyPoolProof } from '../../pools/chain.js';

export class RosterState {
  readonly pool: string;
  #roster: Opened<PoolRoster>;
  #membership: Opened<PoolMembership>;
  #newest: Opened<PoolRoster>;

  constructor(
    private did: string,
    roster: Opened<PoolRoster>,
    membership: Opened<PoolMembership>,
  ) {
    this.pool = verifyPoolProof({ roster: roster.bytes, membership: membership.bytes }, did).pool;
    this.#roster = this.#newest = roster;
    this.#membership = membership;
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

  /** Whether the newest roster heard of no longer lists this member. */
  get removed(): boolean {
    return !this.#newest.record.members.some((m) => m.did === this.did);
  }

  /** Act on this member's own countersignature of a newer roster. Returns the roster replaced. */
  adopt(roster: Opened<PoolRoster>, membership: Opened<PoolMembership>): Opened<PoolRoster> {
    if (roster.signer !== this.pool) throw new C0Error('POOL_WRONG_POOL', `the roster is pool ${roster.signer}'s, not ${this.pool}'s`, { field: 'roster' });
    if (roster.record.seq <= this.#roster.record.seq) throw new C0Error('POOL_ROSTER_STALE', `roster seq ${roster.record.seq} is not newer than seq ${this.#roster.record.seq} in use`, { field: 'roster' });
    verifyPoolProof({ roster: roster.bytes, membership: membership.bytes }, this.did);
    const old = this.#roster;
    this.#roster = roster;
    this.#membership = membership;
    if (roster.record.seq >= this.#newest.record.seq) this.#newest = roster;
    return old;
  }

  /** Note a roster another member sent; true when it is newer than any heard before. */
  heard(roster: Opened<PoolRoster>): boolean {
    if (roster.signer !== this.pool || roster.record.seq <= this.#newest.record.seq) return false;
    this.#newest = roster;
    return true;
  }
}
