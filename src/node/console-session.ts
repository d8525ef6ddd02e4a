/**
 * The console's login model (docs/console.md "Logging in"), pure apart from
 * the random bytes: the API token mints a one-time login code (the CLI prints
 * it in a URL); redeeming the code once, before it expires, opens a session
 * whose id travels in an HttpOnly, SameSite=Strict cookie. A code works once;
 * a session ends at its absolute expiry or when the daemon stops (sessions
 * live in memory only). Times come from the injected clock.
 */
import { randomBytes } from 'node:crypto';
import type { Clock } from '../util/clock.js';

export interface SessionOptions {
  /** How long a login code may wait to be redeemed (default 10 minutes). */
  codeTtlMs?: number;
  /** How long a session lasts after login (default 12 hours). */
  sessionTtlMs?: number;
  /** At most this many codes and sessions each are held; the oldest go first (default 64). */
  max?: number;
}

export const SESSION_DEFAULTS = { codeTtlMs: 10 * 60_000, sessionTtlMs: 12 * 3_600_000, max: 64 } as const;

const ID_RE = /^[A-Za-z0-9_-]{43}$/;

export class ConsoleSessions {
  readonly #codes = new Map<string, number>();
  readonly #sessions = new Map<string, number>();
  readonly #o: Required<SessionOptions>;

  constructor(private readonly clock: Clock, o: SessionOptions = {}) {
    this.#o = { ...SESSION_DEFAULTS, ...o };
  }

  /** A fresh one-time login code and when it stops working. */
  mintCode(): { code: string; expiresAt: number } {
    const code = randomBytes(32).toString('base64url');
    const expiresAt = this.clock() + this.#o.codeTtlMs;
    bounded(this.#codes, this.#o.max).set(code, expiresAt);
    return { code, expiresAt };
  }

  /** Redeem a code (once): a new session id, or undefined for a wrong, used or expired code. */
  redeem(code: string | null | undefined): { session: string; expiresAt: number } | undefined {
    if (!code || !ID_RE.test(code)) return undefined;
    const until = this.#codes.get(code);
    this.#codes.delete(code);
    if (until === undefined || until <= this.clock()) return undefined;
    const session = randomBytes(32).toString('base64url');
    const expiresAt = this.clock() + this.#o.sessionTtlMs;
    bounded(this.#sessions, this.#o.max).set(session, expiresAt);
    return { session, expiresAt };
  }

  /** Is this a live session id? Expired ones are forgotten. */
  valid(session: string | undefined): boolean {
    if (!session || !ID_RE.test(session)) return false;
    const until = this.#sessions.get(session);
    if (until === undefined) return false;
    if (until <= this.clock()) {
      this.#sessions.delete(session);
      return false;
    }
    return true;
  }

  /** End a session (logout). */
  end(session: string | undefined): void {
    if (session) this.#sessions.delete(session);
  }
}

/** Make room for one more entry (Map keeps insertion order: the oldest goes). */
function bounded(m: Map<string, number>, max: number): Map<string, number> {
  while (m.size >= max) m.delete(m.keys().next().value!);
  return m;
}

/** The value of cookie `name` in a Cookie header. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const i = part.indexOf('=');
    if (i > 0 && part.slice(0, i).trim() === name) return part.slice(i + 1).trim();
  }
  return undefined;
}
