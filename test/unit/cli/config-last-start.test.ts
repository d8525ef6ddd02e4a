/**
 * Which config `start` runs with when the data directory has no config.yaml (src/cli/commands/node-actions.ts
 * dataDirConfig; docs/config.md "Which file, and when there is none"), with the real CLI and real daemons on loopback.
 * Before (review s40 round 2 F2), "db/ exists" was taken for "a node ran here with a config": a node started on the
 * built-in defaults (`keys init`, then `start`) could not start again (CONFIG_MISSING, exit 3), nor could one whose
 * db/ a read-only `c0mpute jobs` had made. Now each start records what it ran with (last-start.json), and only a start
 * that leaves off the config file the last start used is CONFIG_MISSING, naming it.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SIDE_BY_SIDE, startRig } from './start-rig.js';

const { root, c0, start, keysInit } = startRig('c0-config-last-start-');

const record = (d: string) => JSON.parse(readFileSync(join(d, 'last-start.json'), 'utf8')) as { config: string | null; via: string };

// each case has its own data directory (and config file): they run side by side
describe('start without a config.yaml', SIDE_BY_SIDE, () => {
  it('a node that ran on the built-in defaults starts again (it was CONFIG_MISSING once db/ existed)', async () => {
    const d = await keysInit('defaults');
    const first = await start(d);
    assert.ok(first.started, first.out);
    assert.deepEqual(record(d).config, null);
    const second = await start(d);
    assert.ok(second.started, second.out);
    assert.doesNotMatch(second.out, /CONFIG_MISSING|CONFIG_DEFAULTS/);
  });

  it('a data directory only a read-only `jobs` used starts, on the defaults, saying so', async () => {
    const d = await keysInit('jobs-first');
    assert.equal((await c0(d, 'jobs', '--all')).code, 0);
    const r = await start(d);
    assert.ok(r.started, r.out);
    assert.match(r.out, /CONFIG_DEFAULTS.*no record of which config its last start ran with/);
    assert.equal(record(d).via, 'defaults');
  });

  it("a start without the data directory's config.yaml the last start ran with: CONFIG_MISSING, naming it", async () => {
    const d = await keysInit('yaml');
    assert.equal((await c0(d, 'init', '--no-passphrase')).code, 0);
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
    const d = await keysInit('flag');
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

  it('with a config.yaml there too (init wrote one), a start without the --config the last start ran with is CONFIG_MISSING naming it, and the record stays (QA qaOps F1)', async () => {
    const d = await keysInit('flag-and-yaml');
    assert.equal((await c0(d, 'init', '--no-passphrase')).code, 0);
    const cfg = join(root, 'provider-2.yaml');
    writeFileSync(cfg, 'roles: [buyer]\n');
    const first = await start(d, '--config', cfg);
    assert.ok(first.started, first.out);
    const before = readFileSync(join(d, 'last-start.json'), 'utf8');
    const r = await start(d);
    assert.equal(r.code, 3, r.out);
    assert.ok(!r.started, r.out);
    assert.match(r.out, /error CONFIG_MISSING: .*ran with --config .*provider-2\.yaml.*no --config: pass --config .*provider-2\.yaml again.*--config .*config\.yaml/);
    assert.equal(readFileSync(join(d, 'last-start.json'), 'utf8'), before);
    // switching to the data directory's config.yaml on purpose: --config names it once, plain starts take it after
    const own = await start(d, '--config', join(d, 'config.yaml'));
    assert.ok(own.started, own.out);
    assert.equal(record(d).via, 'config.yaml');
    const plain = await start(d);
    assert.ok(plain.started, plain.out);
  });
});
