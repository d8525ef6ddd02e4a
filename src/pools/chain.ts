/**
 * The pool chain (docs/pools.md "The chain: roster → member → record";
 * issue #13 "The pool"): a record a member signs for its pool carries the
 * pool's roster (signed by the pool's key) and the member's countersignature
 * of its place on that roster. Any verifier checks the chain from the record
 * alone: roster opens and is signed by the pool → membership opens, is signed
 * by the record's signer, names that pool and that roster, status `member` →
 * the signer is on the roster. The result is the pool's DID, which the market
 * then treats as the provider (one provider, one reputation).
 *
 * Pure apart from the hook it installs in src/records/kinds.ts at load, so every
 * `open()` of an advert or receipt carrying a proof runs this check.
 */
import { C0Error } from '../errors.js';
import { open, type Opened } from '../records/envelope.js';
import { setPoolProofCheck, T, type PoolMember, type PoolMembership, type PoolProof, type PoolRoster } from '../records/kinds.js';

export interface VerifiedChain {
  pool: string;
  roster: Opened<PoolRoster>;
  membership: Opened<PoolMembership>;
  member: PoolMember;
}

function bad(code: string, msg: string): never {
  throw new C0Error(code, `pool: ${msg}`, { field: 'pool' });
}

/**
 * Check `proof` for a record signed by `signer`. Stable codes:
 * POOL_ROSTER_INVALID (does not open as a roster: forged, tampered, wrong type),
 * POOL_MEMBERSHIP_INVALID, POOL_MEMBERSHIP_NOT_SIGNER, POOL_MEMBERSHIP_WRONG_ROSTER,
 * POOL_MEMBER_LEFT, POOL_NOT_MEMBER.
 */
export function verifyPoolProof(proof: PoolProof, signer: string, status: PoolMembership['status'] = 'member'): VerifiedChain {
  let roster: Opened<PoolRoster>;
  let membership: Opened<PoolMembership>;
  try {
    roster = open(proof.roster, T.poolRoster) as Opened<PoolRoster>;
  } catch (e) {
    throw new C0Error('POOL_ROSTER_INVALID', `pool.roster: not a valid pool roster (${(e as Error).message})`, { field: 'pool.roster', cause: e });
  }
  try {
    membership = open(proof.membership, T.poolMembership) as Opened<PoolMembership>;
  } catch (e) {
    throw new C0Error('POOL_MEMBERSHIP_INVALID', `pool.membership: not a valid membership (${(e as Error).message})`, { field: 'pool.membership', cause: e });
  }
  if (membership.signer !== signer) bad('POOL_MEMBERSHIP_NOT_SIGNER', 'the membership is not the record signer’s own');
  if (membership.record.pool !== roster.signer || membership.record.roster !== roster.address || membership.record.seq !== roster.record.seq) {
    bad('POOL_MEMBERSHIP_WRONG_ROSTER', 'the membership countersigns another roster or pool');
  }
  // `status: 'left'` checks a leaving member's own record of it (docs/pools.md "A member leaves a running pool").
  if (membership.record.status !== status) bad(status === 'member' ? 'POOL_MEMBER_LEFT' : 'POOL_MEMBERSHIP_NOT_LEFT', status === 'member' ? 'the signer has left this pool' : 'the membership does not say the signer left');
  const member = roster.record.members.find((m) => m.did === signer);
  if (!member) bad('POOL_NOT_MEMBER', 'the signer is not on the pool’s roster');
  return { pool: roster.signer, roster, membership, member };
}

setPoolProofCheck((proof, signer) => verifyPoolProof(proof, signer).pool);

/** The provider a market entry stands for: the pool's DID for a pooled advert or receipt, else the signer. */
export function providerOf(rec: Opened<{ pool?: PoolProof }>): string {
  if (!rec.record.pool) return rec.signer;
  // verified once per object (chainOf: scoring asks on every decision); one that does not verify throws its code
  return chainOf(rec)?.pool ?? verifyPoolProof(rec.record.pool, rec.signer).pool;
}

/**
 * The chain of a pooled record, verified once per object (its roster, its signer's membership and roster entry);
 * undefined for a record that is not pooled, or one whose chain does not verify.
 */
export function chainOf(rec: Opened<{ pool?: PoolProof }>): VerifiedChain | undefined {
  if (!rec.record.pool) return undefined;
  if (chains.has(rec)) return chains.get(rec);
  let c: VerifiedChain | undefined;
  try {
    c = verifyPoolProof(rec.record.pool, rec.signer);
  } catch {
    c = undefined;
  }
  chains.set(rec, c);
  return c;
}
const chains = new WeakMap<object, VerifiedChain | undefined>();

/**
 * When the roster a pooled record's chain carries expires (chainOf); Infinity for a record that is not pooled,
 * -Infinity for one whose chain does not verify (no live roster can be shown for it).
 */
export function rosterExpiresAt(rec: Opened<{ pool?: PoolProof }>): number {
  if (!rec.record.pool) return Infinity;
  return chainOf(rec)?.roster.record.expiresAt ?? -Infinity;
}

/**
 * The `provider` a receipt from the signer of `advert` must name: the pool's DID
 * when that advert is a pooled one (its chain verified on open), else the DID itself.
 */
export function receiptProviderFor(did: string, advert: Opened<{ pool?: PoolProof }> | undefined): string {
  return advert?.record.pool && advert.signer === did ? providerOf(advert) : did;
}

/** Pools a RosterView remembers, by default (the advert cap's default: one pool per advert held at most). */
export const ROSTER_VIEW_MAX = 10_000;

/**
 * The newest roster seen per pool (a verifier's state: the record alone cannot
 * say that a newer roster dropped a member). A roster older than the newest
 * known is stale: POOL_ROSTER_STALE; an expired one POOL_ROSTER_EXPIRED.
 *
 * Bounded: anyone can make a pool, so past `max` pools the one least recently
 * checked or learned is forgotten. A live pool's members re-advertise every
 * few minutes and so stay recent; forgetting one would only let an older
 * roster of it pass until its newest is seen again, and new advertisers are
 * rate-limited (flood-limits.ts), so another key cannot push a live pool out
 * between two of its adverts.
 */
export class RosterView {
  #newest = new Map<string, Opened<PoolRoster>>();
  readonly #max: number;

  constructor(max = ROSTER_VIEW_MAX) {
    this.#max = Math.max(1, max);
  }

  get size(): number {
    return this.#newest.size;
  }

  /** Learn a roster (a newer seq replaces). Returns whether it is now the newest. */
  learn(r: Opened<PoolRoster>): boolean {
    const cur = this.#newest.get(r.signer);
    const newer = !cur || cur.record.seq < r.record.seq;
    // either way the pool was just seen: it moves to the recent end
    this.#newest.delete(r.signer);
    this.#newest.set(r.signer, newer ? r : cur!);
    if (this.#newest.size > this.#max) this.#newest.delete(this.#newest.keys().next().value!);
    return newer;
  }

  newest(pool: string): Opened<PoolRoster> | undefined {
    return this.#newest.get(pool);
  }

  /** Verify a proof against the chain and against what this view knows (and learn its roster). */
  check(proof: PoolProof, signer: string, now: number, verified?: VerifiedChain): VerifiedChain {
    // `verified`: the record's chain as chainOf cached it (a held advert checked again on each offer citing it)
    const v = verified ?? verifyPoolProof(proof, signer);
    if (now >= v.roster.record.expiresAt) throw new C0Error('POOL_ROSTER_EXPIRED', 'pool: the roster has expired', { field: 'pool.roster' });
    this.learn(v.roster);
    const newest = this.#newest.get(v.pool)!;
    if (newest.record.seq > v.roster.record.seq) throw new C0Error('POOL_ROSTER_STALE', `pool: roster seq ${v.roster.record.seq} was replaced by seq ${newest.record.seq}`, { field: 'pool.roster' });
    return v;
  }
}
