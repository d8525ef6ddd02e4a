/**
 * The real CLI in a temporary root, for tests of what `start` does with a data directory (config-last-start,
 * start-record-success): `c0` runs a command to its end; `start` runs `start` on loopback until it says the node started
 * (then SIGINT) or exits on its own; `keysInit` makes a data directory with a key and no passphrase. None blocks the
 * event loop: cases on their own data directories run side by side, SIDE_BY_SIDE at a time.
 */
import { after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { runNode } from './cli-run.js';

/** How many cases of a file run at once: each starts real daemons, about a core's work each while it starts. */
export const SIDE_BY_SIDE = { concurrency: 2 };

export function startRig(prefix: string) {
  const bin = fileURLToPath(new URL('../../../../bin/c0mpute.js', import.meta.url));
  const root = mkdtempSync(join(tmpdir(), prefix));
  after(() => rmSync(root, { recursive: true, force: true }));
  // without node:test's marker: the children are the CLI, not a test runner's
  const { NODE_TEST_CONTEXT: _, ...parent } = process.env;
  const env = { ...parent, C0MPUTE_PASSPHRASE: '', C0MPUTE_HOME: join(root, 'home') };
  const LOOPBACK = ['--listen', '/ip4/127.0.0.1/tcp/0', '--api', '127.0.0.1:0', '--bootstrap', '/ip4/127.0.0.1/tcp/1/p2p/12D3KooWHmrHaAecUJxqiAbQU8UPEazeWPrtDYnqZWBgf2ExqX3W', '--log-format', 'json'];

  const c0 = async (d: string, ...args: string[]) => {
    const r = await runNode([bin, '--data-dir', d, ...args], { timeout: 120_000, env });
    return { code: r.status ?? -1, out: r.stdout + r.stderr };
  };

  /**
   * `start` until it says the node started (then SIGINT) or it exits on its own; its exit code, all it wrote, and the
   * daemon.json it had written when it said so.
   */
  async function start(d: string, ...args: string[]): Promise<{ code: number | null; started: boolean; out: string; daemonJson?: string }> {
    const p = spawn(process.execPath, [bin, '--data-dir', d, 'start', ...LOOPBACK, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env });
    const exit = once(p, 'exit');
    let out = '';
    let started = false;
    let daemonJson: string | undefined;
    const giveUp = setTimeout(() => p.kill('SIGKILL'), 120_000); // (a hang's net: cases run side by side on a busy machine)
    const onData = (b: Buffer) => {
      out += b.toString();
      if (!started && out.includes('node started')) {
        started = true;
        try {
          daemonJson = readFileSync(join(d, 'daemon.json'), 'utf8');
        } catch {
          /* none: the caller says whether that matters */
        }
        p.kill('SIGINT');
      }
    };
    p.stdout!.on('data', onData);
    p.stderr!.on('data', onData);
    const [code] = (await exit) as [number | null];
    clearTimeout(giveUp);
    return { code, started, out, ...(daemonJson === undefined ? {} : { daemonJson }) };
  }

  async function keysInit(name: string): Promise<string> {
    const d = join(root, name);
    const r = await c0(d, 'keys', 'init', '--no-passphrase');
    assert.equal(r.code, 0, r.out);
    return d;
  }

  return { bin, root, env, LOOPBACK, c0, start, keysInit };
}
