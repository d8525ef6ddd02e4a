/**
 * The control API's request checks that do not depend on the route (pure):
 *
 * - `Host` must name this API: its bound address, `localhost`,
 *   `127.0.0.1` or `[::1]`, each with the bound port (or none, bound to port
 *   80), or a configured name (`api.hosts`). A configured bare name takes the
 *   bound port; `name:port` is matched as written, and `name:443` or
 *   `name:80` also as plain `name`: what a browser sends to a reverse proxy on
 *   its scheme's default port, and the proxy passes on (Caddy's default,
 *   nginx's `$host`). A DNS-rebinding page reaches the API under the
 *   attacker's own host name, which is none of these, so it is refused (403
 *   API_HOST_REFUSED) before any route, `/metrics` included. An API bound to a
 *   wildcard address (0.0.0.0, ::) also accepts any IP literal with the bound
 *   port (no DNS name is involved).
 * - A request that carries an `Origin` (a browser page) must come from one of
 *   the same names: over http any of them, over https only a configured one (a
 *   TLS reverse proxy's: the API itself speaks only http); a name configured
 *   with :443 comes without its port over https only, one with :80 over http
 *   only (a browser leaves the default port out). Any other origin, `null`
 *   included, is refused (403 API_ORIGIN_REFUSED), so a page elsewhere cannot
 *   post to the API (CSRF). Non-browser clients send no Origin.
 * - `Authorization: <scheme> <token>` with the scheme matched
 *   case-insensitively (RFC 9110 §11.1: `Bearer`, `bearer`, `BEARER`) and the
 *   token compared in constant time.
 */
import { timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';

export interface HostPolicy {
  /** Lower-case `host:port` or `host` (IPv6 in brackets) a request may name in `Host`. */
  names: ReadonlySet<string>;
  /**
   * The origins a page may send requests from, lower-case and without the scheme's default port (a URL's `origin`):
   * `http://` with each of `names`, `https://` only with a configured one (`api.hosts`, a TLS reverse proxy's), a
   * name configured with :443 without a port over https only, one with :80 over http only.
   */
  origins?: ReadonlySet<string>;
  /** Set when bound to a wildcard address: any IP literal with this port is accepted too (an http Origin's as well). */
  anyIpPort?: number;
  /**
   * The API's own names (its bound address and the loopback names, with its port): a request naming anything else in
   * `Host` came by a name in `api.hosts` (a reverse proxy's, a DNS name), so through a proxy every request arrives
   * from loopback: `/metrics` then needs the token (viaConfiguredName).
   */
  own?: ReadonlySet<string>;
}

function hostPort(name: string, port: number): string {
  const n = name.toLowerCase();
  if (/^\[.*\]:[0-9]+$/.test(n) || (/^[^:]+:[0-9]+$/.test(n) && !isIP(n))) return n; // already host:port
  return `${isIP(n) === 6 ? `[${n}]` : n}:${port}`;
}

/** The names a request may use in `Host` for an API bound to `bindHost:port`, plus `extra` names (`api.hosts`). */
export function hostPolicy(bindHost: string, port: number, extra: readonly string[] = []): HostPolicy {
  const bare = bindHost.replace(/^\[|\]$/g, '');
  const names = new Set<string>();
  const origins = new Set<string>();
  const own = new Set<string>();
  for (const n of [bare, 'localhost', '127.0.0.1', '::1']) {
    const hp = hostPort(n, port);
    names.add(hp);
    own.add(hp);
    origins.add(`http://${hp}`);
    // A client leaves out the default port.
    if (port === 80 && hp.endsWith(':80')) {
      names.add(hp.slice(0, -3));
      own.add(hp.slice(0, -3));
      origins.add(`http://${hp.slice(0, -3)}`);
    }
  }
  for (const n of extra) {
    const hp = hostPort(n, port);
    names.add(hp);
    origins.add(`http://${hp}`);
    origins.add(`https://${hp}`);
    // Without its port too on a scheme's default port (443 for https, 80 for http): a browser leaves it out, and a
    // reverse proxy there passes the Host on so. A bare name takes the bound port: the API's own.
    const m = /^(.*):(80|443)$/.exec(hp);
    if (m) {
      names.add(m[1]!);
      origins.add(`${m[2] === '443' ? 'https' : 'http'}://${m[1]!}`);
    }
  }
  const wildcard = bare === '0.0.0.0' || bare === '::';
  return { names, origins, own, ...(wildcard ? { anyIpPort: port } : {}) };
}

/** Does `Host` name this API by a name of `api.hosts` (HostPolicy.own), not by its own address or a loopback name? */
export function viaConfiguredName(host: string | undefined, policy: HostPolicy): boolean {
  if (!policy.own) return false;
  const v = (host ?? '').trim().toLowerCase();
  return !policy.own.has(v) && !ipAllowed(v, policy);
}

/** An IP literal with the wildcard-bound port (none: 80, this API speaks http). */
function ipAllowed(h: string, policy: HostPolicy): boolean {
  if (policy.anyIpPort === undefined) return false;
  const m = /^(?:\[([^\]]+)\]|([^:]+))(?::([0-9]+))?$/.exec(h);
  if (!m) return false;
  return isIP(m[1] ?? m[2] ?? '') !== 0 && Number(m[3] ?? 80) === policy.anyIpPort;
}

function hostAllowed(h: string, policy: HostPolicy): boolean {
  const v = h.trim().toLowerCase();
  return policy.names.has(v) || ipAllowed(v, policy);
}

export interface Refusal {
  code: 'API_HOST_REFUSED' | 'API_ORIGIN_REFUSED';
  message: string;
}

/** undefined when the request may proceed; otherwise why it is refused. */
export function checkBrowserHeaders(host: string | undefined, origin: string | undefined, policy: HostPolicy): Refusal | undefined {
  if (host === undefined || !hostAllowed(host, policy)) {
    return { code: 'API_HOST_REFUSED', message: `Host "${String(host ?? '').slice(0, 100)}" does not name this API; use ${[...policy.names][0]} (or add the name to api.hosts: behind a reverse proxy on https, as name:443)` };
  }
  if (origin === undefined) return undefined;
  let ok: boolean;
  try {
    const u = new URL(origin);
    // u.origin is lower-case, without the scheme's default port
    const plain = u.pathname === '/' && !u.username && !u.password && !u.search && !u.hash;
    ok = plain && ((policy.origins?.has(u.origin) ?? false) || (u.protocol === 'http:' && ipAllowed(u.host, policy)));
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
