/**
 * The start record across an upgrade and a moved --config (src/cli/commands/node-actions.ts refuseEmptied,
 * displayConfigFile; docs/config.md "Which file, and when there is none"). Review r2E:
 * - S4: a record written before it had `empty` (an upgraded node) does not say whether the file set nothing; a
 *   comments-only config.yaml was refused CONFIG_MISSING ("ran with it while it set something"), falsely. Only a
 *   record that says `empty: false` refuses now.
 * - S5: offline jobs / reputation (a display node) were refused CONFIG_MISSING when the last start's --config file
 *   had moved, with no way out (they take no --config). They read config.yaml or the defaults now, with a warning.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nodeConfig, readStartRecord, START_RECORD, writeStartRecord } from '../../../src/cli/commands/node-actions.js';
import type { ConfigWarning } from '../../../src/node/config.js';

const root = mkdtempSync(join(tmpdir(), 'c0-start-record-upgrade-'));
after(() => rmSync(root, { recursive: true, force: true }));

function dataDir(name: string, config: string | undefined, record: Record<string, unknown>): string {
  const d = join(root, name);
  mkdirSync(d, { recursive: true });
  if (config !== undefined) writeFileSync(join(d, 'config.yaml'), config);
  writeFileSync(join(d, START_RECORD), JSON.stringify({ at: '2026-12-01T00:00:00.000Z', ...record }) + '\n');
  return d;
}

const code = (f: () => unknown): string | undefined => {
  try {
    f();
    return undefined;
  } catch (e) {
    return (e as { code?: string }).code;
  }
};

describe('start record: empty', () => {
  it('a record without `empty` (before the field existed) keeps the CONFIG_EMPTY warning for a comments-only config.yaml', () => {
    const d = dataDir('upgrade', '# nothing set\n', { via: 'config.yaml' });
    const rec = JSON.parse(readFileSync(join(d, START_RECORD), 'utf8')) as Record<string, unknown>;
    rec.config = join(d, 'config.yaml');
    writeFileSync(join(d, START_RECORD), JSON.stringify(rec));
    assert.equal(readStartRecord(d)?.empty, undefined);
    for (const mode of ['start', 'display'] as const) {
      const warnings: ConfigWarning[] = [];
      assert.equal(code(() => nodeConfig(d, {}, warnings, mode)), undefined, mode);
      assert.ok(warnings.some((w) => w.code === 'CONFIG_EMPTY'), mode);
    }
  });

  it('a record that says empty: false refuses the emptied file (CONFIG_MISSING); empty: true warns', () => {
    const d = join(root, 'said');
    mkdirSync(d, { recursive: true });
    writeFileSync(join(d, 'config.yaml'), '# nothing set\n');
    writeStartRecord(d, undefined, join(d, 'config.yaml'), false);
    assert.equal(readStartRecord(d)?.empty, false, 'a start that set something says so');
    assert.equal(code(() => nodeConfig(d, {}, [], 'start')), 'CONFIG_MISSING');
    writeStartRecord(d, undefined, join(d, 'config.yaml'), true);
    assert.equal(readStartRecord(d)?.empty, true);
    assert.equal(code(() => nodeConfig(d, {}, [], 'start')), undefined);
  });
});

describe('start record: a moved --config', () => {
  it('a display node reads config.yaml instead, with a warning naming the way out', () => {
    const d = dataDir('moved', 'roles: [provider]\n', { via: '--config', config: join(root, 'gone', 'node.yaml') });
    const said: string[] = [];
    const config = nodeConfig(d, {}, [], 'display', undefined, (m) => said.push(m));
    assert.deepEqual(config.roles, ['provider'], 'config.yaml read');
    assert.equal(said.length, 1);
    assert.match(said[0]!, /--config/);
    assert.match(said[0]!, /start the node once with --config/);
  });

  it('with no config.yaml either, the display node runs on the built-in defaults, with the warning', () => {
    const d = dataDir('moved-none', undefined, { via: '--config', config: join(root, 'gone', 'node.yaml') });
    const said: string[] = [];
    assert.equal(code(() => nodeConfig(d, {}, [], 'display', undefined, (m) => said.push(m))), undefined);
    assert.equal(said.length, 1);
    assert.match(said[0]!, /built-in defaults/);
    assert.equal(code(() => nodeConfig(d, {}, [], 'start')), 'CONFIG_MISSING', 'a plain start still refuses: it would run another node');
  });
});
