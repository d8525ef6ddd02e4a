/**
 * Whether the command's bundle (dist/bundle, scripts/build-bundle.mjs) is what bin/c0mpute.js runs: it exists and is at
 * least as new as the last compile of dist/src (dist/.tsbuildinfo, which tsc rewrites whenever it compiles anything).
 * Else the launcher runs dist/src, never a stale bundle (docs/build.md). `dist`: the URL of the dist/ directory.
 * Imported by the launcher itself, so it imports nothing of ours.
 */
import { statSync } from 'node:fs';

export function bundleFresh(dist: URL): boolean {
  const mtime = (rel: string) => statSync(new URL(rel, dist), { throwIfNoEntry: false })?.mtimeMs;
  const bundled = mtime('bundle/c0mpute.js');
  const compiled = mtime('.tsbuildinfo');
  return bundled !== undefined && (compiled === undefined || bundled >= compiled);
}
