/** `record verify --type`'s help names the content types without loading the envelope code: the same list. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { typeNames } from '../../../src/cli/commands/record.js';
import { knownTypes } from '../../../src/cli/record-kinds.js';

test('the help’s type names are the kinds the CLI’s record commands know', () => {
  assert.deepEqual(typeNames(), knownTypes());
  assert.ok(knownTypes().includes('pool/1') && knownTypes().includes('c0mpute.offer/1'));
  assert.ok(knownTypes().includes('pool-evidence/1'), 'what `witness evidence --out` writes');
});
