// Copy the console's screenshots from the last browser test run
// (test-artifacts/console/*.png, written by test/e2e/console-browser.test.ts)
// into docs/console/, where docs/console.md shows them. Run the test first:
//   npx tsc -p tsconfig.json && node scripts/build-ui.mjs && node scripts/run-tests.mjs console-browser
//   node scripts/console-shots.mjs
import { copyFileSync, existsSync, mkdirSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const from = join(root, 'test-artifacts', 'console');
const to = join(root, 'docs', 'console');
// The images docs/console.md shows, in its order.
const SHOWN = ['login', 'overview', 'market', 'market-1000', 'run', 'job', 'record', 'jobs', 'reputation', 'overlays-steward', 'overview-phone', 'market-phone'];
if (!existsSync(from)) {
  console.error(`no screenshots in ${from}: run the browser test first (node scripts/run-tests.mjs console-browser)`);
  process.exit(1);
}
mkdirSync(to, { recursive: true });
const have = new Set(readdirSync(from).filter((f) => f.endsWith('.png')).map((f) => f.slice(0, -4)));
const missing = SHOWN.filter((n) => !have.has(n));
for (const n of SHOWN.filter((x) => have.has(x))) copyFileSync(join(from, `${n}.png`), join(to, `${n}.png`));
console.log(`copied ${SHOWN.length - missing.length} screenshots to docs/console/${missing.length ? `; missing: ${missing.join(', ')}` : ''}`);
process.exit(missing.length ? 1 : 0);
