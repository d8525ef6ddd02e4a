/**
 * The client side of the daemon's control API (src/node/api.ts): what the CLI
 * and the devnet use to call a running daemon. Light on purpose: a CLI command
 * that only talks to the daemon loads this, not the server, libp2p or the stores.
 */
import { connect } from 'node:net';
import { LineSplitter } from '../util/lines.js';
import { C0Error } from '../errors.js';

/** The bearer token's file in the data directory (0600). */
export const TOKEN_FILE = 'api.token';

/** How long a call waits for the daemon's answer by default (a stream: for its headers only), seconds; `C0MPUTE_API_TIMEOUT` sets it. */
export const API_TIMEOUT_S = 10;
/** The longest `C0MPUTE_API_TIMEOUT` may be, seconds (a day; a timer cannot wait much longer than 24 days anyway). */
const API_TIMEOUT_MAX_S = 86_400;
/** The shortest, seconds: less is no wait for a daemon's answer at all. */
const API_TIMEOUT_MIN_S = 0.1;

export interface ApiCallOptions {
  /** How long to wait, ms (default: `C0MPUTE_API_TIMEOUT`, else API_TIMEOUT_S): for a call its whole answer, for a stream its headers. */
  timeoutMs?: number;
  /** Work the daemon does before it answers this call (a fetch over the network with its own deadline), ms: added to the wait. */
  workMs?: number;
  /** A stream that sends nothing, not even its heartbeat, this long is given up (default STREAM_IDLE_MS; tests set it shorter). */
  streamIdleMs?: number;
  /**
   * A stream's caller leaving (`c0mpute run`'s Ctrl-C): aborting it closes the request or the stream at once, which
   * the daemon sees as its client gone (docs/node.md "A run whose client went away"); the stream then throws.
   */
  signal?: AbortSignal;
}

/**
 * A stream quiet this long is given up, DAEMON_NOT_ANSWERING: the daemon sends an empty line at least every
 * STREAM_HEARTBEAT_MS (60 s) however long its job, so two and a half of those without a byte is a daemon stopped or
 * stuck. Before, a `c0mpute run` whose daemon was stopped (SIGSTOP) mid-stream waited for ever (review s40).
 */
export const STREAM_IDLE_MS = 150_000;

/** The wait for an answer, ms: `C0MPUTE_API_TIMEOUT` (seconds) when set, else API_TIMEOUT_S; a value that is not a number of seconds from 0.1 to a day is CONFIG_INVALID. */
export function apiTimeoutMs(env: string | undefined = process.env.C0MPUTE_API_TIMEOUT): number {
  if (env === undefined || env.trim() === '') return API_TIMEOUT_S * 1000;
  const s = /^\s*[0-9]+(\.[0-9]+)?\s*$/.test(env) ? Number(env) : NaN;
  // at least a tenth of a second: 0.000001 rounded to a wait of 0 ms, and every command failed at once "did not answer in 0 s"
  if (!(s >= API_TIMEOUT_MIN_S && s <= API_TIMEOUT_MAX_S)) throw new C0Error('CONFIG_INVALID', `C0MPUTE_API_TIMEOUT: seconds to wait for the daemon's answer, from ${API_TIMEOUT_MIN_S} to ${API_TIMEOUT_MAX_S}, got "${env.slice(0, 40)}"`, { field: 'C0MPUTE_API_TIMEOUT' });
  return Math.round(s * 1000);
}

/** The pid daemon.json names for the daemon at each API address (set by the CLI as it reads daemon.json), for DAEMON_NOT_ANSWERING to name it. */
const pids = new Map<string, number>();
export function noteDaemonPid(api: string, pid: number): void {
  pids.set(api, pid);
}

/**
 * A wait for the daemon's answer: aborts the fetch once `ms` pass. A daemon that accepts the connection and never
 * answers (stopped with SIGSTOP, an event loop stuck) would otherwise hold the CLI for undici's 5 minutes.
 */
function answerWait(base: string, opts: ApiCallOptions): { signal: AbortSignal; expired: () => boolean; error: () => Promise<C0Error>; done: () => void } {
  const ms = (opts.timeoutMs ?? apiTimeoutMs()) + (opts.workMs ?? 0);
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), Math.min(ms, 2 ** 31 - 1));
  return {
    signal: ctl.signal,
    expired: () => ctl.signal.aborted,
    error: async () => {
      const pid = pids.get(base);
      const s = Number((ms / 1000).toFixed(1));
      // an API that takes each connection and closes it at once is refusing connections (fetch tries again and again
      // until the wait ends), not stopped: say so (review s41 E F2)
      const why = (await closesAtOnce(base)) ? `: it takes connections and closes them at once, refusing connections (too many open? see the daemon's log for ${API_CONNECTIONS_FULL})` : ' (stopped? overloaded?)';
      return new C0Error(
        'DAEMON_NOT_ANSWERING',
        `${pid === undefined ? `the daemon's API at ${base}` : `the daemon (pid ${pid}) is alive but its API at ${base}`} did not answer in ${s} s${why}; C0MPUTE_API_TIMEOUT=<seconds> waits longer`,
        { detail: { api: base, ...(pid === undefined ? {} : { pid }), timeoutMs: ms } },
      );
    },
    done: () => clearTimeout(timer),
  };
}

/** The code a daemon logs when its API has more connections than it takes (src/node/api.ts). */
const API_CONNECTIONS_FULL = 'API_CONNECTIONS_FULL';

/** Whether the API at `base` takes a connection and closes (or resets) it before answering a request: it refuses connections. */
export function closesAtOnce(base: string, waitMs = 1_000): Promise<boolean> {
  const i = base.lastIndexOf(':');
  const host = base.slice(0, i).replace(/^\[|\]$/g, '');
  const port = Number.parseInt(base.slice(i + 1), 10);
  return new Promise((resolve) => {
    let connected = false;
    let settled = false;
    const sock = connect({ host, port }, () => {
      connected = true;
      sock.write(`HEAD /v1/status HTTP/1.1\r\nHost: ${base}\r\nConnection: close\r\n\r\n`);
    });
    const done = (refusing: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      sock.destroy();
      resolve(refusing);
    };
    // an answer (any), or none in the wait (stopped, stuck): not refusing; no connection at all: not this either
    const timer = setTimeout(() => done(false), waitMs);
    sock.on('data', () => done(false));
    sock.on('error', () => done(connected));
    sock.on('close', () => done(connected));
  });
}

/** A fetch that failed as the daemon closed or reset its connection before any answer: the API refusing connections (or the daemon stopping). */
function closedBeforeAnswer(e: unknown, base: string): C0Error | undefined {
  const code = ((e as { cause?: { code?: string } }).cause ?? {}).code;
  if (code !== 'UND_ERR_SOCKET' && code !== 'ECONNRESET' && code !== 'EPIPE') return undefined;
  return new C0Error('DAEMON_UNREACHABLE', `the daemon's API at ${base} closed the connection before it answered: it is refusing connections (too many open? see the daemon's log for ${API_CONNECTIONS_FULL}), or it stopped`);
}

/** Client side (the CLI): call the daemon; DAEMON_NOT_ANSWERING when its whole answer has not come within the wait (ApiCallOptions). */
export async function apiCall(base: string, token: string, method: 'GET' | 'POST', path: string, body?: unknown, opts: ApiCallOptions = {}): Promise<unknown> {
  const wait = answerWait(base, opts);
  try {
    let res: Response;
    try {
      res = await fetch(`http://${base}${path}`, { method, signal: wait.signal, headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    } catch (e) {
      if (wait.expired()) throw await wait.error();
      throw closedBeforeAnswer(e, base) ?? new C0Error('DAEMON_UNREACHABLE', `cannot reach the daemon at ${base}: ${(e as Error).message}`);
    }
    const data = (await answerJson(res, base, wait)) as { error?: { code: string; message: string } };
    if (!res.ok) throw new C0Error(data.error?.code ?? 'DAEMON_ERROR', data.error?.message ?? `daemon answered ${res.status}`);
    return data;
  } finally {
    wait.done();
  }
}

/**
 * Client side: a streaming call yielding NDJSON events. The wait (ApiCallOptions) is for the answer's headers only,
 * which the daemon sends as the stream starts: the stream itself lasts as long as what it reports (a job) does.
 */
export async function* apiStream(base: string, token: string, path: string, body: unknown, opts: ApiCallOptions = {}): AsyncGenerator<Record<string, unknown>> {
  const wait = answerWait(base, opts);
  // aborted when the stream goes quiet (ndjson): the read it waits on ends, and the connection with it
  const quiet = new AbortController();
  let res: Response;
  try {
    // `body` undefined: a GET whose answer streams (GET /v1/jobs/:job/records)
    const req: RequestInit = body === undefined ? { method: 'GET', headers: { authorization: `Bearer ${token}` } } : { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) };
    res = await fetch(`http://${base}${path}`, { ...req, signal: AbortSignal.any([wait.signal, quiet.signal, ...(opts.signal ? [opts.signal] : [])]) });
  } catch (e) {
    if (wait.expired()) throw await wait.error();
    throw closedBeforeAnswer(e, base) ?? new C0Error('DAEMON_UNREACHABLE', `cannot reach the daemon at ${base}: ${(e as Error).message}`);
  } finally {
    // the headers came (or nothing will): from here the stream is not timed
    wait.done();
  }
  if (!res.ok || !res.body) {
    const data = (await res.json().catch(() => ({}))) as { error?: { code: string; message: string } };
    throw new C0Error(data.error?.code ?? 'DAEMON_ERROR', data.error?.message ?? `daemon answered ${res.status}`);
  }
  const chunks = (res.body as unknown as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]();
  try {
    yield* ndjson(chunks, base, opts.streamIdleMs ?? STREAM_IDLE_MS, () => quiet.abort());
  } finally {
    // a caller that stops early (break, return, throw) closes the answer: the daemon sees it leave
    await chunks.return?.().catch(() => {});
  }
}

async function* ndjson(chunks: AsyncIterator<Uint8Array>, base: string, idleMs: number, giveUp: () => void): AsyncGenerator<Record<string, unknown>> {
  const dec = new TextDecoder();
  const split = new LineSplitter();
  for (;;) {
    let next: IteratorResult<Uint8Array>;
    let timer: NodeJS.Timeout | undefined;
    try {
      const quiet = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          const pid = pids.get(base);
          reject(
            new C0Error('DAEMON_NOT_ANSWERING', `${pid === undefined ? `the daemon at ${base}` : `the daemon (pid ${pid}) at ${base}`} sent nothing for ${Math.round(idleMs / 1000)} s, not even its heartbeat (stopped? stuck?); what it was doing may still be running there (a job: \`c0mpute jobs\`)`, {
              detail: { api: base, ...(pid === undefined ? {} : { pid }), idleMs },
            }),
          );
          // after the rejection above, which the race takes first: the pending read ends with the connection
          giveUp();
        }, idleMs);
      });
      next = await Promise.race([chunks.next(), quiet]);
    } catch (e) {
      if (e instanceof C0Error && e.code === 'DAEMON_NOT_ANSWERING') throw e;
      // the daemon stopped (or restarted) while it streamed: what it was doing may go on, or may have ended with it
      throw new C0Error('DAEMON_STREAM_LOST', `the connection to the daemon at ${base} broke while it answered (${(e as Error).message}); what it was doing may still be running there (a job: \`c0mpute jobs\`)`);
    } finally {
      clearTimeout(timer);
    }
    const lines = next.done ? [...split.push(dec.decode()), split.rest()] : split.push(dec.decode(next.value, { stream: true }));
    for (const line of lines) {
      // (the last line may come without its newline)
      if (!line.trim()) continue;
      let event: Record<string, unknown>;
      try {
        event = JSON.parse(line) as Record<string, unknown>;
      } catch {
        throw new C0Error('DAEMON_BAD_ANSWER', `the daemon at ${base} sent a line that is not JSON: ${line.slice(0, 80)}`);
      }
      yield event;
    }
    if (next.done) break;
  }
}

/** The body of an answer as JSON; a body that is not (another server on the daemon's port) is DAEMON_BAD_ANSWER. */
async function answerJson(res: Response, base: string, wait: { expired: () => boolean; error: () => Promise<C0Error> }): Promise<unknown> {
  const text = await res.text().catch(async (e: unknown) => {
    if (wait.expired()) throw await wait.error();
    throw new C0Error('DAEMON_STREAM_LOST', `the connection to the daemon at ${base} broke while it answered: ${(e as Error).message}`);
  });
  try {
    return JSON.parse(text);
  } catch {
    throw new C0Error('DAEMON_BAD_ANSWER', `${base} answered ${res.status} with something that is not the daemon's JSON (is another server on that port? check the data directory's daemon.json): ${text.slice(0, 80)}`);
  }
}

/** Client side (the CLI, the devnet): ask a running daemon for a one-time console login URL. */
export async function consoleLoginUrl(api: string, token: string): Promise<string> {
  const r = (await apiCall(api, token, 'POST', '/v1/console/login', {})) as { path: string };
  return `http://${api}${r.path}`;
}
