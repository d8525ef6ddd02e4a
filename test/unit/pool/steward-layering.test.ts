/**
 * DESIGN.md §5: a role receives the narrow ports it uses, not the whole host.
 * The steward (src/roles/steward*.ts) and the witness (src/roles/witness.ts)
 * are given StewardPorts / WitnessPorts, which the overlay node satisfies
 * structurally; neither imports src/node/overlay.ts (the dependency would run
 * upward, from a role to the daemon that starts it).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const roles = join(fileURLToPath(new URL('.', import.meta.url)), '..', '..', '..', '..', 'src', 'roles');

test('the steward and witness modules do not import the overlay node', () => {
  const files = readdirSync(roles).filter((f) => /^(steward.*|witness)\.ts$/.test(f));
  assert.ok(files.includes('steward.ts') && files.includes('witness.ts'), `found ${files.join(', ')}`);
  for (const f of files) {
    const text = readFileSync(join(roles, f), 'utf8');
    assert.doesNotMatch(text, /from '\.\.\/node\/overlay\.js'/, `${f} imports node/overlay.ts`);
  }
});
