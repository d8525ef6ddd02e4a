/**
 * Print the docs/config.md table row of every config key the doc lacks (from
 * the zod schema, src/node/config.ts), ready to paste with its meaning filled
 * in: `npx tsc -p . && node dist/scripts/config-keys.js`. With `--all`, every
 * row. test/unit/docs/config-docs.test.ts fails until the doc is complete.
 */
import { readFileSync } from 'node:fs';
import { configKeys, renderDefault } from '../src/node/config-keys.js';

const doc = readFileSync(new URL('../../docs/config.md', import.meta.url), 'utf8');
const all = process.argv.includes('--all');
for (const k of configKeys()) if (all || !doc.includes(`| \`${k.path}\` |`)) process.stdout.write(`| \`${k.path}\` | ${renderDefault(k)} | (meaning) |\n`);
