/** A pool of fixed keys for the pool tests: the pool key, three members, a roster and their memberships. */
import { seal, type Opened } from '../../../src/records/envelope.js';
import { didFromPublicKey } from '../../../src/records/did.js';
import { T, type Advert, type PoolMembership, type PoolProof, type PoolRoster } from '../../../src/records/kinds.js';
import { compareDids } from '../../../src/records/did.js';
import { signerFrom, NOW } from '../records/fixtures.js';
import type { Ed25519Signer } from '../../../src/records/ed25519.js';

export const poolKey = signerFrom(40);
export const POOL = didFromPublicKey(poolKey.publicKey);
export const memberKeys = [signerFrom(41), signerFrom(42), signerFrom(43)];
export const outsider = signerFrom(44);
export const didOf = (s: Ed25519Signer): string => didFromPublicKey(s.publicKey);
export const MEMBERS = memberKeys.map(didOf).sort(compareDids);
export const keyOf = (did: string): Ed25519Signer => [...memberKeys, outsider].find((k) => didOf(k) === did)!;

export function roster(opts: { seq?: number; members?: Array<{ did: string; weight?: number }>; signer?: Ed25519Signer; epochMs?: number; issuedAt?: number } = {}): Opened<PoolRoster> {
  const ms: Array<{ did: string; weight?: number }> = (opts.members ?? MEMBERS.map((did) => ({ did }))).slice().sort((a, b) => compareDids(a.did, b.did));
  return seal(
    T.poolRoster,
    {
      seq: opts.seq ?? 1,
      issuedAt: opts.issuedAt ?? NOW,
      expiresAt: (opts.issuedAt ?? NOW) + 30 * 24 * 3600_000,
      epochMs: opts.epochMs ?? 10_000,
      members: ms.map((m, i) => ({ did: m.did, hardware: { cpuCores: 4 + i, memoryMiB: 8192 }, weight: m.weight ?? i + 1 })),
    },
    opts.signer ?? poolKey,
  ) as Opened<PoolRoster>;
}

export function membership(r: Opened<PoolRoster>, member: Ed25519Signer, status: 'member' | 'left' = 'member'): Opened<PoolMembership> {
  return seal(T.poolMembership, { pool: r.signer, roster: r.address, seq: r.record.seq, status, signedAt: NOW }, member) as Opened<PoolMembership>;
}

export function proof(r: Opened<PoolRoster>, member: Ed25519Signer, status: 'member' | 'left' = 'member'): PoolProof {
  return { roster: r.bytes, membership: membership(r, member, status).bytes };
}

export function pooledAdvert(p: PoolProof, hw = { cpuCores: 12, memoryMiB: 24576 }): Advert {
  return { seq: 1, issuedAt: NOW, expiresAt: NOW + 3_600_000, workloads: ['infer.echo'], tier: 'community', hardware: hw, pool: p };
}
