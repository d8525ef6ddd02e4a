/**
 * Which config `start` runs with when the data directory has no config.yaml (src/cli/commands/node-actions.ts
 * dataDirConfig; docs/config.md "Which file, and when there is none"), with the real CLI and real daemons on loopback.
 * Before (review s40 round 2 F2), "db/ exists" was taken for "a node ran here with a config": a node started on the
 * built-in defaults (`keys init`, then `start`) could not start again (CONFIG_MISSING, exit 3), nor could one whose
 * db/ a read-only `c0mpute jobs` had made. Now each start records what it ran with (last-start.json), and only a start
 * that leaves off the config file the last start used is CONFIG_MISSING, naming it.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

const bin = fileURLToPath(new URL('../../../src/cli/main.js', import.meta.url));
const root = mkdtempSync(join(tmpdir(), 'c0-config-last-start-'));
after(() => rmSync(root, { recursive: true, force: true }));
const env = { ...process.env, C0MPUTE_PASSPHRASE: '', C0MPUTE_HOME: join(root, 'home') };
const LOOPBACK = ['--listen', '/ip4/127.0.0.1/tcp/0', '--api', '127.0.0.1:0', '--bootstrap', '/ip4/127.0.0.1/tcp/1/p2p/12D3KooWHmrHaAecUJxqiAbQU8UPEazeWPrtDYnqZWBgf2ExqX3W', '--log-format', 'json'];

const c0 = (d: string, ...args: string[]) => {
  const r = spawnSync(process.execPath, [bin, '--data-dir', d, ...args], { encoding: 'utf8', timeout: 60_000, env });
  return { code: r.status ?? -1, out: r.stdout + r.stderr };
};

/** `start` until it says the node started (then SIGINT) or it exits on its own; its exit code and all it wrote. */
async function start(d: string, ...args: string[]): Promise<{ code: number | null; started: boolean; out: string }> {
  const p = spawn(process.execPath, [bin, '--data-dir', d, 'start', ...LOOPBACK, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env });
  const exit = once(p, 'exit');
  let out = '';
  let started = false;
  const giveUp = setTimeout(() => p.kill('SIGKILL'), 60_000);
  const onData = (b: Buffer) => {
    out += b.toString();
    if (!started && out.includes('node started')) {
      started = true;
      p.kill('SIGINT');
    }
  };
  p.stdout!.on('data', onData);
  p.stderr!.on('data', onData);
  const [code] = (await exit) as [number | null];
  clearTimeout(giveUp);
  return { code, started, out };
}

function keysInit(name: string): string {
  const d = join(root, name);
  const r = c0(d, 'keys', 'init', '--no-passphrase');
  assert.equal(r.code, 0, r.out);
  return d;
}

const record = (d: string) => JSON.parse(readFileSync(join(d, 'last-start.json'), 'utf8')) as { config: string | null; via: string };

describe('start without a config.yaml', () => {
  it('a node that ran on the built-in defaults starts again (it was CONFIG_MISSING once db/ existed)', async () => {
    const d = keysInit('defaults');
    const first = await start(d);
    assert.ok(first.started, first.out);
    assert.deepEqual(record(d).config, null);
    const second = await start(d);
    assert.ok(second.started, second.out);
    assert.doesNotMatch(second.out, /CONFIG_MISSING|CONFIG_DEFAULTS/);
  });

  it('a data directory only a read-only `jobs` used starts, on the defaults, saying so', async () => {
    const d = keysInit('jobs-first');
    assert.equal(c0(d, 'jobs', '--all').code, 0);
    const r = await start(d);
    assert.ok(r.started, r.out);
    assert.match(r.out, /CONFIG_DEFAULTS.*no record of which config its last start ran with/);
    assert.equal(record(d).via, 'defaults');
  });

  it("a start without the data directory's config.yaml the last start ran with: CONFIG_MISSING, naming it", async () => {
    const d = keysInit('yaml');
    assert.equal(c0(d, 'init', '--no-passphrase').code, 0);
    const first = await start(d);
    assert.ok(first.started, first.out);
    assert.equal(record(d).via, 'config.yaml');
    rmSync(join(d, 'config.yaml'));
    const r = await start(d);
    assert.equal(r.code, 3, r.out);
    assert.ok(!r.started);
    assert.match(r.out, /error CONFIG_MISSING: the last start on .* ran with its config\.yaml.*restore .*config\.yaml.*c0mpute --data-dir .* init/);
  });

  it('a start without the --config the last start ran with: CONFIG_MISSING, naming that file', async () => {
    const d = keysInit('flag');
    const cfg = join(root, 'provider.yaml');
    writeFileSync(cfg, 'roles: [buyer]\n');
    const first = await start(d, '--config', cfg);
    assert.ok(first.started, first.out);
    assert.deepEqual(record(d), { ...record(d), config: cfg, via: '--config' });
    const r = await start(d);
    assert.equal(r.code, 3, r.out);
    assert.match(r.out, /error CONFIG_MISSING: .*ran with --config .*provider\.yaml.*pass --config .*provider\.yaml again/);
    const again = await start(d, '--config', cfg);
    assert.ok(again.started, again.out);
  });
});
