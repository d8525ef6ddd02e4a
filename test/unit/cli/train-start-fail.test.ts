/**
 * `c0mpute train join` and `c0mpute train stage` whose network fails to start (its address in use: NET_LISTEN_FAILED)
 * print the error and exit 3 with its code. Before, the libp2p node they had created was never stopped: the error was
 * printed and the process then hung until killed. A real port held by this process, real libp2p, the real binary.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
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
  const env = { ...process.env, C0MPUTE_HOME: join(t.dir, 'home'), C0MPUTE_LOG_LEVEL: 'silent' };
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
    assert.match(r.stderr, /error NET_LISTEN_FAILED/);
  });

  it('train stage --listen on an address in use: NET_LISTEN_FAILED, exit 3, not a hang', async () => {
    const r = await c0('train', 'stage', join(t.dir, 'w.bin'), '--layers', '4,8,3', '--stage', '0', '--of', '1', '--listen', `/ip4/127.0.0.1/tcp/${port}`);
    assert.equal(r.status, EXIT.OPERATOR, `exit ${r.status} (null: killed after 30 s, it hung)\n${r.stdout}${r.stderr}`);
    assert.match(r.stderr, /error NET_LISTEN_FAILED/);
  });
});
