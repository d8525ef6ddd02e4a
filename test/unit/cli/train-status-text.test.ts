/**
 * `train status` and `train join` as text after a view change (src/cli/commands/train.ts `statusLines`,
 * `describeEvent`; docs/training.md "Starting a run"): the view change with its cause, and why the weights differ
 * from `train reference`, are on the text output; one witness is "1 witness". Before (QA qaTrn F6), the drop and its
 * cause were in `--json` only, the `done:` line said nothing, and `train reference` then disagreed without a word.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEvent, statusLines } from '../../../src/cli/commands/train.js';
import type { StatusFileView } from '../../../src/roles/trainer/status.js';

const dropped = 'did:key:z6MkjaVbDroppedMember000000000000000000000001';
const base: StatusFileView = {
  run: 'sha256:bd',
  name: 'iris-demo',
  status: 'done',
  view: 1,
  step: 119,
  totalSteps: 120,
  stepsPerSec: 4,
  losses: [{ step: 119, loss: 0.1 }],
  contributions: { 'did:key:zA': 100 },
  epochs: [{ epoch: 5, root: 'sha256:e9', coordinator: 'did:key:z6MkhVcoordinator0000000000000000000000', witnesses: ['did:key:zW'] }],
  ignored: { count: 0 },
  views: [{ view: 1, members: ['did:key:zA', 'did:key:zB'], dropped: [dropped], resumeEpoch: 5, cause: 'NET_DIAL_FAILED' }],
  weights: 'sha256:7cb4',
};

describe('train status as text after a view change', () => {
  it('shows the drop, its cause and the resume epoch, and why train reference differs', () => {
    const text = statusLines(base, undefined).join('\n');
    assert.match(text, /membership view 1: dropped did:key:z6Mkja…000001 \(NET_DIAL_FAILED\); resuming 2 members from epoch 5/);
    assert.match(text, /1 witness$/m);
    assert.match(text, /^weights sha256:7cb4 \(.*train reference.*\)$/m);
    const plain = statusLines({ ...base, view: 0, views: [] }, undefined).join('\n');
    assert.doesNotMatch(plain, /membership view|train reference/);
    assert.match(statusLines({ ...base, views: undefined }, undefined).join('\n'), /^weights sha256:7cb4$/m, 'a status written before views were kept');
  });

  it('a stopped run shows its code, and the worker\'s own beside it when the receipt\'s came first (before: in --json only)', () => {
    const stopped = { ...base, status: 'stopped', stopReason: { code: 'TRAIN_INTERRUPTED' } };
    assert.match(statusLines(stopped, undefined)[0]!, /: stopped \(TRAIN_INTERRUPTED\), view 1$/);
    const recovered = { ...stopped, stopReason: { code: 'EXEC_PROVIDER_CRASHED', message: 'm', worker: { code: 'EXEC_BUYER_GONE', message: 'w' } } };
    assert.match(statusLines(recovered, undefined)[0]!, /: stopped \(EXEC_PROVIDER_CRASHED; the worker had stopped it with EXEC_BUYER_GONE\), view 1$/);
    assert.match(statusLines({ ...stopped, stopReason: { code: 'X', worker: null } }, undefined)[0]!, /\(X\)/);
  });

  it('the done line says the run ended in a later view without the dropped member', () => {
    const line = describeEvent({ e: 'done', weights: 'sha256:7cb4', accuracy: 1, baseline: 1 / 3, view: 1, dropped: [dropped] });
    assert.match(line, /^done: weights sha256:7cb4, .*, in view 1 without did:key:z6Mkja…000001 \(.*train reference.*\)$/);
    assert.doesNotMatch(describeEvent({ e: 'done', weights: 'sha256:7cb4', accuracy: 1, baseline: 1 / 3 }), /view/);
  });
});
