/**
 * Deterministic decisions of a pool (docs/pools.md "Member choice" and
 * "Coordinator election"; spec/compute-pool.md "How the coordinator decides").
 * Pure: the clock is a parameter.
 *
 * - Member choice, exactly the spec's: `active[u64(last 8 bytes of keccak256(job id)) mod active.length]`,
 *   the job id being the 32 raw bytes of the job's content address, the u64 read
 *   big-endian, and `active` the members that are live, not left, and able to run
 *   the job, in DID order (the byte order of the DID strings).
 * - Epoch: floor(t / epochMs), epochMs from the roster.
 * - Coordinator of an epoch: among the live members, the one with the smallest
 *   keccak256(utf8("c0mpute-pool-coordinator/1|" + pool + "|" + epoch + "|" + member))
 *   (rendezvous hashing): every copy agrees without talking, a member's loss
 *   moves only its own epochs, and the ranking gives the order of take-over.
 */
import { keccak_256 } from '@noble/hashes/sha3.js';
import { C0Error } from '../errors.js';
import { addressToBytes } from '../records/address.js';
import { compareDids } from '../records/did.js';
import type { Gpu, Hardware, Requirements } from '../records/kinds.js';

/** The digest member choice reads: keccak256 of the job address's 32 raw bytes. */
export function jobDigest(job: string): Uint8Array {
  return keccak_256(addressToBytes(job, 'job'));
}

/** The u64 of the digest's last 8 bytes (big-endian). */
export function jobIndexValue(job: string): bigint {
  const d = jobDigest(job);
  return new DataView(d.buffer, d.byteOffset + 24, 8).getBigUint64(0, false);
}

/** Canonical order of an active list: DID order. */
export function canonicalOrder(dids: Iterable<string>): string[] {
  return [...new Set(dids)].sort(compareDids);
}

/** `active[u64(keccak256(job)[24..32]) mod active.length]`, active put in canonical order first. POOL_NO_ACTIVE_MEMBER when empty. */
export function selectMember(job: string, active: Iterable<string>): string {
  const list = canonicalOrder(active);
  if (!list.length) throw new C0Error('POOL_NO_ACTIVE_MEMBER', 'no active member of the pool can run this job');
  return list[Number(jobIndexValue(job) % BigInt(list.length))]!;
}

export function epochOf(t: number, epochMs: number): number {
  return Math.floor(t / epochMs);
}

function electionHash(pool: string, epoch: number, member: string): string {
  return Buffer.from(keccak_256(new TextEncoder().encode(`c0mpute-pool-coordinator/1|${pool}|${epoch}|${member}`))).toString('hex');
}

/** The live members ranked for an epoch: [0] is the elected coordinator, [1] takes over if it is seen gone, and so on. */
export function coordinatorRanking(pool: string, epoch: number, live: Iterable<string>): string[] {
  return canonicalOrder(live)
    .map((m) => ({ m, h: electionHash(pool, epoch, m) }))
    .sort((a, b) => (a.h < b.h ? -1 : a.h > b.h ? 1 : compareDids(a.m, b.m)))
    .map((x) => x.m);
}

export function electCoordinator(pool: string, epoch: number, live: Iterable<string>): string | undefined {
  return coordinatorRanking(pool, epoch, live)[0];
}

/** Whether one member's hardware meets a job's hardware requirements (the member choice's "can run the job"). */
export function fits(hw: Hardware, req: Requirements): boolean {
  if (req.cpuCores !== undefined && hw.cpuCores < req.cpuCores) return false;
  if (req.memoryMiB !== undefined && hw.memoryMiB < req.memoryMiB) return false;
  const g = req.gpu;
  if (g) {
    const n = (hw.gpus ?? []).filter((x) => x.vramMiB >= g.vramMiB && (g.features ?? []).every((f) => x.features?.includes(f))).reduce((a, x) => a + x.count, 0);
    if (n < g.count) return false;
  }
  return true;
}

/**
 * The hardware a pool advertises: per dimension what its largest member has
 * (cores, memory; each distinct GPU entry at the largest count one member holds),
 * since a job runs on one member. Deterministic order.
 */
export function poolHardware(members: Array<{ hardware: Hardware }>): Hardware {
  const gpus = new Map<string, Gpu>();
  for (const m of members) {
    for (const g of m.hardware.gpus ?? []) {
      const k = JSON.stringify([g.model, g.vramMiB, g.features ?? []]);
      const cur = gpus.get(k);
      if (!cur || cur.count < g.count) gpus.set(k, g);
    }
  }
  const list = [...gpus.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, g]) => g).slice(0, 32);
  return {
    ...(list.length ? { gpus: list } : {}),
    cpuCores: Math.max(...members.map((m) => m.hardware.cpuCores)),
    memoryMiB: Math.max(...members.map((m) => m.hardware.memoryMiB)),
  };
}
