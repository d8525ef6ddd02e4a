/**
 * A provider chosen for two of our jobs at once has its slots taken by the first; it refuses the second EXEC_BUSY. That
 * refusal is our own doing: no non-delivery is signed against it. The same refusal with none of our runs there is the
 * provider's (it quoted and then had no slot) and counts as before (review s41 C3: a one-slot provider's score wore down
 * to 0.595 over ~560 jobs of a buyer running two at a time, with no failure of its own).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Buyer, type BuyerDeps, type JobSpec, type RankedCandidate } from '../../../src/roles/buyer.js';
import { C0Error } from '../../../src/errors.js';
import type { Opened } from '../../../src/records/envelope.js';
import type { Selection } from '../../../src/records/kinds.js';
import { NOW, P, advert, job, offer } from '../market/fixtures.js';

const ME = P(751);
const PROV = P(752);

test('EXEC_BUSY while another of our jobs runs at that provider signs no non-delivery; alone it still does', async () => {
  const noop = () => {};
  const log = { info: noop, warn: noop, debug: noop, error: noop, child: () => log };
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  let calls = 0;
  const deps = {
    signer: ME.signer,
    did: ME.did,
    clock: () => NOW,
    log,
    exec: async function* () {
      const n = calls++;
      if (n === 0) {
        // the first job holds the provider's one slot while it runs
        await held;
        throw new C0Error('NET_STREAM_FAILED', 'gone');
      }
      yield { t: 'refused', code: 'EXEC_BUSY', message: 'all slots are busy' };
    },
  } as unknown as BuyerDeps;
  const buyer = new Buyer(deps);
  const a = advert(PROV);
  const mk = (i: number) => {
    const j = job(ME, { announcedAt: NOW + i });
    const cand = { provider: PROV.did, offer: offer(PROV, j, a) } as unknown as RankedCandidate;
    return { j, cand };
  };
  const sel = { bytes: new Uint8Array(1) } as unknown as Opened<Selection>;
  const spec = { input: new Uint8Array(4) } as unknown as JobSpec;
  const first = mk(1);
  const second = mk(2);
  const p1 = buyer.attempt(first.j, first.cand, sel, spec, noop);
  const r2 = await buyer.attempt(second.j, second.cand, sel, spec, noop);
  assert.equal(r2.nondelivery, undefined, 'busy with our own other job: no non-delivery');
  assert.match(r2.outcome, /busy with another of our jobs: refused: EXEC_BUSY/);
  release();
  await p1;
  // nothing of ours there now: the provider quoted and had no slot, a non-delivery as before
  const third = mk(3);
  const r3 = await buyer.attempt(third.j, third.cand, sel, spec, noop);
  assert.equal(r3.nondelivery, 'refused');
  assert.equal(r3.outcome, 'refused: EXEC_BUSY');
});

test('a provider’s lapse refusal (EXEC_BUYER_PAUSED, EXEC_JOB_LAPSED) after an attempt of ours there ended without its receipt signs no non-delivery; with no such attempt it counts', async () => {
  const noop = () => {};
  const log = { info: noop, warn: noop, debug: noop, error: noop, child: () => log };
  const answers: Array<'fail' | string> = [];
  const deps = {
    signer: ME.signer,
    did: ME.did,
    clock: () => NOW,
    log,
    exec: async function* () {
      const a = answers.shift()!;
      if (a === 'fail') throw new C0Error('NET_STREAM_FAILED', 'the link dropped during the upload');
      yield { t: 'refused', code: a, message: 'paused' };
    },
  } as unknown as BuyerDeps;
  const buyer = new Buyer(deps);
  const sel = { bytes: new Uint8Array(1) } as unknown as Opened<Selection>;
  const spec = { input: new Uint8Array(4) } as unknown as JobSpec;
  const at = (prov: typeof PROV, i: number) => {
    const j = job(ME, { announcedAt: NOW + 100 + i });
    return { j, cand: { provider: prov.did, offer: offer(prov, j, advert(prov)) } as unknown as RankedCandidate };
  };
  const other = P(753);
  // no attempt of ours at `other` that could have lapsed (a refusal of its own is none): its word alone
  answers.push('EXEC_BUSY');
  const w = at(other, 9);
  assert.equal((await buyer.attempt(w.j, w.cand, sel, spec, noop)).nondelivery, 'refused');
  answers.push('EXEC_BUYER_PAUSED');
  const x = at(other, 0);
  assert.equal((await buyer.attempt(x.j, x.cand, sel, spec, noop)).nondelivery, 'refused');
  // our upload to PROV dropped: its pause is our doing, for any job; its job refusal, for that job only
  const a = at(PROV, 1);
  answers.push('fail');
  assert.equal((await buyer.attempt(a.j, a.cand, sel, spec, noop)).nondelivery, 'unreachable');
  answers.push('EXEC_JOB_LAPSED');
  const again = await buyer.attempt(a.j, a.cand, sel, spec, noop);
  assert.equal(again.nondelivery, undefined);
  assert.match(again.outcome, /paused us after an attempt of ours there ended without its input: refused: EXEC_JOB_LAPSED/);
  const b = at(PROV, 2);
  answers.push('EXEC_BUYER_PAUSED');
  assert.equal((await buyer.attempt(b.j, b.cand, sel, spec, noop)).nondelivery, undefined);
  const c = at(PROV, 3);
  answers.push('EXEC_JOB_LAPSED');
  assert.equal((await buyer.attempt(c.j, c.cand, sel, spec, noop)).nondelivery, 'refused', 'another job: not explained by our attempt');
});
