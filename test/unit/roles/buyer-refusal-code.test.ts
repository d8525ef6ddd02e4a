/**
 * A selected provider's refusal is a non-delivery whatever its code (finding: a code of free text, cut by the
 * non-delivery's 256-unit detail through a surrogate pair, made the non-delivery unsealable, so the refusal cost the
 * provider nothing). A refusal code must look like a failure code (^[A-Z][A-Z0-9_]{0,63}$); anything else is read as
 * EXEC_BAD_REFUSAL, still a refusal. And a non-delivery's detail is cut at a code-point boundary.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseExecFrame } from '../../../src/roles/exec-protocol.js';
import { signNonDelivery } from '../../../src/reputation/nondelivery.js';
import { seal, T, type Job, type NonDelivery, type Opened, type Selection } from '../../../src/records/index.js';
import { NOW, P, advert, offer } from '../market/fixtures.js';
import { buyerOnFakes, fakeSpec } from './buyer-fakes.js';

const ME = P(770);
const A = P(771);
const EMOJI = '\u{1F600}';

async function refusedWith(code: string): Promise<Array<Opened<NonDelivery>>> {
  const f = buyerOnFakes(ME, {
    providers: [A],
    exec: async function* () {
      yield { t: 'refused', code, message: 'no' };
    },
  });
  await f.buyer.run(fakeSpec());
  return f.nondeliveries().map((p) => p.rec as Opened<NonDelivery>);
}

test('a refusal whose code is free text (ending in an emoji at the detail\'s cut) is still a signed non-delivery, as EXEC_BAD_REFUSAL', async () => {
  const nds = await refusedWith('E'.repeat(246) + EMOJI);
  assert.equal(nds.length, 1, 'the non-delivery is signed and published');
  assert.equal(nds[0]!.record.provider, A.did);
  assert.equal(nds[0]!.record.reason, 'refused');
  assert.equal(nds[0]!.record.detail, 'refused: EXEC_BAD_REFUSAL');
  // an ordinary code is kept as sent
  const ok = await refusedWith('EXEC_BUSY');
  assert.equal(ok[0]?.record.detail, 'refused: EXEC_BUSY');
});

test('parseExecFrame: a refusal code must look like a failure code', () => {
  for (const code of ['EXEC_BUSY', 'E', `A${'B'.repeat(63)}`]) assert.equal((parseExecFrame({ t: 'refused', code, message: 'm' }) as { code: string }).code, code);
  for (const code of ['', 'busy', 'EXEC BUSY', `A${'B'.repeat(64)}`, `EXEC_${EMOJI}`, '1ABC']) {
    assert.deepEqual(parseExecFrame({ t: 'refused', code, message: 'm' }), { t: 'refused', code: 'EXEC_BAD_REFUSAL', message: 'the provider refused with a malformed code' }, JSON.stringify(code));
  }
});

test('signNonDelivery cuts a long detail at a code-point boundary, so it always seals', () => {
  const job = seal(T.job, { workload: 'infer.llm', requirements: {}, maxPrice: { amount: '1', currency: 'USD' }, announcedAt: NOW, deadline: NOW + 60_000, timeoutMs: 10_000, input: { hash: `sha256:${'0'.repeat(64)}`, size: 1 }, inputSealed: 'no' }, ME.signer) as Opened<Job>;
  const o = offer(A, job, advert(A));
  const selection = seal(T.selection, { job: job.address, buyer: ME.did, policy: 'trusted', winner: o.address, considered: [{ provider: A.did, offer: o.address }], decidedAt: NOW }, ME.signer) as Opened<Selection>;
  const detail = `refused: ${'E'.repeat(246)}${EMOJI}`; // 257 code units: a cut at 256 would end on the high surrogate
  const nd = signNonDelivery({ job, selection, offer: o, reason: 'refused', detail, signedAt: NOW + 1, signer: ME.signer });
  assert.equal(nd.record.detail, `refused: ${'E'.repeat(246)}`);
});
