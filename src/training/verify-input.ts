/**
 * The files `c0mpute train verify` reads, checked for their form before anything is verified (docs/training.md
 * "Verifying"): an epoch file (`epochs/<e>.json`) and an inclusion proof (`--proof`, as `--json` prints it). A file not
 * of that form is TRAIN_VERIFY_INPUT_INVALID naming the argument (exit 3: the wrong file was given), never an internal
 * error; what the records in them say is the verdict's (exit 1). Pure.
 */
import { C0Error } from '../errors.js';
import type { InclusionProof } from './merkle.js';

export interface EpochFile {
  envelope: string;
  witnesses: Array<{ envelope: string }>;
  leaves?: string[];
}

const HEX = /^([0-9a-f]{2})+$/;

function invalid(arg: string, file: string, why: string): C0Error {
  return new C0Error('TRAIN_VERIFY_INPUT_INVALID', `${arg} ${file}: ${why}`, { field: arg });
}

function json(text: string, arg: string, file: string, what: string): Record<string, unknown> {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw invalid(arg, file, `not JSON; expected ${what}`);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw invalid(arg, file, `not a JSON object; expected ${what}`);
  return v as Record<string, unknown>;
}

/** An epoch file: `envelope` (hex), `witnesses` (a list of {envelope: hex}), `leaves` (a list of addresses). */
export function parseEpochFile(text: string, file: string): EpochFile {
  const what = 'an epoch file (epochs/<e>.json: envelope, witnesses, leaves)';
  const j = json(text, 'epochFile', file, what);
  if (typeof j.envelope !== 'string' || !HEX.test(j.envelope)) throw invalid('epochFile', file, `envelope must be the epoch commitment in hex; not ${what}`);
  if (!Array.isArray(j.witnesses)) throw invalid('epochFile', file, `witnesses must be a list; not ${what}`);
  j.witnesses.forEach((w: unknown, i) => {
    if (typeof w !== 'object' || w === null || typeof (w as { envelope?: unknown }).envelope !== 'string' || !HEX.test((w as { envelope: string }).envelope)) throw invalid('epochFile', file, `witnesses[${i}].envelope must be a countersignature in hex`);
  });
  if (j.leaves !== undefined && (!Array.isArray(j.leaves) || j.leaves.some((l) => typeof l !== 'string'))) throw invalid('epochFile', file, 'leaves must be a list of addresses');
  return { envelope: j.envelope, witnesses: j.witnesses as Array<{ envelope: string }>, ...(j.leaves ? { leaves: j.leaves as string[] } : {}) };
}

/** An inclusion proof: {leaf, index, leaves, path: [{side: L|R, hash}]}. */
export function parseProof(text: string, file: string): InclusionProof {
  const what = 'an inclusion proof ({leaf, index, leaves, path}, as train verify --json prints it)';
  const j = json(text, 'proof', file, what);
  if (typeof j.leaf !== 'string') throw invalid('proof', file, `leaf must be an address; not ${what}`);
  if (!Number.isSafeInteger(j.index) || !Number.isSafeInteger(j.leaves)) throw invalid('proof', file, `index and leaves must be integers; not ${what}`);
  if (!Array.isArray(j.path)) throw invalid('proof', file, `path must be a list; not ${what}`);
  j.path.forEach((s: unknown, i) => {
    const st = s as { side?: unknown; hash?: unknown } | null;
    if (typeof st !== 'object' || st === null || (st.side !== 'L' && st.side !== 'R') || typeof st.hash !== 'string') throw invalid('proof', file, `path[${i}] must be {side: L or R, hash}`);
  });
  return j as unknown as InclusionProof;
}

/** A step commitment is an envelope (steps/<n>.cbor); a JSON file there is another argument's file (an epoch file, a proof). */
export function checkStepFile(bytes: Uint8Array, file: string): void {
  let k = 0;
  while (k < bytes.length && (bytes[k] === 0x20 || bytes[k] === 0x0a || bytes[k] === 0x0d || bytes[k] === 0x09)) k++;
  if (bytes[k] === 0x7b || bytes[k] === 0x5b) throw invalid('stepCommitment', file, 'a JSON file (an epoch file or a proof?), not a step commitment (steps/<n>.cbor); the arguments are <runBundle> <epochFile> <stepCommitment>');
}
