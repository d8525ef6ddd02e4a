/**
 * A buyer's `accepted` on a failed receipt is said `acknowledged` by `run`, `jobs` and the console (src/util/
 * acceptance-text.ts; docs/node.md "Buyer"): "failed (EXEC_EMPTY_OUTPUT), accepted" and "NOT verified … countersigned
 * accepted" read as the buyer accepting bad work (QA qaRep F11). The record's verdict and the wire fields stay `accepted`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { verdictWord } from '../../../src/util/acceptance-text.js';
import { renderEvent } from '../../../src/cli/render.js';
import { jobsReceiptLine } from '../../../src/cli/commands/node.js';
import { narrate } from '../../../ui/narrate.js';

const P = 'did:key:z6MkorkanproUoAbcdefghijkmnopqrstuvwxyz123456ooGs';
const ACC = 'sha256:' + 'ab'.repeat(32);

test('verdictWord: accepted on a failed receipt is acknowledged; anything else as the record says', () => {
  assert.equal(verdictWord('accepted', 'failed'), 'acknowledged');
  assert.equal(verdictWord('accepted', 'completed'), 'accepted');
  assert.equal(verdictWord('disputed', 'completed'), 'disputed');
  assert.equal(verdictWord('accepted', undefined), 'accepted', 'an event from a daemon before this version: as the record says');
});

test('run, jobs and the console say it alike', () => {
  const line = (ev: Record<string, unknown>) => {
    const lines: string[] = [];
    renderEvent({ e: 'acceptance', acceptance: { type: 'c0mpute.acceptance/1', address: ACC, signer: P, record: { receipt: ACC, verdict: 'accepted', signedAt: 1 } }, ...ev }, undefined, (s) => lines.push(s));
    return lines.join('\n');
  };
  assert.equal(line({ receiptStatus: 'failed' }), '▸ countersigned acknowledged: sha256:abababab…');
  assert.equal(line({ receiptStatus: 'completed' }), '▸ countersigned accepted: sha256:abababab…');
  assert.equal(line({}), '▸ countersigned accepted: sha256:abababab…');
  assert.match(jobsReceiptLine({ provider: P, status: 'failed', failure: 'EXEC_EMPTY_OUTPUT', acceptance: 'accepted' }), / failed \(EXEC_EMPTY_OUTPUT\), acknowledged$/);
  assert.match(jobsReceiptLine({ provider: P, status: 'completed', acceptance: 'accepted' }), / completed, accepted$/);
  assert.match(jobsReceiptLine({ provider: P, status: 'completed' }), / completed$/);
  assert.equal(narrate({ e: 'acceptance', acceptance: { record: { verdict: 'accepted' } }, receiptStatus: 'failed' }), 'countersigned: acknowledged');
  assert.equal(narrate({ e: 'acceptance', acceptance: { record: { verdict: 'accepted' } }, receiptStatus: 'completed' }), 'countersigned: accepted');
});
