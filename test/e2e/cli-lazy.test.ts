/**
 * Each `c0mpute` command loads only what it runs: `--version`, `--help` and the
 * commands that only ask the daemon load no libp2p, no LevelDB, no metrics and
 * no node (every call of the CLI used to cost a second of CPU for them).
 * Child processes with a module-resolution hook that lists what they load, both
 * from dist/src (C0MPUTE_BUNDLE=0) and from the bundle bin/c0mpute.js runs
 * (docs/build.md), whose files are read back to the modules they hold through
 * dist/bundle/inputs.json.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, existsSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDir } from '../unit/ledger/helpers.js';
import { BIN } from './node-helpers.js';
import { bundleFresh } from '../../src/util/bundle-fresh.js';

const t = tempDir('c0-cli-lazy-');
after(() => t.cleanup());

let n = 0;
type Entry = 'dist/src' | 'bundle';
const BUNDLE = fileURLToPath(new URL('../../../dist/bundle/', import.meta.url));

/**
 * Run the CLI and return what it loaded (resolved module URLs, builtins left out). From the bundle, each of its files
 * stands for the modules it holds (`dist/src/…`, `node_modules/…`); what stays outside it is listed as loaded.
 */
function loads(args: string[], entry: Entry): { code: number; urls: string[] } {
  const log = join(t.dir, `loaded-${n++}.txt`);
  const hook = `import { appendFileSync } from 'node:fs'; export async function resolve(s, c, next) { const r = await next(s, c); if (!r.url.startsWith('node:')) appendFileSync(${JSON.stringify(log)}, r.url + '\\n'); return r; }`;
  const reg = `import { register } from 'node:module'; register(${JSON.stringify('data:text/javascript,' + encodeURIComponent(hook))});`;
  const env = { ...process.env, C0MPUTE_BUNDLE: entry === 'bundle' ? '1' : '0' };
  const r = spawnSync(process.execPath, ['--import', 'data:text/javascript,' + encodeURIComponent(reg), BIN, '--data-dir', join(t.dir, 'home'), ...args], { encoding: 'utf8', input: '', env });
  const urls = existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean) : [];
  if (entry === 'dist/src') return { code: r.status ?? -1, urls };
  const held = JSON.parse(readFileSync(join(BUNDLE, 'inputs.json'), 'utf8')) as Record<string, string[]>;
  const inBundle = (u: string) => u.startsWith('file:') && fileURLToPath(u).startsWith(BUNDLE);
  return { code: r.status ?? -1, urls: urls.flatMap((u) => (inBundle(u) ? [u, ...(held[basename(fileURLToPath(u))] ?? [])] : [u])) };
}

const HEAVY = [
  /node_modules\/(@libp2p|libp2p|@chainsafe|level|classic-level|abstract-level|prom-client|pino|zod|cbor-x|@noble)\//,
  /dist\/src\/(node\/(daemon|config|control|api|identity)\.js|net\/|roles\/|store\/|ledger\/store\.js|market\/index\.js|records\/envelope\.js)/,
];

for (const entry of ['dist/src', 'bundle'] as const) {
  describe(`what a command loads, from ${entry}`, () => {
    // The bundle is what users run; while developing, after a compile alone, the launcher runs dist/src instead.
    const skip = entry === 'bundle' && !bundleFresh(new URL('../../../dist/', import.meta.url)) && process.env.CI !== 'true' ? 'the bundle is older than the last compile (npm run build brings it up to date)' : false;
    for (const args of [['--version'], ['--help'], ['status'], ['market', 'list'], ['record', 'verify', '--help'], ['ledger', 'fetch', '--help'], ['steward', 'status']]) {
      it(`c0mpute ${args.join(' ')}: no libp2p, LevelDB, metrics or node`, { skip }, () => {
        const r = loads(args, entry);
        assert.ok(r.urls.some((u) => u.endsWith('dist/src/cli/program.js')), 'the hook saw the CLI load');
        if (entry === 'bundle') assert.ok(r.urls.some((u) => u.endsWith('/dist/bundle/c0mpute.js')), 'from the bundle');
        const heavy = r.urls.filter((u) => HEAVY.some((h) => h.test(u)));
        assert.deepEqual(heavy, [], `exit ${r.code}`);
      });
    }

    it('a command that needs the envelope code loads it when it runs', { skip }, () => {
      const r = loads(['record', 'verify', join(t.dir, 'missing.cbor')], entry);
      assert.equal(r.code, 3);
      assert.ok(r.urls.some((u) => u.endsWith('dist/src/cli/record-kinds.js')));
    });
  });
}
