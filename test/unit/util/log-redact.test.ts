/**
 * docs/node.md "Logs": fields named secret, seed, passphrase or token (and swarmKey, authorization) are redacted
 * wherever they sit in a log entry: at the top level and nested, not only one level down.
 */
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, openSync, closeSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger, REDACTED_FIELDS } from '../../../src/util/log.js';

const dir = mkdtempSync(join(tmpdir(), 'c0-log-redact-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function written(format: 'json' | 'pretty', write: (log: ReturnType<typeof createLogger>) => void): string {
  const file = join(dir, `${format}-${Math.random().toString(36).slice(2)}.log`);
  const fd = openSync(file, 'w');
  try {
    write(createLogger({ fd, format, level: 'info' }));
  } finally {
    closeSync(fd);
  }
  return readFileSync(file, 'utf8');
}

describe('log redaction', () => {
  const names = ['secret', 'seed', 'passphrase', 'token', 'swarmKey', 'authorization'];

  test('the caller’s object is left as it is', () => {
    const o = { cfg: { token: 'T', keep: 1 } };
    written('json', (log) => log.info(o, 'x'));
    assert.deepEqual(o, { cfg: { token: 'T', keep: 1 } });
  });

  test('the documented names are the redacted ones', () => {
    for (const n of names) assert.ok(REDACTED_FIELDS.includes(n), n);
  });

  for (const format of ['json', 'pretty'] as const) {
    test(`${format}: each name is redacted at depth 0, 1, 2 and 3; other fields stay`, () => {
      const out = written(format, (log) => {
        for (const n of names) {
          const v = (d: number) => `LEAK-${n}-${d}`;
          log.info({ [n]: v(0), keep: 'kept-0' }, `depth 0 ${n}`);
          log.info({ cfg: { [n]: v(1), keep: 'kept-1' } }, `depth 1 ${n}`);
          log.info({ a: { b: { [n]: v(2) } } }, `depth 2 ${n}`);
          log.info({ a: { b: { c: { [n]: v(3) } } } }, `depth 3 ${n}`);
          log.info({ list: [{ [n]: v(4) }] }, `in an array ${n}`);
          log.child({ [n]: v(5), keep: 'kept-child' }).info(`a child's bindings ${n}`);
        }
      });
      assert.doesNotMatch(out, /LEAK-/);
      assert.match(out, /kept-0/);
      assert.match(out, /kept-1/);
      assert.match(out, /kept-child/);
      assert.equal(out.trim().split('\n').length, names.length * 6, 'every entry written');
    });
  }
});
