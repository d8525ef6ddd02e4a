// Bundle the compiled CLI (dist/src/cli/main.js and everything it imports) with
// esbuild into dist/bundle/, which bin/c0mpute.js runs when it is at least as new
// as the last compile (docs/build.md). The same code as dist/src: a process
// starts in about half the CPU time because Node resolves and reads a few dozen
// files instead of about a thousand.
//
// Kept as they are, outside the bundle:
//  - packages with native bindings or files found beside their own code
//    (sodium-native, level/classic-level, cbor-extract): Node loads them from
//    node_modules as before;
//  - worker threads (net/verify-worker.js, ledger/replay-worker.js): each
//    module's `import.meta.url` is rewritten to its own file under dist/src, so
//    workers, config/default.yaml, the console's files and `createRequire` resolve
//    exactly as they do unbundled.
// Lazy imports (the CLI's commands) stay lazy: code splitting puts them in chunks
// loaded on first use. A lazy import of a package itself (`await import('yaml')`)
// is refused: in a split bundle it yields only a CommonJS package's default export,
// so `const { parse } = await import('yaml')` would find no `parse`. Import the
// package statically in a module of ours that is imported lazily instead.
//
// dist/bundle/inputs.json lists, for each file of the bundle, the modules it holds
// (test/e2e/cli-lazy.test.ts checks with it what each command loads).
//
// dist/bundle/build.json holds the package's version and the build id: the first 12 hex
// characters of a SHA-256 over the bundle's .js files (names and contents, in name
// order), so two builds of one version are told apart (`c0mpute --version`, `status`,
// the data directory's stamp: src/util/build-id.ts, docs/node.md) with no git at run time.
import { build } from 'esbuild';
import { mkdir, mkdtemp, open, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { basename, dirname, join, relative, sep } from 'node:path';
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const src = join(root, 'dist', 'src');
const out = join(root, 'dist', 'bundle');

/** Each compiled module's own URL, relative to the bundle, in place of `import.meta.url`; no lazy import of a package. */
const rules = {
  name: 'c0mpute-bundle-rules',
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, (args) =>
      args.kind === 'dynamic-import' && !args.path.startsWith('node:')
        ? { errors: [{ text: `${relative(root, args.importer)}: import('${args.path}') of a package: import it statically in a lazily imported module of ours (scripts/build-bundle.mjs)` }] }
        : undefined,
    );
    b.onLoad({ filter: /[\\/]dist[\\/]src[\\/].*\.js$/ }, async (args) => {
      const text = await readFile(args.path, 'utf8');
      // only `import.meta.url` is rewritten: any other form would name the bundle's directory instead of the module's
      const other = /import\.meta\.(?!url\b)\w+/.exec(text);
      if (other) return { errors: [{ text: `${relative(root, args.path)}: ${other[0]}: use import.meta.url (the bundle rewrites only that to the module's own file; scripts/build-bundle.mjs)` }] };
      if (!text.includes('import.meta.url')) return undefined;
      const rel = relative(out, args.path).split(sep).join('/');
      return { contents: text.replaceAll('import.meta.url', `new URL(${JSON.stringify(rel)}, import.meta.url).href`), loader: 'js' };
    });
  },
};

// Two builds at once (npm test beside a bench on the same checkout) each stage in a directory of their own and take
// turns putting theirs in place: one's clean-up must not remove the chunks the other's entry needs.
const lockFile = join(root, 'dist', 'bundle.lock');
const STALE_LOCK_MS = 120_000;
async function lock() {
  for (const end = Date.now() + STALE_LOCK_MS; ; ) {
    try {
      return await open(lockFile, 'wx');
    } catch (e) {
      if (e.code !== 'EEXIST') throw e;
      // a lock older than any build is one a killed build left
      const age = await stat(lockFile).then((st) => Date.now() - st.mtimeMs, () => 0);
      if (age > STALE_LOCK_MS || Date.now() > end) await rm(lockFile, { force: true });
      else await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** Bundle dist/src into `staging`, with inputs.json. */
async function bundleInto(staging) {
  const result = await build({
    entryPoints: { c0mpute: join(src, 'cli', 'main.js') },
    outdir: staging,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    external: ['sodium-native', 'level', 'classic-level', 'cbor-extract'],
    // CommonJS packages inside an ES module bundle still call require() for Node's built-ins.
    banner: { js: "import { createRequire as __c0Require } from 'node:module'; const require = __c0Require(import.meta.url);" },
    plugins: [rules],
    metafile: true,
    // Linked maps back through tsc's to src/*.ts, read only under `node --enable-source-maps`.
    sourcemap: 'linked',
    legalComments: 'none',
    logLevel: 'warning',
  });
  const inputs = Object.fromEntries(Object.entries(result.metafile.outputs).filter(([f]) => f.endsWith('.js')).map(([f, o]) => [basename(f), Object.keys(o.inputs)]));
  await writeFile(join(staging, 'inputs.json'), JSON.stringify(inputs) + '\n');
  const hash = createHash('sha256');
  for (const f of Object.keys(inputs).sort()) hash.update(`${f}\n`).update(await readFile(join(staging, f))).update('\n');
  const { version } = JSON.parse(await readFile(join(root, 'package.json'), 'utf8'));
  await writeFile(join(staging, 'build.json'), JSON.stringify({ version, build: hash.digest('hex').slice(0, 12) }) + '\n');
}

// Into place without pulling a file from under a process that runs the bundle (a daemon loads a command's chunk
// lazily, maybe hours after it started): every chunk's name carries a hash of its content, so the new chunks go in
// beside the old ones first; then the entry and the list, each replaced in one rename, so a process starting meanwhile
// gets the old bundle or the new one whole; last, the files neither this build nor the one before it wrote are removed
// (a process started two builds ago loses its lazy chunks: restart a daemon after rebuilding under it).
const ENTRY = ['c0mpute.js.map', 'inputs.json', 'build.json', 'c0mpute.js'];
async function install(staging) {
  const previous = await readFile(join(out, 'inputs.json'), 'utf8').then((t) => Object.keys(JSON.parse(t)), () => []);
  await mkdir(out, { recursive: true });
  const written = await readdir(staging);
  for (const f of written) if (!ENTRY.includes(f)) await rename(join(staging, f), join(out, f));
  for (const f of ENTRY) await rename(join(staging, f), join(out, f));
  const keep = new Set([...written, ...previous.flatMap((f) => [f, `${f}.map`])]);
  for (const f of await readdir(out)) if (!keep.has(f)) await rm(join(out, f), { recursive: true, force: true });
}

await mkdir(join(root, 'dist'), { recursive: true });
const staging = await mkdtemp(join(root, 'dist', 'bundle.tmp-'));
try {
  await bundleInto(staging);
  const held = await lock();
  try {
    await install(staging);
  } finally {
    await held.close();
    await rm(lockFile, { force: true });
  }
} finally {
  await rm(staging, { recursive: true, force: true });
}
if (!process.argv.includes('--quiet')) console.log(`dist/bundle: built from ${relative(root, src)}`);
