/**
 * The members file `c0mpute pool-provider roster --members` reads (docs/pools.md "Operating a pool"): YAML,
 * `members: [{did, weight, hardware: {cpuCores, memoryMiB, gpus?}}]`, in DID order once read. Its own module, loaded
 * when that command runs, so the CLI's start does not load the YAML parser (test/e2e/cli-lazy.test.ts).
 */
import { C0Error } from '../errors.js';
import { compareDids } from '../records/did.js';
import type { PoolMember } from '../records/kinds.js';
import { readInput } from './context.js';
import { parsePlainYaml } from '../util/yaml.js';

export function readMembers(path: string): PoolMember[] {
  const shape = '`members: [{did, weight, hardware: {cpuCores, memoryMiB, gpus?}}]`';
  const text = Buffer.from(readInput(path)).toString('utf8');
  let doc: { members?: unknown } | null;
  try {
    doc = parsePlainYaml(text) as { members?: unknown } | null;
  } catch (e) {
    throw new C0Error('POOL_MEMBERS_FILE_INVALID', `${path} is not valid YAML: ${(e as Error).message.split('\n')[0]!.replace(/:$/, '')}`, { field: 'members' });
  }
  if (!doc || !Array.isArray(doc.members)) throw new C0Error('POOL_MEMBERS_FILE_INVALID', `${path}: expected ${shape}`, { field: 'members' });
  doc.members.forEach((m, i) => {
    if (typeof m !== 'object' || m === null || typeof (m as { did?: unknown }).did !== 'string') throw new C0Error('POOL_MEMBERS_FILE_INVALID', `${path}: members[${i}] needs a did (${shape})`, { field: `members[${i}].did` });
  });
  return (doc.members as PoolMember[]).map((m) => ({ did: m.did, weight: m.weight ?? 1, hardware: m.hardware })).sort((a, b) => compareDids(a.did, b.did));
}
