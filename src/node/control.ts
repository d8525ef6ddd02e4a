/** The control API's routes: what `c0mpute status|peers|market|offers|jobs|reputation|run` ask a running daemon. */
import { Buffer } from 'node:buffer';
import { C0Error } from '../errors.js';
import { GRADES, POLICIES, T, WORKLOAD_RE, type Advert, type Job, type Opened } from '../records/index.js';
import { z } from 'zod';
import { AMOUNT_RE, CURRENCY_RE, parseMoney } from '../records/money.js';
import { requirementsSchema } from '../matching/batch-input.js';
import { configError } from './config.js';
import { isAddress } from '../records/address.js';
import { parseDid, requireDid } from '../records/did.js';
import { checkJobDeadlineMs } from '../records/freshness.js';
import type { JobSpec } from '../roles/buyer.js';
import { storeHealth, STORE_WRITE_FAILED } from '../store/db.js';
import { API_CLIENT_GONE, ensureToken, startApi, type ApiResponse, type ApiServer, type Route } from './api.js';
import { ConsoleHub } from './console-hub.js';
import { ConsoleSessions } from './console-session.js';
import { consoleGate, consoleRoutes } from './console-routes.js';
import type { Daemon } from './daemon.js';
import type { OverlayNode } from './overlay.js';
import { eventToWire, resultToWire, toWire, wireRecord } from './events.js';
import { batchPlan } from './batch-route.js';
import { gangRoutes } from './gang-routes.js';
import { parseProbeOrder } from '../matching/probe.js';
import { marketPage, parseMarketPage, type MarketPageQuery } from './market-page.js';
import { parseReputationPage, reputationPage } from './reputation-page.js';
import { historyOf, jobHistory, outcomeNow, parseJobsPage, JOBS_PAGE_DEFAULT, type HistoryJob, type JobOutcome, type JobsPageQuery } from './job-history.js';
import { shortDid } from '../util/did-text.js';
import { plural } from '../util/text.js';
import { jobRecords, type JobRecords } from './job-records.js';
import { decodeAuditSettings, type AuditSettings } from '../market/audit-settings.js';
import { buildText } from '../util/build-id.js';

export async function startControlApi(d: Daemon): Promise<ApiServer> {
  const token = ensureToken(d.opts.dataDir);
  // The operator's console (src/node/console-routes.ts): its live feed sees every run, the CLI's too.
  const hub = new ConsoleHub(d);
  const sessions = new ConsoleSessions(d.clock);
  const runStreaming = async (o: OverlayNode, body: unknown, res: ApiResponse) => {
    const spec = parseJobSpec(body);
    // a spec the run would refuse before publishing anything is an HTTP error, not a stream that ends in one
    o.checkJob(spec);
    // so is a database that takes no writes now (a full disk): the job could not be kept, so nothing is asked of a
    // steward, published or stored; 503 with the store's code (docs/node.md "When a write fails"). A write that fails
    // once the run is under way ends its stream with the error, as before.
    refuseIfStoreFailing(d);
    // a client that gave up before the daemon got here (a stalled daemon: the CLI said DAEMON_NOT_ANSWERING) is told
    // nothing and pays for nothing: the job is not published
    if (await res.clientGone()) throw new C0Error(API_CLIENT_GONE, 'the client left before the run started; nothing was published');
    const s = res.stream();
    const live = hub.beginRun(o.name);
    let status: string | undefined;
    try {
      // a client that goes away before the run committed has its job withdrawn (Buyer.run, which logs it); after, the
      // run goes on to its end, said here: its output reaches no one, its records are held (`c0mpute jobs`)
      const r = await o.runJob(
        spec,
        (e) => {
          const w = eventToWire(e);
          s.send(w);
          live.event(w);
        },
        { gone: s.gone },
      );
      if (s.gone.aborted && r.status !== 'interrupted') {
        const provider = r.receipt?.record.provider ?? r.attempts.at(-1)?.provider;
        d.log.info(
          { job: r.job.address, status: r.status, ...(provider ? { provider } : {}), ...(r.output ? { outputBytes: r.output.length } : {}) },
          'run client went away after a provider was selected: the job ran to its end; its output was not kept (c0mpute jobs shows how it ended)',
        );
      }
      status = r.status;
      return resultToWire(r);
    } finally {
      live.end(status);
    }
  };
  const routes: Route[] = [
    { method: 'GET', path: '/v1/status', handler: async () => status(d) },
    { method: 'GET', path: '/v1/peers', handler: async ({ query }) => await peersView(ov(d, query)) },
    {
      method: 'GET',
      path: '/v1/market',
      handler: async ({ query }) => {
        // a page (the console's Market view) when any page parameter is given; else the whole list or its `limit` most useful
        const page = parseMarketPage(query);
        return page ? marketPageOf(ov(d, query), page) : market(ov(d, query), marketLimit(query.get('limit')));
      },
    },
    // ?providers= (the console's Market view): only its page's providers' offers and verdicts
    { method: 'GET', path: '/v1/offers/:job', handler: async ({ params, query }) => offers(ov(d, query), params.job!, parseOffersProviders(query)) },
    // the market probe (docs/matching.md "Candidates and the probe"): GET with the order as query parameters, or POST a job spec
    { method: 'GET', path: '/v1/probe', handler: async ({ query }) => ov(d, query).probe(parseProbeOrder(Object.fromEntries(query))) },
    { method: 'POST', path: '/v1/probe', handler: async ({ body, query }) => ov(d, query).probe(parseProbeOrder(body)) },
    { method: 'GET', path: '/v1/jobs', handler: async ({ query }) => jobs(ov(d, query), parseJobsPage(query)) },
    {
      method: 'GET',
      path: '/v1/jobs/:job/records',
      handler: async ({ params, query }, res) => {
        // checked before the answer streams: a bad or unknown job is a plain 400/404
        const o = ov(d, query);
        const found = await findJobRecords(o, params.job!);
        const s = res.stream();
        // paced: a client that stops reading holds this route, not ~140 MB of the export in the daemon's memory
        return exportJobRecords(o, found, (rec) => s.paced({ e: 'record', ...rec }));
      },
    },
    {
      method: 'GET',
      path: '/v1/reputation',
      handler: async ({ query }) => {
        // a page (the console's Reputation view, `c0mpute reputation`) when any page parameter is given; else every provider (an older CLI)
        const page = parseReputationPage(query);
        const all = ov(d, query).market.reputation().all();
        return page ? reputationPage(all, page) : { providers: all };
      },
    },
    { method: 'GET', path: '/v1/reputation/:did', handler: async ({ params, query }) => ov(d, query).market.reputation().get(requireDid(params.did!, 'did')) },
    {
      method: 'POST',
      path: '/v1/run',
      handler: async ({ body, query }, res) => runStreaming(ov(d, query), body, res),
    },
    {
      method: 'GET',
      path: '/v1/steward',
      handler: async ({ query }) => {
        const o = ov(d, query);
        if (!o.steward) throw new C0Error('ROLE_NOT_ENABLED', `this node is not the steward of overlay ${o.name}`);
        return { ...(await o.steward.status()), attestation: await o.steward.ledger.attestation() };
      },
    },
    {
      method: 'GET',
      path: '/v1/witness',
      handler: async ({ query }) => {
        const o = ov(d, query);
        if (!o.witness) throw new C0Error('ROLE_NOT_ENABLED', `this node is not a witness on overlay ${o.name}, and holds nothing a witness kept`);
        return o.witness.status();
      },
    },
    {
      // the evidence a witness kept about a steward, as signed records an operator can hand to others (docs/overlays.md "Witnesses")
      method: 'GET',
      path: '/v1/witness/evidence/:steward',
      handler: async ({ params, query }) => {
        const o = ov(d, query);
        if (!o.witness) throw new C0Error('ROLE_NOT_ENABLED', `this node is not a witness on overlay ${o.name}, and holds nothing a witness kept`);
        return o.witness.evidenceOf(requireDid(params.steward!, 'steward'));
      },
    },
    {
      method: 'GET',
      path: '/v1/ledger/:steward',
      handler: async ({ params, query }) => {
        const [{ encodeLedgerFile }, { parseFetchMiB }] = await Promise.all([import('../ledger/file.js'), import('./ledger-fetch.js')]);
        const steward = requireDid(params.steward!, 'steward');
        const mib = parseFetchMiB(query.get('maxMiB'));
        const o = ov(d, query);
        const otherOverlays = [...d.overlays.keys()].filter((n) => n !== o.name);
        const raw = await o.fetchLedger(steward, { ...(mib === undefined ? {} : { maxBytes: mib * 1024 * 1024 }), otherOverlays });
        return { entries: raw.entries.length, receipts: raw.receipts.length, file: Buffer.from(encodeLedgerFile(raw)).toString('base64') };
      },
    },
    { method: 'POST', path: '/v1/batch/plan', handler: async ({ body, query }) => batchPlan(ov(d, query), body) },
    // A pool member's view (docs/pools.md "Operating a pool"): election, liveness, jobs and earnings per member.
    {
      method: 'GET',
      path: '/v1/pool',
      handler: async ({ query }) => {
        const o = ov(d, query);
        if (!o.poolMember) throw new C0Error('ROLE_NOT_ENABLED', `this node is not a pool member on overlay ${o.name}`);
        return o.poolMember.status();
      },
    },
    // A training gang admitted as one pool/1 claim (docs/training.md "A gang on a stewarded overlay").
    ...gangRoutes(d),
    // A new roster for a running member (docs/pools.md "A new roster reaches running members"): `pool-provider join` posts it; `leave` posts a `left` membership ("A member leaves a running pool").
    {
      method: 'POST',
      path: '/v1/pool/roster',
      handler: async ({ body, query }) => {
        const o = ov(d, query);
        if (!o.poolMember) throw new C0Error('ROLE_NOT_ENABLED', `this node is not a pool member on overlay ${o.name}`);
        const b = body as { roster?: unknown; membership?: unknown };
        if (typeof b?.roster !== 'string' || typeof b.membership !== 'string') throw new C0Error('API_BAD_REQUEST', 'roster and membership (base64 envelopes) are required', { field: 'roster' });
        return o.poolMember.adopt(new Uint8Array(Buffer.from(b.roster, 'base64')), new Uint8Array(Buffer.from(b.membership, 'base64')));
      },
    },
    ...consoleRoutes(d, sessions, hub, runStreaming),
    ...(d.opts.extraRoutes?.(d) ?? []),
  ];
  const hosts = d.opts.config.api.hosts;
  const api = await startApi({ listen: d.opts.config.api.listen, token, routes, registry: d.metrics(), log: d.log.child({ mod: 'api' }), console: consoleGate(d, sessions, hub, token), ...(hosts ? { hosts } : {}) });
  hub.start();
  return {
    ...api,
    close: async () => {
      hub.stop();
      await api.close();
    },
  };
}

/** The overlay a request names with `?overlay=` (default: the primary). */
function ov(d: Daemon, query: URLSearchParams): OverlayNode {
  return d.overlay(query.get('overlay') ?? undefined);
}

/**
 * `advertsTurnedAway`: adverts from new advertisers the flood limit turned away since start, when there were any (QA
 * qaWit F4: 148 of 400 dropped while `market` said "252 known"); those providers are missing until heard again.
 */
function turnedAway(o: OverlayNode): { advertsTurnedAway?: number } {
  // a node without its network yet (or a test's stand-in without one) has turned nothing away
  const net = o.net as Partial<Pick<OverlayNode['net'], 'advertsTurnedAway'>> | undefined;
  const n = net?.advertsTurnedAway?.() ?? 0;
  return n > 0 ? { advertsTurnedAway: n } : {};
}

function overlayStatus(o: OverlayNode, now: number): Record<string, unknown> {
  return {
    peerId: o.net.peerId.toString(),
    roles: o.roles,
    addrs: o.net.addrs(),
    peers: o.net.peers().length,
    providersKnown: [...o.market.adverts.entries.values()].filter((a) => a.record.expiresAt > now).length,
    ...turnedAway(o),
    offersHeld: o.market.book.size,
    evidence: o.market.evidence.size,
    network: o.networkHealth(),
    gossip: o.net.gossip().kinds,
    ...(o.provider ? { provider: { advert: o.provider.advert?.address, running: o.provider.running } } : {}),
  };
}

/**
 * `/v1/peers`: each connected peer with the kinds of this node's gossip topics it is subscribed to (`topics`), in its
 * mesh of (`mesh`), the gossip score this node gives it (`score`: below 0 it is neither grafted nor let graft), and, for
 * a peer in gossipsub's router, its gossip `streams` and the prune backoff left with it (`backoffMs`).
 */
async function peersView(o: OverlayNode): Promise<Record<string, unknown>> {
  const { peerKinds, peerMesh, peerLink } = o.net.gossip();
  const peers = o.net.peers();
  // where each says it listens (identify): a peer that dialled in shows its passing port in `addrs`, and an operator
  // copying that into `bootstrap` got an address that never answers (QA pass, session 48)
  const listen = await Promise.all(peers.map((p) => o.net.listenAddrsOf(p.peerId)));
  // a key two processes hold, connected from both now: how many (docs/network.md §11 "Two processes with one key")
  const dup = new Map(o.net.duplicates().filter((d) => d.current).map((d) => [d.peer, d.processes.length]));
  return {
    peers: peers.map((p, i) => {
      const link = peerLink.get(p.peerId);
      return {
        ...p,
        listen: listen[i]!,
        ...(dup.has(p.peerId) ? { processes: dup.get(p.peerId)! } : {}),
        topics: peerKinds.get(p.peerId) ?? [],
        mesh: peerMesh.get(p.peerId) ?? [],
        score: Math.round(o.net.gossipScore(p.peerId) * 1000) / 1000,
        ...(link ? { streams: { out: link.out, in: link.in }, backoffMs: Math.round(link.backoffMs) } : {}),
      };
    }),
  };
}

export function status(d: Daemon): Record<string, unknown> {
  const now = d.clock();
  const p = d.primary;
  return {
    did: d.did,
    // the package's version and the build id: two builds of one version told apart (src/util/build-id.ts)
    build: buildText(),
    // what this start said at warn of the data directory's stamp (a later build wrote it…): the log was the only place (QA qaTrn F10)
    ...(d.dataDirWarnings.length ? { dataDir: { warnings: d.dataDirWarnings } } : {}),
    overlay: p.name,
    ...overlayStatus(p, now),
    store: d.storeStatus(),
    api: d.apiAddress,
    // what a job's deadline must outlast (docs/jobfile.md `deadline`): `c0mpute run` checks a job file against it; said
    // only by a node that buys on some overlay (a provider's status had a buyer line)
    ...([...d.overlays.values()].some((o) => o.buyer) ? { buyer: { collectWindowMs: d.buyerConfig.collectWindowMs } } : {}),
    uptimeMs: now - d.startedAt,
    ...(d.overlays.size > 1 ? { overlays: Object.fromEntries([...d.overlays.values()].filter((o) => o !== p).map((o) => [o.name, overlayStatus(o, now)])) } : {}),
  };
}

function marketLimit(v: string | null): number | undefined {
  if (v === null) return undefined;
  if (!/^[0-9]{1,9}$/.test(v)) throw new C0Error('API_BAD_LIMIT', `limit must be a whole number, got "${v.slice(0, 40)}"`, { field: 'limit' });
  return Number(v);
}

/**
 * The adverts this node holds, with `total` and `live` counts. Without
 * `limit`: every provider, DID order. With `limit`: the `limit` most useful
 * (live first, then higher reputation, then DID order), for a summary.
 */
export function market(d: OverlayNode, limit?: number): Record<string, unknown> {
  const now = d.clock();
  const rep = d.market.reputation();
  // one entry per provider: a pool once, under its DID, as its newest member advert (docs/pools.md "One entry in the market")
  const idx = d.market.adverts;
  const all = [...idx.entries].map(([provider, a]) => ({ provider, a }));
  const live = all.filter(({ a }) => a.record.expiresAt > now).length;
  let list = all.sort((x, y) => (x.provider < y.provider ? -1 : 1));
  if (limit !== undefined) {
    const score = new Map(list.map((x) => [x.provider, rep.scoreOf(x.provider)]));
    list = list.sort((x, y) => Number(y.a.record.expiresAt > now) - Number(x.a.record.expiresAt > now) || score.get(y.provider)! - score.get(x.provider)! || (x.provider < y.provider ? -1 : 1)).slice(0, limit);
  }
  // Presence (docs/matching.md "Presence"): who is live now, with free slots; `limit` bounds the list, not the counts.
  const present = d.presence.live(now);
  const byDid = new Map(present.map((p) => [p.did, p]));
  const pools = poolPresence(idx, present);
  const presence = {
    ...presenceCounts(present, pools),
    providers: (limit === undefined ? present : [...present].sort((a, b) => b.freeSlots - a.freeSlots || (a.did < b.did ? -1 : 1)).slice(0, limit)).map((p) => ({ did: p.did, freeSlots: p.freeSlots, workloads: p.workloads, liveUntil: p.liveUntil })),
  };
  return {
    total: all.length,
    live,
    ...turnedAway(d),
    presence,
    adverts: list.map(({ provider, a }) => advertRow(d, provider, a, now, rep.scoreOf(provider), byDid.get(a.signer)?.freeSlots, pools.get(provider))),
  };
}

/** The members of each pool that are present now (by the entry their own latest advert counts toward: AdvertIndex.entryOf), and their free slots together. */
export function poolPresence(idx: { entryOf(signer: string): string; onRoster?(signer: string): boolean }, present: ReadonlyArray<{ did: string; freeSlots: number }>): Map<string, { present: number; freeSlots: number }> {
  const pools = new Map<string, { present: number; freeSlots: number }>();
  for (const p of present) {
    const entry = idx.entryOf(p.did);
    // a member the pool's newest roster (held here) no longer lists is not the pool's capacity (AdvertIndex.onRoster)
    if (entry === p.did || idx.onRoster?.(p.did) === false) continue;
    const cur = pools.get(entry) ?? { present: 0, freeSlots: 0 };
    pools.set(entry, { present: cur.present + 1, freeSlots: cur.freeSlots + p.freeSlots });
  }
  return pools;
}

/**
 * Presence's counts (docs/matching.md "Presence"): providers live and their free slots, per member of a pool (each
 * member publishes its own presence), and, when some are members of a pool, `pooled`: how many and of how many pools,
 * so a reader can tell the count from the market's entries, where a pool is one (docs/pools.md "One entry in the
 * market"; QA qaPnet F8: "3 providers live, 6 free slots" above one pool read as a contradiction).
 */
export function presenceCounts(present: ReadonlyArray<{ freeSlots: number }>, pools: ReadonlyMap<string, { present: number }>): { live: number; freeSlots: number; pooled?: { members: number; pools: number } } {
  const members = [...pools.values()].reduce((n, p) => n + p.present, 0);
  return { live: present.length, freeSlots: present.reduce((n, p) => n + p.freeSlots, 0), ...(members ? { pooled: { members, pools: pools.size } } : {}) };
}

/**
 * One provider's row of `/v1/market`: its advert as JSON with what the market knows of it. `freeSlots` is the presence
 * of the advert's signer (for a pool: the member whose advert is the entry); a pool's `pool.present` and
 * `pool.freeSlots` are those of all its members present (work goes to any member), when any is.
 */
function advertRow(d: OverlayNode, provider: string, a: Opened<Advert>, now: number, reputation: number, freeSlots: number | undefined, pool?: { present: number; freeSlots: number }): Record<string, unknown> {
  return { ...wireRecord(a), provider, ...(a.record.pool ? { pool: { did: provider, members: d.market.adverts.membersOf(provider), ...(pool ?? {}) } } : {}), live: a.record.expiresAt > now, reputation, ...(freeSlots !== undefined ? { freeSlots } : {}) };
}

/**
 * A page of the market (src/node/market-page.ts): the counts of the whole
 * book, the filter's match count, and JSON for the page's rows alone, so the
 * answer's size and cost do not grow with the market past a filter and a sort.
 */
export function marketPageOf(d: OverlayNode, q: MarketPageQuery): Record<string, unknown> {
  const now = d.clock();
  const rep = d.market.reputation();
  const idx = d.market.adverts;
  let live = 0;
  const entries: Array<{ provider: string; a: Opened<Advert> }> = [];
  for (const [provider, a] of idx.entries) {
    if (a.record.expiresAt > now) live++;
    entries.push({ provider, a });
  }
  const present = d.presence.live(now);
  const freeSlots = new Map(present.map((p) => [p.did, p.freeSlots]));
  const pools = poolPresence(idx, present);
  const scoreOf = (p: string) => rep.scoreOf(p);
  const r = marketPage(entries, q, { now, scoreOf, freeSlots });
  return {
    total: entries.length,
    live,
    ...turnedAway(d),
    presence: presenceCounts(present, pools),
    matched: r.matched,
    offset: r.offset,
    ...(r.next !== undefined ? { next: r.next } : {}),
    workloads: r.workloads,
    ...(r.currency !== undefined ? { currency: r.currency } : {}),
    adverts: r.page.map(({ provider, a }) => advertRow(d, provider, a, now, scoreOf(provider), freeSlots.get(a.signer), pools.get(provider))),
  };
}

/** The most providers one `GET /v1/offers/:job?providers=` names: the console's page (100 rows), well within the API's 16 KiB of request head. */
export const OFFERS_PROVIDERS_MAX = 100;

/**
 * `?providers=did1,did2,…` on `GET /v1/offers/:job`: only these providers' offers and verdicts (the console's
 * Market view asks for the page it shows). Undefined without the parameter: every provider (`c0mpute offers`).
 */
export function parseOffersProviders(query: URLSearchParams): ReadonlySet<string> | undefined {
  const v = query.get('providers');
  if (v === null) return undefined;
  const dids = v === '' ? [] : v.split(',');
  if (dids.length > OFFERS_PROVIDERS_MAX) throw new C0Error('API_BAD_QUERY', `providers names at most ${OFFERS_PROVIDERS_MAX} DIDs, got ${dids.length}`, { field: 'providers' });
  return new Set(dids.map((p) => requireDid(p, 'providers')));
}

/** The records a decision about `job` rests on, as this overlay holds them (job-records.ts); JOB_NOT_FOUND, ADDRESS_MALFORMED. */
export async function findJobRecords(d: OverlayNode, job: string): Promise<JobRecords> {
  if (!isAddress(job)) throw new C0Error('ADDRESS_MALFORMED', `job must be sha256:<64 hex>, got "${String(job).slice(0, 80)}"`, { field: 'job' });
  return jobRecords({ records: d.records, evidence: d.market.evidence, otherBytes: async (a) => (await d.market.getBytes(a)) ?? d.market.adverts.get(a)?.bytes }, job, d.d.config.history.keepDays);
}

/** One exported record: its envelope's bytes in hex. */
export interface ExportedRecord {
  type: string;
  address: string;
  signer: string;
  envelope: string;
}

/**
 * `GET /v1/jobs/:job/records`, streamed (NDJSON): each record to `send` as it goes, a few hundred at a time between
 * turns of the event loop (an export at the evidence bound is ~100,000 records, ~140 MB of hex: one JSON answer
 * held the loop 1.5 s), then the summary: the job, how many were sent, what is missing, and what an audit must be
 * given (`c0mpute market export` writes each record a file for `c0mpute market audit`).
 */
export async function exportJobRecords(d: OverlayNode, r: JobRecords, send: (rec: ExportedRecord) => void | Promise<void>): Promise<Record<string, unknown>> {
  for (const [i, x] of r.records.entries()) {
    // the API's send waits while the client is behind, and rejects once it left (ApiStream.paced)
    const sent = send({ type: x.type, address: x.address, signer: x.signer, envelope: Buffer.from(x.bytes.buffer, x.bytes.byteOffset, x.bytes.byteLength).toString('hex') });
    if (sent) await sent;
    if (i % 256 === 255) await new Promise((ok) => setImmediate(ok));
  }
  // what an audit must be given to recompute each decision: the decider's trust sources, clock-skew window and steward
  // (docs/market.md §7): without them an honest decision that counted a trusted buyer's evidence does not reproduce.
  // Those a selection of this node's was decided under are kept with it (RecordStore.putDecision); a selection from
  // before they were kept, or another node's (a steward's), gets this node's settings now, and says so (`settings`).
  // Before, every export gave the settings of the day it was taken: after a config change the audit command printed
  // failed an honest decision (QA, reputation and audit pass, F2).
  const nc = d.d.network;
  const current = d.market.auditSettings(nc.steward ? [nc.steward] : []);
  const decisions: ExportDecision[] = [];
  for (const sel of r.records) {
    if (sel.type !== T.selection) continue;
    const kept = sel.signer === d.did ? await d.records.decisionOf(sel.address) : undefined;
    const recorded = kept ? decodeAuditSettings(kept) : undefined;
    decisions.push({ selection: sel.address, decider: sel.signer, settings: recorded ? 'recorded' : 'current', audit: recorded ?? current });
  }
  // the job's latest decision's (what an older reader of the summary takes as the deciding node's), else this node's now
  const last = decisions.at(-1);
  return { job: r.job, written: r.records.length, missing: r.missing, audit: last?.audit ?? current, settings: last?.settings ?? 'current', decisions };
}

/**
 * The settings one selection of an export is audited with: `recorded` when this node kept them with the selection
 * as it signed it; `current` when it holds none (a selection it signed before they were kept, or one another node
 * signed): this node's settings at the export, which need not be the decider's.
 */
export interface ExportDecision {
  selection: string;
  decider: string;
  settings: 'recorded' | 'current';
  audit: AuditSettings;
}

/**
 * The offers held for a job and each provider's eligibility. With `providers`, only theirs (offers by signer,
 * verdicts and expired adverts by provider); the explanation's counts, binding constraints and summary stay the
 * whole market's. Before, the console's Market view got every provider's verdict on each refresh to show a
 * page of them: 782 KiB at 2,400 adverts, about 3.2 MB at the 10,000-advert cap, every 5 s.
 */
export async function offers(d: OverlayNode, job: string, providers?: ReadonlySet<string>): Promise<Record<string, unknown>> {
  if (!isAddress(job)) throw new C0Error('ADDRESS_MALFORMED', `job must be sha256:<64 hex>, got "${String(job).slice(0, 80)}"`, { field: 'job' });
  const j = await d.records.get(job, T.job);
  const now = d.clock();
  const mine = (did: string) => providers === undefined || providers.has(did);
  const held = d.market.offersFor(job, now, j).filter((o) => mine(o.signer)).map(wireRecord);
  if (!j) return { job, known: false, offers: held };
  const ex = d.market.explain(j, now);
  const shown = providers === undefined ? ex : { ...ex, providers: ex.providers.filter((p) => mine(p.provider)), expired: ex.expired.filter(mine) };
  // a job that has ended needs no wider market: its summary says how and when it ended, and the offers held
  const ended = await jobEnded(d, j, now);
  return { job, known: true, offers: held, ...(ended ? { ended } : {}), explanation: toWire(ended ? { ...shown, relaxations: [], summary: ended.summary } : shown) };
}

/**
 * How a job ended, for `c0mpute offers` and the console (`GET /v1/offers/:job`'s `ended`): this node's own job once
 * its run has an outcome (job-history.ts JobOutcome: completed or failed, when it signed the verdict or non-delivery
 * that decided it) or its deadline passed; another node's once its deadline passed. With the offers this node holds for
 * it (the book's, live or not, and those its selections considered) and how many are live. Undefined while it runs.
 * Before (QA, reputation and audit pass, F9), an hour-old job done after a failover was explained as the market now
 * ("none of them has a live offer for this job. To widen the market: add 3 providers to the allowlist").
 */
export async function jobEnded(d: OverlayNode, j: Opened<Job>, now: number): Promise<{ how: 'completed' | 'failed' | 'deadline'; at: number; provider?: string; offersHeld: number; live: number; summary: string } | undefined> {
  const outcome = j.signer === d.did ? (await historyOf(d.records, d.market.evidence, d.did, j)).outcome : undefined;
  const settled = outcome && outcome.status !== 'none' ? (outcome as JobOutcome & { status: 'completed' | 'failed' }) : undefined;
  if (!settled && j.record.deadline > now) return undefined;
  const addrs = new Set(d.market.book.heldFor(j.address).map((o) => o.address));
  const selections = await d.records.selectionsOf(j.address);
  for (const s of selections) for (const c of s.record.considered) if (!addrs.has(c.offer) && (await d.records.has(c.offer))) addrs.add(c.offer);
  const live = d.market.book.liveCount(j.address, now);
  const at = settled?.at ?? j.record.deadline;
  const when = new Date(at).toISOString();
  const who = settled?.provider ? shortDid(settled.provider) : undefined;
  const how = !settled
    ? `its deadline passed at ${when}${j.signer === d.did ? (selections.length ? ' with no outcome held' : ' with no provider selected') : ''}`
    : settled.status === 'completed'
      ? `completed by ${who}, its receipt accepted at ${when}`
      : `failed at ${when}: ${who} ${settled.reason ? `did not deliver (non-delivery signed: ${settled.reason})` : settled.verdict === 'disputed' ? 'delivered output its receipt disputed' : `reported failed${settled.failure ? ` (${settled.failure})` : ''}`}`;
  const n = addrs.size;
  const summary = `This job has ended: ${how}. ${plural(n, 'offer is', 'offers are')} held for it, ${live === 0 ? 'none' : live} live; any eligibility shown is the market now, not at its decision.`;
  return { how: settled ? settled.status : 'deadline', at, ...(settled?.provider ? { provider: settled.provider } : {}), offersHeld: n, live, summary };
}

/**
 * A page of the jobs this node published, newest first, with the receipts held for each and their buyer's verdict,
 * every attempt with the non-delivery signed against it, how this node's run ended (`outcome`), and a receipt that
 * came after it ended (`late`). docs/node.md "Job history".
 */
export async function jobs(d: OverlayNode, page: JobsPageQuery = { limit: JOBS_PAGE_DEFAULT }): Promise<Record<string, unknown>> {
  const h = await jobHistory(d.records, d.market.evidence, d.did, page);
  const now = d.clock();
  // live as this process started: an earlier process's run, which died with it (console-routes.ts RunContext)
  const earlier = new Set(d.market.earlierJobs.map((j) => j.address));
  return {
    jobs: h.jobs.map((j) => jobToWire(j, now, earlier.has(j.job.address))),
    ...(h.next !== undefined ? { next: h.next } : {}),
  };
}

/**
 * One job of the history as `GET /v1/jobs` gives it. `now`: an order of this node's whose deadline passed unclaimed has
 * `outcome.code` ORDER_NOT_CLAIMED (job-history.ts outcomeNow).
 */
export function jobToWire(h: HistoryJob, now?: number, earlier = false): Record<string, unknown> {
  const { job, receipts, attempts, late } = h;
  return {
    ...wireRecord(job),
    receipts: receipts.map(({ receipt: r, acceptance: a }) => ({ address: r.address, provider: r.record.provider, status: r.record.status, failure: r.record.failure?.code, acceptance: a?.record.verdict })),
    // how this node's run ended, from what it signed: never a late receipt's status (job-history.ts JobOutcome)
    outcome: now === undefined ? h.outcome : outcomeNow(h, now, earlier ? { earlier } : {}),
    // a receipt that came after the run ended, never countersigned (job-history.ts lateReceipt; docs/node.md "Job history")
    ...(late ? { late } : {}),
    // every attempt: the provider each selection chose, the non-delivery signed against it, the receipts of its offer
    attempts: attempts.map((a) => ({
      provider: a.provider,
      selection: a.selection.address,
      ...(a.nondelivery ? { nondelivery: a.nondelivery.address, reason: a.nondelivery.record.reason } : {}),
      receipts: a.receipts.map((r) => r.receipt.address),
      // no receipt and no non-delivery: how the run said the attempt ended (job-history.ts HeldAttempt.note)
      ...(a.note ? { ended: a.note } : {}),
    })),
  };
}

/** "0.05 USD" as parseMoney reads it. */
function isMoneyText(v: string): boolean {
  try {
    parseMoney(v);
    return true;
  } catch {
    return false;
  }
}

/**
 * Standard base64, padding optional (Buffer would skip any other byte without a word, and decode garbage). A plain
 * character class and a length check: a pattern of repeated groups overflows V8's regex stack on inputs of a few MiB.
 */
function isBase64(v: string): boolean {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(v)) return false;
  const pad = v.endsWith('==') ? 2 : v.endsWith('=') ? 1 : 0;
  return (v.length - pad) % 4 !== 1 && (pad === 0 || v.length % 4 === 0);
}

/**
 * A run refused before it starts while the node's database takes no writes (store/db.ts storeHealth): STORE_WRITE_FAILED
 * (the API answers 503), naming the failed write's cause and since when, as `status` shows it.
 */
function refuseIfStoreFailing(d: Daemon): void {
  const h = storeHealth(d.db);
  if (h.ok) return;
  throw new C0Error(STORE_WRITE_FAILED, `this node's database takes no writes since ${new Date(h.since!).toISOString()} (${h.cause}): the job was not started (nothing asked, published or stored); it is reopened once the disk takes writes again, then run it again`, { detail: { cause: h.cause, since: h.since } });
}

/** The wire form of a job spec (POST /v1/run, and the CLI's in-process run): every field typed, nothing else accepted. */
const jobSpecSchema = z
  .object({
    workload: z.string().regex(WORKLOAD_RE, 'a workload namespace like builtin.sha256'),
    maxPrice: z.union([z.string().refine(isMoneyText, 'an amount with a currency, like "0.05 USD"'), z.object({ amount: z.string().regex(AMOUNT_RE, 'a decimal amount like 0.05'), currency: z.string().regex(CURRENCY_RE, 'a currency code like USD') }).strict()]),
    deadlineMs: z.number().int().positive(),
    timeoutMs: z.number().int().positive().optional(),
    params: z.string().optional(),
    input: z.string().refine(isBase64, 'base64').optional(),
    sealInput: z.boolean().optional(),
    policy: z.enum(POLICIES).optional(),
    entitlement: z.string().min(1).optional(),
    class: z.string().min(1).optional(),
    energy: z.object({ uj: z.number().int().nonnegative(), grade: z.enum(GRADES) }).strict().optional(),
    requirements: requirementsSchema.optional(),
    order: z.unknown().optional(),
    gang: z.unknown().optional(),
  })
  .strict();

/**
 * A job spec as JSON (the CLI turns job.yaml into this): workload,
 * requirements, maxPrice ("0.05 USD" or {amount, currency}), deadlineMs,
 * timeoutMs, params, sealInput, policy, entitlement, class, energy, order ({}
 * = open bid, {designated: DID}), gang, and the input as base64. A field of
 * the wrong type, or one that is not a field, is JOB_SPEC_INVALID naming it.
 */
export function parseJobSpec(body: unknown): JobSpec {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new C0Error('JOB_SPEC_INVALID', 'job spec must be an object');
  const r = jobSpecSchema.safeParse(body);
  if (!r.success) {
    const err = configError(r.error, 'job spec', jobSpecSchema);
    throw new C0Error('JOB_SPEC_INVALID', err.message, { field: err.field ?? '' });
  }
  const b = r.data;
  checkJobDeadlineMs(b.deadlineMs, 'job spec deadlineMs');
  const spec: JobSpec = {
    workload: b.workload,
    maxPrice: typeof b.maxPrice === 'string' ? parseMoney(b.maxPrice) : b.maxPrice,
    deadlineMs: b.deadlineMs,
    input: b.input === undefined ? new Uint8Array(0) : new Uint8Array(Buffer.from(b.input, 'base64')),
    ...(b.requirements ? { requirements: b.requirements as Job['requirements'] } : {}),
    ...(b.timeoutMs === undefined ? {} : { timeoutMs: b.timeoutMs }),
    ...(b.params === undefined ? {} : { params: b.params }),
    ...(b.sealInput === true ? { sealInput: true } : {}),
    ...(b.policy === undefined ? {} : { policy: b.policy }),
    ...(b.entitlement === undefined ? {} : { entitlement: b.entitlement }),
    ...(b.class === undefined ? {} : { class: b.class }),
    ...(b.energy ? { energy: b.energy } : {}),
    ...(b.order === undefined ? {} : { order: parseOrder(b.order) }),
    ...(b.gang === undefined ? {} : { gang: parseGang(b.gang) }),
  };
  return spec;
}

/** A job spec's `gang`: {claim, member}, a member job of a gang admitted as one claim (docs/training.md "A gang on a stewarded overlay"). */
function parseGang(v: unknown): NonNullable<JobSpec['gang']> {
  const g = v as { claim?: unknown; member?: unknown };
  if (typeof g !== 'object' || g === null || typeof g.claim !== 'string' || !Number.isSafeInteger(g.member) || (g.member as number) < 0) {
    throw new C0Error('JOB_SPEC_INVALID', 'job spec: gang must be {claim, member (a whole number)}', { field: 'gang' });
  }
  return { claim: g.claim, member: g.member as number };
}

/**
 * A job spec's `order`: `{}` (an open bid) or `{designated: DID}` (docs/matching.md "Open orders, claims and leases"),
 * either with `minReputation` (a number from 0 to 1: "Whom an order takes").
 */
function parseOrder(v: unknown): NonNullable<JobSpec['order']> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new C0Error('JOB_SPEC_INVALID', 'job spec: order must be {} (an open bid) or {designated: DID}, either with minReputation', { field: 'order' });
  const o = v as Record<string, unknown>;
  for (const k of Object.keys(o)) if (k !== 'designated' && k !== 'minReputation') throw new C0Error('JOB_SPEC_INVALID', `job spec: order.${k} is not a field (designated, minReputation)`, { field: `order.${k}` });
  const m = o.minReputation;
  if (m !== undefined && !(typeof m === 'number' && Number.isFinite(m) && m >= 0 && m <= 1)) throw new C0Error('JOB_SPEC_INVALID', 'job spec: order.minReputation must be a number from 0 to 1', { field: 'order.minReputation' });
  const floor = m === undefined ? {} : { minReputation: m as number };
  if (o.designated === undefined) return floor;
  if (typeof o.designated !== 'string') throw new C0Error('JOB_SPEC_INVALID', 'job spec: order.designated must be a DID', { field: 'order.designated' });
  try {
    parseDid(o.designated);
  } catch {
    throw new C0Error('JOB_SPEC_INVALID', `job spec: order.designated is not a valid DID: ${o.designated.slice(0, 80)}`, { field: 'order.designated' });
  }
  return { designated: o.designated, ...floor };
}
