/**
 * The console page's plumbing (docs/console.md): API calls with the session
 * cookie and the session's key (the x-c0mpute-console header: the daemon
 * takes the cookie only with it), the hooks on the live feed (ui/feed.ts:
 * /v1/console/events, one stream for all the tabs of a session), and small
 * formatting helpers. Views refetch when the feed says something they show
 * has changed (docs/console.md "Live updates").
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { Refetch } from './refetch.js';
import { ApiError, CONNECTION_LOST, connectionLost, readAnswer } from './api.js';
import { Ticker } from './clock.js';
import { RunEvents } from '../src/util/run-log.js';
import { printable } from '../src/util/text.js';
import { joulesText } from '../src/util/joules.js';
import { shortDid as shortDidText } from '../src/util/did-text.js';

export { looksLikeDid } from '../src/util/did-text.js';
export { ApiError, CONNECTION_LOST } from './api.js';
export { ago, fmtDuration, plural } from './format.js';
import { feedState, onFeed, onFeedState, readLines, startFeed as startSharedFeed, type FeedEvent, type FeedState } from './feed.js';

export type { FeedEvent, FeedState, HealthSample } from './feed.js';

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
  // the daemon down: CONNECTION_LOST, not fetch's "TypeError: Failed to fetch"; no JSON: the HTTP status (ui/api.ts)
  const res = await fetch(path, { credentials: 'same-origin', headers: keyHeader() }).catch(() => {
    throw connectionLost();
  });
  if (res.status === 401) loggedOut();
  return readAnswer<T>(res);
}

/**
 * POST a JSON body and read the NDJSON stream the daemon answers with, event by
 * event. A connection lost on the way (fetch's bare "TypeError: network
 * error") is ApiError CONNECTION_LOST, saying what it means.
 */
export async function postStream(path: string, body: unknown, onEvent: (ev: Record<string, unknown>) => void): Promise<void> {
  const lost = (e: unknown): never => {
    if (e instanceof ApiError) throw e;
    throw new ApiError(CONNECTION_LOST, "the connection to the node was lost; the job's outcome, once the node has one, is on the Jobs page", 0);
  };
  const res = await fetch(path, { method: 'POST', credentials: 'same-origin', headers: { 'content-type': 'application/json', ...keyHeader() }, body: JSON.stringify(body) }).catch(lost);
  if (res.status === 401) loggedOut();
  if (!res.ok || !res.body) {
    const data = (await res.json().catch(() => ({}))) as { error?: { code: string; message: string } };
    throw new ApiError(data.error?.code ?? 'ERROR', data.error?.message ?? `HTTP ${res.status}`, res.status);
  }
  await readLines(res.body, (line) => {
    if (line.trim()) onEvent(JSON.parse(line) as Record<string, unknown>);
  }).catch(lost);
}

// ---------------------------------------------------------------------------
// The live feed (ui/feed.ts: one stream for all the tabs of a session)
// ---------------------------------------------------------------------------

type Listener = (e: FeedEvent) => void;

export function startFeed(): void {
  startSharedFeed({
    open: (signal) => fetch('/v1/console/events', { credentials: 'same-origin', cache: 'no-store', headers: keyHeader(), signal }),
    unauthorized: () => window.location.assign('/ui/login'),
    session: sessionKey() ?? '',
  });
}

/** The feed's state: live, connecting, or stale (the node silent for twice its ping interval). */
export function useFeedState(): FeedState {
  const [s, set] = useState(feedState());
  useEffect(() => {
    const off = onFeedState(set);
    // the feed may have connected between the render and this effect
    set(feedState());
    return off;
  }, []);
  return s;
}

export function useFeed(l: Listener, deps: unknown[] = []): void {
  useEffect(() => onFeed(l), deps);
}

const ticker = new Ticker();

/**
 * The time, redrawing the component every `periodMs` (one shared timer per period; ui/clock.ts): for views that show
 * relative times ("15 s ago"), which the feed's events alone would leave frozen. Nothing is refetched. While the tab
 * is hidden the time is not updated (no redraw nobody sees); it is on the next tick once shown.
 */
export function useNow(periodMs = 5000): number {
  const [now, set] = useState(Date.now());
  useEffect(
    () =>
      ticker.subscribe(periodMs, (t) => {
        if (!document.hidden) set(t);
      }),
    [periodMs],
  );
  return now;
}

/** `value` once it has stayed the same for `ms` (a search box's text, sent to the daemon once typing pauses). */
export function useDebounced<T>(value: T, ms = 300): T {
  const [settled, setSettled] = useState(value);
  useEffect(() => {
    const t = window.setTimeout(() => setSettled(value), ms);
    return () => clearTimeout(t);
  }, [value, ms]);
  return settled;
}

/**
 * A version number that goes up (at most once per `minMs`) when the feed
 * carries something `relevant`, or comes back after a drop (`resync`: what it
 * carried meanwhile was missed): views refetch on it instead of polling.
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
      if ((e.type !== 'resync' && !relevant(e)) || timer !== undefined) return;
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
    const off = onFeed(l);
    document.addEventListener('visibilitychange', shown);
    return () => {
      off();
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

/**
 * Text another node wrote (a failure message, a progress line, a reason, a region, a GPU's model) as the page
 * shows it: control characters and the bidirectional controls (overrides, embeddings, isolates, the marks) written
 * as `\u202e`-style escapes, as the CLI prints them (src/util/text.ts). Shown as sent, a right-to-left override
 * made a failure read as "verified", and an unclosed isolate reordered the rest of the line.
 */
export function peer(v: unknown): string {
  return printable(String(v ?? ''));
}

/** A DID's short form (src/util/did-text.ts: 8 + 4 key characters; anything not a DID escaped as `peer` does). */
export function shortDid(did: string | undefined): string {
  if (!did) return '—';
  return shortDidText(did);
}

export function shortAddr(a: string | undefined): string {
  if (!a) return '—';
  return a.startsWith('sha256:') ? `${a.slice(7, 15)}…` : a;
}

export function fmtMiB(m: number | undefined): string {
  if (m === undefined) return '—';
  return m >= 1024 ? `${(m / 1024).toFixed(m % 1024 ? 1 : 0)} GiB` : `${m} MiB`;
}

/** Energy from microjoules as `c0mpute steward status` prints it: `52.5 J` (src/util/joules.ts, shared). */
export function fmtJoules(uj: number | undefined): string {
  if (uj === undefined) return '—';
  return joulesText(uj);
}

export function money(m: { amount: string; currency: string } | undefined): string {
  return m ? `${m.amount} ${m.currency}` : '—';
}

export const ADDRESS_RE = /^sha256:[0-9a-f]{64}$/;

export function overlayQuery(overlay: string | undefined, first = true): string {
  return overlay ? `${first ? '?' : '&'}overlay=${encodeURIComponent(overlay)}` : '';
}
