/**
 * `start` on a copy of a running node's data directory (QA qaOps F7): the daemon.json the copy holds names the
 * original's directory, so it is not a daemon here; the start goes on, saying so (DAEMON_INFO_FOREIGN). One from
 * before daemon.json recorded its directory still refuses DAEMON_RUNNING (the pid is all it has). Real CLI on loopback.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SIDE_BY_SIDE, startRig } from './start-rig.js';

const { root, start, keysInit } = startRig('c0-start-copy-');

/** A daemon.json naming a live process (this test's: not the CLI's own pid), written into `d`. */
function daemonJson(d: string, extra: Record<string, unknown>): void {
  writeFileSync(join(d, 'daemon.json'), JSON.stringify({ pid: process.pid, did: 'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK', api: '127.0.0.1:9', startedAt: 0, ...extra }));
}

describe("start on a directory holding another directory's daemon.json", SIDE_BY_SIDE, () => {
  it("starts this directory's own daemon, with a DAEMON_INFO_FOREIGN warning naming the other directory", async () => {
    const d = await keysInit('copy');
    daemonJson(d, { dataDir: realpathSync(root) });
    const r = await start(d);
    assert.ok(r.started, r.out);
    assert.match(r.out, /"code":"DAEMON_INFO_FOREIGN".*not of this directory/);
    // and the daemon.json it writes names this directory (its real path), for the next copy of it
    assert.equal((JSON.parse(r.daemonJson ?? '{}') as { dataDir?: string }).dataDir, realpathSync(d));
  });

  it('a daemon.json without dataDir (an older daemon) still means a daemon runs here: DAEMON_RUNNING', async () => {
    const d = await keysInit('old');
    daemonJson(d, {});
    const r = await start(d);
    assert.equal(r.code, 3, r.out);
    assert.match(r.out, /error DAEMON_RUNNING/);
  });
});
