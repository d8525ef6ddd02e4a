/**
 * A buyer logs one `job ended` line per run, also for a run that throws: with
 * the job's address once the job was signed (here its publication fails), and
 * without one for a spec refused before (an input over the limit).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Buyer, type BuyerDeps, type JobSpec } from '../../../src/roles/buyer.js';
import { C0Error } from '../../../src/errors.js';
import { NOW, P } from '../market/fixtures.js';

const ME = P(740);

test('a run that throws still logs `job ended`, with the job’s address once it was signed', async () => {
  const lines: Array<[Record<string, unknown>, string]> = [];
  const log = { info: (o: Record<string, unknown>, m: string) => void lines.push([o, m]), warn: () => {}, debug: () => {}, error: () => {}, child: () => log };
  const stored: string[] = [];
  const deps = {
    signer: ME.signer,
    did: ME.did,
    clock: () => NOW,
    log,
    store: async (r: { address: string }) => void stored.push(r.address),
    publish: async () => {
      throw new C0Error('NET_NO_PEERS', 'no peer to publish to');
    },
    maxInputBytes: 16,
  } as unknown as BuyerDeps;
  const spec = { workload: 'builtin.sha256', maxPrice: { amount: '0.01', currency: 'USD' }, deadlineMs: 60_000, input: new Uint8Array(4) } as unknown as JobSpec;
  const buyer = new Buyer(deps);
  await assert.rejects(buyer.run(spec), { code: 'NET_NO_PEERS' });
  const [ended, msg] = lines.at(-1)!;
  assert.equal(msg, 'job ended');
  assert.deepEqual([ended.status, ended.code, ended.job], ['error', 'NET_NO_PEERS', stored[0]]);
  // refused before anything was signed: no address to give
  await assert.rejects(buyer.run({ ...spec, input: new Uint8Array(64) }), { code: 'INPUT_TOO_LARGE' });
  const [refused] = lines.at(-1)!;
  assert.deepEqual([refused.status, refused.code, 'job' in refused], ['error', 'INPUT_TOO_LARGE', false]);
});
