/**
 * `c0mpute train verify` (docs/training.md "Verifying"): a record among its inputs that does not verify (a flipped
 * byte: ENVELOPE_BAD_SIGNATURE) is the verdict, exit 1 with the code and the input named, as any other failed check;
 * before, it was exit 3. A file not of its argument's form (an epoch file `{}`, `"witnesses": null`, a `--proof` that is
 * not JSON, an epoch file where the step commitment goes) is TRAIN_VERIFY_INPUT_INVALID naming the argument (exit 3);
 * before, most were internal errors (exit 70). Records signed here, files on disk, the real binary.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ed25519Signer } from '../../../src/records/ed25519.js';
import { didFromPublicKey } from '../../../src/records/index.js';
import { seal } from '../../../src/records/envelope.js';
import { buildRun } from '../../../src/roles/trainer/run-file.js';
import { electCoordinator } from '../../../src/training/aggregator.js';
import { merkleRoot } from '../../../src/training/merkle.js';
import { TRAIN_T, type TrainEpoch, type TrainWitness } from '../../../src/training/record-kinds.js';
import { EXIT } from '../../../src/cli/context.js';
import { tempDir } from '../ledger/helpers.js';
import { runNode } from './cli-run.js';

const bin = fileURLToPath(new URL('../../../../bin/c0mpute.js', import.meta.url));
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

describe('train verify: forged records and malformed inputs', () => {
  const t = tempDir('c0-train-verify-');
  const env = { ...process.env, C0MPUTE_HOME: join(t.dir, 'home') };
  const c0 = (...args: string[]) => runNode([bin, 'train', 'verify', ...args], { env, timeout: 30_000 });
  const file = (name: string, data: string | Uint8Array) => {
    writeFileSync(join(t.dir, name), data);
    return join(t.dir, name);
  };
  let bundle = '';
  let epochJson: { envelope: string; witnesses: Array<{ did: string; address: string; envelope: string }>; leaves: string[] } = { envelope: '', witnesses: [], leaves: [] };
  let stepBytes: Uint8Array = new Uint8Array();

  before(() => {
    const parties = [0, 1].map(() => {
      const signer = Ed25519Signer.generate();
      return { signer, did: didFromPublicKey(signer.publicKey) };
    });
    const dids = parties.map((p) => p.did).sort();
    const yaml = ['name: v', 'model: { layers: [4, 8, 3] }', 'stepsPerEpoch: 2', 'members:', ...parties.map((p, i) => `  - { did: ${p.did}, addr: /ip4/127.0.0.1/tcp/${4101 + i} }`)].join('\n');
    const built = buildRun(yaml, Ed25519Signer.generate(), Date.now());
    bundle = file('run.run.json', built.json);
    const run = built.bundle.run;
    const fake = 'sha256:' + 'ab'.repeat(32);
    const by = (d: string) => parties.find((p) => p.did === d)!;
    const steps = [0, 1].flatMap((s) => dids.map((d) => seal(TRAIN_T.step, { run: run.address, view: 0, step: s, grad: fake, weights: fake, lossMicro: 0, signedAt: Date.now() } as never, by(d).signer)));
    const leaves = steps.map((s) => s.address);
    const coord = by(electCoordinator(run.address, 0, dids));
    const witness = parties.find((p) => p !== coord)!;
    const rec: TrainEpoch = { run: run.address, epoch: 0, view: 0, fromStep: 0, toStep: 1, members: dids, leaves: leaves.length, root: merkleRoot(leaves), weights: fake, signedAt: Date.now() };
    const ep = seal(TRAIN_T.epoch, rec as never, coord.signer);
    const w = seal(TRAIN_T.witness, { epochCommitment: ep.address, run: run.address, epoch: 0, root: rec.root, witnessedAt: Date.now() } satisfies TrainWitness as never, witness.signer);
    epochJson = { envelope: hex(ep.bytes), witnesses: [{ did: witness.did, address: w.address, envelope: hex(w.bytes) }], leaves };
    stepBytes = steps[0]!.bytes;
    file('0.json', JSON.stringify(epochJson));
    file('0.cbor', stepBytes);
  });
  after(() => t.cleanup());

  it('the genuine records verify (exit 0)', async () => {
    const r = await c0(bundle, join(t.dir, '0.json'), join(t.dir, '0.cbor'));
    assert.equal(r.status, EXIT.OK, r.stdout + r.stderr);
    assert.match(r.stdout, /^included: step 0/);
  });

  it('a step commitment with a flipped byte: not verified, ENVELOPE_BAD_SIGNATURE naming it, exit 1', async () => {
    const forged = stepBytes.slice();
    forged[forged.length - 1]! ^= 1;
    const r = await c0(bundle, join(t.dir, '0.json'), file('forged.cbor', forged));
    assert.equal(r.status, EXIT.NEGATIVE, r.stdout + r.stderr);
    assert.match(r.stdout, /^not verified: ENVELOPE_BAD_SIGNATURE: the step commitment: signature does not verify/);
  });

  it('an epoch commitment with a flipped byte: not verified, ENVELOPE_BAD_SIGNATURE naming it, exit 1', async () => {
    const e = Buffer.from(epochJson.envelope, 'hex');
    e[e.length - 1]! ^= 1;
    const r = await c0(bundle, file('forged-epoch.json', JSON.stringify({ ...epochJson, envelope: e.toString('hex') })), join(t.dir, '0.cbor'));
    assert.equal(r.status, EXIT.NEGATIVE, r.stdout + r.stderr);
    assert.match(r.stdout, /^not verified: ENVELOPE_BAD_SIGNATURE: the epoch commitment: /);
  });

  for (const [name, text, why] of [
    ['empty.json', '{}', /envelope must be the epoch commitment in hex/],
    ['null-witnesses.json', 'WITNESSES_NULL', /witnesses must be a list/],
    ['not-json.json', 'not json', /not JSON/],
  ] as const) {
    it(`an epoch file ${name}: TRAIN_VERIFY_INPUT_INVALID naming epochFile, exit 3`, async () => {
      const r = await c0(bundle, file(name, text === 'WITNESSES_NULL' ? JSON.stringify({ ...epochJson, witnesses: null }) : text), join(t.dir, '0.cbor'));
      assert.equal(r.status, EXIT.OPERATOR, r.stdout + r.stderr);
      assert.match(r.stderr, new RegExp(`^error TRAIN_VERIFY_INPUT_INVALID: epochFile \\S*${name}: `));
      assert.match(r.stderr, why);
    });
  }

  it('--proof given a file that is not JSON: TRAIN_VERIFY_INPUT_INVALID naming --proof, exit 3', async () => {
    const r = await c0(bundle, join(t.dir, '0.json'), join(t.dir, '0.cbor'), '--proof', join(t.dir, '0.cbor'));
    assert.equal(r.status, EXIT.OPERATOR, r.stdout + r.stderr);
    assert.match(r.stderr, /^error TRAIN_VERIFY_INPUT_INVALID: proof \S*0\.cbor: not JSON/);
  });

  it('an epoch file where the step commitment goes: TRAIN_VERIFY_INPUT_INVALID naming stepCommitment, exit 3', async () => {
    const r = await c0(bundle, join(t.dir, '0.json'), join(t.dir, '0.json'));
    assert.equal(r.status, EXIT.OPERATOR, r.stdout + r.stderr);
    assert.match(r.stderr, /^error TRAIN_VERIFY_INPUT_INVALID: stepCommitment \S*0\.json: a JSON file/);
  });
});
