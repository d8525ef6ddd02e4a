#!/usr/bin/env node
// Runs the compiled test suite with Node's built-in runner.
// `npm test` compiles first (tsc is also the type check), so dist/ is fresh.
//   --unit   only test/unit (fast, no processes or sockets)
//   --scenarios  only test/scenarios: the long end-to-end scenarios kept out of
//            `npm test` (CI must stay well inside 20 minutes on 2 cores); run by
//            `npm run sim -- --scenarios`
//   any other argument: a substring filter on the test file path
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { spawnSync } from 'node:child_process';

const root = new URL('..', import.meta.url).pathname;
const args = process.argv.slice(2);
const unitOnly = args.includes('--unit');
const scenarios = args.includes('--scenarios');
const filters = args.filter((a) => !a.startsWith('--'));

function walk(dir) {
  let out = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out = out.concat(walk(p));
    else if (name.endsWith('.test.js')) out.push(p);
  }
  return out;
}

const base = join(root, 'dist', 'test', unitOnly ? 'unit' : scenarios ? 'scenarios' : '');
let files = walk(base).sort();
if (!scenarios) files = files.filter((f) => !relative(join(root, 'dist', 'test'), f).startsWith('scenarios'));
if (filters.length) files = files.filter((f) => filters.some((x) => relative(root, f).includes(x)));
if (files.length === 0) {
  console.error('no test files found under', relative(root, base));
  process.exit(1);
}
const res = spawnSync(
  process.execPath,
  ['--enable-source-maps', '--test', '--test-concurrency=2', '--test-reporter=spec', ...files],
  { stdio: 'inherit', cwd: root, env: { ...process.env, C0MPUTE_TEST: '1' } },
);
process.exit(res.status ?? 1);
