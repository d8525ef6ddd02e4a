/**
 * A member's view proposal and a coordinator's epoch result are checked before
 * they are used (src/roles/trainer/worker.ts `parseProposal`, `parseFinal`;
 * docs/training.md "Failure"): a malformed or out-of-range one is
 * TRAIN_BAD_MESSAGE and its sender is treated as failed, so the survivors of a
 * run with onFailure: continue carry on without it instead of crashing
 * (a proposal resuming from a snapshot long deleted was a TypeError,
 * TRAIN_FAILED) or emptying their view (alive: []). Three real workers over an
 * in-process network (test/unit/roles/trainer-net.ts).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { stringify } from 'yaml';
import type { CborValue } from '../../../src/records/cbor.js';
import { seal } from '../../../src/records/envelope.js';
import { buildRun } from '../../../src/roles/trainer/run-file.js';
import { parseFinal, parseProposal, type TrainerEvent } from '../../../src/roles/trainer/worker.js';
import { electCoordinator } from '../../../src/training/aggregator.js';
import { TRAIN_T, type TrainEpoch } from '../../../src/training/record-kinds.js';
import { TRAIN_PROTOCOL } from '../../../src/training/transport.js';
import { NOW, P, type Party } from '../market/fixtures.js';
import { fakeNet, runAll } from './trainer-net.js';

const enc = (v: unknown) => new TextEncoder().encode(typeof v === 'string' ? v : JSON.stringify(v));
const [A, B, H] = [P(500), P(501), P(502)];
const members = [A, B, H];
const dids = members.map((m) => m.did).sort();

function makeRun(parties: Party[], extra: Record<string, unknown> = {}) {
  const yaml = stringify({ name: 'guard', model: { layers: [4, 8, 3] }, seed: 1, stepsPerEpoch: 3, epochs: 3, timeoutMs: 300, onFailure: 'continue', ...extra, members: parties.map((m, i) => ({ did: m.did, addr: `/ip4/127.0.0.1/tcp/${i + 1}` })) });
  return buildRun(yaml, parties[0]!.signer, NOW).bundle.run;
}

const code = (fn: () => unknown) => {
  try {
    fn();
    return 'none';
  } catch (e) {
    return (e as { code?: string }).code ?? String(e);
  }
};

describe('view proposals and epoch results are checked', () => {
  it('parseProposal: only view+1, DID-ordered current members naming the sender, resume within one epoch (a snapshot held)', () => {
    const has = (e: number) => e === 1 || e === 2;
    const ok = (p: unknown, from = H.did) => parseProposal(enc(p), from, 1, dids, 2, has);
    assert.deepEqual(ok({ view: 1, alive: dids, resume: 2 }), { alive: dids, resume: 2 });
    assert.equal(ok({ view: 1, alive: dids, resume: 1 }).resume, 1);
    assert.equal(ok({ view: 1, alive: dids, resume: 3 }).resume, 3, 'a member one ahead (it got a result this worker did not)');
    assert.deepEqual(ok({ view: 1, alive: [H.did], resume: 2 }).alive, [H.did]);
    const bad: unknown[] = [
      'not json',
      'null',
      [],
      { view: 2, alive: dids, resume: 2 },
      { view: '1', alive: dids, resume: 2 },
      { view: 1, alive: [], resume: 2 }, // leaves out its sender
      { view: 1, alive: [...dids].reverse(), resume: 2 },
      { view: 1, alive: [dids[0], dids[0], ...dids.slice(1)], resume: 2 },
      { view: 1, alive: [...dids, P(503).did].sort(), resume: 2 }, // not a member of the view
      { view: 1, alive: 'all', resume: 2 },
      { view: 1, alive: [7], resume: 2 },
      { view: 1, alive: dids, resume: 0 }, // a snapshot long deleted
      { view: 1, alive: dids, resume: 4 },
      { view: 1, alive: dids, resume: 1.5 },
      { view: 1, alive: dids, resume: 'x' },
      { view: 1, alive: dids },
    ];
    for (const p of bad) assert.equal(code(() => ok(p)), 'TRAIN_BAD_MESSAGE', JSON.stringify(p));
    assert.equal(code(() => parseProposal(enc({ view: 1, alive: dids, resume: 1 }), H.did, 1, dids, 2, () => false)), 'TRAIN_BAD_MESSAGE', 'one behind but no snapshot to resume from');
    try {
      ok({ view: 1, alive: [], resume: 'x' });
    } catch (e) {
      assert.equal((e as { detail?: { from?: string } }).detail?.from, H.did, 'the error names the sender');
    }
  });

  it('parseFinal: a result that is not JSON, not an object, or whose envelope does not open is TRAIN_BAD_MESSAGE naming the coordinator', () => {
    for (const body of ['{', 'null', '[]', '{"witnesses":[]}', '{"envelope":7,"witnesses":[]}', '{"envelope":"zz","witnesses":[]}', '{"envelope":"00ff","witnesses":[]}', '{"envelope":"","witnesses":null}']) {
      assert.equal(code(() => parseFinal(enc(body), H.did)), 'TRAIN_BAD_MESSAGE', body);
    }
    const run = makeRun(members);
    const rec: TrainEpoch = { run: run.address, epoch: 0, view: 0, fromStep: 0, toStep: 2, members: dids, leaves: 9, root: 'sha256:' + '1'.repeat(64), weights: 'sha256:' + '2'.repeat(64), signedAt: NOW };
    const env = seal(TRAIN_T.epoch, rec as never, H.signer);
    const hex = Buffer.from(env.bytes).toString('hex');
    // countersignatures that do not open, or are not the named member's, are not kept
    const got = parseFinal(enc({ envelope: hex, witnesses: [null, 5, { did: A.did, envelope: 'zz' }, { did: A.did, envelope: hex }] }), H.did);
    assert.equal(got.ep.address, env.address);
    assert.equal(got.envelope, hex);
    assert.deepEqual(got.witnesses, []);
    const w = seal(TRAIN_T.witness, { epochCommitment: env.address, run: run.address, epoch: 0, root: rec.root, witnessedAt: NOW } as never, A.signer);
    const wHex = Buffer.from(w.bytes).toString('hex');
    assert.deepEqual(parseFinal(enc({ envelope: hex, witnesses: [{ did: A.did, envelope: wHex }, { did: B.did, envelope: wHex }, { did: A.did, envelope: wHex }] }), H.did).witnesses, [{ did: A.did, address: w.address, envelope: wHex }]);
  });

  for (const [name, payload] of [
    ['resume 0 after epoch 2 (a deleted snapshot)', JSON.stringify({ view: 1, alive: dids, resume: 0 })],
    ['alive [] and resume "x"', '{"view":1,"alive":[],"resume":"x"}'],
  ] as const) {
    it(`a member proposing ${name} is dropped; the others finish the run`, async () => {
      const run = makeRun(members, { epochs: 4 });
      let silent = false;
      // H goes quiet in the ring at epoch 2 (step 6), handing A and B a bad proposal for view 1 first
      const net = fakeNet(async (from, to, frames) => {
        const head = frames[0] as { k: string; tag?: string };
        const m = from === H.did && head.k === 'chunk' ? /^v0\/s(\d+)\//.exec(head.tag ?? '') : null;
        if (!m || Number(m[1]) < 6) return frames;
        if (!silent) {
          silent = true;
          for (const d of [A.did, B.did]) await net.deliver(H.did, d, TRAIN_PROTOCOL, [{ k: 'view', tag: 'view/v1' }, enc(payload)]);
        }
        return null;
      });
      const { workers, res, events } = await runAll(members, run, net);
      for (const i of [0, 1]) {
        const w = workers[i]!;
        assert.equal(res[i]!.status, 'fulfilled', `${'AB'[i]}: ${JSON.stringify(w.stopReason)}`);
        assert.equal(w.status, 'done');
        assert.deepEqual(w.members, [A.did, B.did].sort());
        assert.deepEqual(w.dropped, [H.did]);
        assert.equal(w.views[0]!.resumeEpoch, 2, 'resumed from the first uncommitted epoch, not the proposal’s');
        assert.equal(w.epochs.length, 4);
      }
      for (const [did, es] of events) assert.ok(!es.some((e) => e.e === 'stopped' && e.code === 'TRAIN_FAILED'), `${did}: no TRAIN_FAILED`);
    });
  }

  it('a malformed epoch result from the coordinator is its failure: the member drops it and the others finish', async () => {
    const run = makeRun(members, { epochs: 2 });
    const coord = electCoordinator(run.address, 0, dids);
    const victim = dids.find((d) => d !== coord)!;
    let done = false;
    const net = fakeNet((from, to, frames) => {
      const head = frames[0] as { k: string };
      if (done || from !== coord || to !== victim || head.k !== 'final') return frames;
      done = true;
      return [head, enc('{"envelope":7,"witnesses":null}')] as CborValue[];
    });
    const { workers, res, events } = await runAll(members, run, net);
    assert.ok(done, 'the result was rewritten');
    const survivors = members.map((m, i) => ({ m, i })).filter(({ m }) => m.did !== coord);
    for (const { m, i } of survivors) {
      const w = workers[i]!;
      assert.equal(res[i]!.status, 'fulfilled', `${m.did}: ${JSON.stringify(w.stopReason)}`);
      assert.equal(w.status, 'done');
      assert.deepEqual(w.dropped, [coord]);
    }
    const v = events.get(victim)!.find((e): e is Extract<TrainerEvent, { e: 'view' }> => e.e === 'view');
    assert.equal(v?.cause, 'TRAIN_BAD_MESSAGE');
    for (const [did, es] of events) assert.ok(!es.some((e) => e.e === 'stopped' && e.code === 'TRAIN_FAILED'), `${did}: no TRAIN_FAILED`);
  });
});
