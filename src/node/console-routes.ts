/**
 * The operator's console on the control API (issue #15; docs/console.md):
 *
 * - `/ui/…`: the built page (dist/ui, made by scripts/build-ui.mjs at
 *   `npm run build`), served only to a browser holding a console session;
 *   anything else gets the login page (401). `/ui/login?code=` redeems a
 *   one-time code minted with the API token (`c0mpute console` prints the
 *   URL), sets the session cookie (HttpOnly, SameSite=Strict, Path=/, named
 *   per API port; every value sent under the name is read, since another
 *   port of the host can plant one that the browser sends first) and
 *   redirects to `/ui/#k=<the session's key>`: the page keeps the key in its
 *   tab's sessionStorage.
 * - The page calls the ordinary `/v1/…` routes, and the event stream, with
 *   the cookie and the key as the `x-c0mpute-console` header: the two
 *   together count as the token, any method; the cookie alone counts for
 *   nothing but the page's own files (cookies are per host, not per port: the
 *   browser sends it to every server on 127.0.0.1; the key stays with the
 *   console's origin). A live cookie without its key is 401
 *   CONSOLE_KEY_REFUSED. Minting a login code needs the token itself. The
 *   Host and Origin checks (api-guard.ts) run before any of this.
 * - `/v1/console/events`: Server-Sent Events from the console hub
 *   (console-hub.ts): records, job events, health samples, after a `hello`
 *   with the stream's ping interval. The page reads it with fetch, not
 *   EventSource (which cannot send the key's header), one stream for all the
 *   tabs of a session (ui/feed.ts).
 * - `/v1/console/*` routes for what the page shows beyond the CLI's routes:
 *   overview and health, the node's jobs as buyer and provider, a job's walk,
 *   any held record decoded, running a job from job-file text.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { C0Error } from '../errors.js';
import { requireDid } from '../records/did.js';
import { isAddress } from '../records/address.js';
import { knownTypes, open, type Opened } from '../records/envelope.js';
import { T } from '../records/kinds.js';
import { allowedMethods, routedMethod, type ApiResponse, type Route } from './api.js';
// The client side lives in api-client.ts (light: the CLI loads it without this module).
export { consoleLoginUrl } from './api-client.js';
import { bearerMatches } from './api-guard.js';
import type { Daemon } from './daemon.js';
import type { OverlayNode } from './overlay.js';
import { toWire, wireRecord } from './events.js';
import type { ConsoleSessions} from './console-session.js';
import { cookieValues } from './console-session.js';
import type { ConsoleHub } from './console-hub.js';
import { parseJobFileText } from './jobfile.js';
import { historyOf, jobHistory, newest, outcomeNow, parseJobsPage, providedReceipts, type HistoryJob } from './job-history.js';
import { NO_PROVIDER_ENDED, noProviderStatus } from '../util/run-failure.js';

/** The console's Jobs page shows the newest this many of each list; a provider's evidence page, the newest receipts and non-deliveries up to the second. */
const CONSOLE_JOBS = 50;
const CONSOLE_EVIDENCE = 200;

/** Where the built page lives: dist/ui beside dist/src. */
export const UI_DIR = fileURLToPath(new URL('../../ui/', import.meta.url));

const ASSETS: Record<string, { file: string; type: string; open?: boolean }> = {
  '/ui/app.js': { file: 'app.js', type: 'text/javascript; charset=utf-8' },
  '/ui/style.css': { file: 'style.css', type: 'text/css; charset=utf-8', open: true },
};

const SECURITY_HEADERS = {
  'content-security-policy': "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
  'x-frame-options': 'DENY',
};

export const CONSOLE_HEADER = 'x-c0mpute-console';

export interface ConsoleGate {
  /** Serve a request that is not a JSON API call (the page, login, the event stream); true when it did. */
  serve(req: IncomingMessage, res: ServerResponse, url: URL): Promise<boolean>;
  /** Does this request (its target parsed: `url`, the path the router matches) carry a live console session, with its key, that may call the API? */
  session(req: IncomingMessage, url: URL): boolean;
  /** Why a request that holds a live session cookie but may not call the API is refused (undefined when it holds none: the plain 401). */
  refusal(req: IncomingMessage, url: URL): { code: string; message: string } | undefined;
}

export function cookieName(req: IncomingMessage): string {
  return `c0_console_${req.socket.localPort ?? 0}`;
}

export function loginPage(message: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>c0mpute console: log in</title><link rel="icon" href="data:,"><link rel="stylesheet" href="/ui/style.css"></head>
<body><main class="login" id="login"><h1>c0mpute console</h1>
<p role="alert">${message}</p>
<p>Open the console with a login link from the node's machine:</p>
<pre><code>c0mpute console --data-dir &lt;the node's data directory&gt;</code></pre>
<p>A link works once and for 10 minutes; the session it opens lasts 12 hours or until the node restarts.</p>
</main></body></html>
`;
}

/** How often the event stream says it is alive when it has nothing else to send (the page counts a stream silent for twice this as stale: docs/console.md). */
export const CONSOLE_PING_MS = 15_000;

export interface ConsoleGateOptions {
  /** The event stream's keep-alive interval (CONSOLE_PING_MS); the stream's `hello` tells the page. */
  pingMs?: number;
}

export function consoleGate(d: Daemon, sessions: ConsoleSessions, hub: ConsoleHub, token: string, o: ConsoleGateOptions = {}): ConsoleGate {
  const pingMs = o.pingMs ?? CONSOLE_PING_MS;
  // Every value sent under the name: a page on another port of this host can plant one with a narrower path, which
  // the browser sends first; any live session among them counts (a planted value is no session, and has no key).
  const sids = (req: IncomingMessage) => cookieValues(req.headers.cookie, cookieName(req));
  const live = (req: IncomingMessage) => sids(req).some((s) => sessions.valid(s));
  // The login page's first words for a request with no live session: why the cookie it sent no longer counts.
  const noSession = (req: IncomingMessage): string => {
    const why = sids(req).map((s) => sessions.whyNot(s));
    if (why.includes('expired')) return 'Your session has expired: a session lasts 12 hours after its login.';
    if (why.includes('restarted')) return 'The node’s daemon restarted since this browser logged in: sessions live in its memory and end with it.';
    return why.length > 0 ? 'Your session has expired or is not valid here.' : 'You are not logged in.';
  };
  // The session's key, which only the page holds: a cookie replayed from anywhere else comes without it.
  const keyed = (req: IncomingMessage) => {
    const k = req.headers[CONSOLE_HEADER];
    const key = typeof k === 'string' ? k : undefined;
    return sids(req).some((s) => sessions.check(s, key));
  };
  // Only the token mints login codes: a session cannot renew itself. The path the router matches, not the raw
  // target: `/v1/./console/login` is that route too.
  const minting = (url: URL) => url.pathname.startsWith('/v1/console/login');
  const page = (res: ServerResponse, status: number, html: string, extra: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', ...SECURITY_HEADERS, ...extra });
    res.end(html);
  };
  return {
    session(req, url) {
      return !minting(url) && keyed(req);
    },
    refusal(req, url) {
      if (minting(url) || !live(req) || keyed(req)) return undefined;
      return { code: 'CONSOLE_KEY_REFUSED', message: `a console session counts only with its key in the ${CONSOLE_HEADER} header, which the console page holds (open a new login link in this tab)` };
    },
    async serve(req, res, url) {
      const p = url.pathname;
      if (p === '/v1/console/events' && routedMethod(req.method) === 'GET') {
        if (!keyed(req) && !bearerMatches(req.headers.authorization, token)) return false; // the API answers 401
        if (req.method === 'HEAD') {
          res.writeHead(200, EVENTS_HEADERS);
          res.end();
          return true;
        }
        events(req, res, hub, pingMs);
        return true;
      }
      if (p !== '/ui' && !p.startsWith('/ui/')) return false;
      // HEAD is GET without the body, as on the API's routes, but not where a request acts: HEAD /ui/login would spend
      // a one-time login code (a link checker's HEAD). Logout is a POST only: a page on another port of this host is
      // same-site, so its <img src=".../ui/logout"> carried the SameSite=Strict cookie, and a GET brings no Origin.
      const acting = p === '/ui/login' || p === '/ui/logout';
      const allowed = acting ? (p === '/ui/logout' ? ['POST'] : ['GET']) : allowedMethods(['GET']);
      if (!allowed.includes(req.method ?? '')) {
        page(res, 405, loginPage('That method is not allowed here.'), { allow: allowed.join(', ') });
        return true;
      }
      const asset = ASSETS[p];
      if (asset && (asset.open || live(req))) {
        const f = join(UI_DIR, asset.file);
        if (!existsSync(f)) {
          page(res, 404, loginPage('The console was not built: run `npm run build`.'));
          return true;
        }
        res.writeHead(200, { 'content-type': asset.type, 'cache-control': 'no-cache', ...SECURITY_HEADERS });
        res.end(readFileSync(f));
        return true;
      }
      if (p === '/ui/login') {
        const got = sessions.redeem(url.searchParams.get('code'));
        if (!got) {
          const why = url.searchParams.has('code')
            ? 'This login link is not valid: it was used already, has expired, or is wrong.'
            : live(req)
              ? "This tab does not hold the key of this browser's console session: a session works in the tab its login link was opened in."
              : noSession(req);
          page(res, 401, loginPage(why));
          return true;
        }
        const maxAge = Math.max(1, Math.floor((got.expiresAt - d.clock()) / 1000));
        // The key goes in the fragment: the browser keeps it and sends it to no server; the page moves it to its tab's sessionStorage.
        res.writeHead(303, { location: `/ui/#k=${got.key}`, 'set-cookie': `${cookieName(req)}=${got.session}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${maxAge}`, 'cache-control': 'no-store', ...SECURITY_HEADERS });
        res.end();
        return true;
      }
      if (p === '/ui/logout') {
        // The Origin check (api-guard.ts) refused a foreign page's post that names its origin; a browser that says
        // where the request came from some other way (Sec-Fetch-Site) must say this origin, or the user typed it.
        const site = req.headers['sec-fetch-site'];
        if (site !== undefined && site !== 'same-origin' && site !== 'none') {
          page(res, 403, loginPage('Only the console itself can log you out: a request from another page was refused.'));
          return true;
        }
        for (const s of sids(req)) sessions.end(s);
        res.writeHead(303, { location: '/ui/login', 'set-cookie': `${cookieName(req)}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0`, ...SECURITY_HEADERS });
        res.end();
        return true;
      }
      if (!live(req)) {
        page(res, 401, loginPage(noSession(req)));
        return true;
      }
      const index = join(UI_DIR, 'index.html');
      if (!existsSync(index)) page(res, 404, loginPage('The console was not built: run `npm run build`.'));
      else page(res, 200, readFileSync(index, 'utf8'));
      return true;
    },
  };
}

const EVENTS_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-store', connection: 'keep-alive', ...SECURITY_HEADERS };

/**
 * The event stream: a `hello` saying how often it pings, then the hub's events until the page goes away, with a
 * comment line every `pingMs` (the page takes a stream silent for twice that as stale, and reconnects).
 */
function events(req: IncomingMessage, res: ServerResponse, hub: ConsoleHub, pingMs: number): void {
  res.writeHead(200, EVENTS_HEADERS);
  res.write(`retry: 2000\n\nevent: hello\ndata: ${JSON.stringify({ pingMs })}\n\n`);
  const off = hub.listen((e) => res.write(`event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`));
  const ping = setInterval(() => res.write(': ping\n\n'), pingMs);
  ping.unref();
  const close = () => {
    off();
    clearInterval(ping);
  };
  req.once('close', close);
  res.once('close', close);
}

/** The overlay a request names with `?overlay=` (default: the primary). */
function ov(d: Daemon, query: URLSearchParams): OverlayNode {
  return d.overlay(query.get('overlay') ?? undefined);
}

/** Open held bytes as whichever registered type they are (already verified when they were accepted). */
export function decodeAny(bytes: Uint8Array): Opened | undefined {
  for (const t of knownTypes()) {
    try {
      return open(bytes, t, { trusted: true });
    } catch {
      // another type
    }
  }
  return undefined;
}

async function heldBytes(o: OverlayNode, address: string): Promise<Uint8Array | undefined> {
  return (await o.records.getBytes(address)) ?? (await o.market.getBytes(address)) ?? o.market.adverts.get(address)?.bytes;
}

function needAddress(a: string, field: string): void {
  if (!isAddress(a)) throw new C0Error('ADDRESS_MALFORMED', `${field} must be sha256:<64 hex>, got "${String(a).slice(0, 80)}"`, { field });
}

/**
 * A job's walk as this node holds it: job → offers → selection(s) → receipts → acceptances, plus the run's events
 * when it ran here, and the market's explanation for the job (its counts and summary; the verdicts of the providers
 * that offered, not of every provider).
 */
export async function jobWalk(o: OverlayNode, hub: ConsoleHub, address: string): Promise<Record<string, unknown>> {
  needAddress(address, 'job');
  const job = await o.records.get(address, T.job);
  if (!job) {
    const keep = o.d.config.history.keepDays;
    throw new C0Error('JOB_NOT_FOUND', `this node holds no job ${address}${keep > 0 ? ` (a job goes ${keep} days after its deadline: history.keepDays)` : ''}`, { field: 'job' });
  }
  const now = o.clock();
  // through the indexes: a busy node holds tens of thousands of selections and receipts
  const selections = await o.records.selectionsOf(address);
  const receipts = o.market.evidence.receiptsOf(address).sort((a, b) => a.record.startedAt - b.record.startedAt);
  const acceptances = receipts.flatMap((r) => o.market.evidence.acceptancesOf(r.address));
  const nondeliveries = [...o.market.evidence.nondeliveries.values()].filter((n) => (n.record as { job?: string }).job === address);
  const considered = new Set(selections.flatMap((s) => s.record.considered.map((c) => c.offer)));
  const offers: Array<Record<string, unknown>> = [];
  for (const a of considered) {
    const b = await heldBytes(o, a);
    const r = b ? decodeAny(b) : undefined;
    offers.push(r ? { ...wireRecord(r), held: true } : { address: a, held: false });
  }
  for (const r of o.market.offersFor(address, now, job)) if (!considered.has(r.address)) offers.push({ ...wireRecord(r), held: true });
  const run = [...hub.runs].reverse().find((r) => r.job === address);
  // the whole market's counts and summary, but the verdicts of this job's offerers only: every provider's is megabytes
  // at the 10,000-advert cap (as /v1/offers was), sent again on each of the run's events (the page shows the summary)
  const ex = o.market.explain(job, now);
  const offerers = new Set(offers.map((x) => x.signer).filter((s): s is string => typeof s === 'string'));
  // this node's own job: how its run ended, and a receipt that came after (what the Jobs list and `c0mpute jobs` say)
  const own = job.signer === o.did ? await historyOf(o.records, o.market.evidence, o.did, job) : undefined;
  const ctx = runContext(o, hub, address);
  const outcome = own ? outcomeNow(own, now, ctx) : undefined;
  const ending = own && outcome ? endedAs(own, outcome, now, ctx) : undefined;
  return {
    ...(own && outcome ? { outcome: { ...outcome, ...(ending ? { ending } : {}) }, ...(own.late ? { late: own.late } : {}) } : {}),
    // how an attempt that got no receipt and no non-delivery ended, as the run said it, by its selection (job-history.ts HeldAttempt.note)
    ...(own?.attempts.some((a) => a.note) ? { attemptNotes: Object.fromEntries(own.attempts.filter((a) => a.note).map((a) => [a.selection.address, a.note])) } : {}),
    job: wireRecord(job),
    offers,
    selections: selections.map(wireRecord),
    receipts: receipts.map(wireRecord),
    acceptances: acceptances.map(wireRecord),
    nondeliveries: nondeliveries.map(wireRecord),
    explanation: toWire({ ...ex, providers: ex.providers.filter((p) => offerers.has(p.provider)), expired: ex.expired.filter((p) => offerers.has(p)) }),
    ...(run ? { run: { done: run.done, events: run.events, ...(run.omitted ? { omitted: run.omitted } : {}) } } : {}),
  };
}

/** What this process knows of `job`'s run (RunContext). */
function runContext(o: OverlayNode, hub: ConsoleHub, job: string): RunContext {
  const run = [...hub.runs].reverse().find((r) => r.job === job);
  const earlier = o.market.earlierJobs.some((j) => j.address === job);
  return { ...(earlier ? { earlier } : {}), ...(run ? { run: { done: run.done, ...(run.status !== undefined ? { status: run.status } : {}) } } : {}) };
}

/**
 * One of this node's jobs on the console's Jobs page (As buyer), as `c0mpute jobs` says it: the status is how this
 * node's run ended (job-history.ts JobOutcome: `completed`, `failed`, or none held), never a late receipt's; the
 * verdict is the one that decided it (`accepted`, `disputed`, or `non-delivery` for one this node signed); a receipt
 * that came after the run ended is `late` beside it (its note, and its own status). Before, the row showed the last
 * receipt held: a run that failed (a non-delivery signed) and then got its provider's receipt late read `completed`.
 */
export function consoleBuyerRow(h: HistoryJob, now: number, ctx: RunContext = {}): Record<string, unknown> {
  const { job: j, receipts, attempts, late } = h;
  const outcome = outcomeNow(h, now, ctx);
  const ending = endedAs(h, outcome, now, ctx);
  return {
    address: j.address,
    workload: j.record.workload,
    announcedAt: j.record.announcedAt,
    // the selections held (each an attempt); a job from before selections were kept: its receipts
    attempts: attempts.length || receipts.length,
    // an order whose deadline passed with no claim taken: `unclaimed`, as `c0mpute jobs` says (outcomeNow)
    ...(outcome.status !== 'none' ? { status: outcome.status } : ending ? { status: ending.status, ...(ending.code ? { code: ending.code } : {}), note: ending.note } : {}),
    ...(outcome.provider ? { provider: outcome.provider } : attempts.length ? { provider: attempts.at(-1)!.provider } : {}),
    ...(outcome.verdict ? { verdict: outcome.verdict } : outcome.nondelivery ? { verdict: 'non-delivery' } : {}),
    ...(late ? { late: late.note, lateStatus: late.status } : {}),
  };
}

/**
 * The refused connections the Overview and the Overlays view show, from c0mpute_connections_refused_total: per reason
 * (`refused`, summed over causes, as before), and the failed handshakes per cause (`handshakes`: garbled, timeout,
 * gone, other; src/net/refusals.ts). Only `garbled` is what a wrong swarm key does: a peer that went away mid-handshake
 * on a routine restart (`gone`) read "failed handshake, e.g. wrong swarm key" (QA qaCon F2).
 */
export function refusedCounts(metrics: ReadonlyArray<{ name: string; values: ReadonlyArray<{ labels: Record<string, unknown>; value: number }> }>): { refused: Record<string, number>; handshakes: Record<string, number> } {
  const refused: Record<string, number> = {};
  const handshakes: Record<string, number> = {};
  for (const m of metrics) {
    if (m.name !== 'c0mpute_connections_refused_total') continue;
    for (const v of m.values) {
      const reason = String(v.labels.reason);
      refused[reason] = (refused[reason] ?? 0) + v.value;
      if (reason === 'handshake') {
        const cause = v.labels.cause === undefined ? 'other' : String(v.labels.cause);
        handshakes[cause] = (handshakes[cause] ?? 0) + v.value;
      }
    }
  }
  return { refused, handshakes };
}

/** What this process knows of a job's run besides its records: whether it was live as the process started, and the run its hub holds. */
export interface RunContext {
  /** The job was live when this process opened its market (MarketService.earlierJobs): an earlier process ran it. */
  earlier?: boolean;
  /** This process's run of it (the console hub's, the last 50): still going, or how it ended. */
  run?: { done: boolean; status?: string };
}

/**
 * How a job with no outcome held (nothing this node signed decides it) stands, for the Jobs list and a job's page:
 * `unclaimed` (ORDER_NOT_CLAIMED), `interrupted` (JOB_INTERRUPTED: a provider selected, the run broken off by this
 * node's stop or crash), `running`, how the run ended without a provider (`no-offers` JOB_NO_OFFERS,
 * `no-eligible-provider` JOB_NO_ELIGIBLE_PROVIDER, as the run kept it with the job; `denied`, `queue-expired` while this
 * process holds the run), or `no provider selected` once the deadline passed with none and nothing says why (a run
 * from before the ending was kept, or one a crash cut short). Undefined: nothing says it ended. QA qaCon F4: a job that ended
 * with no eligible provider read "0 — none — none" in the list, like a job two seconds into its offer window.
 */
export function endedAs(h: Pick<HistoryJob, 'job' | 'attempts'>, outcome: ReturnType<typeof outcomeNow>, now: number, ctx: RunContext = {}): { status: string; code?: string; note: string } | undefined {
  if (outcome.status !== 'none') return undefined;
  if (outcome.code === 'ORDER_NOT_CLAIMED') return { status: 'unclaimed', code: outcome.code, note: 'the order’s deadline passed with no claim taken' };
  const run = ctx.run;
  if (run && !run.done) return { status: 'running', note: 'this node is running it now' };
  if (outcome.code === 'JOB_INTERRUPTED' || run?.status === 'interrupted') {
    // an order broken off while it waited for claims had no provider (QA qaOrd F3)
    const note =
      h.attempts.length === 0 && h.job.record.order !== undefined
        ? 'this node’s run of it was broken off while the order waited for claims: the node stopped or crashed, or the run’s client withdrew the order'
        : h.attempts.length === 0
          ? (outcome.message ?? 'this node’s run of it was broken off before a provider was selected: the node stopped or crashed, or the run’s client withdrew the job')
          : 'this node’s run of it was broken off: the node stopped or crashed during it, so nothing was signed about its provider';
    return { status: 'interrupted', code: 'JOB_INTERRUPTED', note };
  }
  // how the run said it ended, kept with the job (outcomeNow): the same words during the run and after a restart
  const kept = noProviderStatus(outcome.code);
  if (kept) return { status: kept, code: outcome.code!, note: outcome.message ?? NO_PROVIDER_ENDED[kept].said };
  // another ending an auction's run kept (JOB_NO_PROVIDER_SELECTED: the providers tried and why; the error that ended it)
  if (outcome.code !== undefined && h.job.record.order === undefined && h.attempts.length === 0) return { status: 'no provider selected', code: outcome.code, note: outcome.message ?? outcome.code };
  const said: Record<string, string> = {
    'no-offers': NO_PROVIDER_ENDED['no-offers'].said,
    'no-eligible-provider': `${NO_PROVIDER_ENDED['no-eligible-provider'].said} (the job’s page lists why)`,
    denied: 'the steward denied the claim',
    'queue-expired': 'the claim was still queued at the steward at its deadline',
    preempted: 'the steward preempted the claim',
  };
  if (run?.status !== undefined && said[run.status]) return { status: run.status, note: said[run.status]! };
  if (h.attempts.length === 0 && (h.job.record.deadline <= now || ctx.earlier)) return { status: 'no provider selected', note: 'no provider was selected (no offers, none eligible, or the steward refused): a run from a build before runs kept how they ended, so why is not held here' };
  return undefined;
}

export function consoleRoutes(d: Daemon, sessions: ConsoleSessions, hub: ConsoleHub, run: (o: OverlayNode, spec: unknown, res: ApiResponse) => Promise<unknown>): Route[] {
  return [
    {
      method: 'POST',
      path: '/v1/console/login',
      handler: async () => {
        const { code, expiresAt } = sessions.mintCode();
        return { path: `/ui/login?code=${code}`, expiresAt };
      },
    },
    {
      method: 'GET',
      path: '/v1/console/overview',
      handler: async () => {
        const overlays = await Promise.all(
          [...d.overlays.values()].map(async (o) => {
            const { refused, handshakes } = refusedCounts(await o.registry.getMetricsAsJSON());
            // each peer's gossip streams and prune backoff, as GET /v1/peers has them: a peer connected with no
            // outbound gossip stream, or backed off, is connected yet hears nothing from this node
            const { peerLink } = o.net.gossip();
            const peers = o.net.peers().map((p) => {
              const l = peerLink.get(p.peerId);
              return l ? { ...p, streams: { out: l.out, in: l.in }, backoffMs: Math.round(l.backoffMs) } : p;
            });
            return { name: o.name, roles: o.roles, peerId: o.net.peerId.toString(), addrs: o.net.addrs(), peers, refused, handshakes, steward: o.d.network.steward, health: o.networkHealth() };
          }),
        );
        return { did: d.did, api: d.apiAddress, uptimeMs: d.clock() - d.startedAt, primary: d.primary.name, overlays, samples: hub.samples };
      },
    },
    {
      method: 'GET',
      path: '/v1/console/jobs',
      handler: async ({ query }) => {
        const o = ov(d, query);
        // the newest of each (a busy node holds tens of thousands): a page, found through indexes; `before` (the
        // `buyerNext` of the page before, as GET /v1/jobs pages) walks the buyer's older jobs (QA ffConsole F3)
        const before = query.get('before');
        const page = parseJobsPage(new URLSearchParams(before !== null ? { before } : {}));
        const mine = await jobHistory(o.records, o.market.evidence, d.did, { ...page, limit: CONSOLE_JOBS });
        const provided = providedReceipts(o.market.evidence, d.did, CONSOLE_JOBS);
        return {
          buyer: mine.jobs.map((h) => consoleBuyerRow(h, o.clock(), runContext(o, hub, h.job.address))),
          buyerMore: mine.next !== undefined,
          ...(mine.next !== undefined ? { buyerNext: mine.next } : {}),
          provider: provided.receipts.map(({ receipt: r, acceptance: a }) => ({ address: r.address, job: r.record.job, buyer: r.record.buyer, workload: r.record.workload, status: r.record.status, ...(r.record.failure ? { failure: r.record.failure.code } : {}), startedAt: r.record.startedAt, completedAt: r.record.completedAt, verdict: a?.record.verdict })),
          providerTotal: provided.total,
          running: hub.runs.filter((r) => !r.done && r.overlay === o.name).map((r) => ({ run: r.run, job: r.job, startedAt: r.startedAt, events: r.events.slice(-5) })),
          providerRunning: o.provider?.running ?? 0,
        };
      },
    },
    {
      method: 'GET',
      path: '/v1/console/evidence/:did',
      handler: async ({ params, query }) => {
        const o = ov(d, query);
        const did = requireDid(params.did!, 'did');
        const held = providedReceipts(o.market.evidence, did, CONSOLE_EVIDENCE);
        const nondeliveries = o.market.evidence.nondeliveriesAbout(did);
        return {
          receipts: held.receipts.map(({ receipt: r, acceptance: a }) => ({ address: r.address, job: r.record.job, buyer: r.record.buyer, status: r.record.status, ...(a ? { acceptance: a.address, verdict: a.record.verdict } : {}) })),
          receiptsTotal: held.total,
          nondeliveries: newest(nondeliveries, CONSOLE_EVIDENCE, (n) => n.record.signedAt).map((n) => ({ address: n.address, job: n.record.job, signer: n.signer })),
          nondeliveriesTotal: nondeliveries.length,
        };
      },
    },
    { method: 'GET', path: '/v1/console/job/:job', handler: async ({ params, query }) => jobWalk(ov(d, query), hub, params.job!) },
    {
      method: 'GET',
      path: '/v1/console/record/:address',
      handler: async ({ params, query }) => {
        const a = params.address!;
        needAddress(a, 'address');
        const o = ov(d, query);
        const b = await heldBytes(o, a);
        const r = b ? decodeAny(b) : undefined;
        if (!r) throw new C0Error('RECORD_NOT_FOUND', `this node holds no record ${a} on overlay ${o.name}`, { field: 'address' });
        return { ...wireRecord(r), size: r.bytes.length };
      },
    },
    {
      method: 'POST',
      path: '/v1/console/run',
      handler: async ({ body, query }, res) => {
        const o = ov(d, query);
        const b = body as { yaml?: unknown };
        if (typeof b !== 'object' || b === null || typeof b.yaml !== 'string') throw new C0Error('JOB_SPEC_INVALID', 'send {yaml: "<job file text>"}', { field: 'yaml' });
        const spec = parseJobFileText(b.yaml, 'the job', { files: false, collectWindowMs: d.buyerConfig.collectWindowMs });
        return run(o, spec, res);
      },
    },
  ];
}
