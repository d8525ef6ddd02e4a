/**
 * `c0mpute train status` on a run directory whose status.json is not a worker's status (`{`, `{}`, a directory) is
 * TRAIN_STATUS_UNREADABLE naming the file (exit 3); before, an internal error (exit 70). A stray file or directory
 * under <data>/train/ beside the run's (named by 16 hex digits of the run's address) is not taken for a run. Real
 * files, the real binary. A status that says training whose worker process is gone (SIGKILL) reads as interrupted, and
 * a `train join` refused TRAIN_RUN_EXISTS over it says so; before, `training` for good.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EXIT } from '../../../src/cli/context.js';
import { createIdentity } from '../../../src/node/identity.js';
import { Ed25519Signer } from '../../../src/records/ed25519.js';
import { buildRun } from '../../../src/roles/trainer/run-file.js';
import { tempDir } from '../ledger/helpers.js';
import { runNode } from './cli-run.js';

const bin = fileURLToPath(new URL('../../../../bin/c0mpute.js', import.meta.url));
const RUN = 'sha256:0123456789abcdef' + '0'.repeat(48);
const good = {
  run: RUN,
  name: 'iris',
  self: 'did:key:z6Mkself',
  status: 'done',
  view: 0,
  members: [],
  dropped: [],
  step: 9,
  totalSteps: 10,
  stepsPerSec: 12.5,
  losses: [{ step: 9, loss: 0.5 }],
  contributions: { 'did:key:z6Mka': 10 },
  epochs: [{ epoch: 0, view: 0, root: 'sha256:' + 'ab'.repeat(32), address: 'sha256:' + 'cd'.repeat(32), coordinator: 'did:key:z6Mka', witnesses: ['did:key:z6Mkb'] }],
  views: [],
  ignored: { count: 0, recent: [] },
  weights: 'sha256:' + 'ef'.repeat(32),
};

describe('train status: a status.json that is not a worker status, stray files', () => {
  const t = tempDir('c0-train-status-');
  after(() => t.cleanup());
  const env = { ...process.env, C0MPUTE_HOME: join(t.dir, 'home') };
  let n = 0;
  /** A data directory with train/<entries>: a name mapped to a file's text, or null for a directory. */
  const data = (entries: Record<string, string | null>) => {
    const d = join(t.dir, `d${n++}`);
    for (const [name, text] of Object.entries(entries)) {
      const p = join(d, 'train', name);
      mkdirSync(text === null ? p : join(p, '..'), { recursive: true });
      if (text !== null) writeFileSync(p, text);
    }
    return d;
  };
  const status = (d: string, ...more: string[]) => runNode([bin, '--data-dir', d, 'train', 'status', ...more], { env, timeout: 30_000 });

  for (const [what, text] of [
    ['{', '{'],
    ['{}', '{}'],
    ['losses: null', JSON.stringify({ ...good, losses: null })],
  ] as const) {
    it(`status.json ${what}: TRAIN_STATUS_UNREADABLE naming the file, exit 3`, async () => {
      for (const json of [[], ['--json']]) {
        const r = await status(data({ '0123456789abcdef/status.json': text }), ...json);
        assert.equal(r.status, EXIT.OPERATOR, r.stdout + r.stderr);
        assert.match(r.stderr, /^error TRAIN_STATUS_UNREADABLE: \S*0123456789abcdef\/status\.json: not /);
      }
    });
  }

  it('status.json a directory: TRAIN_STATUS_UNREADABLE, exit 3', async () => {
    const r = await status(data({ '0123456789abcdef/status.json': null }));
    assert.equal(r.status, EXIT.OPERATOR, r.stdout + r.stderr);
    assert.match(r.stderr, /^error TRAIN_STATUS_UNREADABLE: cannot read /);
  });

  it('a stray file and directory beside the run are not runs: the run is shown', async () => {
    const r = await status(data({ '0123456789abcdef/status.json': JSON.stringify(good), 'notes.txt': 'mine', 'old/x': 'y' }));
    assert.equal(r.status, EXIT.OK, r.stdout + r.stderr);
    assert.match(r.stdout, /^run sha256:0123456789abcdef0+ \(iris\): done, view 0/);
    // step is the last step's index: a finished run of 10 has done 10 (it read 'step 9/10')
    assert.match(r.stdout, /^steps done 10\/10, loss 0\.5000/m);
  });

  it('only a stray file: no training run (TRAIN_RUN_UNKNOWN, exit 3)', async () => {
    const r = await status(data({ 'notes.txt': 'mine' }));
    assert.equal(r.status, EXIT.OPERATOR, r.stdout + r.stderr);
    assert.match(r.stderr, /^error TRAIN_RUN_UNKNOWN: no training run in this data directory/);
  });

  it('several runs (a provider after two member jobs): each is named by its directory or address; none named lists them (QA ffTrainDay2 F3)', async () => {
    // before: `several runs here: name the run bundle`, and the bundle is the buyer's file, which a provider never has
    const RUN2 = 'sha256:fedcba9876543210' + '1'.repeat(48);
    const d = data({
      '0123456789abcdef/status.json': JSON.stringify(good),
      'fedcba9876543210/status.json': JSON.stringify({ ...good, run: RUN2, name: 'second', status: 'stopped' }),
      'fedcba98aaaaaaaa/member-job.json': JSON.stringify({ inputHash: 'sha256:' + '0'.repeat(64), startedAt: 1, endedAt: 2, prunedAt: Date.UTC(2026, 0, 2) }),
    });
    const none = await status(d);
    assert.equal(none.status, EXIT.OPERATOR, none.stdout + none.stderr);
    assert.match(none.stderr, /^error TRAIN_RUN_UNKNOWN: several runs here: 0123456789abcdef \(iris, done\), fedcba9876543210 \(second, stopped\), fedcba98aaaaaaaa \(pruned\); name one: /);
    for (const name of ['fedcba9876543210', RUN2, 'fedcba9876']) {
      const r = await status(d, name);
      assert.equal(r.status, EXIT.OK, name + r.stdout + r.stderr);
      assert.match(r.stdout, new RegExp(`^run ${RUN2} \\(second\\): stopped, view 0`));
    }
    const json = await status(d, '0123456789abcdef', '--json');
    assert.equal((JSON.parse(json.stdout) as { run: string }).run, RUN);
    const ambiguous = await status(d, 'fedcba98');
    assert.equal(ambiguous.status, EXIT.OPERATOR);
    assert.match(ambiguous.stderr, /^error TRAIN_RUN_UNKNOWN: fedcba98 names 2 runs here \(fedcba9876543210, fedcba98aaaaaaaa\): give more of its address/);
    // more than 16 digits must agree with the run's address, not only with its directory name (review s56)
    const wrongTail = await status(d, 'sha256:fedcba9876543210' + '2'.repeat(48));
    assert.equal(wrongTail.status, EXIT.OPERATOR, wrongTail.stdout);
    assert.match(wrongTail.stderr, /^error TRAIN_RUN_UNKNOWN: no run sha256:fedcba98/);
    // the run's directory named from within train/ (an existing directory, not a bundle file): the run
    const inTrain = await runNode([bin, '--data-dir', d, 'train', 'status', 'fedcba9876543210'], { env, timeout: 30_000, cwd: join(d, 'train') });
    assert.equal(inTrain.status, EXIT.OK, inTrain.stdout + inTrain.stderr);
    const unknown = await status(d, 'abcd1234');
    assert.match(unknown.stderr, /^error TRAIN_RUN_UNKNOWN: no run abcd1234 in this data directory \(runs here: 0123456789abcdef, /);
    // a member job's run dropped with the job history: said so, not "not joined"
    const pruned = await status(d, 'fedcba98aaaaaaaa');
    assert.equal(pruned.status, EXIT.OPERATOR);
    assert.match(pruned.stderr, /^error TRAIN_RUN_PRUNED: this node took part in that run \(a member job\), but its records were dropped with the job history \(history\.keepDays\) at 2026-01-02T00:00:00\.000Z/);
  });

  it('a status that says training whose worker process is gone reads as interrupted; its process alive, as training', async () => {
    const dead = spawnSync(process.execPath, ['-e', '']).pid!;
    const gone = await status(data({ '0123456789abcdef/status.json': JSON.stringify({ ...good, status: 'training', pid: dead }) }));
    assert.equal(gone.status, EXIT.OK, gone.stdout + gone.stderr);
    assert.match(gone.stdout, new RegExp(`: interrupted \\(status.json says training, but its worker process ${dead} is gone\\), view 0`));
    const json = await status(data({ '0123456789abcdef/status.json': JSON.stringify({ ...good, status: 'training', pid: dead }) }), '--json');
    assert.equal((JSON.parse(json.stdout) as { interrupted?: boolean }).interrupted, true);
    const alive = await status(data({ '0123456789abcdef/status.json': JSON.stringify({ ...good, status: 'training', pid: process.pid }) }));
    assert.match(alive.stdout, /: training, view 0/);
  });

  it('train join refused TRAIN_RUN_EXISTS over a run whose worker was killed says the run was interrupted', async () => {
    const d = join(t.dir, 'joined');
    const me = createIdentity(d).did;
    const yaml = ['name: t', 'model: { layers: [4, 8, 3] }', 'members:', `  - { did: ${me}, addr: /ip4/127.0.0.1/tcp/4101 }`].join('\n');
    const { bundle, json } = buildRun(yaml, Ed25519Signer.generate(), Date.now());
    const bundlePath = join(t.dir, 'joined.run.json');
    writeFileSync(bundlePath, json);
    const runDir = join(d, 'train', bundle.run.address.slice(7, 23));
    mkdirSync(join(runDir, 'steps'), { recursive: true });
    writeFileSync(join(runDir, 'steps', '0.cbor'), 'a step');
    const dead = spawnSync(process.execPath, ['-e', '']).pid!;
    writeFileSync(join(runDir, 'status.json'), JSON.stringify({ ...good, run: bundle.run.address, status: 'training', pid: dead }));
    const r = await runNode([bin, '--data-dir', d, 'train', 'join', bundlePath], { env, timeout: 30_000 });
    assert.equal(r.status, EXIT.OPERATOR, r.stdout + r.stderr);
    assert.match(r.stderr, new RegExp(`^error TRAIN_RUN_EXISTS: .*The run was interrupted: its worker process ${dead} is gone`));
  });
});
