/**
 * The console page's plumbing (docs/console.md): API calls with the session
 * cookie (POSTs carry the x-c0mpute-console header the daemon requires of a
 * cookie), the live feed from /v1/console/events (Server-Sent Events), and
 * small formatting helpers. No polling: views refetch when the feed says
 * something they show has changed.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { Refetch } from './refetch.js';

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

export async function getJson<T>(path: string): Promise<T> {
  const res = await fetch(path, { credentials: 'same-origin' });
  if (res.status === 401) loggedOut();
  const data = (await res.json()) as T & { error?: { code: string; message: string } };
  if (!res.ok) throw new ApiError(data.error?.code ?? 'ERROR', data.error?.message ?? `HTTP ${res.status}`, res.status);
  return data;
}

/** POST a JSON body and read the NDJSON stream the daemon answers with, event by event. */
export async function postStream(path: string, body: unknown, onEvent: (ev: Record<string, unknown>) => void): Promise<void> {
  const res = await fetch(path, { method: 'POST', credentials: 'same-origin', headers: { 'content-type': 'application/json', 'x-c0mpute-console': '1' }, body: JSON.stringify(body) });
  if (res.status === 401) loggedOut();
  if (!res.ok || !res.body) {
    const data = (await res.json().catch(() => ({}))) as { error?: { code: string; message: string } };
    throw new ApiError(data.error?.code ?? 'ERROR', data.error?.message ?? `HTTP ${res.status}`, res.status);
  }
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let buf = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true });
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (line.trim()) onEvent(JSON.parse(line) as Record<string, unknown>);
    }
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
let source: EventSource | undefined;
let connected = false;
const stateListeners = new Set<(c: boolean) => void>();

export function startFeed(): void {
  if (source) return;
  source = new EventSource('/v1/console/events');
  for (const type of ['records', 'job', 'health']) {
    source.addEventListener(type, (m) => {
      const e = JSON.parse((m as MessageEvent<string>).data) as FeedEvent;
      for (const l of listeners) l(e);
    });
  }
  source.onopen = () => setConnected(true);
  source.onerror = () => {
    setConnected(false);
    // The stream is refused once the session ends: find out, and go to the login page if so.
    void fetch('/v1/console/overview', { credentials: 'same-origin' }).then((r) => {
      if (r.status === 401) loggedOut();
    }, () => undefined);
  };
}

function setConnected(c: boolean): void {
  connected = c;
  for (const l of stateListeners) l(c);
}

export function useConnected(): boolean {
  const [c, set] = useState(connected);
  useEffect(() => {
    stateListeners.add(set);
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
 */
export function useLiveVersion(relevant: (e: FeedEvent) => boolean, minMs = 1000): number {
  const [v, setV] = useState(0);
  useEffect(() => {
    let last = 0;
    let timer: number | undefined;
    const l: Listener = (e) => {
      if (!relevant(e) || timer !== undefined) return;
      const wait = Math.max(0, last + minMs - Date.now());
      timer = window.setTimeout(() => {
        timer = undefined;
        last = Date.now();
        setV((x) => x + 1);
      }, wait);
    };
    listeners.add(l);
    return () => {
      listeners.delete(l);
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

/** Fetch `path` (null: nothing) and again whenever `version` changes; keeps the last data while reloading. */
export function useJson<T>(path: string | null, version = 0): Loaded<T> {
  const [s, set] = useState<Loaded<T>>({ loading: path !== null });
  const fetcher = useRef<Refetch<T> | undefined>(undefined);
  // One fetcher per path: a new path (another job, another overlay) starts empty and ignores the old one's answers.
  useEffect(() => {
    set({ loading: path !== null });
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
