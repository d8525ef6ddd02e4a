/** The README's commands work from a checkout: no bare `c0mpute` before the reader is told how to get one. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ENTRY_SCHEMA } from '../../../src/ledger/entry.js';

const root = fileURLToPath(new URL('../../../../', import.meta.url));
const readme = readFileSync(`${root}README.md`, 'utf8');

describe('README', () => {
  it('runs the command from a checkout as `node bin/c0mpute.js` (the package bin) and says how to put `c0mpute` on PATH', () => {
    const pkg = JSON.parse(readFileSync(`${root}package.json`, 'utf8')) as { bin: Record<string, string> };
    assert.equal(pkg.bin.c0mpute, 'bin/c0mpute.js');
    assert.ok(existsSync(`${root}bin/c0mpute.js`));
    assert.match(readme, /npm install -g \./);
    // every shell line that starts the command, up to the install note, uses the checkout form
    const before = readme.slice(0, readme.indexOf('npm install -g .'));
    const shell = [...before.matchAll(/```sh\n([\s\S]*?)```/g)].flatMap((m) => m[1]!.split('\n'));
    const starts = shell.filter((l) => /(^|\s)(npx )?c0mpute\s/.test(l) || l.startsWith('node bin/c0mpute.js'));
    assert.ok(starts.length > 0);
    for (const l of starts) assert.match(l, /^node bin\/c0mpute\.js /, `README: ${l}`);
    assert.doesNotMatch(readme, /^npx c0mpute /m);
  });

  it('says the steward\'s ledger holds the events its entries have (Admitted, Released), not every decision: a queue or a denial is an answer (QA qaDev F7)', () => {
    const steward = /^- \*\*steward\*\*:[\s\S]*?(?=\n- \*\*)/m.exec(readme)?.[0];
    assert.ok(steward, 'the steward role in "The roles"');
    const events = (ENTRY_SCHEMA.event as { values: readonly string[] }).values;
    for (const ev of events) assert.ok(steward.includes(`\`${ev}\``), `names ${ev}`);
    assert.doesNotMatch(steward, /every\s+decision\s+is\s+a\s+sealed/, 'a queue or a denial is no ledger entry (pool/1 §6.2)');
    assert.match(steward, /not a ledger entry/);
  });
});
