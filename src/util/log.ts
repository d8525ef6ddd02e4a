/**
 * Structured logging (pino). Every module takes a Logger from its caller; only
 * the CLI decides level and format. Secrets are never logged: records are
 * logged by address, keys by DID, and fields named in REDACTED_FIELDS are
 * dropped wherever they sit in an entry (docs/node.md "Logs").
 */
import { writeSync } from 'node:fs';
import { pino, type Logger as PinoLogger } from 'pino';
import { plural, printable } from './text.js';

export type Logger = PinoLogger;

export interface LogOptions {
  level?: string;
  /** 'json' (default for daemons) or 'pretty' (one line per event, for terminals). */
  format?: 'json' | 'pretty';
  name?: string;
  /** Destination file descriptor (default 2: logs go to stderr, output to stdout). */
  fd?: number;
}

/** Fields dropped from every log entry, at any depth (names compared without case: `Authorization` too). */
export const REDACTED_FIELDS: readonly string[] = ['secret', 'seed', 'passphrase', 'token', 'swarmKey', 'authorization'];
const REDACTED = new Set(REDACTED_FIELDS.map((f) => f.toLowerCase()));
/** Deeper than this, a value is written as this text instead of walked (a log entry is never that deep). */
const MAX_DEPTH = 16;

/**
 * `v` without the REDACTED_FIELDS, at the top level and in nested plain objects and arrays, copied where something is
 * dropped (`v` is left as it is); other objects are left as they are. pino's own `redact` paths cannot say "at any
 * depth" (`*.token` is one level down only), so this walks the entry.
 */
export function redactFields(v: unknown, depth = 0, seen: WeakSet<object> = new WeakSet()): unknown {
  if (v === null || typeof v !== 'object') return v;
  if (depth > MAX_DEPTH) return '[too deep to log]';
  if (seen.has(v)) return v;
  if (Array.isArray(v)) {
    seen.add(v);
    let changed = false;
    const out = v.map((x) => {
      const y = redactFields(x, depth + 1, seen);
      changed ||= y !== x;
      return y;
    });
    return changed ? out : v;
  }
  const proto = Object.getPrototypeOf(v) as unknown;
  if (proto !== Object.prototype && proto !== null) return v;
  seen.add(v);
  let out: Record<string, unknown> | undefined;
  for (const [k, x] of Object.entries(v)) {
    if (REDACTED.has(k.toLowerCase())) {
      out ??= { ...(v as Record<string, unknown>) };
      delete out[k];
      continue;
    }
    const y = redactFields(x, depth + 1, seen);
    if (y !== x) (out ??= { ...(v as Record<string, unknown>) })[k] = y;
  }
  return out ?? v;
}

const NAMED = new RegExp(`"(${REDACTED_FIELDS.join('|')})":`, 'i');

/**
 * A line as pino wrote it, without the REDACTED_FIELDS: applied to the whole written line (pino's `streamWrite` hook),
 * so the entry's fields, a child logger's bindings and what serializers made of an error are all covered. A line
 * naming none of the fields (nearly all) is passed through untouched.
 */
export function redactLine(line: string): string {
  if (!NAMED.test(line)) return line;
  try {
    const o = JSON.parse(line) as unknown;
    const r = redactFields(o);
    return r === o ? line : JSON.stringify(r) + '\n';
  } catch {
    return line;
  }
}

let dropped = 0;
/** Log lines this process could not write (a full disk, a closed pipe) and dropped: c0mpute_log_lines_dropped_total. */
export function logLinesDropped(): number {
  return dropped;
}

/** How long in all a line waits for a destination that says EAGAIN (a non-blocking pipe nobody reads) before it is dropped. */
const EAGAIN_WAIT_MS = 100;
const pause = new Int32Array(new SharedArrayBuffer(4));

/**
 * A synchronous destination on `fd` that never throws: a line the fd does not take (ENOSPC on a full disk, EPIPE on a
 * closed pipe, EIO, EBADF) is dropped and counted (logLinesDropped), and the first line the fd takes again is
 * preceded by one line saying how many were dropped and why (`note`). A log line that cannot be written costs that
 * line, never the operation that logged it nor the process (docs/node.md "Logs"). pino's own destination (sonic-boom)
 * emits 'error' when a write fails, which throws out of the log call with no listener, and keeps the failed line to
 * write before every later one.
 */
export function safeDestination(fd: number, note: (dropped: number, cause: string) => string, write: (fd: number, b: Buffer) => number = writeSync): { write(s: string): boolean } {
  let pending = 0;
  let cause = '';
  /** a line was cut part-way: the note starts with a line break */
  let cut = false;
  const put = (s: string): boolean => {
    const b = Buffer.from(s, 'utf8');
    let off = 0;
    let waited = 0;
    while (off < b.length) {
      try {
        off += write(fd, off === 0 ? b : b.subarray(off));
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code === 'EAGAIN' && waited < EAGAIN_WAIT_MS) {
          Atomics.wait(pause, 0, 0, 10);
          waited += 10;
          continue;
        }
        cause = code ?? (e as Error).message ?? String(e);
        if (off > 0) cut = true;
        return false;
      }
    }
    return true;
  };
  return {
    write(s: string): boolean {
      if (pending > 0) {
        const n = pending;
        const wasCut = cut;
        cut = false;
        if (!put((wasCut ? '\n' : '') + note(n, cause))) {
          cut ||= wasCut;
          pending++;
          dropped++;
          return true;
        }
        pending -= n;
      }
      if (!put(s)) {
        pending++;
        dropped++;
      }
      return true;
    },
  };
}

export function createLogger(opts: LogOptions = {}): Logger {
  const level = opts.level ?? process.env.C0MPUTE_LOG_LEVEL ?? 'info';
  const pretty = opts.format === 'pretty';
  const note = (n: number, cause: string) => {
    const msg = `${plural(n, 'log line')} could not be written (${cause}) and were dropped`;
    if (pretty) return `WARN  ${opts.name ? `[${printable(opts.name)}] ` : ''}${msg} code=LOG_LINES_DROPPED dropped=${n}\n`;
    return JSON.stringify({ level: 40, time: Date.now(), pid: process.pid, ...(opts.name ? { name: opts.name } : {}), code: 'LOG_LINES_DROPPED', dropped: n, cause, msg }) + '\n';
  };
  const dest = safeDestination(opts.fd ?? 2, note);
  if (pretty) {
    return pino(
      {
        level,
        name: opts.name,
        base: undefined,
        timestamp: false,
        formatters: { level: (label) => ({ level: label }) },
        hooks: { streamWrite: redactLine },
      },
      prettyStream(dest),
    );
  }
  return pino({ level, name: opts.name, hooks: { streamWrite: redactLine } }, dest);
}

/**
 * A minimal human-readable line format: `LEVEL name msg key=value …`, for a terminal: the message and every key and
 * value pass through printable (a log line quotes other nodes' text: a refusal's message, a remote error), so one
 * entry is one line and carries no control character. A value with anything but printable ASCII, or a space, `=` or
 * `"`, in it is written quoted, as a JSON string, so a peer's text cannot add fields that read as the node's own
 * (`why=… status=completed`: review s42 R4 F1).
 */
export function prettyStream(dest: { write(s: string): unknown }): { write(s: string): void } {
  return {
    write(line: string) {
      try {
        const o = JSON.parse(line) as Record<string, unknown>;
        const { level, name, msg, pid: _pid, hostname: _h, ...rest } = o;
        const kv = Object.entries(rest)
          .map(([k, v]) => `${printable(k)}=${logfmtValue(typeof v === 'string' ? v : JSON.stringify(v))}`)
          .join(' ');
        dest.write(`${String(level).toUpperCase().padEnd(5)} ${name ? `[${printable(String(name))}] ` : ''}${printable(String(msg ?? ''))}${kv ? ' ' + kv : ''}\n`);
      } catch {
        dest.write(printable(line, true));
      }
    },
  };
}

/**
 * A value as prettyStream writes it: as it is when it is printable ASCII without a space, `=` or `"`; else quoted (a
 * JSON string), empty included. Any other character quotes it: a blank that is not a space (U+2800, U+3164) or an `=`
 * lookalike (U+FF1D) would otherwise fake a field unquoted (second-round review s42 R6 F4).
 */
function logfmtValue(v: string): string {
  return /^[\x21\x23-\x3c\x3e-\x7e]+$/.test(v) ? v : printable(JSON.stringify(v));
}

/** A logger that drops everything (unit tests). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
