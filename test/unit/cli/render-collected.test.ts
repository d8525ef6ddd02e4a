/**
 * `run`'s line for the end of a job's offer window says why it ended (the `collected` event's `ended`): the wording
 * the CLI and the console share (src/util/window-end.ts).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { renderEvent } from '../../../src/cli/render.js';
import { windowEndText } from '../../../src/util/window-end.js';

test('the collected line names an early end, and says nothing more for the whole window, a stop or an unknown value', () => {
  const line = (ended: unknown) => {
    const lines: string[] = [];
    renderEvent({ e: 'collected', offers: 2, waitedMs: 52, ended }, undefined, (s) => lines.push(s));
    assert.equal(lines.length, 1);
    return lines[0];
  };
  assert.equal(line('all-quoted'), '▸ collected 2 offers in 52 ms: every provider that could win has quoted');
  assert.equal(line('enough'), '▸ collected 2 offers in 52 ms: enough offers (buyer.enoughOffers)');
  assert.equal(line('allowlist'), '▸ collected 2 offers in 52 ms: every provider on the job’s allowlist has offered');
  for (const ended of ['window', 'stopped', undefined, 'toString', '__proto__']) assert.equal(line(ended), '▸ collected 2 offers in 52 ms', String(ended));
  assert.equal(windowEndText('all-quoted'), ': every provider that could win has quoted');
});
