/**
 * Executors: builtin workloads, the exec executor with real child processes
 * (`sh -c`), and the http executor against a real node:http server on 127.0.0.1.
 */
import { describe, test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { Readable } from 'node:stream';
import { getEventListeners } from 'node:events';
import { brotliCompressSync, constants as zlibConstants, createBrotliCompress, createGzip, deflateRawSync, deflateSync, gzipSync } from 'node:zlib';
import { createServer, type Server, type IncomingMessage, type ServerResponse } from 'node:http';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, existsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { C0Error } from '../../../src/errors.js';
import { builtinExecutor, createExecutor, decodeBody, execExecutor, httpExecutor, runBuiltinLocally, type ExecContext, type Progress } from '../../../src/roles/provider/executors.js';

const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);
const text = (b: Uint8Array): string => Buffer.from(b).toString('utf8');

function ctx(over: Partial<ExecContext> = {}): ExecContext & { progress: Progress[] } {
  const progress: Progress[] = [];
  return { input: new Uint8Array(0), signal: new AbortController().signal, onProgress: (p) => progress.push(p), maxOutputBytes: 1 << 20, progress, ...over };
}

/** The promise must reject with a C0Error of exactly this code. */
async function rejectsCode(p: Promise<unknown>, code: string): Promise<C0Error> {
  let thrown: unknown;
  try {
    await p;
  } catch (e) {
    thrown = e;
  }
  assert.ok(thrown !== undefined, `expected ${code}, but the promise resolved`);
  assert.ok(thrown instanceof C0Error, `expected C0Error ${code}, got ${String(thrown)}`);
  assert.equal(thrown.code, code, `expected ${code}, got ${thrown.code} (${thrown.message})`);
  return thrown;
}

/** Whether a process exists and is not a zombie waiting to be reaped (a zombie runs nothing). */
function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

async function waitFor(cond: () => boolean, ms = 10_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (cond()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return cond();
}

describe('builtin executors', () => {
  test('builtin.sha256 is iterated SHA-256 in hex', async () => {
    const input = utf8('hello c0mpute');
    let h = createHash('sha256').update(input).digest();
    for (let i = 1; i < 1000; i++) h = createHash('sha256').update(h).digest();
    const c = ctx({ input, params: '1000' });
    const out = await builtinExecutor('builtin.sha256').run(c);
    assert.equal(text(out), h.toString('hex'));
    assert.ok(c.progress.length > 0);
    assert.equal(c.progress.at(-1)!.fraction, 1);
  });

  test('builtin.sha256 defaults to one round', async () => {
    const input = utf8('abc');
    const out = await builtinExecutor('builtin.sha256').run(ctx({ input }));
    assert.equal(text(out), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });

  test('builtin.primes counts primes ≤ N from params or from the input', async () => {
    assert.equal(text(await builtinExecutor('builtin.primes').run(ctx({ params: '100' }))), '25');
    assert.equal(text(await builtinExecutor('builtin.primes').run(ctx({ input: utf8('1000\n') }))), '168');
    assert.equal(text(await builtinExecutor('builtin.primes').run(ctx({ params: '2' }))), '1');
    assert.equal(text(await builtinExecutor('builtin.primes').run(ctx({ params: '1' }))), '0');
    assert.equal(text(await runBuiltinLocally('builtin.primes', new Uint8Array(0), '10000')), '1229');
  });

  test('builtin.sleep echoes its input', async () => {
    const out = await builtinExecutor('builtin.sleep').run(ctx({ input: utf8('echo me'), params: '5' }));
    assert.equal(text(out), 'echo me');
  });

  test('builtin.sleep leaves no listener on the run’s signal once it is done (one left kept the signal and its timer for the life of the process)', async () => {
    const run = new AbortController();
    for (let i = 0; i < 3; i++) await builtinExecutor('builtin.sleep').run(ctx({ input: utf8('x'), params: '1', signal: run.signal }));
    assert.equal(getEventListeners(run.signal, 'abort').length, 0);
    // and an abort still ends a sleep, with the run's code
    const stop = new AbortController();
    const p = builtinExecutor('builtin.sleep').run(ctx({ input: utf8('x'), params: '60000', signal: stop.signal }));
    stop.abort(new C0Error('EXEC_PREEMPTED', 'stopped'));
    await rejectsCode(p, 'EXEC_PREEMPTED');
    assert.equal(getEventListeners(stop.signal, 'abort').length, 0);
  });

  test('bad params are EXEC_BAD_PARAMS', async () => {
    await rejectsCode(builtinExecutor('builtin.sha256').run(ctx({ params: 'many' })), 'EXEC_BAD_PARAMS');
    await rejectsCode(builtinExecutor('builtin.sha256').run(ctx({ params: '-1' })), 'EXEC_BAD_PARAMS');
    await rejectsCode(builtinExecutor('builtin.sha256').run(ctx({ params: '99999999999' })), 'EXEC_BAD_PARAMS');
    await rejectsCode(builtinExecutor('builtin.primes').run(ctx({ input: utf8('ten') })), 'EXEC_BAD_PARAMS');
    await rejectsCode(builtinExecutor('builtin.primes').run(ctx({ params: '50000001' })), 'EXEC_BAD_PARAMS');
    await rejectsCode(builtinExecutor('builtin.sleep').run(ctx({ params: '1.5' })), 'EXEC_BAD_PARAMS');
  });

  test('an empty output is EXEC_EMPTY_OUTPUT; an output over the bound is EXEC_OUTPUT_TOO_LARGE', async () => {
    await rejectsCode(builtinExecutor('builtin.sleep').run(ctx({ params: '0' })), 'EXEC_EMPTY_OUTPUT');
    await rejectsCode(builtinExecutor('builtin.sha256').run(ctx({ input: utf8('x'), maxOutputBytes: 10 })), 'EXEC_OUTPUT_TOO_LARGE');
  });

  test('an aborted run is EXEC_ABORTED; a timed-out one is EXEC_TIMEOUT', async () => {
    const ac = new AbortController();
    const p = builtinExecutor('builtin.sleep').run(ctx({ input: utf8('x'), params: '60000', signal: ac.signal }));
    ac.abort(new Error('stop'));
    await rejectsCode(p, 'EXEC_ABORTED');

    await rejectsCode(builtinExecutor('builtin.sleep').run(ctx({ input: utf8('x'), params: '60000', signal: AbortSignal.timeout(20) })), 'EXEC_TIMEOUT');
    // A long sha256 chain notices the deadline between its steps.
    await rejectsCode(builtinExecutor('builtin.sha256').run(ctx({ input: utf8('x'), params: '10000000', signal: AbortSignal.timeout(20) })), 'EXEC_TIMEOUT');
    // Already aborted before starting.
    const done = new AbortController();
    done.abort();
    await rejectsCode(builtinExecutor('builtin.primes').run(ctx({ params: '10', signal: done.signal })), 'EXEC_ABORTED');
  });

  test('createExecutor refuses an unknown builtin', () => {
    assert.throws(() => createExecutor({ type: 'builtin', name: 'builtin.nope' as never }), (e: unknown) => e instanceof C0Error && e.code === 'CONFIG_INVALID');
    assert.equal(createExecutor({ type: 'builtin', name: 'builtin.sha256' }).kind, 'builtin');
  });
});

describe('exec executor (real child processes)', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'c0-exec-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('the input reaches the command on stdin and stdout is the output', async () => {
    const ex = execExecutor({ command: ['sh', '-c', 'tr a-z A-Z'] });
    assert.equal(text(await ex.run(ctx({ input: utf8('hello stdin') }))), 'HELLO STDIN');
  });

  test('params and configured env reach the command; the node’s own env does not', async () => {
    process.env.C0MPUTE_TEST_SECRET = 'leak';
    try {
      const ex = execExecutor({ command: ['sh', '-c', 'printf "%s|%s|%s" "$C0MPUTE_PARAMS" "$GREETING" "$C0MPUTE_TEST_SECRET"'], env: { GREETING: 'hi' } });
      assert.equal(text(await ex.run(ctx({ params: 'p=1' }))), 'p=1|hi|');
    } finally {
      delete process.env.C0MPUTE_TEST_SECRET;
    }
  });

  test('the command runs in the configured cwd; a cwd that is not a directory is refused when the executor is made', async () => {
    const work = mkdtempSync(join(dir, 'cwd-'));
    writeFileSync(join(work, 'marker'), 'here');
    assert.equal(text(await execExecutor({ command: ['sh', '-c', 'cat marker'], cwd: work }).run(ctx())), 'here');
    for (const bad of [join(dir, 'missing'), join(work, 'marker')]) {
      assert.throws(
        () => execExecutor({ command: ['true'], cwd: bad }),
        (e: unknown) => e instanceof C0Error && e.code === 'CONFIG_INVALID' && e.field === 'cwd' && e.message.includes(bad),
      );
    }
  });

  test('stderr lines become progress', async () => {
    const c = ctx();
    await execExecutor({ command: ['sh', '-c', 'echo working >&2; echo done'] }).run(c);
    assert.ok(c.progress.some((p) => p.message === 'working'));
  });

  test('a non-zero exit is EXEC_FAILED', async () => {
    await rejectsCode(execExecutor({ command: ['sh', '-c', 'echo partial; echo boom >&2; exit 3'] }).run(ctx()), 'EXEC_FAILED');
  });

  test('an empty output is EXEC_EMPTY_OUTPUT', async () => {
    await rejectsCode(execExecutor({ command: ['sh', '-c', 'cat >/dev/null'] }).run(ctx({ input: utf8('x') })), 'EXEC_EMPTY_OUTPUT');
  });

  test('an output over the bound is EXEC_OUTPUT_TOO_LARGE (and the command is stopped)', async () => {
    // `yes` never ends on its own: only the size bound stops it.
    await rejectsCode(execExecutor({ command: ['sh', '-c', 'yes c0mpute'] }).run(ctx({ maxOutputBytes: 4096 })), 'EXEC_OUTPUT_TOO_LARGE');
    await rejectsCode(execExecutor({ command: ['sh', '-c', 'printf 0123456789'] }).run(ctx({ maxOutputBytes: 9 })), 'EXEC_OUTPUT_TOO_LARGE');
    assert.equal(text(await execExecutor({ command: ['sh', '-c', 'printf 0123456789'] }).run(ctx({ maxOutputBytes: 10 }))), '0123456789');
  });

  test('at the deadline the whole process group is killed (grandchildren too)', async () => {
    const pidfile = join(dir, 'grandchild.pid');
    const ex = execExecutor({ command: ['sh', '-c', `sleep 30 & echo $! > ${pidfile}; wait`] });
    const ac = new AbortController();
    const p = ex.run(ctx({ signal: ac.signal }));
    assert.ok(await waitFor(() => existsSync(pidfile) && readFileSync(pidfile, 'utf8').trim().length > 0), 'the command wrote its grandchild pid');
    const pid = Number.parseInt(readFileSync(pidfile, 'utf8').trim(), 10);
    assert.ok(Number.isSafeInteger(pid) && pid > 1);
    assert.ok(pidAlive(pid), 'the grandchild runs before the abort');
    ac.abort(new Error('deadline'));
    await rejectsCode(p, 'EXEC_ABORTED');
    assert.ok(await waitFor(() => !pidAlive(pid)), `grandchild ${pid} survived the abort`);
  });

  test('a deadline from AbortSignal.timeout is EXEC_TIMEOUT', async () => {
    await rejectsCode(execExecutor({ command: ['sh', '-c', 'sleep 30'] }).run(ctx({ signal: AbortSignal.timeout(50) })), 'EXEC_TIMEOUT');
  });

  test('output written after the command exits by a process it left in its group is read whole before the run ends', async () => {
    // A background step of a wrapper script, bash's `exec > >(tee log)` logging idiom, output through a process
    // substitution: the last of the output comes from a process in the job's own group after the leader has exited.
    // Killing the group at the leader's exit cut it, and the cut output was signed as a success.
    assert.equal(text(await execExecutor({ command: ['sh', '-c', '(sleep 0.3; echo b) & echo a'] }).run(ctx())), 'a\nb\n');
    const lines = Array.from({ length: 200 }, (_, i) => `${i + 1}\n`).join('');
    const log = join(dir, 'tee.log');
    const teed = await execExecutor({ command: ['bash', '-c', `exec > >(sleep 0.3; tee ${log}); seq 1 200; echo END`] }).run(ctx());
    assert.equal(text(teed), `${lines}END\n`);
    assert.ok(await waitFor(() => existsSync(log) && readFileSync(log, 'utf8') === `${lines}END\n`), 'tee wrote its log whole');
    const filtered = await execExecutor({ command: ['bash', '-c', 'seq 1 5000 > >(sleep 0.3; sed s/^/x/)'] }).run(ctx());
    assert.equal(text(filtered), Array.from({ length: 5000 }, (_, i) => `x${i + 1}\n`).join(''));
  });

  test('a process the command leaves running in its group without its output is killed once the output is complete', async () => {
    const pidfile = join(dir, 'leftover.pid');
    const t0 = Date.now();
    const out = await execExecutor({ command: ['sh', '-c', `sleep 1000 >/dev/null 2>&1 & echo $! > ${pidfile}; echo done`] }).run(ctx({ signal: AbortSignal.timeout(30_000) }));
    assert.equal(text(out), 'done\n');
    assert.ok(Date.now() - t0 < 3000, `took ${Date.now() - t0} ms`);
    const pid = Number.parseInt(readFileSync(pidfile, 'utf8').trim(), 10);
    assert.ok(Number.isSafeInteger(pid) && pid > 1);
    assert.ok(await waitFor(() => !pidAlive(pid)), `the leftover ${pid} still runs`);
  });

  // util-linux's setsid starts a process in a session (and group) of its own.
  const hasSetsid = spawnSync('sh', ['-c', 'command -v setsid']).status === 0;
  describe('a process that left the job’s process group (setsid) and holds its output', { skip: !hasSetsid && 'no setsid here', concurrency: true }, () => {
    // Such a process is not in the group the deadline kills: the run must end all the same. Each test's own marker
    // (sleep <n>) finds it in /proc, and the test kills it whatever happens.
    // Each waits out the short grace (PIPE_GRACE_MS) or a deadline on its own marker: they run side by side.
    const escaped = (marker: string): number[] =>
      readdirSync('/proc')
        .filter((d) => /^[0-9]+$/.test(d))
        .filter((d) => {
          try {
            return readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ') === `sleep ${marker}`;
          } catch {
            return false;
          }
        })
        .map(Number);
    const killAll = (marker: string) => {
      for (const pid of escaped(marker)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          /* gone */
        }
      }
    };
    // Starts `sleep <marker>` in a session of its own and waits until it has left the job's group (/proc/<pid>/stat
    // field 5 is the process group), so the leader never exits before it: the group's kill would take it along.
    const escape = (marker: string) => `setsid sleep ${marker} & p=$!; while [ "$(cut -d' ' -f5 /proc/$p/stat)" = "$$" ]; do sleep 0.02; done`;
    const logged = () => {
      const lines: Array<{ msg: string; pid?: number }> = [];
      return { lines, log: pino({ level: 'warn' }, { write: (l: string) => void lines.push(JSON.parse(l) as never) }) };
    };

    test('at the deadline the run ends EXEC_TIMEOUT soon after the group is killed, and the log names the process outside the group', async () => {
      const marker = `${1000 + (process.pid % 1000)}.5`;
      const { lines, log } = logged();
      try {
        const t0 = Date.now();
        const p = execExecutor({ command: ['sh', '-c', `${escape(marker)}; echo partial; sleep 1001`] }, { log }).run(ctx({ input: utf8('x'), signal: AbortSignal.timeout(300) }));
        await rejectsCode(p, 'EXEC_TIMEOUT');
        const took = Date.now() - t0;
        assert.ok(took < 300 + 3000, `the run ended ${took} ms after it began (deadline 300 ms)`);
        assert.equal(escaped(marker).length, 1, 'the process outside the group is not the provider’s to kill (it still runs)');
        assert.ok(lines.some((l) => /outside its process group/.test(l.msg)), JSON.stringify(lines));
      } finally {
        killAll(marker);
      }
    });

    test('a command that exits 0 while such a process holds stdout succeeds with what it wrote, after a short grace', async () => {
      const marker = `${1000 + (process.pid % 1000)}.25`;
      const { lines, log } = logged();
      try {
        const t0 = Date.now();
        const out = await execExecutor({ command: ['sh', '-c', `${escape(marker)}; echo result`] }, { log }).run(ctx({ input: utf8('x'), signal: AbortSignal.timeout(30_000) }));
        assert.equal(text(out), 'result\n');
        assert.ok(Date.now() - t0 < 3000, `took ${Date.now() - t0} ms`);
        assert.ok(lines.some((l) => /outside its process group/.test(l.msg)), JSON.stringify(lines));
      } finally {
        killAll(marker);
      }
    });

    test('with such a process holding stdout, what a process left in the group writes after the command exits is still read', async () => {
      const marker = `${1000 + (process.pid % 1000)}.125`;
      const { lines, log } = logged();
      try {
        const t0 = Date.now();
        const out = await execExecutor({ command: ['sh', '-c', `${escape(marker)}; (sleep 0.3; echo b) & echo a`] }, { log }).run(ctx({ input: utf8('x'), signal: AbortSignal.timeout(30_000) }));
        assert.equal(text(out), 'a\nb\n');
        assert.ok(Date.now() - t0 < 5000, `took ${Date.now() - t0} ms`);
        assert.ok(lines.some((l) => /outside its process group/.test(l.msg)), JSON.stringify(lines));
      } finally {
        killAll(marker);
      }
    });

    test('a command that exits non-zero while such a process holds stdout is EXEC_FAILED, not a run that never ends', async () => {
      const marker = `${1000 + (process.pid % 1000)}.75`;
      try {
        const e = await rejectsCode(execExecutor({ command: ['sh', '-c', `${escape(marker)}; echo oops >&2; exit 4`] }).run(ctx({ input: utf8('x'), signal: AbortSignal.timeout(30_000) })), 'EXEC_FAILED');
        assert.match(e.message, /exited with 4: oops/);
      } finally {
        killAll(marker);
      }
    });
  });

  test('a binary removed after start is EXEC_SPAWN_FAILED, and the operator’s log gets a warning', async () => {
    const bin = join(mkdtempSync(join(dir, 'gone-')), 'tool');
    writeFileSync(bin, '#!/bin/sh\necho hi\n', { mode: 0o755 });
    const warned: unknown[] = [];
    const ex = execExecutor({ command: [bin] }, { log: { warn: (...a: unknown[]) => void warned.push(a) } as never });
    rmSync(bin);
    await rejectsCode(ex.run(ctx({ input: utf8('x') })), 'EXEC_SPAWN_FAILED');
    assert.equal(warned.length, 1, 'one warning');
    assert.equal((warned[0] as [{ command?: string }])[0].command, bin);
  });

  test('a command that cannot start fails with a message naming neither its path nor its arguments (it goes into a signed, gossiped receipt); the operator’s log gets them from the detail', async () => {
    const bin = join(dir, 'private-tools', 'no-such-binary');
    mkdirSync(join(dir, 'private-tools'), { recursive: true });
    writeFileSync(bin, '#!/bin/sh\n', { mode: 0o755 });
    const ex = execExecutor({ command: [bin, '--api-key=SECRET-ARG'] });
    rmSync(bin);
    const e = await rejectsCode(ex.run(ctx({ input: utf8('x') })), 'EXEC_SPAWN_FAILED');
    assert.doesNotMatch(e.message, /private-tools|SECRET-ARG/);
    assert.match(e.message, /ENOENT/);
    assert.equal((e.detail as { command?: string } | undefined)?.command, bin, 'the command (not its arguments) for the operator’s own log');
  });

  test('params with a NUL byte (which no environment variable can carry) are EXEC_BAD_PARAMS, refused before anything is spawned', async () => {
    const marker = join(dir, 'nul-spawned');
    const e = await rejectsCode(execExecutor({ command: ['sh', '-c', `touch ${marker}; printf %s "$C0MPUTE_PARAMS"`] }).run(ctx({ input: utf8('x'), params: 'a\u0000b' })), 'EXEC_BAD_PARAMS');
    assert.match(e.message, /NUL/);
    assert.doesNotMatch(e.message, /options\.env/, 'not Node’s internal message');
    assert.equal(existsSync(marker), false, 'nothing ran');
  });

  test('a spawn that throws at once (E2BIG: an environment too large for the system) is EXEC_SPAWN_FAILED with the system code, not a crash', async () => {
    const e = await rejectsCode(execExecutor({ command: ['sh', '-c', 'echo hi'], env: { HUGE: 'x'.repeat(200_000) } }).run(ctx({ input: utf8('x') })), 'EXEC_SPAWN_FAILED');
    assert.equal(e.message, 'cannot start the command (E2BIG)');
    assert.equal((e.detail as { command?: string } | undefined)?.command, 'sh');
  });

  test('a NUL byte in the configured command or env (no process can take one) is CONFIG_INVALID when the executor is made', () => {
    assert.throws(() => execExecutor({ command: ['sh', '-c', 'echo hi', 'bad\u0000arg'] }), (e: unknown) => e instanceof C0Error && e.code === 'CONFIG_INVALID' && e.field === 'command');
    assert.throws(() => execExecutor({ command: ['sh'], env: { K: 'v\u0000' } }), (e: unknown) => e instanceof C0Error && e.code === 'CONFIG_INVALID' && e.field === 'env.K');
    assert.throws(() => execExecutor({ command: ['sh'], env: { 'A=B': 'v' } }), (e: unknown) => e instanceof C0Error && e.code === 'CONFIG_INVALID' && e.field === 'env');
  });

  test('an empty command is refused at configuration', () => {
    assert.throws(() => execExecutor({ command: [] }), (e: unknown) => e instanceof C0Error && e.code === 'CONFIG_INVALID');
  });
});

describe('http executor (real local server)', () => {
  let server: Server;
  let base: string;
  const seen: Array<{ body: string; params: string | undefined; auth: string | undefined }> = [];

  before(async () => {
    server = createServer((req: IncomingMessage, res: ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        seen.push({ body, params: req.headers['x-c0mpute-params'] as string | undefined, auth: req.headers.authorization });
        switch (req.url?.split('?')[0]) {
          case '/ok':
            res.writeHead(200, { 'content-type': 'text/plain' });
            res.end(`echo:${body}`);
            return;
          case '/fail':
            res.writeHead(500);
            res.end('internal');
            return;
          case '/big':
            res.writeHead(200);
            res.end(Buffer.alloc(100_000, 0x61));
            return;
          case '/empty':
            res.writeHead(200);
            res.end();
            return;
          case '/slow':
            res.writeHead(200);
            res.write('partial');
            // never ends on its own; the test's deadline stops it
            return;
          default:
            res.writeHead(404);
            res.end();
        }
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const a = server.address();
    assert.ok(a && typeof a === 'object');
    base = `http://127.0.0.1:${a.port}`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });

  test('a 200 with a body is the output; the input, params and configured headers are sent', async () => {
    const ex = httpExecutor({ url: `${base}/ok`, headers: { authorization: 'Bearer abc' } });
    const out = await ex.run(ctx({ input: utf8('ping'), params: 'k=v' }));
    assert.equal(text(out), 'echo:ping');
    const last = seen.at(-1)!;
    assert.equal(last.body, 'ping');
    assert.equal(last.params, 'k=v');
    assert.equal(last.auth, 'Bearer abc');
  });

  test('a 500 is EXEC_HTTP_STATUS', async () => {
    await rejectsCode(httpExecutor({ url: `${base}/fail` }).run(ctx({ input: utf8('x') })), 'EXEC_HTTP_STATUS');
  });

  test('an unreachable port is EXEC_HTTP_UNREACHABLE', async () => {
    const s = createServer();
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
    const port = (s.address() as { port: number }).port;
    await new Promise<void>((r) => s.close(() => r()));
    await rejectsCode(httpExecutor({ url: `http://127.0.0.1:${port}/` }).run(ctx({ input: utf8('x') })), 'EXEC_HTTP_UNREACHABLE');
  });

  test('a failure names no part of the back end’s URL (its message goes into a signed, gossiped receipt); the redacted URL is in the detail, for the operator’s log', async () => {
    const status = await rejectsCode(httpExecutor({ url: `${base}/fail?api_key=SECRET-PROVIDER-KEY` }).run(ctx({ input: utf8('x') })), 'EXEC_HTTP_STATUS');
    assert.equal(status.message, 'the back end answered 500');
    assert.equal((status.detail as { url?: string } | undefined)?.url, `${base}/fail`, 'no query string');
    const s = createServer();
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
    const port = (s.address() as { port: number }).port;
    await new Promise<void>((r) => s.close(() => r()));
    const gone = await rejectsCode(httpExecutor({ url: `http://127.0.0.1:${port}/v1/infer?api_key=SECRET-PROVIDER-KEY` }).run(ctx({ input: utf8('x') })), 'EXEC_HTTP_UNREACHABLE');
    assert.equal(gone.message, 'the back end is unreachable (ECONNREFUSED)');
    assert.doesNotMatch(JSON.stringify(gone.detail), /SECRET/);
    assert.equal((gone.detail as { url?: string } | undefined)?.url, `http://127.0.0.1:${port}/v1/infer`);
  });

  test('a URL carrying credentials (user:pass@, which fetch refuses and repeats in its error) is refused when the executor is made, without repeating them', () => {
    assert.throws(
      () => httpExecutor({ url: 'http://op:SECRET-PASS@127.0.0.1:9/x' }),
      (e: unknown) => e instanceof C0Error && e.code === 'CONFIG_INVALID' && e.field === 'url' && !e.message.includes('SECRET-PASS'),
    );
  });

  test('a header fetch would refuse (a line break in a pasted key, a space in a name) is CONFIG_INVALID when the executor is made, naming the header but not its value', () => {
    assert.throws(
      () => httpExecutor({ url: 'http://127.0.0.1:9/x', headers: { authorization: 'Bearer SECRET\nKEY' } }),
      (e: unknown) => e instanceof C0Error && e.code === 'CONFIG_INVALID' && e.field === 'headers.authorization' && !e.message.includes('SECRET'),
    );
    assert.throws(
      () => httpExecutor({ url: 'http://127.0.0.1:9/x', headers: { 'x api key': 'v' } }),
      (e: unknown) => e instanceof C0Error && e.code === 'CONFIG_INVALID' && e.field === 'headers',
    );
    assert.doesNotThrow(() => httpExecutor({ url: 'http://127.0.0.1:9/x', headers: { authorization: 'Bearer ok-key', 'x-tenant': 'a b' } }));
  });

  test('headers fetch sets itself (transfer-encoding, expect, upgrade, keep-alive, content-length, connection: upgrade) are CONFIG_INVALID at start; connection: close is taken', () => {
    for (const [k, v] of [['transfer-encoding', 'chunked'], ['Expect', '100-continue'], ['upgrade', 'h2c'], ['keep-alive', 'timeout=5'], ['content-length', '5'], ['connection', 'upgrade']] as const) {
      assert.throws(() => httpExecutor({ url: 'http://127.0.0.1:9/x', headers: { [k]: v } }), (e: unknown) => e instanceof C0Error && e.code === 'CONFIG_INVALID' && e.field === `headers.${k}`, k);
    }
    assert.doesNotThrow(() => httpExecutor({ url: 'http://127.0.0.1:9/x', headers: { connection: 'close' } }));
  });

  test('params a header cannot carry unchanged (past U+00FF, a line break, Latin-1, spaces at the ends) reach the back end percent-encoded, flagged; plain ASCII as it is', async () => {
    const got: Array<{ p?: string; enc?: string }> = [];
    const s = createServer((req, res) => {
      got.push({ p: req.headers['x-c0mpute-params'] as string | undefined, enc: req.headers['x-c0mpute-params-encoding'] as string | undefined });
      req.resume();
      req.on('end', () => res.end('ok'));
    });
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
    try {
      const u = `http://127.0.0.1:${(s.address() as { port: number }).port}/`;
      for (const params of ['temperature=0.2 top_p=0.9', 'prompt=résumé ✓', 'a\nb', ' padded ']) await httpExecutor({ url: u }).run(ctx({ input: utf8('x'), params }));
      assert.deepEqual(got[0], { p: 'temperature=0.2 top_p=0.9', enc: undefined });
      for (const [i, params] of [[1, 'prompt=résumé ✓'], [2, 'a\nb'], [3, ' padded ']] as const) {
        assert.equal(got[i]!.enc, 'percent');
        assert.equal(decodeURIComponent(got[i]!.p!), params);
      }
    } finally {
      await new Promise<void>((r) => s.close(() => r()));
    }
  });

  test('a redirect is not followed: a 3xx is EXEC_HTTP_STATUS naming it, and the other host gets nothing (neither the request nor the operator’s headers)', async () => {
    const elsewhere: string[] = [];
    const other = createServer((req, res) => {
      elsewhere.push(`${req.method} ${req.url} ${String(req.headers['x-api-key'])}`);
      res.end('SECRET-METADATA');
    });
    await new Promise<void>((r) => other.listen(0, '127.0.0.1', () => r()));
    const target = `http://127.0.0.1:${(other.address() as { port: number }).port}/latest/meta-data/`;
    const redirecting = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(Number(req.url!.slice(1)), { location: target });
        res.end();
      });
    });
    await new Promise<void>((r) => redirecting.listen(0, '127.0.0.1', () => r()));
    try {
      const u = `http://127.0.0.1:${(redirecting.address() as { port: number }).port}`;
      for (const status of [301, 302, 303, 307, 308]) {
        const e = await rejectsCode(httpExecutor({ url: `${u}/${status}`, headers: { 'x-api-key': 'sk-operator' } }).run(ctx({ input: utf8('x') })), 'EXEC_HTTP_STATUS');
        assert.equal(e.message, `the back end answered ${status} (a redirect, which is not followed)`);
        assert.doesNotMatch(e.message, /127\.0\.0\.1|meta-data/, 'the target is not in the receipt');
      }
      assert.deepEqual(elsewhere, [], 'the redirect’s target got no request');
    } finally {
      redirecting.closeAllConnections();
      other.closeAllConnections();
      await new Promise<void>((r) => redirecting.close(() => r()));
      await new Promise<void>((r) => other.close(() => r()));
    }
  });

  test('the run’s signal is the only deadline: the back end is not called through fetch (whose client gives up after 300 s without headers or 300 s of a silent body), and a slow head and a pause mid-body are waited for', async () => {
    const s = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        setTimeout(() => {
          res.writeHead(200);
          res.write('slow-');
          setTimeout(() => res.end('answer'), 700);
        }, 700);
      });
    });
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
    const realFetch = globalThis.fetch;
    globalThis.fetch = () => Promise.reject(new Error('fetch (undici: headersTimeout and bodyTimeout 300 s) was used'));
    try {
      const out = await httpExecutor({ url: `http://127.0.0.1:${(s.address() as { port: number }).port}/` }).run(ctx({ input: utf8('x'), signal: AbortSignal.timeout(30_000) }));
      assert.equal(text(out), 'slow-answer');
    } finally {
      globalThis.fetch = realFetch;
      s.closeAllConnections();
      await new Promise<void>((r) => s.close(() => r()));
    }
  });

  test('a back end that never answers is EXEC_TIMEOUT at the run’s deadline; a compressed body is decoded; a URL that is not http(s) is refused at start', async () => {
    const s = createServer((req, res) => {
      req.resume();
      if (req.url === '/gzip') req.on('end', () => res.writeHead(200, { 'content-encoding': 'gzip' }).end(gzipSync('unzipped output')));
      // otherwise: never answers
    });
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
    try {
      const u = `http://127.0.0.1:${(s.address() as { port: number }).port}`;
      await rejectsCode(httpExecutor({ url: `${u}/silent` }).run(ctx({ input: utf8('x'), signal: AbortSignal.timeout(200) })), 'EXEC_TIMEOUT');
      assert.equal(text(await httpExecutor({ url: `${u}/gzip` }).run(ctx({ input: utf8('x') }))), 'unzipped output');
    } finally {
      s.closeAllConnections();
      await new Promise<void>((r) => s.close(() => r()));
    }
    assert.throws(() => httpExecutor({ url: 'file:///etc/passwd' }), (e: unknown) => e instanceof C0Error && e.code === 'CONFIG_INVALID' && e.field === 'url');
  });

  test('a body is decoded as its content-encoding lists (stacked codings in reverse, deflate with or without the zlib header); an empty encoded body is EXEC_EMPTY_OUTPUT; a coding not decoded is EXEC_HTTP_STATUS, never compressed bytes as the output', async () => {
    const plain = Buffer.from('the back end result');
    const bodies: Record<string, [string, Buffer]> = {
      '/gzip': ['gzip', gzipSync(plain)],
      '/upper': ['GZIP', gzipSync(plain)],
      '/gzip-br': ['gzip, br', brotliCompressSync(gzipSync(plain))],
      '/deflate-gzip': ['deflate,gzip', gzipSync(deflateSync(plain))],
      '/deflate': ['deflate', deflateSync(plain)],
      '/deflate-raw': ['deflate', deflateRawSync(plain)],
      '/br-deflate-raw-gzip': ['br, deflate, x-gzip', gzipSync(deflateRawSync(brotliCompressSync(plain)))],
      '/identity': ['identity', plain],
      '/gzip-empty': ['gzip', Buffer.alloc(0)],
      '/br-empty': ['br', Buffer.alloc(0)],
      '/deflate-empty': ['deflate', Buffer.alloc(0)],
      '/gzip-of-nothing-in-br': ['gzip, br', brotliCompressSync(Buffer.alloc(0))],
      '/zstd': ['zstd', Buffer.from('28b52ffd0000', 'hex')],
      '/gzip-compress': ['gzip, compress', gzipSync(plain)],
      '/odd': ['gzip, "x y"', gzipSync(plain)],
      '/many': [Array(6).fill('gzip').join(', '), [1, 2, 3, 4, 5, 6].reduce((b) => gzipSync(b), plain)],
    };
    const s = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        const [enc, body] = bodies[req.url ?? '']!;
        res.writeHead(200, { 'content-encoding': enc }).end(body);
      });
    });
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
    try {
      const u = `http://127.0.0.1:${(s.address() as { port: number }).port}`;
      const run = (path: string) => httpExecutor({ url: `${u}${path}` }).run(ctx({ input: utf8('x') }));
      for (const path of ['/gzip', '/upper', '/gzip-br', '/deflate-gzip', '/deflate', '/deflate-raw', '/br-deflate-raw-gzip', '/identity']) {
        assert.equal(text(await run(path)), plain.toString(), path);
      }
      for (const path of ['/gzip-empty', '/br-empty', '/deflate-empty', '/gzip-of-nothing-in-br']) await rejectsCode(run(path), 'EXEC_EMPTY_OUTPUT');
      const zstd = await rejectsCode(run('/zstd'), 'EXEC_HTTP_STATUS');
      assert.equal(zstd.message, 'the back end answered 200 with a content-encoding the client does not decode (zstd)');
      assert.match((await rejectsCode(run('/gzip-compress'), 'EXEC_HTTP_STATUS')).message, /\(compress\)$/);
      assert.match((await rejectsCode(run('/odd'), 'EXEC_HTTP_STATUS')).message, /content-encoding the client does not decode \(not a coding name\)$/);
      assert.match((await rejectsCode(run('/many'), 'EXEC_HTTP_STATUS')).message, /more than 5 codings/);
    } finally {
      s.closeAllConnections();
      await new Promise<void>((r) => s.close(() => r()));
    }
  });

  test('a body over the bound is EXEC_OUTPUT_TOO_LARGE', async () => {
    await rejectsCode(httpExecutor({ url: `${base}/big` }).run(ctx({ input: utf8('x'), maxOutputBytes: 1000 })), 'EXEC_OUTPUT_TOO_LARGE');
    assert.equal((await httpExecutor({ url: `${base}/big` }).run(ctx({ input: utf8('x'), maxOutputBytes: 100_000 }))).length, 100_000);
  });

  test('an empty body is EXEC_EMPTY_OUTPUT', async () => {
    await rejectsCode(httpExecutor({ url: `${base}/empty` }).run(ctx({ input: utf8('x') })), 'EXEC_EMPTY_OUTPUT');
  });

  test('a response that does not finish by the deadline is EXEC_TIMEOUT', async () => {
    await rejectsCode(httpExecutor({ url: `${base}/slow` }).run(ctx({ input: utf8('x'), signal: AbortSignal.timeout(200) })), 'EXEC_TIMEOUT');
  });
});

/**
 * A decompression bomb for `Content-Encoding: gzip, br`: brotli of a gzip header whose comment (FCOMMENT) is `size`
 * bytes. Brotli (decoded first) expands a few hundred bytes to `size`; the gzip layer takes it all as its header and
 * outputs nothing, so the output bound on the last layer is never reached.
 */
async function gzipCommentInBrotli(size: number): Promise<Buffer> {
  const enc = createBrotliCompress({ params: { [zlibConstants.BROTLI_PARAM_QUALITY]: 5, [zlibConstants.BROTLI_PARAM_SIZE_HINT]: size } });
  const parts: Buffer[] = [];
  enc.on('data', (d: Buffer) => parts.push(d));
  const ended = new Promise<void>((r) => enc.on('end', () => r()));
  enc.write(Buffer.from([0x1f, 0x8b, 8, 0x10, 0, 0, 0, 0, 0, 255])); // magic, deflate, FLG=FCOMMENT, MTIME, XFL, OS
  const block = Buffer.alloc(1 << 20, 0x61);
  for (let left = size; left > 0; left -= block.length) {
    if (!enc.write(left >= block.length ? block : block.subarray(0, left))) await new Promise((r) => enc.once('drain', r));
  }
  enc.end();
  await ended;
  return Buffer.concat(parts);
}

describe('http executor: decoding a stacked body is bounded and ends with the run', () => {
  let server: Server;
  let base: string;
  let bomb: Buffer;
  let honest: Buffer;
  let honestBody: Buffer;
  let flushed: Buffer;
  let flushedGzipBytes: number;
  let flushedBody: Buffer;
  const MiB = 1 << 20;

  before(async () => {
    bomb = await gzipCommentInBrotli(256 * MiB);
    // Incompressible, so each encoded layer is a little larger than the output.
    honest = randomBytes(4 * MiB);
    honestBody = brotliCompressSync(gzipSync(gzipSync(honest, { level: 1 }), { level: 1 }), { params: { [zlibConstants.BROTLI_PARAM_QUALITY]: 1 } });
    // A back end that streams gzip and flushes after every byte: about 7 bytes of gzip per byte of output, then br.
    flushed = randomBytes(16 * 1024);
    const gz = createGzip();
    const gzParts: Buffer[] = [];
    gz.on('data', (d: Buffer) => gzParts.push(d));
    const gzEnded = new Promise<void>((r) => gz.on('end', () => r()));
    for (let i = 0; i < flushed.length; i++) {
      gz.write(flushed.subarray(i, i + 1));
      await new Promise<void>((r) => gz.flush(() => r()));
    }
    gz.end();
    await gzEnded;
    const flushedGzip = Buffer.concat(gzParts);
    flushedGzipBytes = flushedGzip.length;
    flushedBody = brotliCompressSync(flushedGzip, { params: { [zlibConstants.BROTLI_PARAM_QUALITY]: 1 } });
    server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        if (req.url === '/bomb') res.writeHead(200, { 'content-encoding': 'gzip, br' }).end(bomb);
        else if (req.url === '/honest') res.writeHead(200, { 'content-encoding': 'gzip, gzip, br' }).end(honestBody);
        else if (req.url === '/flushed') res.writeHead(200, { 'content-encoding': 'gzip, br' }).end(flushedBody);
        else res.writeHead(404).end();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });

  /** How long `p` took to settle, and the C0Error it rejected with. */
  async function timed(p: Promise<unknown>, code: string): Promise<{ ms: number; err: C0Error }> {
    const t0 = Date.now();
    const err = await rejectsCode(p, code);
    return { ms: Date.now() - t0, err };
  }

  test('a bomb in an intermediate layer (gzip, br: brotli expanding to 256 MiB inside a gzip header’s comment, which yields no output) is EXEC_OUTPUT_TOO_LARGE as soon as that layer passes the bound, not after decoding it all', async () => {
    const { ms, err } = await timed(httpExecutor({ url: `${base}/bomb` }).run(ctx({ input: utf8('x'), maxOutputBytes: MiB })), 'EXEC_OUTPUT_TOO_LARGE');
    assert.equal(err.message, 'response too large: undoing its br content-encoding gives more than 16842752 bytes (16 times the output bound of 1048576 bytes, plus 64 KiB), with 1 more to undo');
    assert.ok(ms < 1500, `ended after ${ms} ms`);
  });

  test('an honest intermediate layer larger than its output (gzip flushed after every byte, then br: about 7 times) still decodes whole', async () => {
    // the intermediate layer really is several times the output (the bound before 16 times was 1/16 more plus 64 KiB)
    assert.ok(flushedGzipBytes > 5 * flushed.length, `the flushed gzip layer is ${flushedGzipBytes} bytes for ${flushed.length} of output`);
    // an output bound just above the output: the intermediate gzip layer is several times it
    const out = await httpExecutor({ url: `${base}/flushed` }).run(ctx({ input: utf8('x'), maxOutputBytes: flushed.length + 16 }));
    assert.ok(Buffer.from(out).equals(flushed));
  });

  test('the run’s signal ends the decoding of a body that has fully arrived: EXEC_TIMEOUT at the deadline, a preempt’s own code when stopped, at once, and no decoding goes on after', async () => {
    const ex = httpExecutor({ url: `${base}/bomb` });
    // A bound the bomb does not reach: only the signal can end it.
    const big = { input: utf8('x'), maxOutputBytes: 1 << 30 };
    const deadline = await timed(ex.run(ctx({ ...big, signal: AbortSignal.timeout(300) })), 'EXEC_TIMEOUT');
    assert.ok(deadline.ms < 1500, `ended ${deadline.ms} ms after it started, for a 300 ms deadline`);
    const ac = new AbortController();
    const stop = setTimeout(() => ac.abort(new C0Error('EXEC_PREEMPTED', 'the overlay’s steward reclaimed the devices for a higher-priority claim')), 300);
    const preempted = await timed(ex.run(ctx({ ...big, signal: ac.signal })), 'EXEC_PREEMPTED');
    clearTimeout(stop);
    assert.ok(preempted.ms < 1500, `ended ${preempted.ms} ms after it started, stopped at 300 ms`);
    // The decoders were destroyed with the run: no core stays busy decoding for no one.
    const before = process.cpuUsage();
    await new Promise((r) => setTimeout(r, 500));
    const used = process.cpuUsage(before);
    assert.ok((used.user + used.system) / 1000 < 250, `${((used.user + used.system) / 1000).toFixed(0)} ms of CPU in the 500 ms after the run ended`);
  });

  test('a decoder does not run ahead of its reader (back-pressure): a body nobody reads is not decoded into memory', async () => {
    const out = decodeBody(Readable.from([bomb]), ['br'], { maxOutputBytes: 1 << 30, signal: new AbortController().signal });
    try {
      await new Promise((r) => setTimeout(r, 400));
      assert.ok(out.readableLength <= 256 * 1024, `${out.readableLength} bytes decoded and held for a reader that never read`);
    } finally {
      out.destroy();
    }
  });

  test('honest stacked codings still decode whole, as large as the bound, though each encoded layer is a little larger than the output', async () => {
    const out = await httpExecutor({ url: `${base}/honest` }).run(ctx({ input: utf8('x'), maxOutputBytes: honest.length }));
    assert.equal(out.length, honest.length);
    assert.ok(Buffer.from(out).equals(honest));
    await rejectsCode(httpExecutor({ url: `${base}/honest` }).run(ctx({ input: utf8('x'), maxOutputBytes: honest.length - 1 })), 'EXEC_OUTPUT_TOO_LARGE');
  });
});
