/**
 * `c0mpute start` as process 1 of its pid namespace, a container started without an init (docs/node.md "In a
 * container"): it warns DAEMON_PID_1 and runs on; started as any other process, it does not. The namespace is a real
 * one (`unshare --pid --fork --mount-proc`, root only); where it cannot be made the case is skipped, saying why.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';
import { statFields } from '../../../src/node/daemon-info.js';
import { startRig } from './start-rig.js';

const rig = startRig('c0-start-pid1-');

/** Why a pid namespace cannot be made here, or undefined when it can. */
function noNamespace(): string | undefined {
  if (process.platform !== 'linux') return 'pid namespaces are Linux only';
  const r = spawnSync('unshare', ['--pid', '--fork', '--mount-proc', process.execPath, '-e', 'process.exit(process.pid === 1 ? 0 : 9)'], { encoding: 'utf8' });
  if (r.error) return `no unshare command (${r.error.message})`;
  if (r.status !== 0) return `unshare cannot make a pid namespace here (exit ${r.status}: ${r.stderr.trim().slice(0, 200)})`;
  return undefined;
}

/** The pids whose parent is `ppid` (/proc/<pid>/stat's field 4). */
function childrenOf(ppid: number): number[] {
  const out: number[] = [];
  for (const e of readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(e)) continue;
    try {
      if (Number(statFields(readFileSync(`/proc/${e}/stat`, 'utf8'))[1]) === ppid) out.push(Number(e));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

test('start as PID 1 (no init in front) warns DAEMON_PID_1 and starts; started normally, it does not warn', async (t) => {
  const why = noNamespace();
  if (why) return t.skip(why);
  const d = await rig.keysInit('n');
  // PID 1: unshare forks the node into a new pid namespace (and kills it should unshare itself be killed)
  const p = spawn('unshare', ['--pid', '--fork', '--mount-proc', '--kill-child', process.execPath, rig.bin, '--data-dir', d, 'start', ...rig.LOOPBACK], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: rig.env,
  });
  const exit = once(p, 'close'); // (its output read to the end, not only its exit)
  let out = '';
  const giveUp = setTimeout(() => p.kill('SIGKILL'), 120_000);
  const started = new Promise<void>((resolve) => {
    const onData = (b: Buffer) => {
      out += b.toString();
      if (out.includes('node started')) resolve();
    };
    p.stdout!.on('data', onData);
    p.stderr!.on('data', onData);
  });
  await Promise.race([started, exit]);
  // unshare --fork ignores SIGTERM and SIGINT itself, so the node (its child, pid 1 inside) is sent the SIGTERM; unshare
  // exits once the node has
  for (const pid of childrenOf(p.pid!)) process.kill(pid, 'SIGTERM');
  await exit;
  clearTimeout(giveUp);
  const lines = out.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { code?: string; pid?: number; msg?: string; level?: number });
  assert.ok(lines.some((l) => l.msg === 'node started' && l.pid === 1), `the node started as pid 1:\n${out.slice(-2000)}`);
  const warning = lines.find((l) => l.code === 'DAEMON_PID_1');
  assert.ok(warning, `a DAEMON_PID_1 warning:\n${out.slice(-2000)}`);
  assert.equal(warning.level, 40);
  assert.match(warning.msg!, /process 1 .*--init/);
  assert.ok(lines.some((l) => l.msg === 'stopping'), 'and a SIGTERM stops it as usual');

  const plain = await rig.start(d);
  assert.ok(plain.started, plain.out);
  assert.doesNotMatch(plain.out, /DAEMON_PID_1/);
});
