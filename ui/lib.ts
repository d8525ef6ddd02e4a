/**
 * The console page's plumbing (docs/console.md): API calls with the session
 * cookie and the session's key (the x-c0mpute-console header: the daemon
 * takes the cookie only with it), the live feed from /v1/console/events
 * (Server-Sent Events, read with fetch so that it carries the key too), and
 * small formatting helpers. No polling: views refetch when the feed says
 * something they show has changed.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { Refetch } from './refetch.js';
import { RunEvents } from '../src/util/run-log.js';
import { LineSplitter } from '../src/util/lines.js';

export class ApiError extends Error {
  constructor(readonly code: string, message: string, readonly status: number) {
    super(message);
  }
}

/** Where a 401 sends the page: the daemon's login page. */
function loggedOut(): never {
  window.location.assign('/ui/login');
  throw new ApiError('UNAUTHORIZED', 'the session has ended', 401);
}

// ---------------------------------------------------------------------------
// The session's key
// ---------------------------------------------------------------------------

const KEY_ITEM = 'c0mpute.console.key';
const KEY_RE = /^[A-Za-z0-9_-]{43}$/;

/**
 * Take the session's key from the URL the login link redirected to
 * (`/ui/#k=<key>`) into this tab's sessionStorage (the console's origin
 * only: no other server on the host can read it), and take it out of the
 * URL and the history. False when this tab holds no key: the page then goes
 * to the login page.
 */
export function adoptKey(): boolean {
  const m = /^#k=([A-Za-z0-9_-]{43})$/.exec(window.location.hash);
  if (m) {
    window.sessionStorage.setItem(KEY_ITEM, m[1]!);
    window.history.replaceState(null, '', `${window.location.pathname}${window.location.search}#/`);
  }
  return sessionKey() !== undefined;
}

function sessionKey(): string | undefined {
  const k = window.sessionStorage.getItem(KEY_ITEM);
  return k && KEY_RE.test(k) ? k : undefined;
}

/** The header every API call carries: the session's key (the cookie alone opens nothing). */
function keyHeader(): Record<string, string> {
  return { 'x-c0mpute-console': sessionKey() ?? '' };
}

/** Leave for the login page when this tab holds no key. */
export function requireKey(): boolean {
  if (adoptKey()) return true;
  window.location.assign('/ui/login');
  return false;
}

export async function getJson<T>(path: string): Promise<T> {
  const res = await fetch(path, { credentials: 'same-origin', headers: keyHeader() });
  if (res.status === 401) loggedOut();
  const data = (await res.json()) as T & { error?: { code: string; message: string } };
  if (!res.ok) throw new ApiError(data.error?.code ?? 'ERROR', data.error?.message ?? `HTTP ${res.status}`, res.status);
  return data;
}

/** POST a JSON body and read the NDJSON stream the daemon answers with, event by event. */
export async function postStream(path: string, body: unknown, onEvent: (ev: Record<string, unknown>) => void): Promise<void> {
  const res = await fetch(path, { method: 'POST', credentials: 'same-origin', headers: { 'content-type': 'application/json', ...keyHeader() }, body: JSON.stringify(body) });
  if (res.status === 401) loggedOut();
  if (!res.ok || !res.body) {
    const data = (await res.json().catch(() => ({}))) as { error?: { code: string; message: string } };
    throw new ApiError(data.error?.code ?? 'ERROR', data.error?.message ?? `HTTP ${res.status}`, res.status);
  }
  await readLines(res.body, (line) => {
    if (line.trim()) onEvent(JSON.parse(line) as Record<string, unknown>);
  });
}

/** Read a response body line by line (`\n`-separated; a last line without one is not a line). */
async function readLines(body: ReadableStream<Uint8Array>, onLine: (line: string) => void): Promise<void> {
  const reader = body.getReader();
  const dec = new TextDecoder();
  // each piece scanned once (a run's result with a large output is one line of many pieces: src/util/lines.ts)
  const split = new LineSplitter();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    for (const line of split.push(dec.decode(value, { stream: true }))) onLine(line);
  }
}

// ---------------------------------------------------------------------------
// The live feed
// ---------------------------------------------------------------------------

export interface HealthSample {
  at: number;
  lagMs: number;
  overlays: Record<string, { peers: number; running: number; queues: Record<string, number>; records: Record<string, Record<string, number>> }>;
}

export type FeedEvent =
  | { type: 'records'; overlay: string; counts: Record<string, number>; last: Array<{ kind: string; address: string; signer: string }> }
  | { type: 'job'; overlay: string; run: number; job?: string; ev: Record<string, unknown> & { e: string } }
  | { type: 'health'; sample: HealthSample };

type Listener = (e: FeedEvent) => void;
const listeners = new Set<Listener>();
let started = false;
let connected = false;
const stateListeners = new Set<(c: boolean) => void>();
const FEED_TYPES = new Set(['records', 'job', 'health']);
/** How long the feed waits before it reconnects (the stream's `retry:`, as EventSource would). */
const RETRY_MS = 2000;

/**
 * The live feed: `/v1/console/events` read with fetch (EventSource cannot
 * send the key's header), parsed as Server-Sent Events, reconnecting after a
 * drop; a 401 (the session ended) goes to the login page.
 */
export function startFeed(): void {
  if (started) return;
  started = true;
  void (async () => {
    for (;;) {
      try {
        const res = await fetch('/v1/console/events', { credentials: 'same-origin', cache: 'no-store', headers: keyHeader() });
        if (res.status === 401) loggedOut();
        if (res.ok && res.body) {
          setConnected(true);
          let type = 'message';
          let data: string[] = [];
          await readLines(res.body, (line) => {
            if (line === '') {
              if (FEED_TYPES.has(type) && data.length > 0) {
                const e = JSON.parse(data.join('\n')) as FeedEvent;
                for (const l of listeners) l(e);
              }
              type = 'message';
              data = [];
            } else if (line.startsWith('event:')) type = line.slice(6).trim();
            else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
          });
        }
      } catch (e) {
        if (e instanceof ApiError && e.status === 401) return;
      }
      setConnected(false);
      await new Promise((ok) => setTimeout(ok, RETRY_MS));
    }
  })();
}

function setConnected(c: boolean): void {
  connected = c;
  for (const l of stateListeners) l(c);
}

export function useConnected(): boolean {
  const [c, set] = useState(connected);
  useEffect(() => {
    stateListeners.add(set);
    // the feed may have connected between the render and this effect
    set(connected);
    return () => void stateListeners.delete(set);
  }, []);
  return c;
}

export function useFeed(l: Listener, deps: unknown[] = []): void {
  useEffect(() => {
    listeners.add(l);
    return () => void listeners.delete(l);
  }, deps);
}

/**
 * A version number that goes up (at most once per `minMs`) when the feed
 * carries something `relevant`: views refetch on it instead of polling.
 * While the tab is hidden it does not go up: a change seen then is one
 * refetch when the tab is shown again, not one every `minMs` nobody sees.
 */
export function useLiveVersion(relevant: (e: FeedEvent) => boolean, minMs = 1000): number {
  const [v, setV] = useState(0);
  useEffect(() => {
    let last = 0;
    let timer: number | undefined;
    let missed = false;
    const bump = () => {
      if (document.hidden) {
        missed = true;
        return;
      }
      last = Date.now();
      setV((x) => x + 1);
    };
    const l: Listener = (e) => {
      if (!relevant(e) || timer !== undefined) return;
      const wait = Math.max(0, last + minMs - Date.now());
      timer = window.setTimeout(() => {
        timer = undefined;
        bump();
      }, wait);
    };
    const shown = () => {
      if (!document.hidden && missed) {
        missed = false;
        bump();
      }
    };
    listeners.add(l);
    document.addEventListener('visibilitychange', shown);
    return () => {
      listeners.delete(l);
      document.removeEventListener('visibilitychange', shown);
      if (timer !== undefined) clearTimeout(timer);
    };
  }, []);
  return v;
}

export interface Loaded<T> {
  data?: T;
  error?: ApiError;
  loading: boolean;
}

/**
 * Fetch `path` (null: nothing) and again whenever `version` changes; keeps the
 * last data while reloading. With `keep`, a new path keeps showing the old
 * path's data until its own arrives (another page or filter of one list).
 */
export function useJson<T>(path: string | null, version = 0, keep = false): Loaded<T> {
  const [s, set] = useState<Loaded<T>>({ loading: path !== null });
  const fetcher = useRef<Refetch<T> | undefined>(undefined);
  // One fetcher per path: a new path (another job, another overlay) starts empty and ignores the old one's answers.
  useEffect(() => {
    set((p) => (keep && path !== null ? { ...p, loading: true } : { loading: path !== null }));
    if (path === null) return;
    const f = new Refetch<T>(
      () => getJson<T>(path),
      (o, more) => set((p) => ('data' in o ? { data: o.data, loading: more } : { ...p, error: o.error instanceof ApiError ? o.error : new ApiError('ERROR', String(o.error), 0), loading: more })),
    );
    fetcher.current = f;
    return () => f.close();
  }, [path]);
  useEffect(() => {
    if (path === null) return;
    set((p) => ({ ...p, loading: true }));
    fetcher.current?.request();
  }, [path, version]);
  return s;
}

/**
 * A running job's events as a page holds them: bounded as the daemon bounds
 * the run's log (src/util/run-log.ts: the last 300, the oldest progress going
 * first), with one redraw per animation frame however fast they come. A new
 * `key` (another job, another run) starts an empty log.
 */
export function useRunEvents<E extends { e: string }>(key: unknown): { log: RunEvents<E>; push(ev: E): void; clear(): void } {
  const [, redraw] = useState(0);
  const r = useRef<{ key: unknown; h: { log: RunEvents<E>; push(ev: E): void; clear(): void } } | undefined>(undefined);
  if (!r.current || r.current.key !== key) {
    let frame: number | undefined;
    const h = {
      log: new RunEvents<E>(),
      push(ev: E) {
        h.log.push(ev);
        frame ??= window.requestAnimationFrame(() => {
          frame = undefined;
          redraw((x) => x + 1);
        });
      },
      clear() {
        h.log = new RunEvents<E>();
        redraw((x) => x + 1);
      },
    };
    r.current = { key, h };
  }
  return r.current.h;
}

// ---------------------------------------------------------------------------
// Formatting
// ---------------------------------------------------------------------------

export function shortDid(did: string | undefined): string {
  if (!did) return '—';
  return did.startsWith('did:key:') ? `${did.slice(8, 14)}…${did.slice(-4)}` : did;
}

export function shortAddr(a: string | undefined): string {
  if (!a) return '—';
  return a.startsWith('sha256:') ? `${a.slice(7, 15)}…` : a;
}

export function ago(t: number | undefined, now = Date.now()): string {
  if (!t) return '—';
  const s = Math.round((now - t) / 1000);
  if (s < 0) return `in ${fmtDuration(-s * 1000)}`;
  return `${fmtDuration(s * 1000)} ago`;
}

export function fmtDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 90) return `${s.toFixed(s < 10 ? 1 : 0)} s`;
  const m = s / 60;
  if (m < 90) return `${m.toFixed(0)} min`;
  return `${(m / 60).toFixed(1)} h`;
}

export function fmtMiB(m: number | undefined): string {
  if (m === undefined) return '—';
  return m >= 1024 ? `${(m / 1024).toFixed(m % 1024 ? 1 : 0)} GiB` : `${m} MiB`;
}

export function fmtJoules(uj: number | undefined): string {
  if (uj === undefined) return '—';
  return `${(uj / 1e6).toFixed(uj < 1e7 ? 2 : 0)} J`;
}

export function money(m: { amount: string; currency: string } | undefined): string {
  return m ? `${m.amount} ${m.currency}` : '—';
}

export const ADDRESS_RE = /^sha256:[0-9a-f]{64}$/;

export function overlayQuery(overlay: string | undefined, first = true): string {
  return overlay ? `${first ? '?' : '&'}overlay=${encodeURIComponent(overlay)}` : '';
}
