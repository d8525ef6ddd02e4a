/**
 * The client side of the daemon's control API (src/node/api.ts): what the CLI
 * and the devnet use to call a running daemon. Light on purpose: a CLI command
 * that only talks to the daemon loads this, not the server, libp2p or the stores.
 */
import { C0Error } from '../errors.js';

/** The bearer token's file in the data directory (0600). */
export const TOKEN_FILE = 'api.token';

/** Client side (the CLI): call the daemon. */
export async function apiCall(base: string, token: string, method: 'GET' | 'POST', path: string, body?: unknown): Promise<unknown> {
  let res: Response;
  try {
    res = await fetch(`http://${base}${path}`, { method, headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  } catch (e) {
    throw new C0Error('DAEMON_UNREACHABLE', `cannot reach the daemon at ${base}: ${(e as Error).message}`);
  }
  const data = (await answerJson(res, base)) as { error?: { code: string; message: string } };
  if (!res.ok) throw new C0Error(data.error?.code ?? 'DAEMON_ERROR', data.error?.message ?? `daemon answered ${res.status}`);
  return data;
}

/** Client side: a streaming call yielding NDJSON events. */
export async function* apiStream(base: string, token: string, path: string, body: unknown): AsyncGenerator<Record<string, unknown>> {
  let res: Response;
  try {
    res = await fetch(`http://${base}${path}`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  } catch (e) {
    throw new C0Error('DAEMON_UNREACHABLE', `cannot reach the daemon at ${base}: ${(e as Error).message}`);
  }
  if (!res.ok || !res.body) {
    const data = (await res.json().catch(() => ({}))) as { error?: { code: string; message: string } };
    throw new C0Error(data.error?.code ?? 'DAEMON_ERROR', data.error?.message ?? `daemon answered ${res.status}`);
  }
  const chunks = (res.body as unknown as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]();
  try {
    yield* ndjson(chunks, base);
  } finally {
    // a caller that stops early (break, return, throw) closes the answer: the daemon sees it leave
    await chunks.return?.().catch(() => {});
  }
}

async function* ndjson(chunks: AsyncIterator<Uint8Array>, base: string): AsyncGenerator<Record<string, unknown>> {
  const dec = new TextDecoder();
  let buf = '';
  for (;;) {
    let next: IteratorResult<Uint8Array>;
    try {
      next = await chunks.next();
    } catch (e) {
      // the daemon stopped (or restarted) while it streamed: what it was doing may go on, or may have ended with it
      throw new C0Error('DAEMON_STREAM_LOST', `the connection to the daemon at ${base} broke while it answered (${(e as Error).message}); what it was doing may still be running there (a job: \`c0mpute jobs\`)`);
    }
    // the last line may come without its newline
    if (next.done) buf += dec.decode() + '\n';
    else buf += dec.decode(next.value, { stream: true });
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
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
async function answerJson(res: Response, base: string): Promise<unknown> {
  const text = await res.text().catch((e: unknown) => {
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
