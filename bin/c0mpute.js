#!/usr/bin/env node
// The c0mpute command. It runs the bundle in dist/bundle (scripts/build-bundle.mjs),
// which starts in about half the CPU time, when the bundle is at least as new as
// the last compile of dist/src (bundleFresh); otherwise, or with C0MPUTE_BUNDLE=0,
// the compiled modules in dist/src themselves. Both are the same code (docs/build.md).
import { bundleFresh } from '../dist/src/util/bundle-fresh.js';

const useBundle = process.env.C0MPUTE_BUNDLE !== '0' && bundleFresh(new URL('../dist/', import.meta.url));
await import(useBundle ? '../dist/bundle/c0mpute.js' : '../dist/src/cli/main.js');
