// Build the operator's console (docs/console.md): bundle ui/main.tsx with esbuild
// into dist/ui/app.js (minified, one file, no network at run time) and copy the
// HTML and CSS beside it. Prints the bundle's size, raw and gzipped.
import { build } from 'esbuild';
import { copyFileSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'dist', 'ui');
mkdirSync(out, { recursive: true });
await build({
  entryPoints: [join(root, 'ui', 'main.tsx')],
  bundle: true,
  minify: true,
  format: 'esm',
  target: ['es2022'],
  jsx: 'automatic',
  jsxImportSource: 'preact',
  outfile: join(out, 'app.js'),
  legalComments: 'none',
  logLevel: 'warning',
});
for (const f of ['index.html', 'style.css']) copyFileSync(join(root, 'ui', f), join(out, f));
if (!process.argv.includes('--quiet')) {
  for (const f of ['app.js', 'style.css']) {
    const b = readFileSync(join(out, f));
    console.log(`dist/ui/${f}: ${statSync(join(out, f)).size} bytes, ${gzipSync(b).length} gzipped`);
  }
}
