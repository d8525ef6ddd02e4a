/**
 * Structured logging (pino). Every module takes a Logger from its caller; only
 * the CLI decides level and format. Secrets are never logged: records are
 * logged by address, keys by DID.
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
        redact: { paths: ['*.secret', '*.seed', '*.passphrase', '*.token'], remove: true },
      },
      prettyStream(dest),
    );
  }
  return pino({ level, name: opts.name, redact: { paths: ['*.secret', '*.seed', '*.passphrase', '*.token'], remove: true } }, dest);
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
