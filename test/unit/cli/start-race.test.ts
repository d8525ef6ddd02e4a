/**
 * Two `start`s on one data directory at once: the one that loses is DAEMON_RUNNING, not the error of whatever the
 * other held first (QA pass, session 48: `start & start` gave the second `API_LISTEN_FAILED: … EADDRINUSE`, which
 * sends an operator looking for a foreign program on the port). The race is made deterministic here: the first daemon
 * runs, its daemon.json is taken away (the window before a starting daemon writes it), and a second `start` with the
 * same API port fails on that port; it is told by the database's holder note, which names a live `start`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../../../src/devnet/devnet.js';
import { startRig } from './start-rig.js';

const { bin, env, c0, keysInit } = startRig('c0-start-race-');

test('a start that loses the race to another on the same data directory says DAEMON_RUNNING, naming that process', async () => {
  const d = await keysInit('node');
  const api = `127.0.0.1:${await freePort()}`;
  const args = [bin, '--data-dir', d, 'start', '--listen', '/ip4/127.0.0.1/tcp/0', '--api', api, '--bootstrap', '/ip4/127.0.0.1/tcp/1/p2p/12D3KooWHmrHaAecUJxqiAbQU8UPEazeWPrtDYnqZWBgf2ExqX3W'];
  const first = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], env });
  const exited = once(first, 'exit');
  let out = '';
  const giveUp = setTimeout(() => first.kill('SIGKILL'), 120_000);
  try {
    await new Promise<void>((resolve, reject) => {
      const onData = (b: Buffer) => {
        out += b.toString();
        if (out.includes('node started')) resolve();
      };
      first.stdout!.on('data', onData);
      first.stderr!.on('data', onData);
      void exited.then(() => reject(new Error(`the first start exited: ${out}`)));
    });
    rmSync(join(d, 'daemon.json'));
    const second = await c0(d, 'start', '--listen', '/ip4/127.0.0.1/tcp/0', '--api', api);
    assert.equal(second.code, 3, second.out);
    assert.match(second.out, new RegExp(`error DAEMON_RUNNING: another \`c0mpute start\` \\(pid ${first.pid}\\) holds .*\\(this one's API_LISTEN_FAILED\\)`));
  } finally {
    first.kill('SIGINT');
    await exited;
    clearTimeout(giveUp);
  }
});
