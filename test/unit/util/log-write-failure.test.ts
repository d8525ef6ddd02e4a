/**
 * A log line that cannot be written (the log's disk is full, stderr is a closed pipe) is dropped and counted; it
 * never throws out of the log call. Before, pino's sonic-boom destination threw ENOSPC out of `log.warn`: a provider
 * whose log sat on the full disk never sent its EXEC_PROVIDER_STORE_FAILED refusal, and a warn in a `.catch` became an
 * unhandled rejection that stopped the daemon (exit 70).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { closeSync, existsSync, openSync } from 'node:fs';
import { createLogger, logLinesDropped, safeDestination } from '../../../src/util/log.js';

const errno = (code: string) => Object.assign(new Error(`${code}: write failed`), { code });

describe('a log destination that takes no writes', () => {
  it('a full disk (/dev/full: ENOSPC) costs the line, not the call', { skip: !existsSync('/dev/full') && 'no /dev/full' }, () => {
    const fd = openSync('/dev/full', 'w');
    try {
      for (const format of ['json', 'pretty'] as const) {
        const log = createLogger({ fd, format, level: 'info', name: 't' });
        const before = logLinesDropped();
        assert.doesNotThrow(() => log.warn({ code: 'EXEC_PROVIDER_STORE_FAILED' }, 'exec request refused'));
        assert.doesNotThrow(() => log.error('and another'));
        assert.doesNotThrow(() => log.fatal('the fatal path too'));
        assert.equal(logLinesDropped() - before, 3);
      }
    } finally {
      closeSync(fd);
    }
  });

  it('drops lines while the fd fails (ENOSPC, EPIPE), then writes one line saying how many, before the next', () => {
    const out: string[] = [];
    let fail: string | undefined = 'ENOSPC';
    const dest = safeDestination(9, (n, cause) => `dropped ${n} ${cause}\n`, (_fd, b) => {
      if (fail) throw errno(fail);
      out.push(b.toString());
      return b.length;
    });
    const before = logLinesDropped();
    dest.write('a\n');
    fail = 'EPIPE';
    dest.write('b\n');
    assert.deepEqual(out, []);
    assert.equal(logLinesDropped() - before, 2);
    fail = undefined;
    dest.write('c\n');
    dest.write('d\n');
    assert.deepEqual(out, ['dropped 2 EPIPE\n', 'c\n', 'd\n']);
  });

  it('a line cut part-way is ended before the note; a short write is completed', () => {
    const out: string[] = [];
    let calls = 0;
    const dest = safeDestination(9, (n) => `dropped ${n}\n`, (_fd, b) => {
      calls++;
      if (calls === 1) return (out.push(b.subarray(0, 2).toString()), 2); // a short write
      if (calls === 2) throw errno('ENOSPC');
      out.push(b.toString());
      return b.length;
    });
    dest.write('abcdef\n');
    dest.write('next\n');
    assert.equal(out.join(''), 'ab\ndropped 1\nnext\n');
  });

  it('waits a little on EAGAIN (a pipe not read yet), then writes', () => {
    const out: string[] = [];
    let again = 2;
    const dest = safeDestination(9, () => 'x\n', (_fd, b) => {
      if (again-- > 0) throw errno('EAGAIN');
      out.push(b.toString());
      return b.length;
    });
    const before = logLinesDropped();
    dest.write('line\n');
    assert.deepEqual(out, ['line\n']);
    assert.equal(logLinesDropped(), before);
  });
});
