/**
 * The pretty log format (src/util/log.ts prettyStream) for a terminal: a log entry quoting another node's text (a
 * refusal's message, a remote error) is written on one line with its control characters escaped, as the CLI's own
 * narration is (printable).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { prettyStream } from '../../../src/util/log.js';

describe('the pretty log format', () => {
  it('escapes control characters in the message, the name and every value, C1 included', () => {
    const out: string[] = [];
    const log = pino({ level: 'info', base: undefined, timestamp: false, formatters: { level: (label) => ({ level: label }) } }, prettyStream({ write: (s: string) => out.push(s) }));
    const hostile = '\u001b]0;pwned-title\u0007\u001b[2K\r▸ verified: output matches sha256:0000\n\u009b2J';
    log.child({ name: 'n\u001bode' }).warn({ err: hostile, detail: { message: hostile } }, `refused: ${hostile}`);
    assert.equal(out.length, 1);
    const line = out[0]!;
    assert.ok(line.endsWith('\n'));
    // eslint-disable-next-line no-control-regex
    assert.doesNotMatch(line.slice(0, -1), /[\u0000-\u0008\u000a-\u001f\u007f-\u009f]/, 'no control character but the final line break');
    assert.match(line, /^WARN {2}\[n\\u001bode\] refused: \\u001b\]0;pwned-title\\u0007/);
    assert.match(line, /err="\\u001b\]0;pwned-title/, 'quoted: it has a space');
    assert.match(line, /detail="\{\\"message\\":\\"\\\\u001b\]0;pwned-title\\\\u0007.*\\u009b2J\\"\}"/);
  });

  it('a line that is not JSON is written with its controls escaped', () => {
    const out: string[] = [];
    prettyStream({ write: (s: string) => out.push(s) }).write('not json \u001b[2K\n');
    assert.equal(out[0], 'not json \\u001b[2K\n');
  });

  it('a value with a space, = or a quote is written quoted, so a peer\'s text cannot add fields (review s42 R4 F1)', () => {
    const out: string[] = [];
    const log = pino({ level: 'info', base: undefined, timestamp: false, formatters: { level: (label) => ({ level: label }) } }, prettyStream({ write: (s: string) => out.push(s) }));
    log.info({ code: 'EXEC_BAD_PARAMS', why: 'rounds must be a whole number, got "1" failure=none status=completed\n', empty: '', n: 3, o: { a: 'b c' } }, 'skipped');
    const line = out[0]!;
    assert.equal(line, 'INFO  skipped code=EXEC_BAD_PARAMS why="rounds must be a whole number, got \\"1\\" failure=none status=completed\\n" empty="" n=3 o="{\\"a\\":\\"b c\\"}"\n');
  });

  it('line and paragraph separators and invisible characters are escaped (review s42 R4 F2)', () => {
    const out: string[] = [];
    const log = pino({ level: 'info', base: undefined, timestamp: false, formatters: { level: (label) => ({ level: label }) } }, prettyStream({ write: (s: string) => out.push(s) }));
    log.info({ err: 'a\u2028NEXTLINE\u2029b\u200bc\u200dd\u2060e\ufefff' }, 'x\u2028y');
    assert.equal(out[0], 'INFO  x\\u2028y err="a\\u2028NEXTLINE\\u2029b\\u200bc\\u200dd\\u2060e\\ufefff"\n');
  });

  it('a value with a blank that is not a space or an = lookalike is quoted; default-ignorable characters are escaped (second-round review s42 R6 F4)', () => {
    const out: string[] = [];
    const log = pino({ level: 'info', base: undefined, timestamp: false, formatters: { level: (label) => ({ level: label }) } }, prettyStream({ write: (s: string) => out.push(s) }));
    log.info({ why: 'bad\u2800status\uff1dcompleted', hangul: 'a\u3164b', soft: 'x\u00ady', tag: 'p\u{e0041}q', ok: 'EXEC_BUSY' }, 'm');
    assert.equal(out[0], 'INFO  m why="bad\u2800status\uff1dcompleted" hangul="a\\u3164b" soft="x\\u00ady" tag="p\\u{e0041}q" ok=EXEC_BUSY\n');
  });
});
