/**
 * A pooled provider set up for the end-to-end tests the way an operator does it
 * (docs/pools.md "Operating it"): `c0mpute pool-provider init` makes the pool's
 * key, `roster` signs the members, and each member countersigns with `join`.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { c0mpute, type Cluster } from './node-helpers.js';

/** A roster line: member i of the cluster gets `cpuCores: 4 + i`. */
export interface RosterMember {
  did: string;
  index: number;
  weight: number;
}

/** Sign a roster of `members` with the pool key in `poolDir`, written to `<root>/<out>`. */
export async function signRoster(c: Cluster, poolDir: string, members: RosterMember[], o: { out: string; epochMs: number; seq?: number }): Promise<void> {
  const yamlPath = join(c.root, o.out.replace(/\.cose$/, '.members.yaml'));
  writeFileSync(yamlPath, `members:\n${members.map((m) => `  - did: ${m.did}\n    weight: ${m.weight}\n    hardware: { cpuCores: ${4 + m.index}, memoryMiB: 16384 }\n`).join('')}`);
  const args = ['pool-provider', 'roster', '--pool-dir', poolDir, '--members', yamlPath, '--out', join(c.root, o.out), '--epoch-ms', String(o.epochMs), ...(o.seq === undefined ? [] : ['--seq', String(o.seq)])];
  const r = await c0mpute(poolDir, args);
  assert.equal(r.code, 0, r.err);
}

/** A member countersigns `<root>/<roster>` into `<dir>/<out>`; returns the command's output. */
export async function joinPool(c: Cluster, dir: string, roster = 'roster.cose', out = 'membership.cose'): Promise<string> {
  const j = await c0mpute(dir, ['pool-provider', 'join', '--roster', join(c.root, roster), '--out', join(dir, out)]);
  assert.equal(j.code, 0, j.err);
  return j.out;
}

/**
 * A pool of the cluster's data dirs `dirs` (member i weighs `weight(i)`): the key
 * in `<root>/poolkey`, roster seq 1 in `<root>/roster.cose`, each member's
 * countersignature in its own `membership.cose`.
 */
export async function createPool(c: Cluster, dirs: Array<{ dir: string; did: string }>, o: { epochMs: number; weight?: (i: number) => number }): Promise<{ pool: string; poolDir: string }> {
  const poolDir = join(c.root, 'poolkey');
  const init = await c0mpute(poolDir, ['pool-provider', 'init', '--pool-dir', poolDir]);
  assert.equal(init.code, 0, init.err);
  const pool = /pool (did:key:\S+)/.exec(init.out)![1]!;
  await signRoster(c, poolDir, dirs.map((d, i) => ({ did: d.did, index: i, weight: o.weight?.(i) ?? 1 })), { out: 'roster.cose', epochMs: o.epochMs });
  // Each member countersigns its own file: the joins are independent, so they run together.
  await Promise.all(dirs.map((d) => joinPool(c, d.dir)));
  return { pool, poolDir };
}
