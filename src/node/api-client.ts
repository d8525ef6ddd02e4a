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
  const data = (await res.json()) as { error?: { code: string; message: string } };
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
  const dec = new TextDecoder();
  let buf = '';
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    buf += dec.decode(chunk, { stream: true });
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (line.trim()) yield JSON.parse(line) as Record<string, unknown>;
    }
  }
}

/** Client side (the CLI, the devnet): ask a running daemon for a one-time console login URL. */
export async function consoleLoginUrl(api: string, token: string): Promise<string> {
  const r = (await apiCall(api, token, 'POST', '/v1/console/login', {})) as { path: string };
  return `http://${api}${r.path}`;
}
