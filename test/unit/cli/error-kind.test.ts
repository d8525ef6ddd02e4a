/**
 * One classification of a command's error (src/cli/context.ts errorKind): what `report` prints as a bug (`internal
 * error`, exit 70) is exactly what isBug says is one (start's catch logs those as the daemon's fatal line).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import { report } from '../../../src/cli/program.js';
import { EXIT, Interrupted, NegativeAnswer, Reported, UsageError, isBug } from '../../../src/cli/context.js';

test('isBug is true exactly where report() says internal error (exit 70)', () => {
  const errors: unknown[] = [
    new Error('x'),
    new TypeError('y'),
    'a string',
    undefined,
    new C0Error('CONFIG_INVALID', 'x'),
    new UsageError('CLI_BAD_LIMIT', 'x'),
    new Interrupted('INTERRUPTED', 'x'),
    new NegativeAnswer(['no'], 'stderr'),
    new Reported(EXIT.INTERNAL, new Error('z')),
    new Reported(EXIT.OPERATOR, new Error('z')),
    Object.assign(new Error('IO error: /srv/c0/db/000005.ldb: Invalid argument'), { code: 'LEVEL_IO_ERROR' }),
    Object.assign(new Error('IO error: /srv/c0/db/000005.ldb: Permission denied'), { code: 'LEVEL_IO_ERROR' }),
    Object.assign(new Error('Iterator is not open'), { code: 'LEVEL_ITERATOR_NOT_OPEN', cause: Object.assign(new Error('IO error: /srv/c0/db/000005.ldb: Invalid argument'), { code: 'LEVEL_IO_ERROR' }) }),
  ];
  const w = process.stderr.write;
  let err = '';
  process.stderr.write = ((x: string) => ((err += x), true)) as typeof process.stderr.write;
  try {
    for (const e of errors) {
      err = '';
      const exit = report(e);
      const printedBug = /^internal error: /.test(err);
      assert.equal(isBug(e), printedBug, `${String(e)}: exit ${exit}, ${err}`);
      if (!(e instanceof Reported)) assert.equal(exit === EXIT.INTERNAL, printedBug, String(e));
    }
  } finally {
    process.stderr.write = w;
  }
});
