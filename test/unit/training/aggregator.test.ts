import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import { Ed25519Signer, didFromPublicKey, seal } from '../../../src/records/index.js';
import { EpochAggregator, electCoordinator } from '../../../src/training/aggregator.js';
import { merkleProof, merkleRoot, verifyProof } from '../../../src/training/merkle.js';
import { TRAIN_T, type TrainStep } from '../../../src/training/record-kinds.js';

const keys = [0, 1, 2, 3].map(() => Ed25519Signer.generate());
const dids = keys.map((k) => didFromPublicKey(k.publicKey));
const members = dids.slice(0, 3).sort();
const outsider = keys[3]!;
const signerOf = (did: string) => keys[dids.indexOf(did)]!;
const RUN = 'sha256:' + 'ab'.repeat(32);
const W = (step: number) => 'sha256:' + step.toString(16).padStart(64, '0');

function commit(k: Ed25519Signer, step: number, o: Partial<TrainStep> = {}): Uint8Array {
  const rec: TrainStep = { run: RUN, view: 0, step, grad: 'sha256:' + 'cd'.repeat(32), weights: W(step), lossMicro: 1000, signedAt: 1_800_000_000_000, ...o };
  return seal(TRAIN_T.step, rec as never, k).bytes;
}

const codeOf = (r: ReturnType<EpochAggregator['offer']>) => (r.counted ? 'counted' : 'held' in r ? 'held' : r.ignored.code);

describe('EpochAggregator', () => {
  const scope = { run: RUN, epoch: 0, view: 0, fromStep: 0, toStep: 1, members };

  it('counts members once per (worker, step); ignores unregistered, duplicate, out-of-epoch, forged and garbage', () => {
    const agg = new EpochAggregator(scope, W);
    for (const m of members) for (const st of [0, 1]) assert.equal(codeOf(agg.offer(commit(signerOf(m), st))), 'counted');
    assert.equal(codeOf(agg.offer(commit(outsider, 0))), 'TRAIN_COMMIT_UNREGISTERED');
    assert.equal(codeOf(agg.offer(commit(signerOf(members[0]!), 0, { lossMicro: 5 }))), 'TRAIN_COMMIT_DUPLICATE');
    assert.equal(codeOf(agg.offer(commit(signerOf(members[0]!), 2))), 'TRAIN_COMMIT_OUT_OF_EPOCH');
    assert.equal(codeOf(agg.offer(commit(signerOf(members[0]!), 1, { view: 1 }))), 'TRAIN_COMMIT_OUT_OF_EPOCH');
    assert.equal(codeOf(agg.offer(commit(signerOf(members[0]!), 1, { run: 'sha256:' + '00'.repeat(32) }))), 'TRAIN_COMMIT_WRONG_RUN');
    assert.equal(codeOf(agg.offer(new Uint8Array([1, 2, 3]))), 'TRAIN_COMMIT_INVALID');
    const { root, leaves } = agg.finalise();
    assert.equal(leaves.length, 6);
    assert.equal(root, merkleRoot(leaves));
    assert.equal(agg.ignored.length, 6);
  });

  it('a forged commitment (steps never done) is not counted, and a root is never finalised without every member’s step', () => {
    const agg = new EpochAggregator(scope, W);
    const liar = signerOf(members[1]!);
    assert.equal(codeOf(agg.offer(commit(liar, 0, { weights: W(99) }))), 'TRAIN_COMMIT_FORGED');
    for (const m of members) assert.equal(codeOf(agg.offer(commit(signerOf(m), 0))), 'counted');
    for (const m of members.slice(0, 2)) agg.offer(commit(signerOf(m), 1));
    assert.throws(() => agg.finalise(), (e: unknown) => e instanceof C0Error && e.code === 'TRAIN_EPOCH_INCOMPLETE');
    assert.deepEqual([...agg.forged], [members[1]], 'the forger is kept');
  });

  it('a commitment for a step not reached yet is held, not counted, and decided when the weights are known', () => {
    // Weights not known when offered: held; settle counts the matching ones and refuses the forged one.
    let known = -1;
    const late = new EpochAggregator({ ...scope, toStep: 1 }, (s) => (s <= known ? W(s) : undefined));
    const liar = members[2]!;
    for (const m of members) assert.equal(codeOf(late.offer(commit(signerOf(m), 1, m === liar ? { weights: W(7) } : {}))), 'held');
    // the liar's real commitment for that step, sent later, is a duplicate of the forged one it signed first
    assert.equal(codeOf(late.offer(commit(signerOf(liar), 1, { lossMicro: 7 }))), 'TRAIN_COMMIT_DUPLICATE');
    for (const m of members) assert.equal(codeOf(late.offer(commit(signerOf(m), 0))), 'held');
    assert.throws(() => late.finalise(), (e: unknown) => e instanceof C0Error && e.code === 'TRAIN_EPOCH_INCOMPLETE', 'nothing held counts');
    assert.equal(late.forged.size, 0);
    known = 0;
    assert.deepEqual(
      late.settle().map((r) => (r.counted ? 'counted' : r.ignored.code)),
      ['counted', 'counted', 'counted'],
      'step 0 decided; step 1 still held',
    );
    known = 1;
    const decided = late.settle();
    assert.deepEqual(decided.map((r) => (r.counted ? r.signer : `${r.ignored.code} ${r.ignored.signer}`)).sort(), [members[0], members[1], `TRAIN_COMMIT_FORGED ${liar}`].sort());
    assert.deepEqual([...late.forged], [liar]);
    assert.deepEqual(late.missing(), [{ step: 1, worker: liar }], 'the forged step is never counted');
    assert.throws(() => late.finalise(), (e: unknown) => e instanceof C0Error && e.code === 'TRAIN_EPOCH_INCOMPLETE');
  });

  it('coordinator election is deterministic and spreads over members', () => {
    const seen = new Set<string>();
    for (let e = 0; e < 30; e++) {
      const c = electCoordinator(RUN, e, members);
      assert.equal(c, electCoordinator(RUN, e, [...members]));
      seen.add(c);
    }
    assert.equal(seen.size, 3);
  });
});

describe('Merkle inclusion proofs', () => {
  const leaves = Array.from({ length: 11 }, (_, i) => 'sha256:' + (i + 1).toString(16).padStart(64, '0'));

  it('every leaf of every tree size verifies; tampered proofs do not', () => {
    for (let n = 1; n <= leaves.length; n++) {
      const ls = leaves.slice(0, n);
      const root = merkleRoot(ls);
      for (let i = 0; i < n; i++) {
        const p = merkleProof(ls, i);
        verifyProof(p, root);
        const bad = (q: typeof p) => assert.throws(() => verifyProof(q, root), (e: unknown) => e instanceof C0Error && e.code === 'TRAIN_PROOF_INVALID');
        bad({ ...p, leaf: leaves[(i + 1) % leaves.length]! });
        if (p.path.length > 0) {
          bad({ ...p, path: p.path.slice(1) });
          bad({ ...p, path: p.path.map((s, k) => (k === 0 ? { ...s, hash: 'sha256:' + 'ee'.repeat(32) } : s)) });
          bad({ ...p, path: p.path.map((s, k) => (k === 0 ? { ...s, side: s.side === 'L' ? ('R' as const) : ('L' as const) } : s)) });
        }
        if (n > 1) bad({ ...p, index: (i + 1) % n });
      }
    }
  });

  it('a leaf cannot pose as an inner node (domain separation) and order matters', () => {
    assert.notEqual(merkleRoot(leaves.slice(0, 2)), merkleRoot([leaves[1]!, leaves[0]!]));
    assert.notEqual(merkleRoot(leaves.slice(0, 3)), merkleRoot(leaves.slice(0, 4)));
  });
});
