/**
 * `c0mpute train join` and `c0mpute train stage` whose network fails to start (its address in use: NET_LISTEN_FAILED)
 * print the error and exit 3 with its code. Before, the libp2p node they had created was never stopped: the error was
 * printed and the process then hung until killed. The error names the stage or the member, not an overlay (QA qaTrn
 * F9: `overlay public: … each overlay needs its own`). A stage whose --next is not reachable, or that is the last and
 * is given one, says so on stderr with a code and serves on (QA qaTrn F9: accepted without a word). A real port held
 * by this process, real libp2p, the real binary.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createIdentity } from '../../../src/node/identity.js';
import { Ed25519Signer } from '../../../src/records/ed25519.js';
import { buildRun } from '../../../src/roles/trainer/run-file.js';
import { initWeights, weightsBytes } from '../../../src/training/model.js';
import { EXIT } from '../../../src/cli/context.js';
import { tempDir } from '../ledger/helpers.js';
import { runNode } from './cli-run.js';

const bin = fileURLToPath(new URL('../../../../bin/c0mpute.js', import.meta.url));

describe('train join / train stage: a network that does not start', () => {
  const t = tempDir('c0-train-start-fail-');
  const data = join(t.dir, 'd');
  let server: Server;
  let port = 0;
  let bundle = '';
  const { NODE_TEST_CONTEXT: _, ...parentEnv } = process.env;
  const env = { ...parentEnv, C0MPUTE_HOME: join(t.dir, 'home'), C0MPUTE_LOG_LEVEL: 'silent' };
  const c0 = (...args: string[]) => runNode([bin, '--data-dir', data, ...args], { env, timeout: 30_000 });

  before(async () => {
    server = createServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as { port: number }).port;
    const id = createIdentity(data);
    const other = createIdentity(join(t.dir, 'other'));
    const yaml = ['name: t', 'model: { layers: [4, 8, 3] }', 'members:', `  - { did: ${id.did}, addr: /ip4/127.0.0.1/tcp/${port} }`, `  - { did: ${other.did}, addr: /ip4/127.0.0.1/tcp/1 }`].join('\n');
    bundle = join(t.dir, 'run.run.json');
    writeFileSync(bundle, buildRun(yaml, Ed25519Signer.generate(), Date.now()).json);
    writeFileSync(join(t.dir, 'w.bin'), weightsBytes(initWeights({ layers: [4, 8, 3] }, 1)));
  });
  after(() => {
    server.close();
    t.cleanup();
  });

  it('train join on an address in use: NET_LISTEN_FAILED, exit 3, not a hang', async () => {
    const r = await c0('train', 'join', bundle);
    assert.equal(r.status, EXIT.OPERATOR, `exit ${r.status} (null: killed after 30 s, it hung)\n${r.stdout}${r.stderr}`);
    assert.match(r.stderr, /error NET_LISTEN_FAILED: this member: cannot listen on /);
    assert.doesNotMatch(r.stderr, /overlay/);
  });

  it('train stage --listen on an address in use: NET_LISTEN_FAILED, exit 3, not a hang', async () => {
    const r = await c0('train', 'stage', join(t.dir, 'w.bin'), '--layers', '4,8,3', '--stage', '0', '--of', '1', '--listen', `/ip4/127.0.0.1/tcp/${port}`);
    assert.equal(r.status, EXIT.OPERATOR, `exit ${r.status} (null: killed after 30 s, it hung)\n${r.stdout}${r.stderr}`);
    assert.match(r.stderr, /error NET_LISTEN_FAILED: this stage: cannot listen on .*give another --listen/);
    assert.doesNotMatch(r.stderr, /overlay/);
  });

  /** A stage started, its output read until `until` matches (or 20 s), then stopped. */
  const stageUntil = (until: RegExp, ...args: string[]) =>
    new Promise<{ out: string; err: string }>((resolve) => {
      const p = spawn(process.execPath, [bin, '--data-dir', data, 'train', 'stage', join(t.dir, 'w.bin'), '--layers', '4,8,3', ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      let err = '';
      const done = () => {
        clearTimeout(giveUp);
        p.kill('SIGKILL');
        resolve({ out, err });
      };
      const seen = () => until.test(out + err) && done();
      p.stdout.setEncoding('utf8').on('data', (d: string) => ((out += d), seen()));
      p.stderr.setEncoding('utf8').on('data', (d: string) => ((err += d), seen()));
      const giveUp = setTimeout(done, 20_000);
      p.on('close', done);
    });

  it('train stage: --next not reachable, or on the last stage, is a warning with its code; the stage serves on', async () => {
    // a port nothing listens on (the held server's port + a peer id): the dial is refused
    const peer = '12D3KooWMCmqtU6Lv8hSNZ1Nm6VPjHm8kGcAAH6QqaZqB6Eht8Qk';
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const free = (closed.address() as { port: number }).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const unreachable = await stageUntil(/warning PIPELINE_NEXT_UNREACHABLE/, '--stage', '0', '--of', '2', '--next', `/ip4/127.0.0.1/tcp/${free}/p2p/${peer}`);
    assert.match(unreachable.out, /^serving stage 0 of 2, layer 0 of 2 \(4→8\), as did:key:\S+ at \S+/m);
    assert.match(unreachable.err, /^warning PIPELINE_NEXT_UNREACHABLE: --next \/ip4\/127\.0\.0\.1\/tcp\/\d+\/p2p\/\w+ is not reachable now \(NET_DIAL_FAILED: .*\); serving anyway/m);
    const unused = await stageUntil(/serving stage/, '--stage', '1', '--of', '2', '--next', `/ip4/127.0.0.1/tcp/${free}/p2p/${peer}`);
    assert.match(unused.err, /^warning PIPELINE_NEXT_UNUSED: --next \S+ is not used: stage 1 of 2 is the last/m);
    assert.match(unused.out, /^serving stage 1 of 2, layer 1 of 2 \(8→3\), as /m);
  });
});
