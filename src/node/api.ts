/**
 * The daemon's local control API: HTTP on 127.0.0.1 by default, every route
 * behind a bearer token stored in the data directory (0600; a token file that
 * group or others can read is refused, as the key file is). `/metrics` needs no
 * token on a loopback address, and does once the API is bound off loopback.
 * Binding to a non-loopback address logs a warning. Errors are JSON
 * `{error: {code, message}}` with a 4xx/5xx status.
 *
 * Before anything else every request passes the browser checks
 * (src/node/api-guard.ts): its `Host` must name this API (so a DNS-rebinding
 * page cannot reach it) and a foreign `Origin` is refused (403).
 * The operator's console (`console` option, src/node/console-routes.ts) then
 * serves its pages and lets a console session (its cookie with its key) stand
 * for the token.
 */
import { writingDataFile } from './data-files.js';
import { createServer, type IncomingMessage, type ServerResponse, type Server } from 'node:http';
import { createServer as createNetServer, type Socket } from 'node:net';
import { randomBytes } from 'node:crypto';
import { readFileSync, statSync, type Stats } from 'node:fs';
import { join } from 'node:path';
import { C0Error } from '../errors.js';
import type { Logger } from '../util/log.js';
import { writeSecretFile } from './identity.js';
import { bearerMatches, checkBrowserHeaders, viaConfiguredName, hostPolicy, type HostPolicy } from './api-guard.js';
import type { ConsoleGate } from './console-routes.js';
import { TOKEN_FILE } from './api-client.js';

// The client side (apiCall, apiStream) and the token file's name live in api-client.ts, which the CLI loads alone.
export { TOKEN_FILE, apiCall, apiStream } from './api-client.js';

export type Handler = (req: { params: Record<string, string>; query: URLSearchParams; body: unknown }, res: ApiResponse) => Promise<unknown>;

/** A streamed answer (ApiResponse.stream): newline-delimited JSON events. */
export interface ApiStream {
  /** Write one event now, whatever the client has read (a run's few events). */
  send(event: unknown): void;
  /**
   * Write one event, then, when the client is behind (the socket's buffer is full), wait until it has read it; rejects
   * API_CLIENT_GONE once the client closed the stream. For answers of many events (an export): a client that stops
   * reading holds the route, not the daemon's memory.
   */
  paced(event: unknown): Promise<void>;
  /**
   * Aborts when the client closes its connection before the stream's end (a Ctrl-C on `c0mpute run`): what the route
   * runs for it can stop, or go on knowing no one hears it (docs/node.md "A run whose client went away").
   */
  readonly gone: AbortSignal;
}

export interface ApiResponse {
  /** Stream newline-delimited JSON events (for long-running calls). */
  stream(): ApiStream;
  /**
   * Whether the client has left already (closed its connection, or its side of it), looked at after one turn of the
   * event loop so a close that arrived with the request is seen. A route that starts what the client cannot then
   * hear of (a job: it costs money) asks first: a client that gave up waiting (the CLI's DAEMON_NOT_ANSWERING on a
   * stalled daemon) must not have its job run anyway once the daemon resumes (review s40).
   */
  clientGone(): Promise<boolean>;
}

/** The client of a streamed answer closed it before the end (ApiStream.paced): the route stops. */
export const API_CLIENT_GONE = 'API_CLIENT_GONE';

/**
 * How long a paced stream waits for its client to read what it was sent (ApiStream.paced) before it gives the client
 * up (API_CLIENT_GONE, the connection closed): a client that keeps its connection open and never reads would hold the
 * route and its records for ever (second-round review). Two minutes is far beyond any reader's pause on a live link.
 */
export const STREAM_READ_IDLE_MS = 120_000;

/** The event-loop turns ApiResponse.clientGone looks for a client's close that came with its request (it took 2 here). */
const CLIENT_GONE_TURNS = 8;

export interface Route {
  method: 'GET' | 'POST';
  path: string; // e.g. /v1/offers/:job
  handler: Handler;
}

/**
 * The daemon's API token: `<data-dir>/api.token`, written (0600) when there is none or it is empty. Said before the
 * store opens and the network starts (Daemon.start), as one operator error (exit 3): a token file group or others can
 * read is API_TOKEN_PERMISSIONS; an entry there that is not a regular file (a directory) or cannot be read (EACCES, EIO)
 * is API_TOKEN_UNREADABLE with the way out. Before (QA qaOps F6) a directory there was told to `chmod 600`, and once
 * it was, the start failed after the network had joined its peers with an internal error (EISDIR, exit 70), which a
 * supervisor's Restart=on-failure restarts in a loop.
 */
export function ensureToken(dataDir: string): string {
  const p = join(dataDir, TOKEN_FILE);
  const unreadable = (why: string) =>
    new C0Error('API_TOKEN_UNREADABLE', `API token file ${p} ${why}; move it away (the daemon then writes a new token there) or put back the regular file the daemon wrote (mode 0600)`, { field: 'api.token' });
  let st: Stats | undefined;
  try {
    st = statSync(p);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw unreadable(`cannot be read: ${(e as Error).message}`);
  }
  if (st !== undefined) {
    if (!st.isFile()) throw unreadable(`is not a regular file (${st.isDirectory() ? 'a directory' : 'a special file'})`);
    if ((st.mode & 0o077) !== 0) {
      throw new C0Error('API_TOKEN_PERMISSIONS', `API token file ${p} is readable by others (mode ${(st.mode & 0o777).toString(8)}); run \`chmod 600 ${p}\``, { field: 'api.token' });
    }
    let text: string;
    try {
      text = readFileSync(p, 'utf8');
    } catch (e) {
      throw unreadable(`cannot be read: ${(e as Error).message}`);
    }
    const t = text.trim();
    // An empty token file would make `Authorization: Bearer ` pass; replace it with a fresh token.
    if (t.length > 0) return t;
  }
  const t = randomBytes(32).toString('base64url');
  writingDataFile(p, 'the API token', () => writeSecretFile(p, t + '\n'));
  return t;
}

/** The method a request is routed by: HEAD as GET, whose body Node's response drops for a HEAD (docs/node.md "Control API"). */
export function routedMethod(method: string | undefined): string | undefined {
  return method === 'HEAD' ? 'GET' : method;
}

/** The methods a path takes, as its 405's `Allow` lists them: each of `methods` once, and HEAD with GET. */
export function allowedMethods(methods: Iterable<string>): string[] {
  const allowed = [...new Set(methods)];
  if (allowed.includes('GET') && !allowed.includes('HEAD')) allowed.push('HEAD');
  return allowed;
}

/** The first of Host and Authorization a request sends more than once (rawHeaders: name, value, name, value, …). */
export function repeatedHeader(raw: readonly string[]): string | undefined {
  const seen = new Set<string>();
  for (let i = 0; i < raw.length; i += 2) {
    const n = raw[i]!.toLowerCase();
    if (n !== 'host' && n !== 'authorization') continue;
    if (seen.has(n)) return n === 'host' ? 'Host' : 'Authorization';
    seen.add(n);
  }
  return undefined;
}

export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127\./.test(host);
}

export function splitHostPort(s: string): { host: string; port: number } {
  const i = s.lastIndexOf(':');
  return { host: s.slice(0, i).replace(/^\[|\]$/g, ''), port: Number.parseInt(s.slice(i + 1), 10) };
}

const MAX_BODY = 64 * 1024 * 1024;

function statusFor(code: string): number {
  if (code.endsWith('_NOT_FOUND') || code === 'NOT_FOUND') return 404;
  if (code === 'UNAUTHORIZED') return 401;
  if (code === 'API_HOST_REFUSED' || code === 'API_ORIGIN_REFUSED') return 403;
  // the node's database takes no writes now (a full disk): the request was fine, the node cannot serve it yet
  if (code === 'STORE_WRITE_FAILED' || code === 'STORE_REOPENING' || code === 'STORE_REOPEN_REFUSED') return 503;
  // a damaged table read by a running daemon (docs/node.md "A damaged database"): this node's fault, not the request's
  if (code === 'STORE_CORRUPT' || code === 'STORE_READ_FAILED') return 500;
  return 400;
}

export interface ApiServer {
  server: Server;
  address: string;
  close(): Promise<void>;
}

/** What /metrics serves: a prom-client Registry, or anything with the same two members. */
export interface MetricsSource {
  contentType: string;
  metrics(): Promise<string>;
}

export interface ApiOptions {
  listen: string;
  token: string;
  routes: Route[];
  registry: MetricsSource;
  log: Logger;
  replacer?: (k: string, v: unknown) => unknown;
  /** Further host names clients may use in `Host` (a reverse proxy's, the machine's DNS name); matched with the bound port. */
  hosts?: readonly string[];
  /** The operator's console (src/node/console-routes.ts): its pages, and its session (cookie and key) as a credential. */
  console?: ConsoleGate;
  /** How often a quiet NDJSON stream sends an empty line (default STREAM_HEARTBEAT_MS; tests set it shorter). */
  streamHeartbeatMs?: number;
  /** How long a paced stream waits for its client to read before it gives it up (default STREAM_READ_IDLE_MS). */
  streamReadIdleMs?: number;
  /** Connections of clients that showed the token open at once (default API_MAX_CONNECTIONS; tests set it lower). */
  maxConnections?: number;
  /** Connections that have not shown the token yet kept past their grace (default API_MAX_PENDING_CONNECTIONS; tests set it lower). */
  maxPendingConnections?: number;
  /** How long a connection without the token is safe from being closed for a newer one (default API_PENDING_GRACE_MS). */
  pendingGraceMs?: number;
  /** How long a client has to send its request's headers (default API_HEADERS_TIMEOUT_MS; tests set it shorter). */
  headersTimeoutMs?: number;
  /** API_CONNECTIONS_FULL is warned at most this often, with the counts since the last (default API_FULL_WARN_MS; tests set it shorter). */
  fullWarnMs?: number;
}

/**
 * The control API's share of the daemon's file handles, which libp2p and LevelDB share: at most this many connections
 * of clients that showed the token (or a console session) at once; a request with the token past it is answered 503
 * API_CONNECTIONS_FULL and its connection closed (a warning, at most once a minute). Before there was any bound, a local
 * process holding 20,000 slow connections took every handle the daemon had, and new peers, the CLI and the console were
 * all refused until it stopped (review s40). An operator's console tabs and CLI need a few dozen.
 */
export const API_MAX_CONNECTIONS = 256;
/**
 * Connections that have not shown the token yet (still sending their headers, or refused and being answered) kept past
 * their first API_PENDING_GRACE_MS, apart from API_MAX_CONNECTIONS: a new connection past it closes the OLDEST of these
 * that is older than that, it is not refused; and however young they are, never more than API_MAX_CONNECTIONS of them
 * (past that the oldest goes at once). When one cap held every connection, a local process without the token holding
 * 256 slow ones (a header line a second, reopened as the headers timeout dropped them) kept the operator's CLI out for
 * as long as it liked (review s41 E F2); now such a process only pushes out its own oldest connections, and a client
 * that sends its request as it connects (the CLI, the console) shows the token within its grace. Not closing the
 * youngest also keeps a process reopening many connections from churning through them as fast as it can.
 */
export const API_MAX_PENDING_CONNECTIONS = 64;
/** A connection without the token is not closed to make room for a newer one before it has been open this long (below API_MAX_CONNECTIONS of them). */
export const API_PENDING_GRACE_MS = 1_000;
/**
 * The listen backlog: connections the kernel completes before the daemon takes them. Node's default 511 overflowed
 * under a local flood of ~5,000 new connections a second (review r2E S2: ListenOverflows 11,497 in 20 s): a dropped
 * SYN is retried at 1, 3, 7 s, so the CLI's connection waited out its 10 s. The kernel caps it at net.core.somaxconn
 * (4096 on current Linux).
 */
export const API_LISTEN_BACKLOG = 4096;
/** API_CONNECTIONS_FULL is logged at most once in this long; what was closed or refused meanwhile is told at its end. */
export const API_FULL_WARN_MS = 60_000;
/** A client has this long to send its request's headers (Node's default is 60 s: slow connections held a handle a minute each). */
export const API_HEADERS_TIMEOUT_MS = 10_000;

/**
 * A quiet NDJSON stream's empty line, this often: an HTTP client times out a body that sends nothing for a while
 * (Node's fetch, the CLI's: 300 s), and a job can wait in a steward's line, or run, for much longer without an event.
 * An empty line is no event: every client of the stream skips it (api-client.ts `ndjson`).
 */
export const STREAM_HEARTBEAT_MS = 60_000;

/**
 * Whether the API's address can be listened on, asked before the node opens its store and starts its network (a
 * port taken is API_LISTEN_FAILED at once, not ~8 s later after a provider published its advert: review s43 R6 F6).
 * Listened on and closed at once: another process can still take the port in between, which startApi then says.
 */
export async function checkApiListen(listen: string): Promise<void> {
  const { host, port } = splitHostPort(listen);
  if (port === 0) return;
  const probe = createNetServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', (e) => reject(new C0Error('API_LISTEN_FAILED', `cannot listen on ${listen}: ${(e as Error).message}`)));
    probe.listen({ port, host }, () => resolve());
  });
  await new Promise<void>((resolve) => probe.close(() => resolve()));
}

export async function startApi(opts: ApiOptions): Promise<ApiServer> {
  const { host, port } = splitHostPort(opts.listen);
  const loopback = isLoopback(host);
  if (!loopback) {
    opts.log.warn(
      { listen: opts.listen },
      'the control API and metrics are bound to a non-loopback address; anyone who can reach it and holds the token controls this node; /metrics now needs the token too',
    );
  }
  const compiled = opts.routes.map((r) => ({ ...r, re: new RegExp('^' + r.path.replace(/:[a-zA-Z]+/g, '([^/]+)') + '$'), names: [...r.path.matchAll(/:([a-zA-Z]+)/g)].map((m) => m[1]!) }));
  // Filled in once the server is listening (port 0 picks the port).
  let policy: HostPolicy = { names: new Set() };
  const json = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body, opts.replacer));
  };

  // Connections by whether a request on them showed the token (or a console session): `pending` oldest first (a Map
  // keeps the order they came in) with when each came, each kind under its own caps (API_MAX_PENDING_CONNECTIONS,
  // API_MAX_CONNECTIONS)
  const maxTrusted = opts.maxConnections ?? API_MAX_CONNECTIONS;
  const maxPending = opts.maxPendingConnections ?? API_MAX_PENDING_CONNECTIONS;
  const graceMs = opts.pendingGraceMs ?? API_PENDING_GRACE_MS;
  const pending = new Map<Socket, number>();
  const trusted = new Set<Socket>();
  const counts = { evicted: 0, refused: 0 };
  // The warning: at the first connection closed or refused, then, while it goes on, at the end of each minute with the
  // counts of that minute (review r2E S2: what was closed after the first warning was told only if more came past the
  // minute, so a 30 s flood logged '1 evicted' and nothing else).
  const warnEvery = opts.fullWarnMs ?? API_FULL_WARN_MS;
  let warnedAt = -Infinity;
  let flush: NodeJS.Timeout | undefined;
  const warnFull = () => {
    flush = undefined;
    const now = performance.now();
    opts.log.warn(
      { code: 'API_CONNECTIONS_FULL', maxConnections: maxTrusted, maxPendingConnections: maxPending, ...counts, ...(warnedAt === -Infinity ? {} : { sinceSeconds: Math.round((now - warnedAt) / 1000) }) },
      'control API: more connections than it takes (a client holding many open?): the oldest without the token are closed, a request with the token past the cap answered 503',
    );
    warnedAt = now;
    counts.evicted = counts.refused = 0;
  };
  const full = (what: keyof typeof counts) => {
    counts[what]++;
    if (flush) return;
    const wait = warnedAt + warnEvery - performance.now();
    if (wait <= 0) warnFull();
    else flush = setTimeout(warnFull, wait).unref();
  };

  // the headers timeout is checked this often (Node's default 30 s would let a slow client keep its handle 40 s)
  const server = createServer({ connectionsCheckingInterval: Math.min(2_000, opts.headersTimeoutMs ?? API_HEADERS_TIMEOUT_MS) }, (req: IncomingMessage, res: ServerResponse) => {
    void (async () => {
      // a client without the token gets its answer and the connection closed, not held open for its next request:
      // 256 keep-alive connections sending a refused request every few seconds held every slot of the API for as long
      // as they liked (second-round review of API_MAX_CONNECTIONS); kept alive as asked once the request shows the token
      const keepAlive = res.shouldKeepAlive;
      res.shouldKeepAlive = false;
      // Node keeps the first of two Host (or Authorization) headers and drops the rest: a proxy or cache in front may
      // read the other one, so a request with two is refused as RFC 9112 §3.2 asks of Host
      const twice = repeatedHeader(req.rawHeaders);
      if (twice) return json(res, 400, { error: { code: 'HEADER_REPEATED', message: `the request has more than one ${twice} header` } });
      const refused = checkBrowserHeaders(req.headers.host, req.headers.origin, policy);
      if (refused) return json(res, 403, { error: { code: refused.code, message: refused.message } });
      // The request target as the path it names: `//v1/status` is that path, not a host `v1`.
      let url: URL;
      const target = req.url ?? '/';
      try {
        url = new URL(target.startsWith('/') ? `http://localhost${target}` : target);
      } catch {
        return json(res, 400, { error: { code: 'PATH_MALFORMED', message: 'the request target is not a valid path' } });
      }
      // Only a path in normal form: the URL parser reads `\` as `/` and resolves `.` and `..` segments (`%2e` too),
      // which a reverse proxy in front does not, so `/x/..\metrics` passed a proxy's `location = /metrics` refusal and
      // was served here as /metrics (docs/node.md "Behind a reverse proxy").
      if (target.startsWith('/') && target.split(/[?#]/, 1)[0] !== url.pathname) {
        return json(res, 400, { error: { code: 'PATH_MALFORMED', message: 'the request target is not a path in normal form (a backslash, a `.` or `..` segment, or a character that needs escaping)' } });
      }
      const authorised = bearerMatches(req.headers.authorization, opts.token) || (opts.console?.session(req, url) ?? false);
      if (authorised && !trusted.has(req.socket)) {
        if (trusted.size >= maxTrusted) {
          full('refused');
          return json(res, 503, { error: { code: 'API_CONNECTIONS_FULL', message: `the control API holds its ${maxTrusted} connections of clients with the token already; close some (a batch run's --concurrency?) and try again` } });
        }
        pending.delete(req.socket);
        trusted.add(req.socket);
      }
      if (authorised) res.shouldKeepAlive = keepAlive;
      if (opts.console && (await opts.console.serve(req, res, url))) return;
      // /metrics as every GET route (docs/node.md "Control API"): HEAD answers its headers, another method is 405
      // with Allow; on loopback without the token, off it with (else the 401 below, as for every route).
      // open on loopback only to a client naming this API by its own address: by a name of api.hosts it came through a
      // proxy (every proxied request arrives from loopback), and then it needs the token like any other route
      if (url.pathname === '/metrics' && ((loopback && !viaConfiguredName(req.headers.host, policy)) || authorised)) {
        if (req.method !== 'GET' && req.method !== 'HEAD') {
          res.setHeader('allow', 'GET, HEAD');
          return json(res, 405, { error: { code: 'METHOD_NOT_ALLOWED', message: `/metrics takes GET or HEAD, not ${req.method}` } });
        }
        res.writeHead(200, { 'content-type': opts.registry.contentType });
        res.end(req.method === 'HEAD' ? undefined : await opts.registry.metrics());
        return;
      }
      if (!authorised) return json(res, 401, { error: opts.console?.refusal(req, url) ?? { code: 'UNAUTHORIZED', message: 'missing or wrong bearer token' } });
      // HEAD is GET without the body (Node's response drops it); GET routes only read.
      const method = routedMethod(req.method);
      let route;
      let m: RegExpExecArray | null = null;
      for (const r of compiled) {
        if (r.method === method && (m = r.re.exec(url.pathname))) {
          route = r;
          break;
        }
      }
      if (!route || !m) {
        const allowed = allowedMethods(compiled.filter((r) => r.re.test(url.pathname)).map((r) => r.method));
        if (allowed.length === 0) return json(res, 404, { error: { code: 'NOT_FOUND', message: `no route ${req.method} ${url.pathname}` } });
        res.setHeader('allow', allowed.join(', '));
        return json(res, 405, { error: { code: 'METHOD_NOT_ALLOWED', message: `${url.pathname} takes ${allowed.join(' or ')}, not ${req.method}` } });
      }
      const params: Record<string, string> = {};
      try {
        route.names.forEach((n, i) => (params[n] = decodeURIComponent(m![i + 1]!)));
      } catch {
        return json(res, 400, { error: { code: 'PATH_MALFORMED', message: 'a path parameter is not valid percent-encoding' } });
      }
      let body: unknown;
      if (req.method === 'POST') {
        const chunks: Buffer[] = [];
        let size = 0;
        for await (const c of req) {
          size += (c as Buffer).length;
          if (size > MAX_BODY) return json(res, 413, { error: { code: 'BODY_TOO_LARGE', message: `request body over ${MAX_BODY} bytes` } });
          chunks.push(c as Buffer);
        }
        try {
          body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : {};
        } catch {
          return json(res, 400, { error: { code: 'BODY_NOT_JSON', message: 'request body is not JSON' } });
        }
      }
      let streaming = false;
      const api: ApiResponse = {
        async clientGone() {
          // an HTTP/1.1 client does not end its side while it waits for the answer: one that did has left. Its end,
          // read with the request, reaches the socket a few turns of the event loop after the body: look for it over
          // those turns, not a timer (a 50 ms wait added 50 ms to every run a client waited for)
          const sock = req.socket;
          const left = () => res.destroyed || sock.destroyed || sock.readableEnded;
          for (let i = 0; i < CLIENT_GONE_TURNS && !left(); i++) await new Promise((r) => setImmediate(r));
          return left();
        },
        stream() {
          streaming = true;
          res.writeHead(200, { 'content-type': 'application/x-ndjson' });
          // the headers go now, not with the first event: the client waits for them only so long (DAEMON_NOT_ANSWERING)
          res.flushHeaders();
          const beat = setInterval(() => res.write('\n'), opts.streamHeartbeatMs ?? STREAM_HEARTBEAT_MS).unref();
          const left = new AbortController();
          res.once('close', () => {
            clearInterval(beat);
            // closed before the route ended it: the client went away (a stream ended by the route has finished)
            if (!res.writableFinished) left.abort(new C0Error(API_CLIENT_GONE, 'the client closed the stream before its end'));
          });
          const gone = () => res.destroyed || res.writableEnded;
          const line = (ev: unknown) => JSON.stringify(ev, opts.replacer) + '\n';
          return {
            gone: left.signal,
            send: (ev: unknown) => {
              if (!gone()) res.write(line(ev));
            },
            paced: async (ev: unknown) => {
              if (!gone() && !res.write(line(ev))) {
                const drained = await new Promise<boolean>((ok) => {
                  const done = (v: boolean) => () => {
                    clearTimeout(idle);
                    res.off('drain', onDrain);
                    res.off('close', onClose);
                    ok(v);
                  };
                  const onDrain = done(true);
                  const onClose = done(true);
                  const idle = setTimeout(done(false), opts.streamReadIdleMs ?? STREAM_READ_IDLE_MS);
                  res.on('drain', onDrain);
                  res.on('close', onClose);
                });
                // read nothing for that long: given up, and its connection closed
                if (!drained) res.destroy();
              }
              if (gone()) throw new C0Error(API_CLIENT_GONE, 'the client closed the stream before its end');
            },
          };
        },
      };
      try {
        const out = await route.handler({ params, query: url.searchParams, body }, api);
        if (streaming) {
          if (!res.destroyed && !res.writableEnded) {
            if (out !== undefined) res.write(JSON.stringify({ e: 'result', result: out }, opts.replacer) + '\n');
            res.end();
          }
        } else json(res, 200, out ?? {});
      } catch (e) {
        const err = e instanceof C0Error ? { code: e.code, message: e.message, ...(e.field ? { field: e.field } : {}) } : { code: 'INTERNAL', message: (e as Error).message };
        if (!(e instanceof C0Error)) opts.log.error({ err: e }, 'api handler failed');
        if (streaming) {
          // a client gone before the end hears nothing more
          if (!res.destroyed && !res.writableEnded) {
            res.write(JSON.stringify({ e: 'error', error: err }) + '\n');
            res.end();
          }
        } else json(res, e instanceof C0Error ? statusFor(e.code) : 500, { error: err });
      }
    })().catch((e: unknown) => {
      // Nothing a request does may become an unhandled rejection (that would stop the daemon).
      // A client gone before its body arrived is the client's doing: not an error of this node.
      if (req.destroyed && ((e as NodeJS.ErrnoException | undefined)?.code === 'ECONNRESET' || (e as Error | undefined)?.message === 'aborted')) opts.log.debug({ err: (e as Error).message }, 'api request aborted by the client');
      else opts.log.error({ err: e }, 'api request failed');
      if (!res.headersSent) json(res, 500, { error: { code: 'INTERNAL', message: 'internal error' } });
      else res.destroy();
    });
  });
  server.headersTimeout = opts.headersTimeoutMs ?? API_HEADERS_TIMEOUT_MS;
  server.on('connection', (sock: Socket) => {
    const now = performance.now();
    // the oldest connections still without the token make room: a client holding many cannot keep a new one out
    for (const [oldest, since] of pending) {
      if (pending.size < maxPending || (pending.size < maxTrusted && now - since < graceMs)) break;
      pending.delete(oldest);
      oldest.destroy();
      full('evicted');
    }
    pending.set(sock, now);
    sock.once('close', () => {
      pending.delete(sock);
      trusted.delete(sock);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (e) => reject(new C0Error('API_LISTEN_FAILED', `cannot listen on ${opts.listen}: ${(e as Error).message}`)));
    server.listen({ port, host, backlog: API_LISTEN_BACKLOG }, () => resolve());
  });
  const a = server.address();
  const address = typeof a === 'object' && a ? `${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}` : opts.listen;
  const bound = typeof a === 'object' && a ? a.port : port;
  policy = hostPolicy(host, bound, opts.hosts ?? []);
  return {
    server,
    address,
    close: () =>
      new Promise<void>((resolve) => {
        clearTimeout(flush);
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
