/**
 * The console's login model (docs/console.md "Logging in"), pure apart from
 * the random bytes: the API token mints a one-time login code (the CLI prints
 * it in a URL); redeeming the code once, before it expires, opens a session
 * whose id travels in an HttpOnly, SameSite=Strict cookie, and gives the page
 * the session's key, which it holds itself and sends with every request: the
 * cookie alone is no credential (browsers send it to every server on the
 * host, whatever the port). A code works once;
 * a session ends at its absolute expiry or when the daemon stops (sessions
 * live in memory only). Times come from the injected clock.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
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
/** The bytes of a session id (32) that mark the process that minted it; the other 26 are random. */
const MARK_BYTES = 6;

/**
 * Why a session id sent is no live session (ConsoleSessions.whyNot), for the login page's words: `restarted` (minted
 * by an earlier process of the daemon: sessions live in its memory and end with it), `expired` (it reached its
 * expiry here), `unknown` (anything else: ended by a logout, pushed out by newer ones, or never minted).
 */
export type NoSession = 'restarted' | 'expired' | 'unknown';

export class ConsoleSessions {
  readonly #codes = new Map<string, number>();
  readonly #sessions = new Map<string, { expiresAt: number; key: string }>();
  /** Sessions that reached their expiry here, so the login page can say so (bounded like the live ones). */
  readonly #expired = new Set<string>();
  /** This process's mark: the first MARK_BYTES of every session id it mints. */
  readonly #mark = randomBytes(MARK_BYTES);
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

  /** Redeem a code (once): a new session id and its key, or undefined for a wrong, used or expired code. */
  redeem(code: string | null | undefined): { session: string; key: string; expiresAt: number } | undefined {
    if (!code || !ID_RE.test(code)) return undefined;
    const until = this.#codes.get(code);
    this.#codes.delete(code);
    if (until === undefined || until <= this.clock()) return undefined;
    const session = Buffer.concat([this.#mark, randomBytes(32 - MARK_BYTES)]).toString('base64url');
    const key = randomBytes(32).toString('base64url');
    const expiresAt = this.clock() + this.#o.sessionTtlMs;
    bounded(this.#sessions, this.#o.max).set(session, { expiresAt, key });
    return { session, key, expiresAt };
  }

  /** Is this a live session id? Expired ones are forgotten. (Says nothing about the key: enough to serve the page, not to use the API.) */
  valid(session: string | undefined): boolean {
    return this.#live(session) !== undefined;
  }

  /** Is this a live session id, and `key` its key? Compared in constant time. */
  check(session: string | undefined, key: string | undefined): boolean {
    const s = this.#live(session);
    if (!s || !key || !ID_RE.test(key)) return false;
    return timingSafeEqual(Buffer.from(key), Buffer.from(s.key));
  }

  #live(session: string | undefined): { expiresAt: number; key: string } | undefined {
    if (!session || !ID_RE.test(session)) return undefined;
    const s = this.#sessions.get(session);
    if (s === undefined) return undefined;
    if (s.expiresAt <= this.clock()) {
      this.#sessions.delete(session);
      bounded(this.#expired, this.#o.max).add(session);
      return undefined;
    }
    return s;
  }

  /**
   * Why `session`, no live session, is none (NoSession), a best guess for the login page's words: any well-formed id
   * without this process's mark reads `restarted` (a cookie another node on this host set under the same name, or a
   * planted value, too; it opens nothing either way). Before, a page open across a daemon restart landed on the
   * login page with "Your session has expired or is not valid here", and the operator looked for a clock fault.
   */
  whyNot(session: string): NoSession {
    if (this.#expired.has(session)) return 'expired';
    if (!ID_RE.test(session)) return 'unknown';
    return Buffer.from(session, 'base64url').subarray(0, MARK_BYTES).equals(this.#mark) ? 'unknown' : 'restarted';
  }

  /** End a session (logout). */
  end(session: string | undefined): void {
    if (session) this.#sessions.delete(session);
  }
}

/** Make room for one more entry (Map and Set keep insertion order: the oldest goes). */
function bounded<T extends Map<string, unknown> | Set<string>>(m: T, max: number): T {
  while (m.size >= max) m.delete(m.keys().next().value!);
  return m;
}

/**
 * Every value of cookie `name` in a Cookie header, in the order sent. A
 * browser sends one per path (and domain) it holds under the name, the
 * longest path first: any page on the host, whatever its port, can set one
 * with a narrower path, so the first is not necessarily the console's.
 */
export function cookieValues(header: string | undefined, name: string): string[] {
  if (!header) return [];
  const out: string[] = [];
  for (const part of header.split(';')) {
    const i = part.indexOf('=');
    if (i > 0 && part.slice(0, i).trim() === name) out.push(part.slice(i + 1).trim());
  }
  return out;
}
