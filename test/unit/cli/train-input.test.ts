/**
 * `c0mpute train start|join|stage` refuse bad input with a stable code naming what is wrong, never an internal error
 * (exit 70): a member's `addr` that is not a multiaddr (TRAIN_RUN_FILE naming members[i].addr at start, the bundle's
 * addrs entry at join), and `train stage --listen`/`--next` that are not multiaddrs (TRAIN_BAD_OPTION, exit 2, naming
 * the flag); `train stage --layers/--of/--stage` out of form (exit 2, naming the flag); `train infer` with both
 * `--weights -` and `--input -` (exit 2: one standard input); witnesses that are not members (TRAIN_RUN_FILE naming witnesses[i], at start and wherever a bundle is
 * read). Real files, the real binary.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createIdentity } from '../../../src/node/identity.js';
import { Ed25519Signer } from '../../../src/records/ed25519.js';
import { didFromPublicKey } from '../../../src/records/index.js';
import { seal } from '../../../src/records/envelope.js';
import { TRAIN_T } from '../../../src/training/record-kinds.js';
import { buildRun } from '../../../src/roles/trainer/run-file.js';
import { initWeights, weightsBytes } from '../../../src/training/model.js';
import { EXIT } from '../../../src/cli/context.js';
import { tempDir } from '../ledger/helpers.js';
import { runNode } from './cli-run.js';

const bin = fileURLToPath(new URL('../../../../bin/c0mpute.js', import.meta.url));

describe('train: bad input is refused with a stable code', () => {
  const t = tempDir('c0-train-input-');
  const data = join(t.dir, 'd');
  const env = { ...process.env, C0MPUTE_HOME: join(t.dir, 'home'), C0MPUTE_LOG_LEVEL: 'silent' };
  const c0 = (...args: string[]) => runNode([bin, '--data-dir', data, ...args], { env, timeout: 30_000 });
  let me = '';
  let other = '';
  const yaml = (members: string[], extra: string[] = []) => ['name: t', 'model: { layers: [4, 8, 3] }', 'members:', ...members, ...extra].join('\n') + '\n';
  const file = (name: string, text: string) => {
    writeFileSync(join(t.dir, name), text);
    return join(t.dir, name);
  };
  const weights = () => join(t.dir, 'w.bin');

  before(() => {
    me = createIdentity(data).did;
    other = createIdentity(join(t.dir, 'other')).did;
    writeFileSync(weights(), weightsBytes(initWeights({ layers: [4, 8, 3] }, 1)));
  });
  after(() => t.cleanup());

  it('train stage: a file that is not weights is TRAIN_WEIGHTS_INVALID naming the file, exit 3 (QA ffTrainDay2 F4)', async () => {
    const r = await c0('train', 'stage', file('run.yaml', 'name: tt\n'), '--layers', '4,8,3', '--stage', '0', '--of', '1');
    assert.equal(r.status, EXIT.OPERATOR, r.stdout + r.stderr);
    assert.match(r.stderr, /^error TRAIN_WEIGHTS_INVALID: \S*run\.yaml: 9 bytes, not a whole number of float64 weights/);
  });

  it('train start: a member addr that is not a multiaddr is TRAIN_RUN_FILE naming members[1].addr (exit 3), nothing signed', async () => {
    const p = file('bad-addr.yaml', yaml([`  - { did: ${me}, addr: /ip4/127.0.0.1/tcp/4101 }`, `  - { did: ${other}, addr: notamultiaddr }`]));
    const r = await c0('train', 'start', p);
    assert.equal(r.status, EXIT.OPERATOR, r.stdout + r.stderr);
    assert.match(r.stderr, /^error TRAIN_RUN_FILE: members\[1\]\.addr: a multiaddr/);
    assert.throws(() => readFileSync(join(t.dir, 'bad-addr.run.json')), /ENOENT/);
  });

  it('train start: an addr with /p2p is refused too (the worker adds the DID’s peer id)', async () => {
    const p = file('p2p-addr.yaml', yaml([`  - { did: ${me}, addr: /ip4/127.0.0.1/tcp/4101/p2p/12D3KooWDpJ7As7BWAwRMfu1VU2WCqNjvq387JEYKDBj4kx6nXTN }`]));
    const r = await c0('train', 'start', p);
    assert.equal(r.status, EXIT.OPERATOR, r.stdout + r.stderr);
    assert.match(r.stderr, /^error TRAIN_RUN_FILE: members\[0\]\.addr:/);
  });

  it('train join: a bundle whose addrs entry is not a multiaddr is TRAIN_RUN_FILE naming it (exit 3), not an internal error', async () => {
    const { json } = buildRun(yaml([`  - { did: ${me}, addr: /ip4/127.0.0.1/tcp/4101 }`, `  - { did: ${other}, addr: /ip4/127.0.0.1/tcp/4102 }`]), Ed25519Signer.generate(), Date.now());
    const j = JSON.parse(json) as { addrs: Record<string, string> };
    j.addrs[me] = 'notamultiaddr';
    const r = await c0('train', 'join', file('bad.run.json', JSON.stringify(j)));
    assert.equal(r.status, EXIT.OPERATOR, r.stdout + r.stderr);
    assert.match(r.stderr, new RegExp(`^error TRAIN_RUN_FILE: .*bad\\.run\\.json: addrs\\.${me}: "notamultiaddr" is not a multiaddr`));
  });

  it('train start: witnesses naming a DID that is not a member is TRAIN_RUN_FILE naming witnesses[1] and the DID (exit 3), nothing signed', async () => {
    const stranger = didFromPublicKey(Ed25519Signer.generate().publicKey);
    const p = file('bad-witness.yaml', yaml([`  - { did: ${me}, addr: /ip4/127.0.0.1/tcp/4101 }`, `  - { did: ${other}, addr: /ip4/127.0.0.1/tcp/4102 }`], ['witnesses:', `  - ${other}`, `  - ${stranger}`]));
    const r = await c0('train', 'start', p);
    assert.equal(r.status, EXIT.OPERATOR, r.stdout + r.stderr);
    assert.match(r.stderr, new RegExp(`^error TRAIN_RUN_FILE: witnesses\\[1\\]: ${stranger} is not a member of the run`));
    assert.throws(() => readFileSync(join(t.dir, 'bad-witness.run.json')), /ENOENT/);
    // an empty list names no witness at all: no epoch would verify either
    const empty = await c0('train', 'start', file('no-witness.yaml', yaml([`  - { did: ${me}, addr: /ip4/127.0.0.1/tcp/4101 }`], ['witnesses: []'])));
    assert.equal(empty.status, EXIT.OPERATOR, empty.stdout + empty.stderr);
    assert.match(empty.stderr, /^error TRAIN_RUN_FILE: witnesses: name at least one member/);
    // members as witnesses are signed
    const ok = await c0('train', 'start', file('good-witness.yaml', yaml([`  - { did: ${me}, addr: /ip4/127.0.0.1/tcp/4101 }`, `  - { did: ${other}, addr: /ip4/127.0.0.1/tcp/4102 }`], ['witnesses:', `  - ${other}`])));
    assert.equal(ok.status, EXIT.OK, ok.stdout + ok.stderr);
  });

  it('a bundle whose signed run names a non-member witness is refused where it is read (join, reference): TRAIN_RUN_FILE, exit 3', async () => {
    const owner = Ed25519Signer.generate();
    const { bundle } = buildRun(yaml([`  - { did: ${me}, addr: /ip4/127.0.0.1/tcp/4101 }`, `  - { did: ${other}, addr: /ip4/127.0.0.1/tcp/4102 }`]), owner, Date.now());
    const stranger = didFromPublicKey(Ed25519Signer.generate().publicKey);
    const env = seal(TRAIN_T.run, { ...bundle.run.record, witnesses: [stranger] } as never, owner);
    const p = file('stranger.run.json', JSON.stringify({ run: Buffer.from(env.bytes).toString('hex'), addrs: bundle.addrs }));
    for (const cmd of ['join', 'reference']) {
      const r = await c0('train', cmd, p);
      assert.equal(r.status, EXIT.OPERATOR, cmd + r.stdout + r.stderr);
      assert.match(r.stderr, new RegExp(`^error TRAIN_RUN_FILE: .*stranger\\.run\\.json: witnesses\\[0\\]: ${stranger} is not a member`));
    }
  });

  it('a run past the bounds a member job keeps is refused at start and where a bundle is read: TRAIN_RUN_FILE naming the field, exit 3', async () => {
    const m = [`  - { did: ${me}, addr: /ip4/127.0.0.1/tcp/4101 }`];
    // 84 M weights and 10^8 steps were signed (exit 0); the worker then held 780 MB waiting for members
    for (const [name, extra, field] of [
      ['wide', ['model: { layers: [4, 4096, 4096, 4096, 4096, 4096, 4096, 3] }'], /model\.layers: a model of \d+ weights; at most 4194304/],
      ['long', ['stepsPerEpoch: 10000', 'epochs: 10000'], /epochs: 10000 epochs × 10000 steps is 100000000 steps; a member job runs at most 100000/],
    ] as const) {
      const text = yaml(m, [...extra]).replace(name === 'wide' ? 'model: { layers: [4, 8, 3] }\n' : '\u0000', '');
      const r = await c0('train', 'start', file(`${name}.yaml`, text));
      assert.equal(r.status, EXIT.OPERATOR, name + r.stdout + r.stderr);
      assert.match(r.stderr, /^error TRAIN_RUN_FILE: /);
      assert.match(r.stderr, field);
      assert.throws(() => readFileSync(join(t.dir, `${name}.run.json`)), /ENOENT/);
    }
    // a bundle signed past them (by a build before this) is refused where it is read
    const owner = Ed25519Signer.generate();
    const { bundle } = buildRun(yaml(m), owner, Date.now());
    const env = seal(TRAIN_T.run, { ...bundle.run.record, epochs: 10_000, stepsPerEpoch: 10_000 } as never, owner);
    const p = file('long.run.json', JSON.stringify({ run: Buffer.from(env.bytes).toString('hex'), addrs: bundle.addrs }));
    for (const cmd of ['join', 'reference']) {
      const r = await c0('train', cmd, p);
      assert.equal(r.status, EXIT.OPERATOR, cmd + r.stdout + r.stderr);
      assert.match(r.stderr, /^error TRAIN_RUN_FILE: .*long\.run\.json: epochs: 10000 epochs × 10000 steps/);
    }
  });

  it('a run bundle that cannot be read is INPUT_UNREADABLE (exit 3), as every file argument; one that is no JSON is TRAIN_RUN_FILE', async () => {
    for (const [p, why] of [
      [join(t.dir, 'missing.run.json'), /no such file/],
      [t.dir, /a directory, not a file/],
    ] as const) {
      const r = await c0('train', 'reference', p);
      assert.equal(r.status, EXIT.OPERATOR, r.stdout + r.stderr);
      assert.match(r.stderr, /^error INPUT_UNREADABLE: cannot read run bundle /);
      assert.match(r.stderr, why);
    }
    const r = await c0('train', 'reference', file('torn.run.json', '{'));
    assert.equal(r.status, EXIT.OPERATOR);
    assert.match(r.stderr, /^error TRAIN_RUN_FILE: .*torn\.run\.json: not a run bundle \(not JSON/);
  });

  for (const [flag, value] of [
    ['--listen', 'garbage'],
    ['--next', 'garbage'],
    ['--next', '/ip4/127.0.0.1/tcp/1/p2p/notapeerid'],
  ] as const) {
    it(`train stage ${flag} ${value}: TRAIN_BAD_OPTION naming ${flag}, exit 2`, async () => {
      const r = await c0('train', 'stage', weights(), '--layers', '4,8,3', '--stage', '0', '--of', '1', flag, value);
      assert.equal(r.status, EXIT.USAGE, r.stdout + r.stderr);
      assert.match(r.stderr, new RegExp(`^error TRAIN_BAD_OPTION: ${flag}: `));
    });
  }

  for (const [args, code, flag] of [
    [['--layers=4,x,3'], 'TRAIN_BAD_OPTION', '--layers'],
    [['--layers=4,-16,3'], 'TRAIN_BAD_OPTION', '--layers'],
    [['--layers=4'], 'TRAIN_BAD_OPTION', '--layers'],
    [['--layers=4,,3'], 'TRAIN_BAD_OPTION', '--layers'],
    [['--layers=4,0,3'], 'TRAIN_BAD_OPTION', '--layers'],
    [['--of=0'], 'PIPELINE_STAGES_INVALID', '--of'],
    [['--of=x'], 'PIPELINE_STAGES_INVALID', '--of'],
    [['--of=3'], 'PIPELINE_STAGES_INVALID', '--of'],
    [['--stage=2'], 'PIPELINE_STAGES_INVALID', '--stage'],
    [['--stage=x'], 'PIPELINE_STAGES_INVALID', '--stage'],
    [['--stage=-1'], 'PIPELINE_STAGES_INVALID', '--stage'],
  ] as const) {
    it(`train stage ${args.join(' ')}: ${code} naming ${flag}, exit 2`, async () => {
      const o: Record<string, string> = { '--layers': '4,8,3', '--stage': '1', '--of': '2' };
      for (const a of args) o[a.slice(0, a.indexOf('='))] = a.slice(a.indexOf('=') + 1);
      const r = await c0('train', 'stage', weights(), ...Object.entries(o).map(([k, v]) => `${k}=${v}`));
      assert.equal(r.status, EXIT.USAGE, r.stdout + r.stderr);
      assert.match(r.stderr, new RegExp(`^error ${code}: ${flag}: `));
    });
  }
  it('train infer --weights - --input -: TRAIN_BAD_OPTION naming --weights, exit 2 (one standard input for both: the rows read nothing)', async () => {
    for (const [weights, input] of [['-', '-'], ['/dev/stdin', '-'], ['-', '/dev/fd/0'], ['/proc/self/fd/0', '/dev/stdin']]) {
      const r = await c0('train', 'infer', '--stages', '/ip4/127.0.0.1/tcp/1/p2p/x', '--layers', '4,8,3', '--input', input!, '--weights', weights!);
      assert.equal(r.status, EXIT.USAGE, r.stdout + r.stderr);
      assert.match(r.stderr, new RegExp(`^error TRAIN_BAD_OPTION: --weights ${weights} and --input ${input}: only one of them can read standard input`));
    }
  });
});
