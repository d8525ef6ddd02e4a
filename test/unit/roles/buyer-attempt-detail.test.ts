/**
 * A failed receipt's own message rides with its attempt (`detail`, cut to ATTEMPT_DETAIL_MAX), so `c0mpute run` and
 * `train buy` print what went wrong next to the code. Before (review s43 R8 F4) only `failed: EXEC_BAD_INPUT` reached
 * the buyer's user, while the receipt named the field and the bound.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hashHex } from '../../../src/records/address.js';
import { ATTEMPT_DETAIL_MAX } from '../../../src/roles/buyer.js';
import { NOW, P, receipt } from '../market/fixtures.js';
import { buyerOnFakes, fakeSpec } from './buyer-fakes.js';

const ME = P(770);
const [A, B] = [P(771), P(772)];
const INPUT = new Uint8Array(4);

test("each failed attempt carries its receipt's message, cut to ATTEMPT_DETAIL_MAX", async () => {
  const said = new Map([
    [A.did, 'model.layers: a model of 4194305 weights; at most 4194304'],
    [B.did, 'x'.repeat(ATTEMPT_DETAIL_MAX + 50)],
  ]);
  const f: ReturnType<typeof buyerOnFakes> = buyerOnFakes(ME, {
    providers: [A, B],
    exec: async function* (did: string) {
      const p = did === A.did ? A : B;
      yield { t: 'accepted', startedAt: NOW };
      yield { t: 'receipt', receipt: receipt(p, ME, f.candidate(p)!.offer, { status: 'failed', failure: { code: 'EXEC_BAD_INPUT', message: said.get(did)! }, inputHash: hashHex(INPUT), startedAt: NOW, completedAt: NOW + 1000 }).bytes };
    },
  });
  const result = await f.buyer.run(fakeSpec({ input: INPUT }));
  assert.equal(result.status, 'failed');
  const byProvider = new Map(result.attempts.map((a) => [a.provider, a]));
  assert.equal(byProvider.get(A.did)?.outcome, 'failed: EXEC_BAD_INPUT');
  assert.equal(byProvider.get(A.did)?.detail, said.get(A.did));
  const cut = byProvider.get(B.did)?.detail ?? '';
  assert.equal(cut.length, ATTEMPT_DETAIL_MAX);
  assert.ok(cut.endsWith('…'));
});
