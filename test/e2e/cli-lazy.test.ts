/**
 * Each `c0mpute` command loads only what it runs: `--version`, `--help` and the
 * commands that only ask the daemon load no libp2p, no LevelDB, no metrics and
 * no node (every call of the CLI used to cost a second of CPU for them).
 * Child processes with a module-resolution hook that lists what they load.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../unit/ledger/helpers.js';
import { BIN } from './node-helpers.js';

const t = tempDir('c0-cli-lazy-');
after(() => t.cleanup());

let n = 0;
/** Run the CLI and return what it loaded (resolved module URLs, builtins left out). */
function loads(args: string[]): { code: number; urls: string[] } {
  const log = join(t.dir, `loaded-${n++}.txt`);
  const hook = `import { appendFileSync } from 'node:fs'; export async function resolve(s, c, next) { const r = await next(s, c); if (!r.url.startsWith('node:')) appendFileSync(${JSON.stringify(log)}, r.url + '\\n'); return r; }`;
  const reg = `import { register } from 'node:module'; register(${JSON.stringify('data:text/javascript,' + encodeURIComponent(hook))});`;
  const r = spawnSync(process.execPath, ['--import', 'data:text/javascript,' + encodeURIComponent(reg), BIN, '--data-dir', join(t.dir, 'home'), ...args], { encoding: 'utf8', input: '' });
  return { code: r.status ?? -1, urls: existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean) : [] };
}

const HEAVY = [
  /node_modules\/(@libp2p|libp2p|@chainsafe|level|classic-level|abstract-level|prom-client|pino|zod|cbor-x|@noble)\//,
  /dist\/src\/(node\/(daemon|config|control|api|identity)\.js|net\/|roles\/|store\/|ledger\/store\.js|market\/index\.js|records\/envelope\.js)/,
];

describe('what a command loads', () => {
  for (const args of [['--version'], ['--help'], ['status'], ['market', 'list'], ['record', 'verify', '--help'], ['ledger', 'fetch', '--help'], ['steward', 'status']]) {
    it(`c0mpute ${args.join(' ')}: no libp2p, LevelDB, metrics or node`, () => {
      const r = loads(args);
      assert.ok(r.urls.some((u) => u.endsWith('/dist/src/cli/program.js')), 'the hook saw the CLI load');
      const heavy = r.urls.filter((u) => HEAVY.some((h) => h.test(u)));
      assert.deepEqual(heavy, [], `exit ${r.code}`);
    });
  }

  it('a command that needs the envelope code loads it when it runs', () => {
    const r = loads(['record', 'verify', join(t.dir, 'missing.cbor')]);
    assert.equal(r.code, 3);
    assert.ok(r.urls.some((u) => u.endsWith('/dist/src/cli/record-kinds.js')));
  });
});
