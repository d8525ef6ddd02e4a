/**
 * Structured logging (pino). Every module takes a Logger from its caller; only
 * the CLI decides level and format. Secrets are never logged: records are
 * logged by address, keys by DID, and fields named in REDACTED_FIELDS are
 * dropped wherever they sit in an entry (docs/node.md "Logs").
 */
import { pino, type Logger as PinoLogger } from 'pino';
import { printable } from './text.js';

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

export function createLogger(opts: LogOptions = {}): Logger {
  const level = opts.level ?? process.env.C0MPUTE_LOG_LEVEL ?? 'info';
  const dest = pino.destination({ fd: opts.fd ?? 2, sync: true });
  if (opts.format === 'pretty') {
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
 * A minimal human-readable line format: `LEVEL name msg key=value …`, for a terminal: the message and every value
 * pass through printable (a log line quotes other nodes' text: a refusal's message, a remote error), so one entry is
 * one line and carries no control character.
 */
export function prettyStream(dest: { write(s: string): unknown }): { write(s: string): void } {
  return {
    write(line: string) {
      try {
        const o = JSON.parse(line) as Record<string, unknown>;
        const { level, name, msg, pid: _pid, hostname: _h, ...rest } = o;
        const kv = Object.entries(rest)
          .map(([k, v]) => `${k}=${printable(typeof v === 'string' ? v : JSON.stringify(v))}`)
          .join(' ');
        dest.write(`${String(level).toUpperCase().padEnd(5)} ${name ? `[${printable(String(name))}] ` : ''}${printable(String(msg ?? ''))}${kv ? ' ' + kv : ''}\n`);
      } catch {
        dest.write(printable(line, true));
      }
    },
  };
}

/** A logger that drops everything (unit tests). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
