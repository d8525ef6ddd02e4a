/**
 * The control API's request checks that do not depend on the route (pure):
 *
 * - `Host` must name this API: its bound address, `localhost`,
 *   `127.0.0.1` or `[::1]`, or a configured name (`api.hosts`), each with the
 *   bound port. A DNS-rebinding page reaches the API under the attacker's own
 *   host name, so it is refused (403 API_HOST_REFUSED) before any route,
 *   `/metrics` included. An API bound to a wildcard address (0.0.0.0, ::) also
 *   accepts any IP literal with the bound port (no DNS name is involved).
 * - A request that carries an `Origin` (a browser page) must come from one of
 *   the same host:port names over http; any other origin, `null` included, is
 *   refused (403 API_ORIGIN_REFUSED). Non-browser clients send no Origin.
 * - `Authorization: <scheme> <token>` with the scheme matched
 *   case-insensitively (RFC 9110 §11.1: `Bearer`, `bearer`, `BEARER`) and the
 *   token compared in constant time.
 */
import { timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';

export interface HostPolicy {
  /** Lower-case `host:port` (IPv6 in brackets) a request may name. */
  names: ReadonlySet<string>;
  /** Set when bound to a wildcard address: any IP literal with this port is accepted too. */
  anyIpPort?: number;
}

function hostPort(name: string, port: number): string {
  const n = name.toLowerCase();
  if (/^\[.*\]:[0-9]+$/.test(n) || (/^[^:]+:[0-9]+$/.test(n) && !isIP(n))) return n; // already host:port
  return `${isIP(n) === 6 ? `[${n}]` : n}:${port}`;
}

/** The names a request may use in `Host` for an API bound to `bindHost:port`, plus `extra` names. */
export function hostPolicy(bindHost: string, port: number, extra: readonly string[] = []): HostPolicy {
  const bare = bindHost.replace(/^\[|\]$/g, '');
  const names = new Set<string>();
  for (const n of [bare, 'localhost', '127.0.0.1', '::1', ...extra]) {
    const hp = hostPort(n, port);
    names.add(hp);
    // A client leaves out the default port.
    if (port === 80 && hp.endsWith(':80')) names.add(hp.slice(0, -3));
  }
  const wildcard = bare === '0.0.0.0' || bare === '::';
  return { names, ...(wildcard ? { anyIpPort: port } : {}) };
}

function hostAllowed(h: string, policy: HostPolicy): boolean {
  const v = h.trim().toLowerCase();
  if (policy.names.has(v)) return true;
  if (policy.anyIpPort === undefined) return false;
  const m = /^(?:\[([^\]]+)\]|([^:]+)):([0-9]+)$/.exec(v);
  if (!m) return false;
  return isIP(m[1] ?? m[2] ?? '') !== 0 && Number(m[3]) === policy.anyIpPort;
}

export interface Refusal {
  code: 'API_HOST_REFUSED' | 'API_ORIGIN_REFUSED';
  message: string;
}

/** undefined when the request may proceed; otherwise why it is refused. */
export function checkBrowserHeaders(host: string | undefined, origin: string | undefined, policy: HostPolicy): Refusal | undefined {
  if (host === undefined || !hostAllowed(host, policy)) {
    return { code: 'API_HOST_REFUSED', message: `Host "${String(host ?? '').slice(0, 100)}" does not name this API; use ${[...policy.names][0]} (or add the name to api.hosts)` };
  }
  if (origin === undefined) return undefined;
  let ok: boolean;
  try {
    const u = new URL(origin);
    ok = u.protocol === 'http:' && u.pathname === '/' && hostAllowed(u.port ? u.host : `${u.host}:80`, policy);
  } catch {
    ok = false; // `null` and anything else that is not a URL
  }
  if (!ok) return { code: 'API_ORIGIN_REFUSED', message: `requests from a page on origin "${origin.slice(0, 100)}" are refused` };
  return undefined;
}

/** Does `Authorization` carry `token` under the Bearer scheme (scheme case-insensitive)? */
export function bearerMatches(header: string | undefined, token: string): boolean {
  if (!header) return false;
  const m = /^([A-Za-z0-9!#$%&'*+.^_`|~-]+) +(.*)$/.exec(header);
  if (!m || m[1]!.toLowerCase() !== 'bearer') return false;
  const got = Buffer.from(m[2]!.trim());
  const want = Buffer.from(token);
  // Compare equal lengths only (timingSafeEqual throws otherwise); the length itself is not secret.
  return got.length === want.length && want.length > 0 && timingSafeEqual(got, want);
}
