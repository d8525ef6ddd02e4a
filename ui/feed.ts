/**
 * The console's live feed (docs/console.md "Live updates"): the daemon's
 * Server-Sent Events stream, `/v1/console/events`, read with fetch (so that it
 * carries the session's key), one stream for all the tabs of a session.
 *
 * - **One stream per browser, not per tab.** Chromium opens at most 6 HTTP/1.1
 *   connections to one host:port, and a stream holds one for as long as the
 *   page is open: with a stream per tab, a sixth console tab of a node never
 *   got its data and froze the others. Now the tabs holding the same session
 *   key elect a leader with a Web Lock; the leader alone reads the stream and
 *   passes each event to the others over a BroadcastChannel. When the leader
 *   tab closes (or goes to the login page), the browser releases its lock and
 *   the next tab waiting for it takes over.
 * - Where the browser has no Web Locks (they need a secure context: the
 *   console served on a plain-http address other than loopback), each tab
 *   reads its own stream, and drops it while hidden (one refetch when shown
 *   again), so only the tabs in view hold a connection.
 * - **Silence is a drop.** The daemon sends something at least every ping
 *   interval (its `hello` says how often; a comment line when there is nothing
 *   else): a stream silent for twice that (a stalled daemon, a dead
 *   connection) is "stale": the page says so, drops it and reconnects.
 * - After a drop, whatever the stream carried meanwhile was missed: the feed
 *   tells every view to refetch (`resync`) once it is back.
 */
import { LineSplitter } from '../src/util/lines.js';

export interface HealthSample {
  at: number;
  lagMs: number;
  overlays: Record<string, { peers: number; running: number; queues: Record<string, number>; records: Record<string, Record<string, number>> }>;
}

export type FeedEvent =
  | { type: 'records'; overlay: string; counts: Record<string, number>; last: Array<{ kind: string; address: string; signer: string }> }
  | { type: 'job'; overlay: string; run: number; job?: string; ev: Record<string, unknown> & { e: string } }
  | { type: 'health'; sample: HealthSample }
  /** The feed is back after a drop: whatever it carried meanwhile was missed (every view refetches). */
  | { type: 'resync' };

/** `live`: events flow; `connecting`: not (yet, or again) connected; `stale`: the node sent nothing for twice its ping interval, reconnecting. */
export type FeedState = 'connecting' | 'live' | 'stale';

/** What the leader tab tells the others. */
type Message =
  | { t: 'event'; e: FeedEvent }
  | { t: 'state'; state: FeedState; pingMs: number }
  /** the stream carried a keep-alive */
  | { t: 'beat' }
  /** a new tab asks the leader for the state */
  | { t: 'ask' };

export interface FeedDeps {
  /** Open the stream (the session's key in its header). */
  open(signal: AbortSignal): Promise<Response>;
  /** The session ended (a 401): go to the login page. */
  unauthorized(): void;
  /** Names this session's lock and channel: tabs of another session (another key) do not share a stream. */
  session: string;
}

/** How long the feed waits before it reconnects (the stream's `retry:`, as EventSource would). */
export const RETRY_MS = 2000;
/** The daemon's keep-alive interval until its `hello` says otherwise (src/node/console-routes.ts CONSOLE_PING_MS). */
const PING_MS = 15_000;
/** Silent for this many ping intervals, the stream is stale. */
const STALE_PINGS = 2;
const FEED_TYPES = new Set(['records', 'job', 'health']);

const listeners = new Set<(e: FeedEvent) => void>();
const stateListeners = new Set<(s: FeedState) => void>();
let state: FeedState = 'connecting';
let pingMs = PING_MS;
let started = false;
/** This tab has seen the feed live: a later reconnection may have missed events. */
let wasLive = false;

export function feedState(): FeedState {
  return state;
}

export function onFeed(l: (e: FeedEvent) => void): () => void {
  listeners.add(l);
  return () => void listeners.delete(l);
}

export function onFeedState(l: (s: FeedState) => void): () => void {
  stateListeners.add(l);
  return () => void stateListeners.delete(l);
}

function dispatch(e: FeedEvent): void {
  for (const l of listeners) l(e);
}

function setState(s: FeedState): void {
  if (s === 'live') wasLive = true;
  if (s === state) return;
  state = s;
  for (const l of stateListeners) l(s);
}

/** Calls `quiet` when `heard` has not been called for `limit()` ms. */
class Silence {
  #timer: ReturnType<typeof setTimeout> | undefined;
  constructor(
    private readonly limit: () => number,
    private readonly quiet: () => void,
  ) {}
  heard(): void {
    this.stop();
    this.#timer = setTimeout(this.quiet, this.limit());
  }
  stop(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}

/** Read a response body line by line (`\n`-separated; a last line without one is not a line); `chunk` on every piece that arrives. */
export async function readLines(body: ReadableStream<Uint8Array>, onLine: (line: string) => void, chunk?: () => void): Promise<void> {
  const reader = body.getReader();
  const dec = new TextDecoder();
  // each piece scanned once (a run's result with a large output is one line of many pieces: src/util/lines.ts)
  const split = new LineSplitter();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunk?.();
    for (const line of split.push(dec.decode(value, { stream: true }))) onLine(line);
  }
}

const sleep = (ms: number) => new Promise((ok) => setTimeout(ok, ms));

/**
 * Read the stream, reconnecting after a drop or a silence, for as long as the
 * tab lives; `share` passes on what it carries (to the other tabs). Returns
 * only when the session has ended. With `whileShown`, the stream is dropped
 * while the tab is hidden.
 */
async function read(deps: FeedDeps, share: (m: Message) => void, whileShown: boolean): Promise<void> {
  const publish = (s: FeedState) => {
    setState(s);
    share({ t: 'state', state: s, pingMs });
  };
  for (;;) {
    if (whileShown && document.hidden) await new Promise<void>((ok) => document.addEventListener('visibilitychange', () => ok(), { once: true }));
    if (whileShown && document.hidden) continue;
    const ctl = new AbortController();
    let silent = false;
    const watch = new Silence(
      () => STALE_PINGS * pingMs,
      () => {
        silent = true;
        ctl.abort();
      },
    );
    const hidden = () => {
      if (document.hidden) ctl.abort();
    };
    if (whileShown) document.addEventListener('visibilitychange', hidden);
    watch.heard();
    try {
      const res = await deps.open(ctl.signal);
      if (res.status === 401) {
        deps.unauthorized();
        return;
      }
      if (res.ok && res.body) {
        if (wasLive) {
          dispatch({ type: 'resync' });
          share({ t: 'event', e: { type: 'resync' } });
        }
        publish('live');
        let type = 'message';
        let data: string[] = [];
        await readLines(
          res.body,
          (line) => {
            if (line === '') {
              if (data.length > 0 && type === 'hello') {
                const ms = Number((JSON.parse(data.join('\n')) as { pingMs?: unknown }).pingMs);
                if (Number.isFinite(ms) && ms >= 50 && ms <= 3_600_000) {
                  pingMs = ms;
                  publish('live');
                  watch.heard();
                }
              } else if (FEED_TYPES.has(type) && data.length > 0) {
                const e = JSON.parse(data.join('\n')) as FeedEvent;
                dispatch(e);
                share({ t: 'event', e });
              }
              type = 'message';
              data = [];
            } else if (line.startsWith(':')) share({ t: 'beat' });
            else if (line.startsWith('event:')) type = line.slice(6).trim();
            else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
          },
          () => watch.heard(),
        );
      }
    } catch {
      // dropped, aborted (silent, or the tab hidden), or refused: reconnect
    } finally {
      watch.stop();
      if (whileShown) document.removeEventListener('visibilitychange', hidden);
    }
    publish(silent ? 'stale' : 'connecting');
    await sleep(RETRY_MS);
  }
}

/** A short name for the session (the lock's and the channel's): not the key itself. */
function tag(s: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193) >>> 0;
  return h.toString(16);
}

/** Start the feed: lead it (read the stream) or follow the tab that does. */
export function startFeed(deps: FeedDeps): void {
  if (started) return;
  started = true;
  const locks = (navigator as Navigator & { locks?: LockManager }).locks;
  if (!locks || typeof BroadcastChannel === 'undefined') {
    void read(deps, () => undefined, true);
    return;
  }
  const name = `c0mpute.console.feed.${tag(deps.session)}`;
  const channel = new BroadcastChannel(name);
  let leading = false;
  // a follower: the leader's word, or its silence
  const watch = new Silence(
    () => (STALE_PINGS + 1) * pingMs,
    () => setState('stale'),
  );
  channel.onmessage = (m: MessageEvent<Message>) => {
    const msg = m.data;
    if (leading) {
      if (msg.t === 'ask') channel.postMessage({ t: 'state', state, pingMs } satisfies Message);
      return;
    }
    if (msg.t === 'ask') return;
    if (msg.t === 'state') {
      pingMs = msg.pingMs;
      setState(msg.state);
    } else {
      if (msg.t === 'event') dispatch(msg.e);
      // the leader's word again after a silence this tab took for a stall (the leader tab was frozen a while, say)
      if (state === 'stale') setState('live');
    }
    if (state === 'live') watch.heard();
    else watch.stop();
  };
  channel.postMessage({ t: 'ask' } satisfies Message);
  // the leader going away: the others show "reconnecting" until the next one has its stream
  window.addEventListener('pagehide', () => {
    if (leading) channel.postMessage({ t: 'state', state: 'connecting', pingMs } satisfies Message);
  });
  locks
    .request(name, async () => {
      leading = true;
      watch.stop();
      // held for as long as the tab lives (the browser releases it when the tab closes), or until the session ends
      await read(deps, (msg) => channel.postMessage(msg), false);
    })
    .catch(() => {
      // no lock to be had (the browser refused the request): this tab reads a stream of its own
      if (!leading) {
        leading = true;
        void read(deps, () => undefined, true);
      }
    });
}
