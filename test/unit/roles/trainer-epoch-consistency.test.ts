/**
 * Witnesses countersign an epoch commitment only when it says what that epoch
 * was (src/roles/trainer/epoch-commit.ts `checkEpochCommitment`; docs/training.md
 * "Witnesses"): its step range is the epoch's own, it counts members × steps
 * leaves (already a rule of the record), its weights are the witness's own
 * after the epoch's last step and its dropped list is the witness's. Before, the elected coordinator of epoch 1
 * could sign epoch 1's root with epoch 0's range and weights and both honest
 * witnesses countersigned it. `train verify` checks the range and leaf count
 * too (TRAIN_VERIFY_OUT_OF_EPOCH).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { C0Error } from '../../../src/errors.js';
import type { CborValue } from '../../../src/records/cbor.js';
import { open, seal } from '../../../src/records/envelope.js';
import { electCoordinator } from '../../../src/training/aggregator.js';
import { merkleRoot } from '../../../src/training/merkle.js';
import { TRAIN_T, type TrainEpoch, type TrainStep, type TrainWitness } from '../../../src/training/record-kinds.js';
import { verifyInclusion } from '../../../src/training/verify.js';
import { TrainerWorker } from '../../../src/roles/trainer/worker.js';
import { tempDir } from '../ledger/helpers.js';
import { NOW, P } from '../market/fixtures.js';
import { fakeNet, hostileNet, makeRun } from './trainer-net.js';

const [A, B, H] = [P(500), P(501), P(502)];
const members = [A, B, H];
const byDid = new Map(members.map((m) => [m.did, m]));

describe('an epoch commitment that does not say what its epoch was', () => {
  it('is refused by every witness (TRAIN_WITNESS_REFUSED), whichever field is off', async () => {
    const run = makeRun(members, A, { timeoutMs: 1000, epochs: 2 });
    const C = byDid.get(electCoordinator(run.address, 1, members.map((m) => m.did).sort()))!;
    const dirs = new Map(members.map((m) => [m.did, tempDir('c0-train-epoch-')]));
    const answers: Array<{ what: string; code: string }> = [];
    const net = fakeNet();
    hostileNet(net, C.did, (n) => ({
      async request(to: string, protocol: string, frames: CborValue[], o?: { limits?: { deadlineMs?: number } }) {
        const head = frames[0] as { k?: string };
        if (head.k === 'witness') {
          const ep = open(frames[1] as Uint8Array, TRAIN_T.epoch) as { record: TrainEpoch };
          if (ep.record.epoch === 1) {
            const w2 = (open(readFileSync(join(dirs.get(C.did)!.dir, 'steps', '2.cbor')), TRAIN_T.step).record as TrainStep).weights;
            const forged: Array<[string, Partial<TrainEpoch>]> = [
              ['epoch 0’s range and weights', { fromStep: 0, toStep: 2, weights: w2 }],
              ['epoch 2’s range', { fromStep: 6, toStep: 8 }],
              ['a dropped member in view 0', { dropped: [H.did] }],
            ];
            for (const [what, f] of forged) {
              try {
                await net.deliver(C.did, to, protocol, [head, seal(TRAIN_T.epoch, { ...ep.record, ...f } as never, C.signer).bytes]);
                answers.push({ what, code: 'countersigned' });
              } catch (e) {
                answers.push({ what, code: e instanceof C0Error ? e.code : String(e) });
              }
            }
          }
        }
        return n.request(to, protocol, frames, o);
      },
    }));
    const workers = members.map((m) => new TrainerWorker({ signer: m.signer, did: m.did, run, addrs: {}, dir: dirs.get(m.did)!.dir, clock: () => Date.now(), net: net.netFor(m.did) as never, joinTimeoutMs: 10_000 }));
    try {
      for (const w of workers) await w.start();
      await Promise.all(workers.map((w) => w.join()));
      const res = await Promise.allSettled(workers.map((w) => w.run()));
      for (const w of workers) await w.stop();
      assert.deepEqual(res.map((r) => r.status), ['fulfilled', 'fulfilled', 'fulfilled'], 'the honest epoch still commits');
      assert.equal(answers.length, 6);
      for (const a of answers) assert.equal(a.code, 'TRAIN_WITNESS_REFUSED', a.what);
    } finally {
      for (const d of dirs.values()) d.cleanup();
    }
  });

  it('train verify refuses an epoch whose step range or leaf count is not its epoch’s', () => {
    const run = makeRun(members, A);
    const dids = members.map((m) => m.did).sort();
    const fake = 'sha256:' + 'ab'.repeat(32);
    const spe = run.record.stepsPerEpoch;
    const verify = (epoch: number, f: Partial<TrainEpoch> = {}, base = epoch * spe) => {
      const steps = [0, 1, 2].flatMap((k) => dids.map((d) => seal(TRAIN_T.step, { run: run.address, view: 0, step: base + k, grad: fake, weights: fake, lossMicro: 0, signedAt: NOW } as never, byDid.get(d)!.signer)));
      const leaves = steps.map((s) => s.address);
      const coord = byDid.get(electCoordinator(run.address, epoch, dids))!;
      const rec: TrainEpoch = { run: run.address, epoch, view: 0, fromStep: epoch * spe, toStep: epoch * spe + spe - 1, members: dids, leaves: leaves.length, root: merkleRoot(leaves), weights: fake, signedAt: NOW, ...f };
      const ep = seal(TRAIN_T.epoch, rec as never, coord.signer);
      const other = members.find((m) => m !== coord)!;
      const w = seal(TRAIN_T.witness, { epochCommitment: ep.address, run: run.address, epoch, root: rec.root, witnessedAt: NOW } satisfies TrainWitness as never, other.signer).bytes;
      try {
        verifyInclusion({ run: run.bytes, epoch: ep.bytes, witnesses: [w], step: steps[0]!.bytes, leaves, proof: undefined });
        return 'ok';
      } catch (e) {
        if (e instanceof C0Error) return e.code;
        throw e;
      }
    };
    assert.equal(verify(1), 'ok');
    assert.equal(verify(0, { fromStep: 3, toStep: 5 }, 3), 'TRAIN_VERIFY_OUT_OF_EPOCH', 'epoch 1’s steps signed as epoch 0');
    assert.equal(verify(3), 'TRAIN_VERIFY_OUT_OF_EPOCH', 'the run has epochs 0–2');
  });
});
