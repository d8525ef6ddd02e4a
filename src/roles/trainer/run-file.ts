/**
 * Run files (docs/training.md "Starting a run"): `run.yaml` as an operator
 * writes it, and the run bundle `c0mpute train start` writes from it (the
 * signed `c0mpute.train-run/1` envelope plus the members' addresses, which
 * are not part of the signed spec). Bad input is a C0Error TRAIN_RUN_FILE with
 * the field named.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { z } from 'zod';
import { C0Error } from '../../errors.js';
import type { Signer } from '../../records/ed25519.js';
import { open, seal, type Opened } from '../../records/envelope.js';
import { iris } from '../../training/data.js';
import { accuracy, initWeights, weightsBytes } from '../../training/model.js';
import { addressOf, referenceRun } from '../../training/engine.js';
import { TRAIN_T, type TrainRun } from '../../training/record-kinds.js';
import { parsePlainYaml } from '../../util/yaml.js';
import { isMultiaddr } from '../../net/addr-text.js';
import { checkMemberBounds } from './run-bounds.js';
import { osReason } from '../../util/os-reason.js';

/**
 * A member's address: a multiaddr it listens on, without `/p2p` (its DID gives the peer; the worker adds it). Checked
 * at `train start` and when a bundle is read, so a bad one is TRAIN_RUN_FILE naming the member, not an internal error
 * when the worker listens or dials.
 */
const ADDR_HINT = 'a multiaddr to listen on, e.g. /ip4/10.0.0.1/tcp/4101 (no /p2p: the DID names the peer)';
function isMemberAddr(s: string): boolean {
  return isMultiaddr(s) && !/\/p2p(\/|$)/.test(s);
}

/** A zod issue's path as it reads in run.yaml: members[0].addr. */
function fieldOf(path: ReadonlyArray<PropertyKey>): string {
  return path.map((k, i) => (typeof k === 'number' ? `[${k}]` : `${i ? '.' : ''}${String(k)}`)).join('');
}

const runYaml = z
  .object({
    name: z.string(),
    model: z.object({ layers: z.array(z.number().int()).min(2).max(8) }).strict(),
    seed: z.number().int().min(0).max(0xffffffff).default(1),
    members: z.array(z.object({ did: z.string(), addr: z.string().refine(isMemberAddr, ADDR_HINT) }).strict()).min(1).max(64),
    witnesses: z.array(z.string()).min(1, 'name at least one member, or leave witnesses out (every other member witnesses)').optional(),
    batch: z.number().int().min(1).default(8),
    stepsPerEpoch: z.number().int().min(1).default(10),
    epochs: z.number().int().min(1).default(3),
    lr: z.union([z.string(), z.number()]).transform(String).default('0.3'),
    feedback: z.boolean().default(true),
    onFailure: z.enum(['continue', 'stop']).default('continue'),
    timeoutMs: z.number().int().min(100).default(5_000),
  })
  .strict();

export interface RunBundle {
  run: Opened<TrainRun>;
  addrs: Record<string, string>;
}

export function buildRun(yamlText: string, signer: Signer, now: number): { bundle: RunBundle; json: string } {
  let raw: unknown;
  try {
    raw = parsePlainYaml(yamlText);
  } catch (e) {
    throw new C0Error('TRAIN_RUN_FILE', `run file is not YAML: ${(e as Error).message}`);
  }
  const p = runYaml.safeParse(raw);
  if (!p.success) {
    const i = p.error.issues[0]!;
    const field = fieldOf(i.path);
    throw new C0Error('TRAIN_RUN_FILE', `${field || 'run'}: ${i.message}`, { field });
  }
  const y = p.data;
  const members = [...new Set(y.members.map((m) => m.did))].sort();
  if (members.length !== y.members.length) throw new C0Error('TRAIN_RUN_FILE', 'members: a DID is listed twice', { field: 'members' });
  checkWitnesses(y.witnesses, members, '');
  const shape = { layers: y.model.layers };
  // before the initial weights are made (84 M of them took 670 MB): the bounds a member job keeps
  runBounds({ model: { arch: 'mlp', layers: y.model.layers }, batch: y.batch, epochs: y.epochs, stepsPerEpoch: y.stepsPerEpoch }, '');
  const rec: TrainRun = {
    name: y.name,
    model: { arch: 'mlp', layers: y.model.layers },
    data: { set: 'iris', hash: iris().hash },
    init: { seed: y.seed, weights: addressOf(weightsBytes(initWeights(shape, y.seed))) },
    members,
    ...(y.witnesses ? { witnesses: [...new Set(y.witnesses)].sort() } : {}),
    batch: y.batch,
    stepsPerEpoch: y.stepsPerEpoch,
    epochs: y.epochs,
    lr: y.lr,
    quant: { bits: 8, feedback: y.feedback ? 'yes' : 'no' },
    onFailure: y.onFailure,
    timeoutMs: y.timeoutMs,
    createdAt: now,
  };
  if (y.model.layers[0] !== 4 || y.model.layers[y.model.layers.length - 1] !== 3) throw new C0Error('TRAIN_RUN_FILE', 'model.layers: Iris needs 4 inputs and 3 classes', { field: 'model.layers' });
  let env;
  try {
    env = seal(TRAIN_T.run, rec as never, signer) as Opened<TrainRun>;
  } catch (e) {
    if (e instanceof C0Error) throw new C0Error('TRAIN_RUN_FILE', `run: ${e.message}`, { field: e.field ?? 'run' });
    throw e;
  }
  const addrs = Object.fromEntries(y.members.map((m) => [m.did, m.addr]));
  const bundle = { run: env, addrs };
  return { bundle, json: JSON.stringify({ run: Buffer.from(env.bytes).toString('hex'), addrs }, null, 2) + '\n' };
}

/**
 * Witnesses named in a run must be its members (docs/training.md "Epoch roots": a non-member does not hold the step
 * commitments to recompute the root). Before, a run naming others was signed and ran to `done` with every epoch
 * witnessed by nobody, so none verified (TRAIN_VERIFY_NO_WITNESS). TRAIN_RUN_FILE naming witnesses[i].
 */
function checkWitnesses(witnesses: readonly string[] | undefined, members: readonly string[], where: string): void {
  (witnesses ?? []).forEach((w, i) => {
    if (!members.includes(w)) throw new C0Error('TRAIN_RUN_FILE', `${where}witnesses[${i}]: ${w.slice(0, 120)} is not a member of the run; witnesses must be members`, { field: `witnesses[${i}]` });
  });
}

/**
 * A run within the bounds a member job keeps (run-bounds.ts: weights, batch × widest layer, epochs × steps), else
 * TRAIN_RUN_FILE naming the field: the same run is bought as member jobs or run by `train join`, and past them a worker
 * holds hundreds of MB before the first step and `train reference` does not end.
 */
function runBounds(run: Parameters<typeof checkMemberBounds>[0], where: string): void {
  try {
    checkMemberBounds(run);
  } catch (e) {
    if (e instanceof C0Error) throw new C0Error('TRAIN_RUN_FILE', `${where}${e.message}`, { field: e.field ?? 'run' });
    throw e;
  }
}

export function readRunBundle(path: string): RunBundle {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    // a file argument that cannot be read is INPUT_UNREADABLE, as everywhere (README); TRAIN_RUN_FILE is for its content
    const code = (e as NodeJS.ErrnoException).code;
    throw new C0Error('INPUT_UNREADABLE', `cannot read run bundle ${path}: ${code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'a directory, not a file' : osReason(e)}`, { field: 'runBundle' });
  }
  let j: { run?: unknown; addrs?: unknown };
  try {
    j = JSON.parse(text) as typeof j;
  } catch (e) {
    throw new C0Error('TRAIN_RUN_FILE', `${path}: not a run bundle (not JSON: ${(e as Error).message.slice(0, 80)})`);
  }
  if (typeof j.run !== 'string' || !/^([0-9a-f]{2})+$/.test(j.run) || typeof j.addrs !== 'object' || j.addrs === null) throw new C0Error('TRAIN_RUN_FILE', `${path}: not a run bundle (run, addrs)`);
  const run = open(new Uint8Array(Buffer.from(j.run, 'hex')), TRAIN_T.run) as Opened<TrainRun>;
  checkWitnesses(run.record.witnesses, run.record.members, `${path}: `);
  runBounds(run.record, `${path}: `);
  for (const [did, a] of Object.entries(j.addrs)) {
    if (typeof a !== 'string' || !isMemberAddr(a)) throw new C0Error('TRAIN_RUN_FILE', `${path}: addrs.${did.slice(0, 80)}: ${JSON.stringify(a)?.slice(0, 80)} is not ${ADDR_HINT}`, { field: `addrs.${did}` });
  }
  return { run, addrs: j.addrs as Record<string, string> };
}

export function writeRunBundle(path: string, json: string): void {
  writeFileSync(path, json);
}

/** The single-process run of a run spec (all members, no failures). */
export function referenceFor(rec: TrainRun): { weights: string; accuracy: number; losses: number[] } {
  const shape = { layers: rec.model.layers };
  const d = iris();
  const r = referenceRun({ shape, lr: Number(rec.lr), batch: rec.batch, feedback: rec.quant.feedback === 'yes' }, d.train, initWeights(shape, rec.init.seed), rec.members.length, rec.epochs * rec.stepsPerEpoch);
  return { weights: addressOf(weightsBytes(r.w)), accuracy: accuracy(shape, r.w, d.test.x, d.test.y), losses: r.loss };
}

