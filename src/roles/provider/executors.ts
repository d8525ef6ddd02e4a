/**
 * Executors run the work a provider wins. One per workload, chosen in the
 * provider's config (never by the job):
 *  - builtin: small real workloads shipped with the node (demos and tests);
 *  - exec: a configured command, input on stdin, output from stdout, killed
 *    with its process group at the deadline, output size bounded, ended when
 *    its output is complete (what it left in its group has closed the pipes,
 *    or nothing is left in the group and a process outside it holds them);
 *    what it left in its group is killed then; the group is
 *    reported (onSpawn/onExit) so a provider can record it and end it after a
 *    crash (src/roles/provider/orphans.ts);
 *  - http: POST the input to a configured endpoint (node:http(s); the run's
 *    deadline is the only one), take the response body, decoded as its
 *    content-encoding lists (a coding not decoded, or a redirect, which is not
 *    followed, is EXEC_HTTP_STATUS); every decoded layer is bounded, and the
 *    decoding ends with the run (deadline, preempt, buyer gone).
 * Every failure is a C0Error with an EXEC_* code; the provider turns it into a
 * signed `failed` receipt. An empty output is a failure (EXEC_EMPTY_OUTPUT); so is whitespace-only output, which
 * the provider (and a pool's coordinator) refuses after the executor (output-guard.ts).
 *
 * A failure's message goes into that receipt, which is sent to the buyer and
 * gossiped: it names nothing of the operator's config (the back end's URL, the
 * command's path or arguments, its environment). What the operator needs to
 * find the cause (the URL without userinfo or query, the command, the local
 * error) is in the error's `detail`, which the provider logs and never signs.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { accessSync, constants as fsConstants, statSync } from 'node:fs';
import { delimiter, isAbsolute, join as joinPath, resolve as resolvePath } from 'node:path';
import { request as httpRequest, validateHeaderName, validateHeaderValue, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { pipeline, Transform, type Readable, type TransformCallback } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate, createInflateRaw } from 'node:zlib';
import { createHash } from 'node:crypto';
import { C0Error } from '../../errors.js';
import { truncateText } from '../../util/text.js';
import { runPipelineJob } from '../../training/pipeline-job.js';
import type { Ed25519Signer } from '../../records/ed25519.js';
import type { AbuseReports } from '../../net/peer-abuse.js';
import type { Network } from '../../net/node.js';
import type { Logger } from '../../util/log.js';

export interface Progress {
  /** 0..1 when known */
  fraction?: number;
  /** units of work completed so far, when the executor counts them (pool/1 §5.1: completed, not attempted) */
  units?: number;
  message: string;
}

export interface ExecContext {
  input: Uint8Array;
  params?: string;
  signal: AbortSignal;
  onProgress: (p: Progress) => void;
  maxOutputBytes: number;
  /** A process group was spawned (exec executor): called with its leader's pid before the input is written to it. */
  onSpawn?: (pid: number) => void;
  /** That process group has exited (and what it left was killed). */
  onExit?: (pid: number) => void;
  /** The provider node itself, for work that joins other nodes (builtin.train-member; docs/training.md). */
  host?: ExecHost;
}

/** What a builtin that takes part in multi-node work needs of the provider's node. */
export interface ExecHost {
  signer: Ed25519Signer;
  did: string;
  net: Pick<Network, 'handle' | 'request' | 'did'>;
  /** Where such work keeps its files. */
  dir: string;
  /** The network's abuse score (net/peer-abuse.ts): a training member job charges what its run refuses (TrainerOptions.abuse). */
  abuse?: Pick<AbuseReports, 'invalid' | 'report'>;
}

export interface Executor {
  readonly kind: 'builtin' | 'exec' | 'http';
  run(ctx: ExecContext): Promise<Uint8Array>;
  /**
   * Throws (EXEC_BAD_PARAMS) for a job's params this executor would refuse to run, so the provider does not quote the
   * job: a job it won and then failed for its own params cost the provider a failed receipt in its reputation. The
   * builtins check their bounds, an exec command that its params fit in the environment; beyond that a command's
   * params are its own business.
   */
  checkParams?(params: string | undefined): void;
}

export type ExecutorConfig =
  | { type: 'builtin'; name: BuiltinName }
  | { type: 'exec'; command: string[]; env?: Record<string, string>; cwd?: string }
  | { type: 'http'; url: string; headers?: Record<string, string> };

/** What an executor gets from the node that makes it (not from its config). */
export interface ExecutorOptions {
  /** The operator's log: what went wrong around a run that the receipt does not say (a process outside the job's group holding its output). */
  log?: Pick<Logger, 'warn'>;
}

/** The failure of work its signal stopped: the signal's coded reason, EXEC_TIMEOUT at the deadline, else EXEC_ABORTED. */
export function aborted(signal: AbortSignal): C0Error {
  const reason = signal.reason as { name?: string } | undefined;
  // A coded reason (e.g. EXEC_BUYER_GONE from the provider) is the failure itself.
  if (reason instanceof C0Error) return reason;
  return reason?.name === 'TimeoutError'
    ? new C0Error('EXEC_TIMEOUT', 'the work did not finish before its deadline')
    : new C0Error('EXEC_ABORTED', `the work was stopped: ${String((signal.reason as Error)?.message ?? signal.reason)}`);
}

/**
 * A URL as the operator's log may show it: scheme, host, port and path, without
 * userinfo, query or fragment (where credentials are put). Not a URL: a fixed text.
 */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    u.username = '';
    u.password = '';
    u.search = '';
    u.hash = '';
    return u.toString();
  } catch {
    return '(not a URL)';
  }
}

/** A system error code (ECONNREFUSED, ENOENT, UND_ERR_SOCKET…) of `e` or its cause, when it looks like one: nothing else of a local error reaches a receipt. */
function systemCode(e: unknown): string | undefined {
  for (let x: unknown = e, depth = 0; x && typeof x === 'object' && depth < 4; x = (x as { cause?: unknown }).cause, depth++) {
    const c = (x as { code?: unknown }).code;
    if (typeof c === 'string' && /^[A-Z][A-Z0-9_]{1,39}$/.test(c)) return c;
  }
  return undefined;
}

/** A local error's own text and its causes', for the operator's log (the detail), with `secret` (a configured URL) replaced. */
function localText(e: unknown, secret?: string, shown?: string): string {
  const parts: string[] = [];
  for (let x: unknown = e, depth = 0; x !== undefined && x !== null && depth < 4; x = (x as { cause?: unknown }).cause, depth++) parts.push(String((x as Error).message ?? x));
  const text = parts.join(': ');
  return truncateText(secret ? text.split(secret).join(shown ?? '') : text, 500);
}

const withCode = (text: string, code: string | undefined): string => (code ? `${text} (${code})` : text);

function checkOutput(out: Uint8Array, max: number): Uint8Array {
  if (out.length === 0) throw new C0Error('EXEC_EMPTY_OUTPUT', 'the work produced no output');
  if (out.length > max) throw new C0Error('EXEC_OUTPUT_TOO_LARGE', `output of ${out.length} bytes exceeds ${max}`);
  return out;
}

// ---------------------------------------------------------------------------
// builtin
// ---------------------------------------------------------------------------

export const BUILTINS = ['builtin.sha256', 'builtin.primes', 'builtin.sleep', 'builtin.mlp-pipeline', 'builtin.train-member'] as const;
export type BuiltinName = (typeof BUILTINS)[number];

const tick = () => new Promise<void>((r) => setImmediate(r));

/**
 * builtin.sha256: `rounds` (params, default 1) iterations of SHA-256 over the
 * input; output is the final digest in hex. A buyer can check it locally.
 * builtin.primes: counts primes ≤ N (params, or the input as decimal text);
 * output is the count as decimal text.
 * builtin.sleep: waits `ms` (params) then echoes the input (tests: slow work).
 */
/** The largest params the builtins take (EXEC_BAD_PARAMS past them). */
const MAX_ROUNDS = 10_000_000;
const MAX_PRIMES_N = 50_000_000;
const MAX_SLEEP_MS = 3_600_000;

export function builtinExecutor(name: BuiltinName): Executor {
  return {
    kind: 'builtin',
    checkParams(params) {
      if (name === 'builtin.sha256') parseCount(params ?? '1', 'rounds', MAX_ROUNDS);
      // N may come in the input instead, which a quote does not see
      else if (name === 'builtin.primes' && params !== undefined) parseCount(params, 'N', MAX_PRIMES_N);
      else if (name === 'builtin.sleep') parseCount(params ?? '0', 'ms', MAX_SLEEP_MS);
    },
    async run(ctx) {
      const { signal } = ctx;
      if (signal.aborted) throw aborted(signal);
      if (name === 'builtin.sha256') {
        const rounds = parseCount(ctx.params ?? '1', 'rounds', MAX_ROUNDS);
        let h = createHash('sha256').update(ctx.input).digest();
        // Yield (and check the deadline) at least every 20k rounds (a few ms), not only every tenth of the work.
        const step = Math.max(1, Math.min(Math.floor(rounds / 10), 20_000));
        for (let i = 1; i < rounds; i++) {
          h = createHash('sha256').update(h).digest();
          if (i % step === 0) {
            ctx.onProgress({ fraction: i / rounds, units: i, message: `${i}/${rounds} rounds` });
            await tick();
            if (signal.aborted) throw aborted(signal);
          }
        }
        ctx.onProgress({ fraction: 1, units: rounds, message: `${rounds}/${rounds} rounds` });
        return checkOutput(new TextEncoder().encode(h.toString('hex')), ctx.maxOutputBytes);
      }
      // builtin.mlp-pipeline: the model's stages run in this process with the GPipe schedule (docs/training.md).
      // It yields to the event loop between row blocks and stops there at the deadline (EXEC_TIMEOUT) or when aborted.
      if (name === 'builtin.mlp-pipeline') {
        const between = async () => {
          await tick();
          if (signal.aborted) throw aborted(signal);
        };
        return checkOutput(await runPipelineJob(ctx.input, between), ctx.maxOutputBytes);
      }
      // builtin.train-member: this provider joins a training run as a member (a gang bought through the market).
      if (name === 'builtin.train-member') return checkOutput(await (await import('../trainer/member-job.js')).runMemberJob(ctx), ctx.maxOutputBytes);
      if (name === 'builtin.primes') {
        const text = ctx.params ?? Buffer.from(ctx.input).toString('utf8').trim();
        const n = parseCount(text, 'N', MAX_PRIMES_N);
        const sieve = new Uint8Array(n + 1);
        let count = 0;
        const step = Math.max(1, Math.floor(n / 10));
        for (let i = 2; i <= n; i++) {
          if (!sieve[i]) {
            count++;
            for (let j = i * i; j <= n; j += i) sieve[j] = 1;
          }
          if (i % step === 0) {
            ctx.onProgress({ fraction: i / n, message: `sieved to ${i}` });
            await tick();
            if (signal.aborted) throw aborted(signal);
          }
        }
        return checkOutput(new TextEncoder().encode(String(count)), ctx.maxOutputBytes);
      }
      // builtin.sleep
      const ms = parseCount(ctx.params ?? '0', 'ms', MAX_SLEEP_MS);
      // the listener goes with the sleep: left on the run's signal (an AbortSignal.any of the run's), it kept the
      // signal, its sources and the timer for the life of the process, 1.6 KB per run
      await new Promise<void>((resolve, reject) => {
        const onAbort = () => {
          clearTimeout(t);
          reject(aborted(signal));
        };
        const t = setTimeout(() => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        }, ms);
        if (signal.aborted) onAbort();
        else signal.addEventListener('abort', onAbort, { once: true });
      });
      return checkOutput(ctx.input, ctx.maxOutputBytes);
    },
  };
}

function parseCount(s: string, what: string, max: number): number {
  if (!/^[0-9]{1,10}$/.test(s.trim())) throw new C0Error('EXEC_BAD_PARAMS', `${what} must be a whole number, got "${truncateText(s, 40)}"`);
  const n = Number.parseInt(s, 10);
  if (n > max) throw new C0Error('EXEC_BAD_PARAMS', `${what} must be ≤ ${max}`);
  return n;
}

/** What a buyer expects from a builtin workload, computed locally (for demos and checks). */
export async function runBuiltinLocally(name: BuiltinName, input: Uint8Array, params?: string): Promise<Uint8Array> {
  return builtinExecutor(name).run({ input, ...(params === undefined ? {} : { params }), signal: new AbortController().signal, onProgress: () => {}, maxOutputBytes: 1 << 30 });
}

// ---------------------------------------------------------------------------
// exec
// ---------------------------------------------------------------------------

/**
 * How long the output pipes may stay open once the command's process group was killed (deadline, abort, output bound):
 * enough for what it wrote to be read, short next to any deadline. Past it they are held by a process outside the
 * job's group. Also how often, once the command has exited and its pipes are still open, the group is looked at.
 */
export const PIPE_GRACE_MS = 1000;
/** Once nothing is left in the group, how long what its processes wrote gets to be read before the pipes are closed. */
const PIPE_DRAIN_MS = 100;

function isDirectory(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

function isExecutableFile(p: string): boolean {
  try {
    if (!statSync(p).isFile()) return false;
    accessSync(p, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The environment a command is spawned with: the node's PATH unless the config sets one, the config's env, the params. */
function spawnEnv(env: Record<string, string> | undefined, params: string): Record<string, string> {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env, C0MPUTE_PARAMS: params };
}

/**
 * Where the command a spawn with this PATH and working directory would run is, or undefined when there is none: a
 * name without a slash is looked for on PATH (an empty entry is the working directory), as spawn does; a path with
 * one is taken relative to the working directory. It must be an executable file.
 */
export function findCommand(command: string, path: string, cwd: string): string | undefined {
  if (command === '') return undefined;
  if (command.includes('/')) {
    const p = isAbsolute(command) ? command : resolvePath(cwd, command);
    return isExecutableFile(p) ? p : undefined;
  }
  for (const dir of path.split(delimiter)) {
    const p = dir === '' ? resolvePath(cwd, command) : isAbsolute(dir) ? joinPath(dir, command) : resolvePath(cwd, dir, command);
    if (isExecutableFile(p)) return p;
  }
  return undefined;
}

export function execExecutor(cfg: { command: string[]; env?: Record<string, string>; cwd?: string }, opts: ExecutorOptions = {}): Executor {
  if (cfg.command.length === 0) throw new C0Error('CONFIG_INVALID', 'exec executor needs a command', { field: 'command' });
  // A working directory that is not there would fail every job as "cannot start <command>": say so at start.
  if (cfg.cwd !== undefined && !isDirectory(cfg.cwd)) throw new C0Error('CONFIG_INVALID', `exec executor's cwd ${cfg.cwd} is not a directory`, { field: 'cwd' });
  // No process can take a NUL byte in an argument or the environment (spawn throws), nor `=` in a variable's name:
  // such a config would fail every job, so it is refused at start, naming the key but never a value.
  cfg.command.forEach((a, i) => {
    if (a.includes('\0')) throw new C0Error('CONFIG_INVALID', `exec executor's command (argument ${i}) contains a NUL byte, which no process can take`, { field: 'command' });
  });
  for (const [name, value] of Object.entries(cfg.env ?? {})) {
    if (name === '' || name.includes('=') || name.includes('\0')) throw new C0Error('CONFIG_INVALID', `exec executor's env has a variable name ${JSON.stringify(name)} that cannot be set (empty, or with = or a NUL byte)`, { field: 'env' });
    if (value.includes('\0')) throw new C0Error('CONFIG_INVALID', `exec executor's env ${name} has a value with a NUL byte, which no environment can carry (the value is not repeated here)`, { field: `env.${name}` });
  }
  // So would a command that is not there (or not an executable file): every job would fail EXEC_SPAWN_FAILED and
  // cost the provider its reputation. Looked for as spawn does, with the PATH the command gets.
  const cmd0 = cfg.command[0]!;
  if (findCommand(cmd0, spawnEnv(cfg.env, '').PATH ?? '', cfg.cwd ?? process.cwd()) === undefined) {
    throw new C0Error(
      'CONFIG_INVALID',
      cmd0.includes('/')
        ? `exec executor's command ${cmd0} is not an executable file${isAbsolute(cmd0) ? '' : ` (relative to ${cfg.cwd ?? process.cwd()})`}`
        : `exec executor's command ${cmd0} is not an executable file on PATH (${spawnEnv(cfg.env, '').PATH})`,
      { field: 'command' },
    );
  }
  // The buyer's params go into the environment, which cannot carry a NUL byte (the job record allows one):
  // the buyer's input is at fault, not the provider, so it is refused before anything is spawned (and not quoted).
  const checkParams = (params: string | undefined) => {
    if (params?.includes('\0')) throw new C0Error('EXEC_BAD_PARAMS', 'params cannot be passed in the environment (C0MPUTE_PARAMS): they contain a NUL byte');
  };
  return {
    kind: 'exec',
    checkParams,
    run(ctx) {
      return new Promise<Uint8Array>((resolve, reject) => {
        if (ctx.signal.aborted) return reject(aborted(ctx.signal));
        try {
          checkParams(ctx.params);
        } catch (e) {
          return reject(e);
        }
        const [cmd, ...args] = cfg.command as [string, ...string[]];
        let child: ChildProcessWithoutNullStreams;
        try {
          child = spawn(cmd, args, {
            cwd: cfg.cwd,
            env: spawnEnv(cfg.env, ctx.params ?? ''),
            stdio: ['pipe', 'pipe', 'pipe'],
            detached: true, // its own process group, so the deadline kills everything it started
          });
        } catch (e) {
          // Some failures to start throw at once rather than emit 'error' (E2BIG: arguments and environment too large
          // for the system; an argument spawn refuses): the same failure, the same code, not a provider crash.
          opts.log?.warn({ command: cmd, err: localText(e) }, 'the command could not start: the job fails EXEC_SPAWN_FAILED');
          return reject(new C0Error('EXEC_SPAWN_FAILED', withCode('cannot start the command', systemCode(e)), { detail: { command: cmd, err: localText(e) } }));
        }
        const chunks: Buffer[] = [];
        let size = 0;
        let stderr = '';
        let failure: C0Error | undefined;
        const killGroup = () => {
          try {
            if (child.pid) process.kill(-child.pid, 'SIGKILL');
          } catch {
            /* already gone */
          }
        };
        // The run ends when the command's output is complete: the command (the group's leader) has exited and its
        // output pipes have closed. A process it left in its group may still be writing (a background step, bash's
        // `exec > >(tee log)`, `cmd > >(filter)`): it is waited for, as long as the deadline allows, and only once
        // the pipes have closed is what remains of the group killed (a leftover that holds no output, `sleep &`).
        // A process that left the group (setsid, a daemonizing helper) may hold the pipes too: 'close' alone would
        // wait for it, which no kill of the group reaches, maybe forever (no receipt, the slot held). So while the
        // pipes stay open after the exit, the group is looked at every PIPE_GRACE_MS: once nothing is left in it,
        // what its processes wrote is read (PIPE_DRAIN_MS) and the pipes are closed; whoever holds them is outside.
        // After the group was killed (deadline, abort, output bound) the pipes get PIPE_GRACE_MS, even if the
        // leader's exit is not seen by then.
        let settled = false;
        let exited: { code: number | null; sig: NodeJS.Signals | null } | undefined;
        let grace: NodeJS.Timeout | undefined;
        let watch: NodeJS.Timeout | undefined;
        const startGrace = () => {
          grace ??= setTimeout(() => finish(true), PIPE_GRACE_MS);
        };
        // Whether any process is left in the job's group (EPERM: one is, but it is not ours to signal).
        const groupLeft = (): boolean => {
          if (!child.pid) return false;
          try {
            process.kill(-child.pid, 0);
            return true;
          } catch (e) {
            return (e as NodeJS.ErrnoException).code === 'EPERM';
          }
        };
        const watchGroup = () => {
          watch = setTimeout(() => {
            if (settled) return;
            if (groupLeft()) return watchGroup();
            watch = setTimeout(() => finish(true), PIPE_DRAIN_MS);
          }, PIPE_GRACE_MS);
        };
        const finish = (pipesHeld: boolean) => {
          if (settled) return;
          settled = true;
          clearTimeout(grace);
          clearTimeout(watch);
          ctx.signal.removeEventListener('abort', onAbort);
          // What the command left in its group goes with it (nothing when the group is already empty or was killed).
          killGroup();
          if (pipesHeld) {
            // Whatever that process writes from now on is not read: the output is what had arrived.
            child.stdout.destroy();
            child.stderr.destroy();
            child.stdin.destroy();
            opts.log?.warn(
              { command: cmd, pid: child.pid, exited: exited ? (exited.code ?? exited.sig) : 'not seen' },
              exited && grace === undefined
                ? 'the command exited and nothing was left in its process group, but a process it started outside its process group (setsid, a daemon) still held its output: the run ended with what had been read, and that process was left running'
                : exited
                  ? `the command's process group was killed but a process it started outside its process group (setsid, a daemon) still held its output ${PIPE_GRACE_MS} ms later: the run ended with what had been read, and that process was left running`
                  : `the command's process group was killed but its leader had not exited ${PIPE_GRACE_MS} ms later: the run ended without it`,
            );
          }
          if (child.pid) ctx.onExit?.(child.pid);
          if (failure) return reject(failure);
          if (exited && exited.code !== 0) return reject(new C0Error('EXEC_FAILED', `command exited with ${exited.code ?? exited.sig}${stderr ? `: ${stderr.trim().split('\n').pop()}` : ''}`));
          try {
            resolve(checkOutput(new Uint8Array(Buffer.concat(chunks)), ctx.maxOutputBytes));
          } catch (e) {
            reject(e);
          }
        };
        const stopGroup = (why: C0Error) => {
          failure ??= why;
          killGroup();
          startGrace();
        };
        const onAbort = () => stopGroup(aborted(ctx.signal));
        ctx.signal.addEventListener('abort', onAbort, { once: true });
        child.stdout.on('data', (b: Buffer) => {
          size += b.length;
          if (size > ctx.maxOutputBytes) {
            stopGroup(new C0Error('EXEC_OUTPUT_TOO_LARGE', `output exceeds ${ctx.maxOutputBytes} bytes`));
            return;
          }
          chunks.push(b);
        });
        child.stderr.on('data', (b: Buffer) => {
          stderr = (stderr + b.toString('utf8')).slice(-2000);
          const last = stderr.trim().split('\n').pop();
          if (last) ctx.onProgress({ message: truncateText(last, 200) });
        });
        // The receipt says the command could not start, and the system's code; the path (and the error repeating it) is for the operator's log.
        child.on('error', (e) => {
          // It was there at start (execExecutor looked): removed, or made not executable, since. Every job fails until fixed.
          if (!failure) opts.log?.warn({ command: cmd, err: localText(e) }, 'the command could not start: the job fails EXEC_SPAWN_FAILED');
          failure ??= new C0Error('EXEC_SPAWN_FAILED', withCode('cannot start the command', systemCode(e)), { detail: { command: cmd, err: localText(e) } });
        });
        child.stdin.on('error', () => {
          /* the command may exit without reading its input */
        });
        if (child.pid) {
          try {
            ctx.onSpawn?.(child.pid);
          } catch (e) {
            stopGroup(new C0Error('EXEC_SPAWN_FAILED', withCode('cannot record the process group', systemCode(e)), { detail: { command: cmd, err: localText(e) } }));
          }
        }
        child.stdin.end(Buffer.from(ctx.input));
        child.on('exit', (code, sig) => {
          exited = { code, sig };
          // The pipes may still be written by what the command left in its group: 'close' is waited for, and the
          // group watched in case only a process outside it holds them.
          if (grace === undefined) watchGroup();
        });
        child.on('close', (code, sig) => {
          exited ??= { code, sig };
          finish(false);
        });
      });
    },
  };
}

// ---------------------------------------------------------------------------
// http
// ---------------------------------------------------------------------------

/**
 * Request headers the client sets itself (content-length, from the input) or that would change how the request is
 * framed: one configured would corrupt or fail every request, so it is refused at start.
 */
const CLIENT_MANAGED_HEADERS = ['content-length', 'expect', 'keep-alive', 'transfer-encoding', 'upgrade'];

/**
 * The job's params for the back end: `x-c0mpute-params` as they are when they are printable ASCII with no space at
 * either end (what a header carries unchanged); otherwise percent-encoded as UTF-8 (encodeURIComponent), flagged by
 * `x-c0mpute-params-encoding: percent`. A header carries only bytes, and an HTTP client refuses a character past
 * U+00FF or a line break, trims spaces at the ends or sends U+0080-U+00FF as single raw bytes: such params failed
 * every job as "the back end is unreachable", or reached it altered (docs/node.md "Executors").
 */
export function paramsHeaders(params: string | undefined): Record<string, string> {
  if (!params) return {};
  if (/^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/.test(params)) return { 'x-c0mpute-params': params };
  return { 'x-c0mpute-params': encodeURIComponent(params), 'x-c0mpute-params-encoding': 'percent' };
}

/**
 * POST `body` to `target` with node:http(s) and resolve with the response once its head has arrived. No deadline of
 * the client's own applies: no socket timeout (a fresh agent per request, keepAlive off, none of the global agent's),
 * and not fetch, whose undici dispatcher gives up after 300 s without headers, or 300 s of silence in the body, which
 * failed longer back-end calls as unreachable whatever the job's timeout. `signal` (the run's) is the only deadline.
 * A redirect is not followed (node:http never does).
 */
function post(target: URL, headers: Record<string, string>, body: Uint8Array, signal: AbortSignal): Promise<IncomingMessage> {
  return new Promise<IncomingMessage>((resolve, reject) => {
    const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = send(target, { method: 'POST', headers: { ...headers, 'content-length': String(body.length) }, signal, agent: false });
    req.once('response', (res) => {
      // Later errors (the body cut, the abort) reach the response's reader; none is left unhandled here.
      req.on('error', () => {});
      resolve(res);
    });
    req.once('error', reject);
    req.end(body);
  });
}

/** The most bytes a decoder may produce, and the failure past it. */
interface DecodeBound {
  limit: number;
  tooLarge: () => C0Error;
}

/**
 * A decoder made when the first byte of its input arrives (`make` is given it: deflate's first byte tells a zlib
 * stream from a raw one). No input at all decodes to nothing, as fetch did, rather than zlib's "unexpected end of
 * file": an empty encoded body is an empty output. A truncated or corrupt stream is still an error.
 *
 * It decodes no further ahead of its reader than a stream's buffer (the inner decoder is paused while this one's
 * buffer is full, and zlib stops within a chunk then), and it fails with `bound.tooLarge()` as soon as it has produced
 * more than `bound.limit` bytes: a few bytes that expand to gigabytes are never decoded past the bound.
 */
class LazyDecoder extends Transform {
  readonly #make: (first: number) => Transform;
  readonly #bound: DecodeBound;
  #inner: Transform | undefined;
  #produced = 0;
  constructor(make: (first: number) => Transform, bound: DecodeBound) {
    super();
    this.#make = make;
    this.#bound = bound;
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    if (chunk.length === 0) return done();
    if (!this.#inner) {
      const inner = this.#make(chunk[0]!);
      inner.on('data', (d: Buffer) => {
        if (this.destroyed) return;
        this.#produced += d.length;
        if (this.#produced > this.#bound.limit) return void this.destroy(this.#bound.tooLarge());
        if (!this.push(d)) inner.pause(); // resumed when this stream's reader wants more (_read)
      });
      inner.on('error', (e) => this.destroy(e));
      this.#inner = inner;
    }
    this.#inner.write(chunk, (e) => done(e));
  }
  override _read(size: number): void {
    this.#inner?.resume();
    super._read(size);
  }
  override _flush(done: TransformCallback): void {
    const inner = this.#inner;
    if (!inner) return done();
    inner.once('end', () => done());
    inner.end();
  }
  override _destroy(e: Error | null, done: (e: Error | null) => void): void {
    this.#inner?.destroy();
    done(e);
  }
}

/** The codings the client asks for (accept-encoding) and decodes; `identity` is none. */
const DECODERS: Record<string, (bound: DecodeBound) => Transform> = {
  gzip: (bound) => new LazyDecoder(() => createGunzip(), bound),
  'x-gzip': (bound) => new LazyDecoder(() => createGunzip(), bound),
  // RFC 9110 says zlib-wrapped; some servers send raw deflate. A zlib stream's first byte has compression method 8.
  deflate: (bound) => new LazyDecoder((first) => ((first & 0x0f) === 8 ? createInflate() : createInflateRaw()), bound),
  br: (bound) => new LazyDecoder(() => createBrotliDecompress(), bound),
};
const ACCEPT_ENCODING = 'gzip, deflate, br';
/** More codings than this on one body is refused (as undici does since its fix for unbounded decompression chains). */
const MAX_CODINGS = 5;

/** How many times the output bound a coding that is not the last to undo may give (layerBound). */
const LAYER_FACTOR = 16;

/**
 * The most bytes undoing a coding that is not the last to undo may give, for an output bound of `max`: what it gives
 * is an encoded form of the output. That is usually about its size (a stored deflate block adds 5 bytes in 64 KiB),
 * but a back end that streams and flushes after every small write adds 5-6 bytes a flush: about 7 times the output
 * for 1-byte writes. 16 times leaves room for that; far more is not an encoding of an output that fits but a
 * decompression bomb in that layer (a gzip header's comment that the last layer consumes without output), stopped
 * here rather than decoded to the end (at the default 16 MiB bound, a few seconds of one core at most).
 */
function layerBound(max: number): number {
  return LAYER_FACTOR * max + 64 * 1024;
}

/**
 * `body` decoded through `codings` (names from DECODERS, in the order they were applied, so undone in reverse; none:
 * `body` itself). Every layer is bounded: the last to give at most `maxOutputBytes` (the output), each other at most
 * layerBound(maxOutputBytes), else EXEC_OUTPUT_TOO_LARGE; no layer decodes ahead of its reader; and when `signal`
 * aborts, the whole chain (the body with it) is destroyed with the run's failure (aborted(signal): EXEC_TIMEOUT at the
 * deadline, the preempt's or the buyer's code otherwise), so decoding a body that has fully arrived stops with the
 * run rather than holding it, and a core, until it is done.
 */
export function decodeBody(body: Readable, codings: readonly string[], limits: { maxOutputBytes: number; signal: AbortSignal }): Readable {
  const max = limits.maxOutputBytes;
  const order = [...codings].reverse();
  const decoders = order.map((c, i) => {
    const left = order.length - 1 - i;
    const bound: DecodeBound =
      left === 0
        ? { limit: max, tooLarge: () => new C0Error('EXEC_OUTPUT_TOO_LARGE', `response exceeds ${max} bytes`) }
        : {
            limit: layerBound(max),
            tooLarge: () => new C0Error('EXEC_OUTPUT_TOO_LARGE', `response too large: undoing its ${c} content-encoding gives more than ${layerBound(max)} bytes (${LAYER_FACTOR} times the output bound of ${max} bytes, plus 64 KiB), with ${left} more to undo`),
          };
    return DECODERS[c]!(bound);
  });
  // pipeline destroys every stream of the chain when one fails or is destroyed (the bound, the signal, the reader).
  if (decoders.length > 0) pipeline([body, ...decoders], () => {});
  const out = decoders.at(-1) ?? body;
  const { signal } = limits;
  const onAbort = () => out.destroy(aborted(signal));
  if (signal.aborted) onAbort();
  else {
    signal.addEventListener('abort', onAbort, { once: true });
    out.once('close', () => signal.removeEventListener('abort', onAbort));
  }
  return out;
}

/**
 * The response body, decoded as its content-encoding lists: the codings in the order they were applied, so decoded
 * in reverse (`gzip, br` is brotli of gzip), as fetch did, bounded and ended with the run (decodeBody). A coding the
 * client does not decode is a failure, never a body passed on still encoded (it would be signed as the output): the
 * back end answered, but with something the job cannot take, so it is EXEC_HTTP_STATUS, like an answer whose status
 * is not 2xx.
 */
function decoded(res: IncomingMessage, url: string, ctx: Pick<ExecContext, 'maxOutputBytes' | 'signal'>): Readable {
  const header = res.headers['content-encoding'];
  const codings = String(header ?? '')
    .split(',')
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== '' && c !== 'identity');
  const refuse = (why: string) => {
    res.destroy();
    return new C0Error('EXEC_HTTP_STATUS', `the back end answered ${res.statusCode ?? 0} with ${why}`, { detail: { url, contentEncoding: truncateText(String(header), 200) } });
  };
  if (codings.length > MAX_CODINGS) throw refuse(`more than ${MAX_CODINGS} codings in its content-encoding`);
  const unknown = codings.find((c) => !Object.hasOwn(DECODERS, c));
  // The back end's header goes into a signed receipt only when it is a coding's name (an HTTP token), cut short.
  if (unknown !== undefined) throw refuse(`a content-encoding the client does not decode (${/^[a-z0-9!#$%&'*+.^_`|~-]{1,32}$/.test(unknown) ? unknown : 'not a coding name'})`);
  return decodeBody(res, codings, ctx);
}

export function httpExecutor(cfg: { url: string; headers?: Record<string, string> }): Executor {
  let parsed: URL;
  try {
    parsed = new URL(cfg.url);
  } catch {
    throw new C0Error('CONFIG_INVALID', 'http executor needs a valid url', { field: 'url' });
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new C0Error('CONFIG_INVALID', `http executor's url must be http: or https:, not ${parsed.protocol}`, { field: 'url' });
  }
  // Credentials in the URL would go in no header the operator chose, and errors could repeat them: refused at start,
  // without repeating them.
  if (parsed.username || parsed.password) {
    throw new C0Error('CONFIG_INVALID', `http executor's url ${redactUrl(cfg.url)} carries credentials (user:password@); give them in headers (e.g. authorization)`, { field: 'url' });
  }
  // A header the client refuses (a newline in a pasted key, a space in a name, a control character) would fail every
  // job as "unreachable": refused at start instead, naming the header but never its value (which may be a credential).
  for (const [name, value] of Object.entries(cfg.headers ?? {})) {
    try {
      validateHeaderName(name);
    } catch {
      throw new C0Error('CONFIG_INVALID', `http executor's header name ${JSON.stringify(name)} is not a valid HTTP header name`, { field: 'headers' });
    }
    try {
      validateHeaderValue(name, value);
    } catch {
      throw new C0Error('CONFIG_INVALID', `http executor's header ${name} has a value that cannot be sent (a line break or another character not allowed in a header; the value is not repeated here)`, { field: `headers.${name}` });
    }
    const lower = name.toLowerCase();
    if (CLIENT_MANAGED_HEADERS.includes(lower) || (lower === 'connection' && !/^\s*(close|keep-alive)\s*$/i.test(value))) {
      throw new C0Error('CONFIG_INVALID', `http executor's header ${name} is one the client sets itself or that changes how the request is framed (${CLIENT_MANAGED_HEADERS.join(', ')}, or connection other than close / keep-alive)`, { field: `headers.${name}` });
    }
  }
  // For the operator's log only (the error's detail); the messages, which go into receipts, name no part of the URL.
  const url = redactUrl(cfg.url);
  const unreachable = (what: string, e: unknown) => new C0Error('EXEC_HTTP_UNREACHABLE', withCode(what, systemCode(e)), { detail: { url, err: localText(e, cfg.url, url) } });
  return {
    kind: 'http',
    async run(ctx) {
      if (ctx.signal.aborted) throw aborted(ctx.signal);
      let res: IncomingMessage;
      try {
        res = await post(parsed, { 'content-type': 'application/octet-stream', 'accept-encoding': ACCEPT_ENCODING, ...paramsHeaders(ctx.params), ...cfg.headers }, ctx.input, ctx.signal);
      } catch (e) {
        if (ctx.signal.aborted) throw aborted(ctx.signal);
        throw unreachable('the back end is unreachable', e);
      }
      const status = res.statusCode ?? 0;
      if (status < 200 || status > 299) {
        res.destroy();
        // A redirect is not followed: following it would send the request (the operator's headers with it) wherever
        // the back end's Location says, possibly a place the buyer's input chose (localhost, 169.254.169.254), and
        // make that host's answer the job's output. The target is for the operator's log only: it may name an internal host.
        const redirect = status >= 300 && status < 400;
        const location = redirect ? res.headers.location : undefined;
        throw new C0Error('EXEC_HTTP_STATUS', `the back end answered ${status}${redirect ? ' (a redirect, which is not followed)' : ''}`, {
          detail: { url, ...(location === undefined ? {} : { location: redactUrl(URL.canParse(location, cfg.url) ? new URL(location, cfg.url).toString() : location) }) },
        });
      }
      const body = decoded(res, url, ctx);
      const chunks: Buffer[] = [];
      let size = 0;
      try {
        for await (const chunk of body as AsyncIterable<Buffer>) {
          size += chunk.length;
          if (size > ctx.maxOutputBytes) throw new C0Error('EXEC_OUTPUT_TOO_LARGE', `response exceeds ${ctx.maxOutputBytes} bytes`);
          chunks.push(chunk);
          ctx.onProgress({ message: `received ${size} bytes` });
        }
      } catch (e) {
        if (e instanceof C0Error) throw e;
        if (ctx.signal.aborted) throw aborted(ctx.signal);
        throw unreachable('reading the back end’s response failed', e);
      } finally {
        // Stops reading (the bound, the deadline, an error); nothing once the body has ended.
        body.destroy();
        res.destroy();
      }
      return checkOutput(new Uint8Array(Buffer.concat(chunks)), ctx.maxOutputBytes);
    },
  };
}

export function createExecutor(cfg: ExecutorConfig, opts: ExecutorOptions = {}): Executor {
  switch (cfg.type) {
    case 'builtin':
      if (!BUILTINS.includes(cfg.name)) throw new C0Error('CONFIG_INVALID', `unknown builtin workload ${String(cfg.name)}; known: ${BUILTINS.join(', ')}`);
      return builtinExecutor(cfg.name);
    case 'exec':
      return execExecutor(cfg, opts);
    case 'http':
      return httpExecutor(cfg);
  }
}
