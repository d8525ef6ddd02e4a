/**
 * `train verify` (src/training/verify.ts; docs/training.md "Verifying") takes
 * an epoch as committed only when it counts the run's members less the ones
 * it records as dropped (at most one per view change) and a counted member
 * other than the coordinator countersigned it: one member alone cannot make a
 * "committed, witnessed" epoch. Epochs made by real workers, before and after
 * a member is dropped, still verify.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import { open, seal } from '../../../src/records/envelope.js';
import { electCoordinator } from '../../../src/training/aggregator.js';
import { merkleRoot } from '../../../src/training/merkle.js';
import { TRAIN_T, type TrainEpoch, type TrainWitness } from '../../../src/training/record-kinds.js';
import { verifyInclusion } from '../../../src/training/verify.js';
import { NOW, P, type Party } from '../market/fixtures.js';
import { fakeNet, makeRun, runAll, type Frames } from './trainer-net.js';

const [A, B, H] = [P(500), P(501), P(502)];
const members = [A, B, H];
const fake = 'sha256:' + 'ab'.repeat(32);
const codeOf = (f: () => unknown): string => {
  try {
    f();
    return 'ok';
  } catch (e) {
    if (e instanceof C0Error) return e.code;
    throw e;
  }
};

describe('train verify: who made the epoch', () => {
  const run = makeRun(members, A);
  const byDid = new Map(members.map((m) => [m.did, m]));
  /** Steps 0..2 signed by `signer`, an epoch over them signed by the elected coordinator of `counted`, and the countersignatures of `witnesses`. */
  function forge(o: { counted: Party[]; view?: number; dropped?: string[]; witnesses?: Party[]; signer?: Party }) {
    const dids = o.counted.map((m) => m.did).sort();
    const coord = o.signer ?? byDid.get(electCoordinator(run.address, 0, dids))!;
    const steps = [0, 1, 2].flatMap((s) => dids.map((d) => seal(TRAIN_T.step, { run: run.address, view: o.view ?? 0, step: s, grad: fake, weights: fake, lossMicro: 0, signedAt: NOW } as never, byDid.get(d)!.signer)));
    const leaves = steps.map((s) => s.address);
    const rec: TrainEpoch = { run: run.address, epoch: 0, view: o.view ?? 0, fromStep: 0, toStep: 2, members: dids, leaves: leaves.length, root: merkleRoot(leaves), weights: fake, ...(o.dropped ? { dropped: o.dropped } : {}), signedAt: NOW };
    const ep = seal(TRAIN_T.epoch, rec as never, coord.signer);
    const witnesses = (o.witnesses ?? []).map((w) => seal(TRAIN_T.witness, { epochCommitment: ep.address, run: run.address, epoch: 0, root: rec.root, witnessedAt: NOW } satisfies TrainWitness as never, w.signer).bytes);
    return () => verifyInclusion({ run: run.bytes, epoch: ep.bytes, witnesses, step: steps[0]!.bytes, leaves });
  }

  it('refuses an epoch one member built alone (any view, any dropped list), or one nobody else countersigned', () => {
    assert.equal(codeOf(forge({ counted: [H] })), 'TRAIN_VERIFY_MEMBERS', 'view 0 counts every member');
    assert.equal(codeOf(forge({ counted: [H], dropped: [A.did, B.did].sort() })), 'TRAIN_VERIFY_MEMBERS', 'nobody is dropped in view 0');
    assert.equal(codeOf(forge({ counted: [H], view: 1, dropped: [A.did, B.did].sort() })), 'TRAIN_VERIFY_NO_WITNESS', 'alone in its view: no one to witness');
    assert.equal(codeOf(forge({ counted: [A, H], view: 1 })), 'TRAIN_VERIFY_MEMBERS', 'a member missing and not recorded as dropped');
    assert.equal(codeOf(forge({ counted: [A, B, H], view: 1, dropped: [A.did] })), 'TRAIN_VERIFY_MEMBERS', 'dropped yet counted');
    assert.equal(codeOf(forge({ counted: [A, B, H], dropped: [P(503).did] })), 'TRAIN_VERIFY_MEMBERS', 'dropped a DID the run does not list');
    assert.equal(codeOf(forge({ counted: [A, B, H] })), 'TRAIN_VERIFY_NO_WITNESS', 'all members, no countersignature');
    const dids = [A.did, B.did, H.did].sort();
    const coord = byDid.get(electCoordinator(run.address, 0, [A.did, B.did].sort()))!;
    const other = coord === A ? B : A;
    assert.equal(codeOf(forge({ counted: [A, B], view: 1, dropped: [H.did], witnesses: [H] })), 'TRAIN_VERIFY_WITNESS', 'a dropped member does not witness');
    assert.equal(codeOf(forge({ counted: [A, B], view: 1, dropped: [H.did], witnesses: [other] })), 'ok');
    const c3 = byDid.get(electCoordinator(run.address, 0, dids))!;
    assert.equal(codeOf(forge({ counted: [A, B, H], witnesses: [members.find((m) => m !== c3)!] })), 'ok');
  });

  for (const gone of [[H], [P(503), H]]) {
    it(`the epochs real workers commit verify, before and after ${gone.length} member(s) are dropped at once`, async () => {
      const all = [A, B, ...gone];
      const run = makeRun(all, A);
      const goneDids = gone.map((g) => g.did).sort();
      const commits = new Map<string, Uint8Array>();
      let silent = false;
      const net = fakeNet((from, to, frames: Frames) => {
        const head = frames[0] as { k?: string };
        if (head.k === 'commit') {
          const o = open(frames[1] as Uint8Array, TRAIN_T.step);
          commits.set(o.address, frames[1] as Uint8Array);
          // the gone members fall silent once H has committed step 4 (in epoch 1)
          if (from === H.did && (o.record as { step: number }).step === 4) silent = true;
        }
        return silent && (goneDids.includes(from) || goneDids.includes(to)) ? null : frames;
      });
      const { workers, res } = await runAll(all, run, net);
      let verified = 0;
      for (const [i, w] of workers.slice(0, 2).entries()) {
        assert.equal(res[i]!.status, 'fulfilled', String((res[i] as PromiseRejectedResult).reason));
        assert.deepEqual(
          w.views.map((v) => [v.view, v.dropped]),
          [[1, goneDids]],
        );
        assert.deepEqual(
          w.epochs.map((e) => e.view),
          [0, 1, 1],
        );
        for (const r of w.epochs) {
          const epoch = new Uint8Array(Buffer.from(r.envelope, 'hex'));
          const rec = open(epoch, TRAIN_T.epoch).record as TrainEpoch;
          assert.deepEqual(rec.dropped ?? [], r.view === 0 ? [] : goneDids);
          const witnesses = r.witnesses.map((x) => new Uint8Array(Buffer.from(x.envelope, 'hex')));
          for (const leaf of r.leaves) {
            const got = verifyInclusion({ run: run.bytes, epoch, witnesses, step: commits.get(leaf)!, leaves: r.leaves });
            assert.equal(got.epoch, r.epoch);
            assert.ok(got.witnesses.length >= 1);
            verified++;
          }
        }
      }
      assert.equal(verified, 2 * (all.length * 3 + 2 * 3 + 2 * 3));
    });
  }
});
