/** `batch run`'s progress line for a provider struck off (QA qaMatch F8: "failed line : gone: …" when no line failed). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { providerFailedLine } from '../../../src/cli/commands/batch-run.js';

test('a provider struck for a lapsed presence names no line; one struck for a failed line names it', () => {
  const names = (d: string) => d.slice(-4);
  assert.equal(providerFailedLine({ e: 'provider-failed', provider: 'did:key:zEXYG', line: '', reason: 'gone: its presence lapsed' }, names), '✘ provider EXYG struck off: its presence lapsed; its waiting lines are re-planned without it');
  assert.equal(
    providerFailedLine({ e: 'provider-failed', provider: 'did:key:zirKo', line: 'builtin.sha256-07', reason: 'failed: NET_DIAL_FAILED' }, names),
    '✘ provider irKo failed line builtin.sha256-07: failed: NET_DIAL_FAILED; its waiting lines are re-planned without it',
  );
});
