/**
 * How `c0mpute train buy` ends (src/cli/commands/train-buy.ts gangEnd, gangRefused; docs/training.md "`c0mpute train
 * buy`"): a gang the steward refused is a negative answer, exit 1, as the docs say (QA ffGang F3: it was exit 3).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { gangRefused } from '../../../src/cli/commands/train-buy.js';
import { NegativeAnswer } from '../../../src/cli/context.js';
import { report } from '../../../src/cli/program.js';

/** The exit code and stderr the CLI gives for `e`. */
function exitOf(e: unknown): { code: number; err: string } {
  const write = process.stderr.write.bind(process.stderr);
  let err = '';
  process.stderr.write = ((s: string) => ((err += s), true)) as typeof process.stderr.write;
  try {
    return { code: report(e), err };
  } finally {
    process.stderr.write = write;
  }
}

test('a gang the steward refused: `error TRAIN_GANG_REFUSED: …` with the verdict and reason, exit 1', () => {
  const e = gangRefused({ verdict: 'Deny', reason: 'DEVICES_EXCEED_GUARANTEE' } as never, 3);
  assert.ok(e instanceof NegativeAnswer);
  const { code, err } = exitOf(e);
  assert.equal(code, 1);
  assert.equal(err, 'error TRAIN_GANG_REFUSED: the steward did not admit the gang of 3: Deny DEVICES_EXCEED_GUARANTEE\n');
});
