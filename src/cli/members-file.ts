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
import { printable } from '../util/text.js';

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
  // A key the roster has no place for is a typo (`wieght: 5` read as weight 1 changed the pay split, silently): refused, named.
  unknownKeys(doc, TOP, '', path, shape);
  doc.members.forEach((m, i) => {
    if (typeof m !== 'object' || m === null || typeof (m as { did?: unknown }).did !== 'string') throw new C0Error('POOL_MEMBERS_FILE_INVALID', `${path}: members[${i}] needs a did (${shape})`, { field: `members[${i}].did` });
    unknownKeys(m, MEMBER, `members[${i}]`, path, shape);
    const hw = (m as { hardware?: unknown }).hardware;
    if (typeof hw === 'object' && hw !== null && !Array.isArray(hw)) {
      unknownKeys(hw, HARDWARE, `members[${i}].hardware`, path, shape);
      const gpus = (hw as { gpus?: unknown }).gpus;
      if (Array.isArray(gpus)) gpus.forEach((g, k) => typeof g === 'object' && g !== null && unknownKeys(g, GPU, `members[${i}].hardware.gpus[${k}]`, path, shape));
    }
  });
  return (doc.members as PoolMember[]).map((m) => ({ did: m.did, weight: m.weight ?? 1, hardware: m.hardware })).sort((a, b) => compareDids(a.did, b.did));
}

const TOP = ['members'];
const MEMBER = ['did', 'weight', 'hardware'];
const HARDWARE = ['cpuCores', 'memoryMiB', 'gpus'];
const GPU = ['model', 'vramMiB', 'features', 'count'];

/** POOL_MEMBERS_FILE_INVALID naming the first key of `o` not in `known` (its path in the file: `members[0].wieght`). */
function unknownKeys(o: object, known: readonly string[], at: string, path: string, shape: string): void {
  const key = Object.keys(o).find((k) => !known.includes(k));
  if (key === undefined) return;
  const bad = printable(key.slice(0, 60));
  const field = at ? `${at}.${bad}` : bad;
  throw new C0Error('POOL_MEMBERS_FILE_INVALID', `${path}: unknown key ${field} (${at ? `${at} takes ${known.join(', ')}` : `the file takes ${known.join(', ')}`}; ${shape}); nothing written`, { field });
}
