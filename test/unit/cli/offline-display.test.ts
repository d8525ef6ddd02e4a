/**
 * A display command without a daemon (`c0mpute jobs`, `reputation`: offlineNode) reads what is held and acts on
 * nothing (a QA pass, session 48). Its node dialled the peers remembered in peers-<overlay>.json, so an offline
 * `reputation` took receipts off the network and the provider remembered the display node's passing port; and on a
 * crashed provider's data directory it ran the crash recovery: ended the leftover process groups and signed their
 * failed receipts, with logging silent, so the next `start` never said so. Here, through the real CLI on a real data
 * directory: a process group recorded as a crashed run's, and a remembered peer that is a listening socket.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { procStartTime } from '../../../src/roles/provider/orphans.js';
import { peerIdFromDid } from '../../../src/node/peer-id.js';
import { P } from '../market/fixtures.js';
import { runNode } from './cli-run.js';

const bin = fileURLToPath(new URL('../../../../bin/c0mpute.js', import.meta.url));

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

test('an offline `jobs` and `reputation` dial no remembered peer and leave a crashed run’s process group and its record alone', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-offline-'));
  const dataDir = join(dir, 'node');
  const env: NodeJS.ProcessEnv = { ...process.env, C0MPUTE_HOME: join(dir, 'home') };
  delete env.NODE_TEST_CONTEXT;
  // a remembered peer: a socket that counts who connects to it
  let connections = 0;
  const server = createServer((s) => {
    connections++;
    s.destroy();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  // a crashed run's work: a process group of its own, recorded as the exec executor records it
  const sleeper = spawn('sleep', ['120'], { detached: true, stdio: 'ignore' });
  const pid = sleeper.pid!;
  try {
    const init = await runNode([bin, '--data-dir', dataDir, 'init', '--no-passphrase'], { env });
    assert.equal(init.status, 0, init.stderr);
    const groups = join(dataDir, 'exec-groups', 'public');
    mkdirSync(groups, { recursive: true });
    const record = join(groups, `${pid}.json`);
    writeFileSync(record, JSON.stringify({ pid, pgid: pid, job: 'sha256:' + 'ab'.repeat(32), startedAt: Date.now() - 5_000, procStart: procStartTime(pid) }));
    const peers = join(dataDir, 'peers-public.json');
    const remembered = JSON.stringify({ peers: [{ peerId: peerIdFromDid(P(1).did).toString(), addrs: [`/ip4/127.0.0.1/tcp/${port}`], lastUsefulAt: Date.now() - 60_000 }] }, null, 1);
    writeFileSync(peers, remembered);

    for (const cmd of ['jobs', 'reputation']) {
      const r = await runNode([bin, '--data-dir', dataDir, cmd], { env });
      assert.equal(r.status, 0, `${cmd}: ${r.stderr}`);
    }
    assert.ok(alive(pid), 'the recorded process group still runs: a display command ends nothing');
    assert.ok(existsSync(record), 'its record is left for the next start');
    assert.equal(connections, 0, 'no remembered peer was dialled');
    assert.equal(readFileSync(peers, 'utf8'), remembered, 'the peers file is unchanged');
  } finally {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      /* gone already */
    }
    await new Promise<void>((r) => server.close(() => r()));
    rmSync(dir, { recursive: true, force: true });
  }
});
