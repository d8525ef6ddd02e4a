import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { Ed25519Signer, didFromPublicKey } from '../../../src/records/index.js';
import { buildRun } from '../../../src/roles/trainer/run-file.js';
import { runMemberJob } from '../../../src/roles/trainer/member-job.js';
import { citeOf, citeParams } from '../../../src/roles/gang-cite.js';
import { C0Error as C0Err, type C0Error } from '../../../src/errors.js';
import { hashHex } from '../../../src/records/address.js';
import { checkGang, pickMembers, withMembers, type MarketAdvert, type MemberJobResult } from '../../../src/roles/trainer/gang-buy.js';

const ad = (signer: string, o: Partial<MarketAdvert> = {}, workloads = ['train.member']): MarketAdvert => ({ signer, live: true, reputation: 0.5, freeSlots: 1, record: { workloads }, ...o });
const code = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    return (e as C0Error).code;
  }
  return 'no error';
};

describe('pickMembers', () => {
  it('takes live providers offering the workload, best reputation then free slots then DID', () => {
    const ads = [ad('did:d'), ad('did:c', { reputation: 0.9 }), ad('did:b', { live: false, reputation: 1 }), ad('did:a', {}, ['echo']), ad('did:e', { freeSlots: 4 }), ad('did:f')];
    assert.deepEqual(pickMembers(ads, 'train.member', 3), ['did:c', 'did:e', 'did:d']);
  });
  it('too few is TRAIN_GANG_SHORT, a bad size TRAIN_GANG_SIZE', () => {
    assert.equal(code(() => pickMembers([ad('did:a'), ad('did:b', { live: false })], 'train.member', 2)), 'TRAIN_GANG_SHORT');
    assert.equal(code(() => pickMembers([ad('did:a')], 'train.member', 0)), 'TRAIN_GANG_SIZE');
    assert.equal(code(() => pickMembers([ad('did:a')], 'train.member', Number('x'))), 'TRAIN_GANG_SIZE');
  });
});

describe('withMembers', () => {
  it('replaces the members and keeps the rest of run.yaml', () => {
    const y = parseYaml(withMembers('name: g\nmodel: { layers: [4, 3] }\nmembers:\n  - { did: did:old, addr: x }\n', ['did:a', 'did:b'])) as { name: string; members: Array<{ did: string }> };
    assert.equal(y.name, 'g');
    assert.deepEqual(y.members.map((m) => m.did), ['did:a', 'did:b']);
    assert.equal(code(() => withMembers('- a list', ['did:a'])), 'TRAIN_RUN_FILE');
  });
});

describe('checkGang', () => {
  const RUN = 'sha256:' + 'ab'.repeat(32);
  const W = 'sha256:' + 'cd'.repeat(32);
  const res = (did: string, o: Record<string, unknown> = {}, signer = did): MemberJobResult => {
    const bytes = Buffer.from(JSON.stringify({ run: RUN, member: did, status: 'done', weights: W, ...o }));
    return { status: 'completed', output: bytes.toString('base64'), receipt: { address: 'sha256:' + did.slice(-1).repeat(64), signer, record: { status: 'completed', outputHash: hashHex(bytes), energy: { uj: 7, grade: 'Estimator' } } } };
  };
  it('all members completed with the same weights: ok, with each receipt and energy', () => {
    const r = checkGang(RUN, ['did:a', 'did:b'], [res('did:a'), res('did:b')]);
    assert.equal(r.ok, true);
    assert.equal(r.weights, W);
    assert.deepEqual(r.members.map((m) => [m.did, m.receipt?.slice(-1), m.energy?.uj]), [['did:a', 'a', 7], ['did:b', 'b', 7]]);
  });
  it('disagreeing weights, a failed member, a foreign receipt or another run: not ok', () => {
    assert.equal(checkGang(RUN, ['did:a', 'did:b'], [res('did:a'), res('did:b', { weights: 'sha256:' + 'ee'.repeat(32) })]).members[1]!.problem, 'members disagree on the final weights');
    const failed = checkGang(RUN, ['did:a', 'did:b'], [res('did:a'), { status: 'failed', attempts: [{ provider: 'did:b', outcome: 'failed: EXEC_FAILED' }] }]);
    assert.equal(failed.ok, false);
    assert.equal(failed.weights, undefined);
    assert.equal(failed.members[1]!.problem, 'failed: EXEC_FAILED');
    // the failed receipt's own words next to its code (review s43 R8 F4: the code alone)
    const bounded = checkGang(RUN, ['did:a'], [{ status: 'failed', attempts: [{ provider: 'did:a', outcome: 'failed: EXEC_BAD_INPUT', detail: 'model.layers: a model of 4194305 weights; at most 4194304' }] }]);
    assert.equal(bounded.members[0]!.problem, 'failed: EXEC_BAD_INPUT (model.layers: a model of 4194305 weights; at most 4194304)');
    assert.equal(checkGang(RUN, ['did:a'], [res('did:a', {}, 'did:z')]).ok, false);
    assert.equal(checkGang(RUN, ['did:a'], [res('did:a', { run: 'sha256:' + '00'.repeat(32) })]).ok, false);
    assert.equal(checkGang(RUN, ['did:a'], [res('did:a', { status: 'stopped' })]).ok, false);
  });

  it('members that agree on weights other than the single-process run’s are not ok: a contribution was not its work', () => {
    const same = checkGang(RUN, ['did:a', 'did:b'], [res('did:a'), res('did:b')], W);
    assert.equal(same.ok, true);
    assert.equal(same.reference, W);
    const other = checkGang(RUN, ['did:a', 'did:b'], [res('did:a'), res('did:b')], 'sha256:' + 'ee'.repeat(32));
    assert.equal(other.ok, false);
    assert.equal(other.weights, W, 'the weights they agree on are still shown');
    assert.match(other.members[0]!.problem!, /not the single-process run’s/);
  });
});

describe('a member job’s citation of its gang claim (provider side)', () => {
  const people = [1, 2, 3].map((n) => {
    const seed = new Uint8Array(32).fill(n);
    const signer = new Ed25519Signer(seed);
    return { signer, did: didFromPublicKey(signer.publicKey) };
  });
  const run = buildRun(stringifyYaml({ name: 'g', model: { layers: [4, 3] }, seed: 1, stepsPerEpoch: 1, epochs: 1, members: people.map((p) => ({ did: p.did, addr: '/ip4/127.0.0.1/tcp/1' })) }), people[0]!.signer, 1_800_000_000_000).bundle.run;
  // a directory per member job, as a node gives each; removed at the end
  const dirs: string[] = [];
  after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
  const tempDir = (): string => {
    dirs.push(mkdtempSync(join(tmpdir(), 'c0-cite-')));
    return dirs.at(-1)!;
  };
  const ctxFor = (who: number, params?: string) => ({
    input: new TextEncoder().encode(JSON.stringify({ run: Buffer.from(run.bytes).toString('hex') })),
    ...(params === undefined ? {} : { params }),
    signal: new AbortController().signal,
    onProgress: () => {},
    maxOutputBytes: 1 << 20,
    host: { signer: people[who]!.signer, did: people[who]!.did, net: { handle: () => Promise.reject(new C0Err('TEST_REACHED_JOIN', 'the check passed')) } as never, dir: tempDir() },
  });
  const refused = async (p: Promise<unknown>) => p.then(() => 'no error', (e: C0Error) => e.code ?? String(e));
  it('refuses a citation of another claim, a member past the gang, or a member that is another provider: TRAIN_GANG_CITE', async () => {
    assert.equal(await refused(runMemberJob(ctxFor(1, citeParams({ claim: 'sha256:' + '00'.repeat(32), member: 1 })))), 'TRAIN_GANG_CITE');
    assert.equal(await refused(runMemberJob(ctxFor(1, citeParams({ claim: run.address, member: 3 })))), 'TRAIN_GANG_CITE');
    const mine = run.record.members.indexOf(people[1]!.did);
    assert.equal(await refused(runMemberJob(ctxFor(1, citeParams({ claim: run.address, member: (mine + 1) % 3 })))), 'TRAIN_GANG_CITE');
    // The right citation passes the check (and gets as far as joining the run on the node, absent here).
    assert.equal(await refused(runMemberJob(ctxFor(1, citeParams({ claim: run.address, member: mine })))), 'TEST_REACHED_JOIN');
    assert.equal(await refused(runMemberJob(ctxFor(1, 'not json'))), 'TRAIN_GANG_CITE');
    assert.deepEqual(citeOf(citeParams({ claim: run.address, member: 1 })), { claim: run.address, member: 1 });
  });
});
