/**
 * `npm run sim`'s command line (scripts/sim/index.ts): a typo stops the run
 * before a node starts instead of costing a five-minute run on the defaults.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseSimArgs } from '../../../scripts/sim/index.js';

test('sim args: knobs are read as numbers, --duration in seconds', () => {
  const a = parseSimArgs(['--nodes', '30', '--duration', '60', '--seed', '7', '--partitionAtMs', '-1', '--json', '--out', 'f.json']);
  assert.equal(a.help, false);
  if (a.help) return;
  assert.deepEqual(a.options, { nodes: 30, durationMs: 60_000, seed: 7, partitionAtMs: -1 });
  assert.equal(a.json, true);
  assert.equal(a.out, 'f.json');
  assert.equal(a.prof, undefined);
});

test('sim args: --help asks for the usage, nothing else is read', () => {
  assert.deepEqual(parseSimArgs(['--help']), { help: true });
});

test('sim args: an unknown flag, a missing value, a word or a stray argument is refused with the usage', () => {
  assert.throws(() => parseSimArgs(['--node', '30']), /Unknown option '--node'[\s\S]*usage: npm run sim/);
  assert.throws(() => parseSimArgs(['--nodes']), /Option '--nodes <value>' argument missing/);
  assert.throws(() => parseSimArgs(['--nodes', 'many']), /--nodes takes a number, got "many"/);
  assert.throws(() => parseSimArgs(['--seed', '']), /--seed takes a number/);
  assert.throws(() => parseSimArgs(['30']), /Unexpected argument '30'/);
  assert.throws(() => parseSimArgs(['--nodes', '0']), /--nodes must be above 0/);
});
