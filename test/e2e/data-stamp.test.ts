/**
 * Which build wrote a data directory, through the real command (docs/node.md "Which build wrote a data directory";
 * QA qaUp F5): `--version` and `status` name the build (the package's version and the bundle's build id), and a
 * daemon started on a directory a later build stamped says DATA_DIR_NEWER_FORMAT at warn, naming that build, and keeps
 * its highest format in the stamp it writes. Before, both builds said `0.1.0` and nothing was said or written. `status`
 * (text, --json, the API) shows what the start said at warn while the daemon runs; before (QA qaTrn F10), only the
 * start-up log said it.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BIN, Cluster, buyerConfig, c0mpute, get } from './node-helpers.js';
import { DATA_FORMAT } from '../../src/node/data-stamp.js';
import { buildIdentity, buildText } from '../../src/util/build-id.js';
import { bundleFresh } from '../../src/util/bundle-fresh.js';

const cluster = new Cluster('stamp');
after(() => cluster.destroy());
const { NODE_TEST_CONTEXT: _, ...env } = process.env;

test('--version and status name the build; a start on a directory a later build wrote says so', async () => {
  const version = execFileSync(process.execPath, [BIN, '--version'], { env, encoding: 'utf8' }).trim();
  assert.equal(version, buildText());
  // the bundle's id while it is what runs (npm run build); unknown, and said so, after `tsc` alone (docs/build.md)
  if (bundleFresh(new URL('../../../dist/', import.meta.url))) assert.match(version, /^0\.1\.0 \(build [0-9a-f]{12}\)$/);
  else assert.match(version, /^0\.1\.0 \(build unknown: /);

  const { dir } = cluster.dataDir('b');
  writeFileSync(join(dir, 'data-format.json'), JSON.stringify({ format: DATA_FORMAT + 1, highestFormat: DATA_FORMAT + 1, version: '0.2.0', build: 'cccccccccccc', writtenAt: '2026-02-01T00:00:00.000Z' }));
  const n = await cluster.start('b', buyerConfig(), { NODE_TEST_CONTEXT: undefined });
  const st = await get<{ build: string; dataDir?: { warnings: Array<{ code: string; message: string }> } }>(n, '/v1/status');
  assert.equal(st.build, version);
  assert.deepEqual(st.dataDir?.warnings.map((w) => w.code), ['DATA_DIR_NEWER_FORMAT'], JSON.stringify(st.dataDir));
  const text = await c0mpute(dir, ['status']);
  assert.equal(text.code, 0, text.err);
  assert.match(text.out, /^data dir {8}⚠ data directory last written by a later build, data format \d+, 0\.2\.0 \(build cccccccccccc\).* \[DATA_DIR_NEWER_FORMAT\]$/m);
  const lines = readFileSync(n.log, 'utf8').split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { level: number; code?: string; msg: string });
  const newer = lines.find((l) => l.code === 'DATA_DIR_NEWER_FORMAT');
  assert.ok(newer, 'said at start');
  assert.equal(newer.level, 40);
  assert.match(newer.msg, /0\.2\.0 \(build cccccccccccc\)/);
  const stamp = JSON.parse(readFileSync(join(dir, 'data-format.json'), 'utf8')) as Record<string, unknown>;
  assert.deepEqual({ ...stamp, writtenAt: 'x' }, { format: DATA_FORMAT, highestFormat: DATA_FORMAT + 1, version: '0.1.0', ...(buildIdentity().build ? { build: buildIdentity().build } : {}), writtenAt: 'x' });
});

test('an offline jobs or reputation on a directory a later build wrote says so on stderr, and leaves the stamp as it was', async () => {
  const { dir } = cluster.dataDir('c');
  const later = JSON.stringify({ format: DATA_FORMAT + 1, highestFormat: DATA_FORMAT + 1, version: '0.2.0', build: 'cccccccccccc', writtenAt: '2026-02-01T00:00:00.000Z' });
  writeFileSync(join(dir, 'data-format.json'), later);
  for (const cmd of ['jobs', 'reputation']) {
    const r = await c0mpute(dir, [cmd]);
    assert.equal(r.code, 0, r.err);
    // before, nothing: `start` and `run` said DATA_DIR_NEWER_FORMAT of the same directory
    assert.match(r.err, /^warning DATA_DIR_NEWER_FORMAT: data directory last written by a later build, data format \d+, 0\.2\.0 \(build cccccccccccc\)/m, cmd);
  }
  assert.equal(readFileSync(join(dir, 'data-format.json'), 'utf8'), later);
});
