/**
 * Which build this is (docs/node.md "Which build wrote a data directory"): the package's version and the build id
 * scripts/build-bundle.mjs computes when it bundles the command, a SHA-256 of the bundle's code (its first 12 hex
 * characters), written to dist/bundle/build.json. Two builds of one version (`0.1.0` both) are told apart by it, with
 * no git at run time. `c0mpute --version`, `c0mpute status` (`build`) and the data directory's stamp
 * (src/node/data-stamp.ts) say it.
 *
 * The id is the bundle's: it is this process's code when the bundle is what runs, or when dist/src was compiled no
 * later than the bundle was built (the launcher then runs either, the same code: src/util/bundle-fresh.ts). When
 * dist/src was compiled since (an edit, then `tsc` alone), the id is unknown, and said so. Light (node:fs only): the
 * CLI's program reads it for `--version`.
 */
import { readFileSync } from 'node:fs';
import { bundleFresh } from './bundle-fresh.js';

export interface BuildIdentity {
  /** package.json's version */
  version: string;
  /** the bundle's build id (12 hex characters); absent when unknown (dist/src compiled after the last bundle, or none) */
  build?: string;
}

const DIST = new URL('../../', import.meta.url);
const BUILD_RE = /^[0-9a-f]{12}$/;

let cached: BuildIdentity | undefined;

/** This build's identity, read once a process (a rebuild under a running daemon does not change what it runs). */
export function buildIdentity(): BuildIdentity {
  if (cached) return cached;
  let version = '0.0.0';
  try {
    const v = (JSON.parse(readFileSync(new URL('../package.json', DIST), 'utf8')) as { version?: unknown }).version;
    if (typeof v === 'string') version = v;
  } catch {
    // not beside a package.json (never, as installed): the version is unknown
  }
  let build: string | undefined;
  try {
    const b = (JSON.parse(readFileSync(new URL('bundle/build.json', DIST), 'utf8')) as { build?: unknown }).build;
    if (typeof b === 'string' && BUILD_RE.test(b) && bundleFresh(DIST)) build = b;
  } catch {
    // no bundle built: unknown
  }
  cached = { version, ...(build ? { build } : {}) };
  return cached;
}

/** `0.1.0 (build 1e383ad7d182)`, or `0.1.0 (build unknown: …)`. */
export function buildText(b: BuildIdentity = buildIdentity()): string {
  return `${b.version} (build ${b.build ?? 'unknown: dist/src compiled after the last bundle; npm run build'})`;
}
