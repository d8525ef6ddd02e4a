/**
 * An option value that names nothing is USAGE_EMPTY_VALUE (src/cli/context.ts emptyValue), with the same message and
 * field at every option that checks for it: --data-dir (program.ts), --config, --role/--listen/--bootstrap and
 * --api/--log-level/--log-format (commands/node.ts). The CLI tests (node-flag-values, config-empty-flag,
 * arg-values-exit) hold the exit code and the message's start through the real CLI; this holds the whole error in
 * process, commander's parse only (each value is refused as it is parsed, before any action or hook runs).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { UsageError } from '../../../src/cli/context.js';
import { buildProgram } from '../../../src/cli/program.js';

async function refused(args: string[]): Promise<{ code: string; message: string; field: string | undefined }> {
  try {
    await buildProgram().parseAsync(['node', 'c0mpute', ...args]);
  } catch (e) {
    assert.ok(e instanceof UsageError, `${args.join(' ')}: ${String(e)}`);
    return { code: e.code, message: e.message, field: e.field };
  }
  assert.fail(`${args.join(' ')} was not refused`);
}

describe('USAGE_EMPTY_VALUE: one error at every option', () => {
  const cases: Array<[string[], string, string]> = [
    [['--data-dir', '', 'jobs'], '--data-dir takes a directory; got "", which names none', 'dataDir'],
    [['--data-dir', '  ', 'jobs'], '--data-dir takes a directory; got "  ", which names none', 'dataDir'],
    [['start', '--config', ''], '--config takes a file; got "", which names none', 'config'],
    [['run', 'job.yaml', '--config', ''], '--config takes a file; got "", which names none', 'config'],
    [['start', '--role', ' , '], '--role takes a value; got " , ", which names none', 'role'],
    [['start', '--listen', ''], '--listen takes a value; got "", which names none', 'listen'],
    [['run', 'job.yaml', '--bootstrap', ','], '--bootstrap takes a value; got ",", which names none', 'bootstrap'],
    [['start', '--api', ' '], '--api takes a value; got " ", which names none', 'api'],
    [['start', '--log-level', ''], '--log-level takes a value; got "", which names none', 'log-level'],
    [['start', '--log-format', ''], '--log-format takes a value; got "", which names none', 'log-format'],
    [['start', '--api', ' '.repeat(50)], `--api takes a value; got "${' '.repeat(40)}", which names none`, 'api'],
    // record sign refuses a blank type as record verify does (it was RECORD_UNKNOWN_TYPE, exit 3), and a blank --out
    [['record', 'verify', 'x.cose', '--type', ''], '--type takes a content type; got "", which names none', 'type'],
    [['record', 'sign', '--type', '', 'x.json'], '--type takes a content type; got "", which names none', 'type'],
    [['record', 'sign', '--type', 'c0mpute.job/1', '-o', '', 'x.json'], '--out takes a file; got "", which names none', 'out'],
  ];
  for (const [args, message, field] of cases) {
    it(`${JSON.stringify(args)}`, async () => {
      assert.deepEqual(await refused(args), { code: 'USAGE_EMPTY_VALUE', message, field });
    });
  }
});
