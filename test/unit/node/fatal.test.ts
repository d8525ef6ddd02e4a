/**
 * The daemon's handling of a bug (src/node/fatal.ts), with a fake process and
 * mocked timers: one fatal line with the error's stack, the node stopped, exit
 * 70 once it has; a stop that hangs is cut at the grace; a stop that fails
 * still exits; a second bug while stopping is logged and stops nothing more.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { FATAL_EXIT, STORE_EXIT, exitOnBug } from '../../../src/node/fatal.js';
import { storeFatal } from '../../../src/store/db.js';
import { C0Error } from '../../../src/errors.js';
import type { Logger } from '../../../src/util/log.js';

const settle = async () => {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
};

function fixture(stop: () => Promise<void>) {
  const lines: Array<{ level: string; o: Record<string, unknown>; msg: string }> = [];
  const at = (level: string) => (o: Record<string, unknown>, msg: string) => void lines.push({ level, o, msg });
  const log = { fatal: at('fatal'), error: at('error'), warn: at('warn'), info: at('info'), child: () => log } as unknown as Logger;
  const exits: number[] = [];
  const proc = Object.assign(new EventEmitter(), { exit: (code?: number) => void exits.push(code ?? 0) });
  let stops = 0;
  exitOnBug({ proc: proc as never, log, stop: () => (stops++, stop()), graceMs: 5000 });
  return { proc, lines, exits, stops: () => stops };
}

test('an uncaught exception: one fatal line with kind, message and stack; the node stops; exit 70 once it has', async () => {
  let finish!: () => void;
  const f = fixture(() => new Promise<void>((r) => (finish = r)));
  const err = Object.assign(new Error('boom'), { code: 'E_BOOM' });
  f.proc.emit('uncaughtException', err);
  assert.equal(f.lines.length, 1);
  const [line] = f.lines;
  assert.equal(line!.level, 'fatal');
  assert.equal(line!.o.kind, 'uncaughtException');
  assert.equal(line!.o.err, err, 'the Error itself: pino keeps its type, stack, code and cause');
  await settle();
  assert.equal(f.stops(), 1);
  assert.deepEqual(f.exits, [], 'not before the stop is done');
  finish();
  await settle();
  assert.deepEqual(f.exits, [FATAL_EXIT]);
});

test('a rejection nothing handled (not an Error) is logged the same way; a second bug while stopping is logged and starts no second stop', async () => {
  let finish!: () => void;
  const f = fixture(() => new Promise<void>((r) => (finish = r)));
  f.proc.emit('unhandledRejection', 'a string reason');
  f.proc.emit('uncaughtException', new Error('while stopping'));
  assert.deepEqual(f.lines.map((l) => [l.level, l.o.kind, (l.o.err as { message: string }).message]), [
    ['fatal', 'unhandledRejection', 'a string reason'],
    ['fatal', 'uncaughtException', 'while stopping'],
  ]);
  assert.match(f.lines[1]!.msg, /while stopping/);
  await settle();
  assert.equal(f.stops(), 1);
  finish();
  await settle();
  assert.deepEqual(f.exits, [FATAL_EXIT]);
});

test('a reason that cannot be made text is logged all the same', async () => {
  let finish!: () => void;
  const f = fixture(() => new Promise<void>((r) => (finish = r)));
  f.proc.emit('unhandledRejection', Object.create(null));
  assert.deepEqual(f.lines[0]?.o.err, { message: '[object Object]' });
  await settle(); // the stop starts a tick later
  finish();
  await settle();
  assert.deepEqual(f.exits, [FATAL_EXIT]);
});

test('a stop that hangs is cut at the grace; a stop that fails is logged and still exits', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const hung = fixture(() => new Promise<void>(() => {}));
  hung.proc.emit('uncaughtException', new Error('x'));
  t.mock.timers.tick(4999);
  await settle();
  assert.deepEqual(hung.exits, []);
  t.mock.timers.tick(1);
  await settle();
  assert.deepEqual(hung.exits, [FATAL_EXIT]);

  const failing = fixture(() => Promise.reject(new Error('db already closed')));
  failing.proc.emit('uncaughtException', new Error('y'));
  await settle();
  assert.deepEqual(failing.exits, [FATAL_EXIT]);
  assert.ok(failing.lines.some((l) => l.level === 'error' && (l.o.err as Error).message === 'db already closed'));
});

test('a store that cannot go on in process (STORE_REOPEN_REFUSED): one fatal line of kind store; the node stops; exit 75, not the code of a bug', async () => {
  let finish!: () => void;
  const f = fixture(() => new Promise<void>((r) => (finish = r)));
  storeFatal(new C0Error('STORE_REOPEN_REFUSED', 'ledger at /x: after the store was reopened its head on disk differs'));
  assert.deepEqual(f.lines.map((l) => [l.level, l.o.kind, l.o.code]), [['fatal', 'store', 'STORE_REOPEN_REFUSED']]);
  assert.match(f.lines[0]!.msg, /exiting 75/);
  await settle();
  assert.equal(f.stops(), 1);
  finish();
  await settle();
  assert.deepEqual(f.exits, [STORE_EXIT]);
});
