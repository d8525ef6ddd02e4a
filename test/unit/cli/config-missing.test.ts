/**
 * Which config a node starts on (review s40 F3, F6). A data directory whose last start ran with its config.yaml
 * (last-start.json; config-last-start.test.ts has the rest) without one now is CONFIG_MISSING, and a config.yaml that is a link to nothing (a mount not ready yet) is
 * CONFIG_UNREADABLE, not the built-in defaults (before: a provider came up as a buyer listening on every interface,
 * with no warning); a fresh data directory still starts on the defaults; an empty config is said. A config is read only
 * if it is a regular file of at most CONFIG_MAX_BYTES (before: a FIFO with no writer hung `start` for ever, an
 * oversize file was read whole). Runs the real CLI; each case ends before any node or network starts.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dataDirConfig } from '../../../src/cli/commands/node-actions.js';
import { CONFIG_MAX_BYTES, loadConfig, type ConfigWarning } from '../../../src/node/config.js';

const bin = fileURLToPath(new URL('../../../../bin/c0mpute.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'c0-config-missing-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** `c0mpute --data-dir <d> start …`; a give-up timeout only, so a hang fails the test instead of stalling it. */
function start(dataDir: string, ...args: string[]): { code: number | null; stderr: string } {
  const r = spawnSync(process.execPath, [bin, '--data-dir', dataDir, 'start', ...args], { encoding: 'utf8', env: { ...process.env, C0MPUTE_HOME: join(dir, 'home') }, timeout: 60_000, killSignal: 'SIGKILL' });
  return { code: r.status, stderr: r.stderr };
}

describe("the data directory's config.yaml", () => {
  it('a data directory whose last start ran with its config.yaml, without one now, is CONFIG_MISSING (exit 3), saying how to start on the defaults deliberately', () => {
    const d = join(dir, 'used');
    mkdirSync(join(d, 'db'), { recursive: true });
    writeFileSync(join(d, 'last-start.json'), JSON.stringify({ config: join(d, 'config.yaml'), via: 'config.yaml', at: '2026-12-06T00:00:00.000Z' }));
    const r = start(d);
    assert.equal(r.code, 3, r.stderr);
    assert.match(r.stderr, /^error CONFIG_MISSING: .*ran with its config\.yaml.*c0mpute --data-dir .* init/m);
  });

  it('a link to nothing is CONFIG_UNREADABLE (exit 3), naming where it points', () => {
    for (const used of [false, true]) {
      const d = join(dir, `dangling-${used}`);
      mkdirSync(used ? join(d, 'db') : d, { recursive: true });
      symlinkSync(join(dir, 'not-mounted', 'config.yaml'), join(d, 'config.yaml'));
      const r = start(d);
      assert.equal(r.code, 3, r.stderr);
      assert.match(r.stderr, /^error CONFIG_UNREADABLE: .*a link to .*not-mounted.*which does not exist/m);
    }
  });

  it('a directory by that name is CONFIG_UNREADABLE', () => {
    const d = join(dir, 'dir');
    mkdirSync(join(d, 'config.yaml'), { recursive: true });
    const r = start(d);
    assert.equal(r.code, 3, r.stderr);
    assert.match(r.stderr, /^error CONFIG_UNREADABLE: .*not a regular file/m);
  });

  it('a fresh data directory has none: the built-in defaults (README first run)', () => {
    const d = join(dir, 'fresh');
    mkdirSync(d, { recursive: true });
    assert.equal(dataDirConfig(d, true), undefined);
    writeFileSync(join(d, 'identity.key'), '{}', { mode: 0o600 });
    assert.equal(dataDirConfig(d, true), undefined);
  });

  it("run's own node and the offline jobs listing take the defaults on a used data directory (they serve no one)", () => {
    const d = join(dir, 'used-offline');
    mkdirSync(join(d, 'db'), { recursive: true });
    writeFileSync(join(d, 'last-start.json'), JSON.stringify({ config: join(d, 'config.yaml'), via: 'config.yaml', at: '' }));
    assert.equal(dataDirConfig(d), undefined);
    assert.throws(() => dataDirConfig(d, true), /CONFIG_MISSING|config\.yaml/);
  });

  it('an empty config (or comments only) is a CONFIG_EMPTY warning: it means every default', () => {
    for (const text of ['', '# nothing here\n']) {
      const file = join(dir, `empty-${text.length}.yaml`);
      writeFileSync(file, text);
      const warnings: ConfigWarning[] = [];
      const c = loadConfig({ file, env: {}, warnings });
      assert.deepEqual(c.roles, ['buyer']);
      const w = warnings.find((x) => x.code === 'CONFIG_EMPTY');
      assert.ok(w, JSON.stringify(warnings));
      assert.match(w.message, /built-in defaults \(roles buyer/);
    }
    const set = join(dir, 'set.yaml');
    writeFileSync(set, 'roles: [buyer]\n');
    const warnings: ConfigWarning[] = [];
    loadConfig({ file: set, env: {}, warnings });
    assert.equal(warnings.filter((x) => x.code === 'CONFIG_EMPTY').length, 0);
  });
});

describe('a config file is read only if it is a regular file within the bound', () => {
  const d = join(dir, 'bound');
  mkdirSync(d, { recursive: true });

  it('a FIFO (no writer) is refused at once, not waited on', () => {
    const fifo = join(dir, 'config.fifo');
    execFileSync('mkfifo', [fifo]);
    const r = start(d, '--config', fifo);
    assert.equal(r.code, 3, `exit ${r.code} (null: killed at the give-up timeout) ${r.stderr}`);
    assert.match(r.stderr, /^error CONFIG_UNREADABLE: .*not a regular file/m);
  });

  it('a device is refused', () => {
    const r = start(d, '--config', '/dev/zero');
    assert.equal(r.code, 3, `exit ${r.code} ${r.stderr}`);
    assert.match(r.stderr, /^error CONFIG_UNREADABLE: .*not a regular file/m);
  });

  it('a file past CONFIG_MAX_BYTES is refused (valid YAML or not)', () => {
    const big = join(dir, 'big.yaml');
    writeFileSync(big, '#'.repeat(CONFIG_MAX_BYTES + 1) + '\n');
    const r = start(d, '--config', big);
    assert.equal(r.code, 3, r.stderr);
    assert.match(r.stderr, /^error CONFIG_UNREADABLE: .*larger than/m);
  });
});
