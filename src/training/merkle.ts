/**
 * Epoch Merkle roots and inclusion proofs (docs/training.md "Epoch roots";
 * spec/compute-pool.md, the worker's epoch aggregation). Leaves are the
 * content addresses of step commitments, ordered by (step, worker DID);
 * leaf hash = SHA-256(0x00 ‖ address), node hash = SHA-256(0x01 ‖ left ‖ right)
 * (domain-separated, so a leaf cannot pose as a node), and an odd node is
 * promoted to the next level unchanged (no duplication, so no two leaf lists
 * share a root). Pure.
 */
import { C0Error } from '../errors.js';
import { addressToBytes, bytesToAddress, sha256 } from '../records/address.js';
import { compareBytes } from '../records/cbor.js';

export interface ProofStep {
  /** The sibling is on this side of the running hash. */
  side: 'L' | 'R';
  hash: string;
}

export interface InclusionProof {
  leaf: string;
  index: number;
  leaves: number;
  path: ProofStep[];
}

function h(prefix: number, ...parts: Uint8Array[]): Uint8Array {
  const buf = new Uint8Array(1 + parts.reduce((s, p) => s + p.length, 0));
  buf[0] = prefix;
  let off = 1;
  for (const p of parts) {
    buf.set(p, off);
    off += p.length;
  }
  return sha256(buf);
}

export const leafHash = (addr: string): Uint8Array => h(0, addressToBytes(addr, 'leaf'));
const nodeHash = (l: Uint8Array, r: Uint8Array): Uint8Array => h(1, l, r);

function levels(leaves: string[]): Uint8Array[][] {
  if (leaves.length === 0) throw new C0Error('TRAIN_MERKLE_EMPTY', 'a root needs at least one leaf');
  const out: Uint8Array[][] = [leaves.map(leafHash)];
  while (out[out.length - 1]!.length > 1) {
    const cur = out[out.length - 1]!;
    const next: Uint8Array[] = [];
    for (let i = 0; i < cur.length; i += 2) next.push(i + 1 < cur.length ? nodeHash(cur[i]!, cur[i + 1]!) : cur[i]!);
    out.push(next);
  }
  return out;
}

export function merkleRoot(leaves: string[]): string {
  const lv = levels(leaves);
  return bytesToAddress(lv[lv.length - 1]![0]!);
}

export function merkleProof(leaves: string[], index: number): InclusionProof {
  if (!Number.isInteger(index) || index < 0 || index >= leaves.length) throw new C0Error('TRAIN_PROOF_INDEX', `no leaf ${index}`);
  const lv = levels(leaves);
  const path: ProofStep[] = [];
  let i = index;
  for (let l = 0; l + 1 < lv.length; l++) {
    const cur = lv[l]!;
    const sib = i ^ 1;
    if (sib < cur.length) path.push({ side: sib < i ? 'L' : 'R', hash: bytesToAddress(cur[sib]!) });
    i >>= 1;
  }
  return { leaf: leaves[index]!, index, leaves: leaves.length, path };
}

/** Check `proof` against `root`; throws TRAIN_PROOF_INVALID when it does not lead there. */
export function verifyProof(proof: InclusionProof, root: string): void {
  // Recompute which levels have a sibling from index and leaf count, so a path cannot be shortened or reordered.
  let i = proof.index;
  let n = proof.leaves;
  let acc = leafHash(proof.leaf);
  let k = 0;
  if (!(Number.isInteger(i) && i >= 0 && i < n)) throw new C0Error('TRAIN_PROOF_INVALID', 'index outside the leaf count');
  while (n > 1) {
    const sib = i ^ 1;
    if (sib < n) {
      const step = proof.path[k++];
      if (!step) throw new C0Error('TRAIN_PROOF_INVALID', 'proof path too short');
      const want: 'L' | 'R' = sib < i ? 'L' : 'R';
      if (step.side !== want) throw new C0Error('TRAIN_PROOF_INVALID', `proof step ${k - 1} on the wrong side`);
      const s = addressToBytes(step.hash, `path[${k - 1}]`);
      acc = want === 'L' ? nodeHash(s, acc) : nodeHash(acc, s);
    }
    i >>= 1;
    n = Math.ceil(n / 2);
  }
  if (k !== proof.path.length) throw new C0Error('TRAIN_PROOF_INVALID', 'proof path too long');
  if (compareBytes(acc, addressToBytes(root, 'root')) !== 0) throw new C0Error('TRAIN_PROOF_INVALID', 'the proof does not lead to the root');
}
