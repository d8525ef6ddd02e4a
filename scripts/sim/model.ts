/**
 * The scale model of docs/scale.md (issue #16): per-node bandwidth, CPU and
 * storage for a provider, a buyer and a relay at 1k … 1M providers, from
 * per-message costs measured here and the protocol's rates. Pure; the CLI
 * prints the projection tables (`node dist/scripts/sim/model.js [figures.json]`)
 * and, given a `npm run sim -- --out` file, the model's prediction for that run
 * beside the measurement (the model's error).
 *
 * Per node and second, for each gossip kind k every node subscribes to:
 *   in bytes  = rate_k × copies × (size_k + FRAMING)            (copies: each message arrives about `copies` times)
 *   control   = Σ rate_k × CONTROL_PER_MSG                        (IHAVE/IWANT ids, calibrated on the 100-node run)
 *   CPU       = base + opens × PER_OPEN + Σ rate_k × (VALIDATE + 2 × copies × PER_COPY)
 *               (base: an idle node, `bench idle`; opens: connections opened per node and second, each end
 *               counting one — a Noise handshake, identify, a sync both ways; PER_OPEN and PER_COPY solved
 *               from two runs that differ in connection churn, `calibrate(run, base, other)`)
 *               + with `connectionsHeld`: direct offers sent or taken × the share that open a connection × PER_OPEN
 *               (`offerOpenShare`; docs/scale.md §3 "Ninth round")
 * Out bytes ≈ in bytes (every copy received was sent by a peer; a relay forwards as much as it takes in).
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { SHARD_COUNT } from '../../src/net/topics.js';
import { NETWORK_DEFAULTS } from '../../src/net/network-api.js';
import { presenceInterval } from '../../src/matching/presence-rate.js';
import { advertInterval } from '../../src/matching/advert-rate.js';
import { INVITE_ABOVE, OFFER_RANK } from '../../src/matching/candidates.js';

export interface ModelParams {
  /** Buyers per provider (the sim: 1/3). */
  buyersPerProvider: number;
  /** Advert republish interval, s (daemon: half of the 600 s lifetime). */
  advertEverySec: number;
  /** Presence interval, s (daemon: 5 s); Infinity = presence not gossiped to this node. */
  presenceEverySec: number;
  /**
   * Presence records a second per market once a market is large (the daemon's `provider.presenceTargetPerMarket`,
   * src/matching/presence-rate.ts): each market's interval is `presenceInterval(providers in it, …)`; Infinity = the
   * fixed `presenceEverySec` whatever the size (before the adaptive interval). Markets = 1 / marketShare.
   */
  presenceTargetPerMarket: number;
  /**
   * Adverts a second per market once a market is large (the daemon's `provider.advertTargetPerMarket`,
   * src/matching/advert-rate.ts): each provider republishes every max(advertEverySec, providers in its market /
   * target) s, its lifetime capped at an hour. Infinity: the fixed interval (before the sixth round).
   */
  advertTargetPerMarket: number;
  /** Jobs per buyer per second. */
  jobsPerBuyerPerSec: number;
  /** Share of providers that offer on a job (the sim's mix: ~0.25). */
  offerShare: number;
  /** Offers carry the advert they cite (yes today). */
  offerCarriesAdvert: boolean;
  /** Share of the network's adverts and jobs a node receives (1 = one market; 1/k with topics sharded into k markets a node trades one of). */
  marketShare: number;
  /**
   * Markets a provider's workloads fall in, on average (1 = one each). A provider of m markets is in each of them:
   * its advert and presence reach every node of the m (docs/network.md §14 "A record of several markets"), so a
   * market holds m × providers × marketShare of them. The hundred-node run's mix: 1.47 (half serve two workloads).
   */
  marketsPerProvider: number;
  /** Offers reach only the job's buyer (false today: flooded). */
  offersDirect: boolean;
  /** Copies of each message a node receives (measured on the 100-node run). */
  copies: number;
  /** Control bytes per message per node (measured). */
  controlPerMsg: number;
  /**
   * CPU per first copy: validation, µs. The default is the warm figure of the one-process mesh (bench net), which is
   * the regime of the sim runs the CPU is calibrated on (many nodes to a process). A node in a process of its own, as
   * deployed, pays three to five times that (docs/scale.md §3 "Eighth round"): projections for it pass the figure
   * bench copies measures there with `--validate`, which applies after calibration.
   */
  validateUs: number;
  /** CPU per copy received or sent, transport and gossipsub, µs (calibrated on the run). */
  perCopyUs: number;
  /** CPU per node with no traffic, % of a core (the idle bench: heartbeats, pings, DHT). */
  basePct: number;
  /** CPU per connection opened, at each end (handshake, identify, sync both ways), µs (calibrated). */
  perOpenUs: number;
  /** Connections opened per node and minute, each end counting one (measured: the sim's churn). */
  opensPerNodeMin: number;
  /**
   * Offers a job draws at most (Infinity: every provider that can serve it offers, as the daemon does today). A what-if
   * for a design that bounds them (docs/scale.md §4 "Offers that scale with the market").
   */
  offersPerJobCap: number;
  /**
   * Connections a buyer keeps (the daemon's `maxConnections`, 200). A direct offer goes over the connection between
   * provider and buyer when there is one, else it opens one, at both ends. A buyer can keep at most this many of its
   * market's providers connected, so of a market larger than that, a share 1 − held / providers of the offers open a
   * connection (an optimistic bound: every connection the buyer keeps is to a provider of its market). Infinity: no
   * offer opens a connection (the model before the ninth round).
   */
  connectionsHeld: number;
  /**
   * Jobs by invitation (docs/market.md §13, `buyer.inviteAbove`): in a market of more providers than this, a buyer
   * sends each job directly to `invitesPerJob` of its candidates (job-push/1, one copy each), not on gossip; every
   * invited provider quotes, over the invitation's stream. At most `inviteDials` of the invitations open a connection
   * (the buyer asks connected providers first). Infinity: every job on gossip (the model before the eleventh round).
   */
  inviteAbove: number;
  invitesPerJob: number;
  inviteDials: number;
  /**
   * A job's outcome on gossip: its selection, its receipt and its acceptance, each validated once and copied as any
   * gossip message (a non-delivery, rare, is left out). `none`: not charged (the model before the twelfth round, which
   * left them out: the sim's jobs end at their offers). `network`: one topic each, every node takes every job's (as
   * built until the twelfth round). `market`: sharded by the job's market, as jobs are (docs/network.md §14).
   * `market-lean` (a what-if, not built): on the market's topics, a spot job's selection sent directly to the
   * providers it names instead of on gossip, and the acceptance carrying the receipt it countersigns, one message.
   * As built in the thirteenth round (docs/network.md §14 "Who hears a job's outcome"): a spot job's selection goes
   * directly to the providers it names and the acceptance to the winner as well; `own`, a node that counts no
   * second-hand evidence (the default), joins no outcome topic and takes only those direct copies;
   * `market-direct`, a node that does (or a relay that chooses to), also takes each receipt and acceptance of its
   * markets on gossip.
   */
  outcomes: 'none' | 'network' | 'market' | 'market-lean' | 'own' | 'market-direct';
}

/** Envelope sizes measured here (bytes): scripts/sim worker records; advert with two workloads. */
export const SIZES = { advert: 538, presence: 232, job: 367, offer: 333, receipt: 609, acceptance: 235 } as const;
/** A selection's envelope: 348 bytes and 108 per offer it names (measured: 456 with one, 1,212 with 8, 2,076 with 16). */
export function selectionSize(considered: number): number {
  return 348 + 108 * Math.max(1, Math.round(considered));
}
/** Topic string, protobuf fields, RPC framing per message (bytes). */
export const FRAMING = 40;

export const MEASURED: ModelParams = {
  buyersPerProvider: 1 / 3,
  advertEverySec: 300,
  presenceEverySec: 5,
  presenceTargetPerMarket: Infinity,
  advertTargetPerMarket: Infinity,
  jobsPerBuyerPerSec: 1 / 30,
  offerShare: 0.25,
  offerCarriesAdvert: true,
  marketShare: 1,
  marketsPerProvider: 1,
  offersDirect: false,
  // the fourth round's calibration (docs/scale.md §3 "The CPU side, recalibrated"): 40 nodes, the cut-4 A/B pair, idle base
  copies: 3.84,
  controlPerMsg: 278,
  validateUs: 150,
  perCopyUs: 311,
  basePct: 0.165,
  perOpenUs: 35_000,
  opensPerNodeMin: 14,
  offersPerJobCap: Infinity,
  connectionsHeld: Infinity,
  inviteAbove: Infinity,
  invitesPerJob: 2 * OFFER_RANK,
  inviteDials: OFFER_RANK,
  outcomes: 'none',
};

/** Invitations a provider takes a second: its share of each of its markets' (every market the same size here). */
export function invitationsPerProvider(providers: number, p: ModelParams): number {
  const perMarket = (rates(providers, p).job * p.marketShare * p.invitesPerJob) / (providers * providerShare(p));
  return perMarket * Math.max(1, p.marketsPerProvider);
}

/** Whether a market of this network sends its jobs by invitation (more providers in it than `inviteAbove`). */
export function invites(providers: number, p: ModelParams): boolean {
  return providers * providerShare(p) > p.inviteAbove;
}

/**
 * Offers one job draws: `offerShare` × providers × marketShare, the count the model has charged a buyer since offers
 * went direct (at m = 1, the sim's share of the job's market; at m > 1 a market holds more providers, but the share
 * stays that of one market's worth, as before), at most the cap.
 */
export function offersPerJob(providers: number, p: ModelParams): number {
  // invited providers quote whatever their rank
  if (invites(providers, p)) return p.invitesPerJob;
  return Math.min(p.offersPerJobCap, providers * p.offerShare * p.marketShare);
}

/** The share of direct offers that open a connection (at both ends): the pairs a buyer cannot keep connected. */
export function offerOpenShare(providers: number, p: ModelParams): number {
  const inMarket = providers * providerShare(p);
  return inMarket <= p.connectionsHeld ? 0 : 1 - p.connectionsHeld / inMarket;
}

export interface Projection {
  providers: number;
  role: 'provider' | 'buyer' | 'relay';
  /** in kB/s by kind and total, out ≈ in */
  kBps: Record<'advert' | 'presence' | 'job' | 'offer' | 'outcome' | 'control' | 'total', number>;
  cpuPct: number;
  /** of which connections opened to deliver direct offers (or, by invitation, the invitations), % of a core */
  offerOpensPct: number;
  /** live records held, MB */
  storageMB: number;
}

/** Network-wide message rates per second (all markets). */
export function rates(providers: number, p: ModelParams): Record<'advert' | 'presence' | 'job' | 'offer', number> {
  const buyers = providers * p.buyersPerProvider;
  const jobs = buyers * p.jobsPerBuyerPerSec;
  return { advert: advertRate(providers, p), presence: presenceRate(providers, p), job: jobs, offer: (jobs * offersPerJob(providers, p)) / p.marketShare };
}

/** Adverts a second over the whole network: each provider one per interval of its largest market (advert-rate.ts). */
export function advertRate(providers: number, p: ModelParams): number {
  if (!Number.isFinite(p.advertTargetPerMarket)) return providers / p.advertEverySec;
  return (providers * 1000) / advertInterval(providers * providerShare(p), 2 * p.advertEverySec * 1000, p.advertTargetPerMarket).everyMs;
}

/** The share of the network's providers (their adverts and presence) one market holds. */
export function providerShare(p: ModelParams): number {
  return Math.min(1, p.marketShare * Math.max(1, p.marketsPerProvider));
}

/**
 * Presence records per second over the whole network: each provider one record per interval of its largest market
 * (every market of the same size here: providers × providerShare), carried on each of its markets' topics.
 */
export function presenceRate(providers: number, p: ModelParams): number {
  if (!Number.isFinite(p.presenceEverySec)) return 0;
  if (!Number.isFinite(p.presenceTargetPerMarket)) return providers / p.presenceEverySec;
  const perMarket = providers * providerShare(p);
  const everyMs = p.presenceEverySec * 1000;
  return (providers * 1000) / presenceInterval(perMarket, { everyMs, windowMs: 3 * everyMs }, p.presenceTargetPerMarket).everyMs;
}

export function project(providers: number, role: Projection['role'], p: ModelParams): Projection {
  const r = rates(providers, p);
  const offerSize = SIZES.offer + (p.offerCarriesAdvert ? SIZES.advert : 0);
  // a relay serves every market; a provider or buyer the share it trades in (of providers: those in its market, some in others too)
  const share = role === 'relay' ? 1 : p.marketShare;
  const pshare = role === 'relay' ? 1 : providerShare(p);
  // by invitation: a provider takes its share of the invitations of each market it is in, a buyer and a relay no job
  // at all (the fallback to gossip is not charged)
  const invited = invites(providers, p);
  const invitationsIn = invited && role === 'provider' ? invitationsPerProvider(providers, p) : 0;
  // what one node receives (first copies per second)
  const first = {
    advert: r.advert * pshare,
    presence: r.presence * pshare,
    job: invited ? invitationsIn : r.job * share,
    // flooded: every offer of the market; direct: a buyer its own jobs' offers, others none
    offer: p.offersDirect ? (role === 'buyer' ? p.jobsPerBuyerPerSec * offersPerJob(providers, p) : 0) : r.offer * share,
  };
  const copiesOf = (k: keyof typeof first) => ((p.offersDirect && k === 'offer') || (invited && k === 'job') ? 1 : p.copies);
  const kBps = { advert: 0, presence: 0, job: 0, offer: 0, outcome: 0, control: 0, total: 0 };
  let cpuUs = 0;
  for (const k of ['advert', 'presence', 'job', 'offer'] as const) {
    const size = (k === 'offer' ? offerSize : SIZES[k]) + FRAMING;
    kBps[k] = (first[k] * copiesOf(k) * size) / 1000;
    if (!(p.offersDirect && k === 'offer') && !(invited && k === 'job')) kBps.control += (first[k] * p.controlPerMsg) / 1000;
    // validation once, transport for every copy in and out
    cpuUs += first[k] * (p.validateUs * (k === 'offer' && p.offerCarriesAdvert ? 1.5 : 1) + 2 * copiesOf(k) * p.perCopyUs);
  }
  // a job's outcome: on gossip (twelfth round: three records a job, each validated once, copied as any gossip
  // message), or directly to the providers it concerns and, for a node that joins the topics, two on gossip (thirteenth)
  const outcomes = outcomeRate(providers, role, p);
  const named = offersPerJob(providers, p);
  if (p.outcomes === 'own' || p.outcomes === 'market-direct') {
    // directly (thirteenth round): a provider takes the selection of each offer it made and the acceptance of each job
    // it won (one copy in, validated); a buyer sends them (one copy out each), over connections its offers opened
    const selections = role === 'provider' ? (r.job * named) / providers : role === 'buyer' ? p.jobsPerBuyerPerSec * named : 0;
    const won = role === 'provider' ? r.job / providers : role === 'buyer' ? p.jobsPerBuyerPerSec : 0;
    kBps.outcome = (selections * (selectionSize(named) + FRAMING) + won * (SIZES.acceptance + FRAMING)) / 1000;
    cpuUs += (selections + won) * (role === 'provider' ? p.validateUs + p.perCopyUs : p.perCopyUs);
    if (p.outcomes === 'market-direct') {
      // and every receipt and acceptance of its markets on gossip (the winner's own acceptance is charged both ways: a
      // duplicate's copies cost transport; its second validation, 0.01 a second, is left in)
      kBps.outcome += (outcomes * p.copies * (SIZES.receipt + SIZES.acceptance + 2 * FRAMING)) / 1000;
      kBps.control += (2 * outcomes * p.controlPerMsg) / 1000;
      cpuUs += 2 * outcomes * (p.validateUs + 2 * p.copies * p.perCopyUs);
    } else if (role === 'buyer') cpuUs += 2 * p.jobsPerBuyerPerSec * p.perCopyUs; // its receipt and acceptance out, to whoever joined
  } else if (outcomes > 0 && p.outcomes === 'market-lean') {
    // one gossip message a job (the acceptance with its receipt), two records to validate
    kBps.outcome = (outcomes * p.copies * (SIZES.receipt + SIZES.acceptance + FRAMING)) / 1000;
    kBps.control += (outcomes * p.controlPerMsg) / 1000;
    cpuUs += outcomes * (2 * p.validateUs + 2 * p.copies * p.perCopyUs);
    // the selection, directly: a provider takes one for each offer it made (one copy in), a buyer sends one to each provider it names
    const selections = role === 'provider' ? (r.job * named) / providers : role === 'buyer' ? p.jobsPerBuyerPerSec * named : 0;
    kBps.outcome += (selections * (selectionSize(named) + FRAMING)) / 1000;
    cpuUs += selections * (role === 'provider' ? p.validateUs + p.perCopyUs : p.perCopyUs);
  } else if (outcomes > 0) {
    kBps.outcome = (outcomes * p.copies * (selectionSize(named) + SIZES.receipt + SIZES.acceptance + 3 * FRAMING)) / 1000;
    kBps.control += (3 * outcomes * p.controlPerMsg) / 1000;
    cpuUs += 3 * outcomes * (p.validateUs + 2 * p.copies * p.perCopyUs);
  }
  kBps.total = kBps.advert + kBps.presence + kBps.job + kBps.offer + kBps.outcome + kBps.control;
  // live records a node holds: adverts of its markets (plus presence windows and live jobs, small)
  // presence: each provider's records of the last window (3 intervals, whatever the interval) are live
  const presenceHeld = Number.isFinite(p.presenceEverySec) ? 3 * providers * pshare : 0;
  const storageMB = (providers * pshare * (SIZES.advert + 200) + presenceHeld * SIZES.presence + first.job * 120 * SIZES.job) / 1e6;
  cpuUs += (p.opensPerNodeMin / 60) * p.perOpenUs;
  // direct offers: a provider sends its share of every offer the network's jobs draw (one copy out each); a buyer
  // takes its own jobs' offers (above). Each opens a connection, at both ends, unless the pair is connected
  // (offerOpenShare). Only with connectionsHeld set: Infinity reproduces the model before the ninth round, which
  // charged neither the opens nor a provider's sent copies.
  let offerOpensUs = 0;
  if (p.offersDirect && role !== 'relay' && Number.isFinite(p.connectionsHeld)) {
    // (a relay neither sends nor takes offers or invitations)
    const sent = role === 'provider' ? (r.job * offersPerJob(providers, p)) / providers : 0;
    cpuUs += sent * p.perCopyUs;
    if (invited) {
      // the offer goes back over the invitation's stream: only the invitation may open a connection, at most
      // inviteDials of a job's invitations (the buyer asks connected providers first)
      const openShare = Math.min(p.inviteDials / p.invitesPerJob, offerOpenShare(providers, p));
      const sentInvitations = role === 'buyer' ? p.jobsPerBuyerPerSec * p.invitesPerJob : 0;
      cpuUs += sentInvitations * p.perCopyUs;
      offerOpensUs = (invitationsIn + sentInvitations) * openShare * p.perOpenUs;
    } else offerOpensUs = (sent + first.offer) * offerOpenShare(providers, p) * p.perOpenUs;
    cpuUs += offerOpensUs;
  }
  return { providers, role, kBps, cpuPct: p.basePct + cpuUs / 1e4, offerOpensPct: offerOpensUs / 1e4, storageMB };
}

/**
 * Jobs a second whose outcome a node takes on gossip (the selection, receipt and acceptance one each; `market-direct`:
 * the receipt and acceptance only, the selection going direct): every job of the network on one topic per kind; by
 * market, a provider its markets' and a buyer its one market's (as the job gossip is charged), a relay every market's;
 * `own`: none.
 */
export function outcomeRate(providers: number, role: Projection['role'], p: ModelParams): number {
  // `own`: none on gossip (its own outcomes come directly, charged in project)
  if (p.outcomes === 'none' || p.outcomes === 'own') return 0;
  const jobs = rates(providers, p).job;
  if (p.outcomes === 'network' || role === 'relay') return jobs;
  return jobs * (role === 'provider' ? providerShare(p) : p.marketShare);
}

/**
 * The reputation evidence a node hears a day (receipts and acceptances; the offer a receipt cites is kept only when
 * the node holds it, mostly for its own jobs; docs/scale.md §4), MB; the store keeps at most `reputation.maxEvidence`
 * records of it.
 */
export function evidencePerDayMB(providers: number, role: Projection['role'], p: ModelParams): number {
  return (outcomeRate(providers, role, p) * 86_400 * (SIZES.receipt + SIZES.acceptance)) / 1e6;
}

export const SCALES = [1_000, 10_000, 100_000, 1_000_000];

export function table(p: ModelParams, roles: Projection['role'][] = ['provider', 'buyer', 'relay']): string {
  const out = p.outcomes !== 'none';
  const rows = [`| providers | role | advert | presence | job | offer |${out ? ' outcome |' : ''} control | total kB/s in (≈ out) | CPU % of a core | storage MB |`, `|---:|---|---:|---:|---:|---:|${out ? '---:|' : ''}---:|---:|---:|---:|`];
  const f = (x: number) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2));
  for (const n of SCALES) {
    for (const role of roles) {
      const x = project(n, role, p);
      rows.push(`| ${n.toLocaleString('en')} | ${role} | ${f(x.kBps.advert)} | ${f(x.kBps.presence)} | ${f(x.kBps.job)} | ${f(x.kBps.offer)} |${out ? ` ${f(x.kBps.outcome)} |` : ''} ${f(x.kBps.control)} | **${f(x.kBps.total)}** | ${f(x.cpuPct)} | ${f(x.storageMB)} |`);
    }
  }
  return rows.join('\n');
}

/** What `npm run sim -- --out file` writes (the parts the model reads). */
export interface RunFile {
  options: Record<string, number>;
  figures: {
    nodes: number;
    traffic: Array<{ kind: string; inMsgsPerSec: number; inBytesPerSec: number; outMsgsPerSec?: number; outBytesPerSec: number; deliveredPerSec?: number }>;
    publishedPerSec: Record<string, number>;
    cpuPctPerNode: number;
    conns?: { opensPerNodeMin: number; perNode: number };
  };
}

/** The kinds a run reports and the model charges per record: the market's, and a job's outcome (the twelfth round's runs on). */
const KINDS = ['advert', 'presence', 'job', 'offer', 'selection', 'receipt', 'acceptance'] as const;
/** Envelope bytes of each kind for the validation against a run (a selection naming eight offers). */
const RUN_SIZES: Record<(typeof KINDS)[number], number> = { ...SIZES, selection: selectionSize(8) };

/**
 * Per node and second, the records of each kind a node accepted (first copies): measured when the run
 * reports them (runs with markets: a node takes only its markets' records; offers come direct), else
 * every publication (every node on every topic).
 */
export function firstRates(run: RunFile): Record<(typeof KINDS)[number], number> {
  const t = new Map(run.figures.traffic.map((x) => [x.kind, x]));
  const measured = run.figures.traffic.some((x) => x.deliveredPerSec !== undefined);
  const out = { advert: 0, presence: 0, job: 0, offer: 0, selection: 0, receipt: 0, acceptance: 0 };
  for (const k of KINDS) {
    if (!measured) out[k] = run.figures.publishedPerSec[k] ?? 0;
    else if (k === 'offer') out[k] = t.get('offer')?.inMsgsPerSec ? (run.figures.publishedPerSec.offer ?? 0) : 0;
    else out[k] = t.get(k)?.deliveredPerSec ?? 0;
  }
  return out;
}

/** Per node and second: the records a run sent and took over /c0mpute/outcome/1 (none before the thirteenth round), and their bytes in. */
function direct(run: RunFile): { in: number; out: number; inKBps: number } {
  const d = run.figures.traffic.find((x) => x.kind === 'outcome-direct');
  return { in: d?.inMsgsPerSec ?? 0, out: d?.outMsgsPerSec ?? 0, inKBps: (d?.inBytesPerSec ?? 0) / 1000 };
}

/** Per node and second: CPU µs beyond the base and validation, and the copies (in + out) and connection opens it is spent on. */
function cpuTerms(run: RunFile, p: ModelParams, copies: number): { restUs: number; copyCount: number; opens: number } {
  const firsts = firstRates(run);
  let firstUs = 0;
  let copyCount = 0;
  for (const k of KINDS) {
    firstUs += firsts[k] * p.validateUs * (k === 'offer' ? 1.5 : 1);
    copyCount += 2 * firsts[k] * copies;
  }
  // selections and acceptances over /c0mpute/outcome/1 (thirteenth round): validated once on arrival, one copy each way
  const d = direct(run);
  firstUs += d.in * p.validateUs;
  copyCount += d.in + d.out;
  return { restUs: (run.figures.cpuPctPerNode - p.basePct) * 1e4 - firstUs, copyCount, opens: (run.figures.conns?.opensPerNodeMin ?? 0) / 60 };
}

/**
 * Copies per message and control bytes per message, from a run (per node in-messages over the records it accepted).
 * CPU: with `other` (a second run of the same size and message mix but different connection churn, e.g. an A/B of a
 * connection change) the per-open and per-copy costs are solved from the two runs together; without it, the per-open
 * cost is the given (or MEASURED) one and the rest of the CPU beyond the base and validation is charged to copies.
 */
export function calibrate(run: RunFile, base: Partial<ModelParams> = {}, other?: RunFile): ModelParams {
  const t = new Map(run.figures.traffic.map((x) => [x.kind, x]));
  const firsts = firstRates(run);
  let copies = 0;
  let w = 0;
  let pubs = 0;
  for (const k of KINDS) {
    const pub = firsts[k];
    pubs += pub;
    if (pub > 0 && t.get(k)) {
      copies += t.get(k)!.inMsgsPerSec;
      w += pub;
    }
  }
  const control = t.get('control')?.inBytesPerSec ?? 0;
  const p: ModelParams = { ...MEASURED, ...base, copies: w ? copies / w : MEASURED.copies, controlPerMsg: pubs ? control / pubs : MEASURED.controlPerMsg };
  const opensPerNodeMin = run.figures.conns?.opensPerNodeMin ?? 0;
  const a = cpuTerms(run, p, p.copies);
  if (other) {
    // restUs_i = copyCount_i × perCopy + opens_i × perOpen, for both runs (each with its own copies)
    const b = cpuTerms(other, p, calibrate(other, base).copies);
    const det = a.copyCount * b.opens - b.copyCount * a.opens;
    if (det !== 0) {
      const perCopyUs = (a.restUs * b.opens - b.restUs * a.opens) / det;
      const perOpenUs = (a.copyCount * b.restUs - b.copyCount * a.restUs) / det;
      if (perCopyUs >= 0 && perOpenUs >= 0) return { ...p, perCopyUs, perOpenUs, opensPerNodeMin };
    }
  }
  const perCopyUs = a.copyCount ? Math.max(0, (a.restUs - a.opens * p.perOpenUs) / a.copyCount) : MEASURED.perCopyUs;
  return { ...p, perCopyUs, opensPerNodeMin };
}

/** The model's per-node prediction for a run, from the run's own publication rates and calibrated costs. */
export function predict(run: RunFile, p: ModelParams): { kBps: Record<string, number>; cpuPct: number } {
  const kBps: Record<string, number> = {};
  let cpuUs = 0;
  let control = 0;
  const firsts = firstRates(run);
  for (const k of KINDS) {
    const pub = firsts[k];
    const size = (k === 'offer' ? SIZES.offer + SIZES.advert : RUN_SIZES[k]) + FRAMING;
    kBps[k] = (pub * p.copies * size) / 1000;
    control += (pub * p.controlPerMsg) / 1000;
    cpuUs += pub * (p.validateUs * (k === 'offer' ? 1.5 : 1) + 2 * p.copies * p.perCopyUs);
  }
  kBps.control = control;
  const d = direct(run);
  if (d.in + d.out > 0) {
    kBps['outcome-direct'] = d.inKBps;
    cpuUs += d.in * (p.validateUs + p.perCopyUs) + d.out * p.perCopyUs;
  }
  kBps.total = Object.values(kBps).reduce((a, b) => a + b, 0);
  // connection churn is the run's (an input, like its publication rates), costed at the calibrated per-open cost
  cpuUs += ((run.figures.conns?.opensPerNodeMin ?? p.opensPerNodeMin) / 60) * p.perOpenUs;
  return { kBps, cpuPct: p.basePct + cpuUs / 1e4 };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  // node dist/scripts/sim/model.js [calibration-run.json [validation-run.json [idle-run.json]]] [--base PCT] [--ab other-run.json] [--per-copy µs] [--per-open µs] [--validate µs] [--copies n] [--held n] [--offers-cap n] [--invite-above n]
  const flag = (name: string): string | undefined => {
    const i = process.argv.indexOf(`--${name}`);
    return i > 0 ? process.argv[i + 1] : undefined;
  };
  /** A numeric flag: undefined when absent; a value that is not a non-negative number is an error, not a NaN in every table. */
  const num = (name: string): number | undefined => {
    const v = flag(name);
    if (v === undefined) return undefined;
    const n = Number(v);
    if (!Number.isFinite(n) || n < 0) throw new Error(`--${name} takes a non-negative number, got "${v}"`);
    return n;
  };
  const positional = process.argv.slice(2).filter((x, i, all) => !x.startsWith('--') && !all[i - 1]?.startsWith('--'));
  const [calFile, valFile, idleFile] = positional;
  let p = MEASURED;
  if (calFile) {
    const idle = idleFile ? (JSON.parse(readFileSync(idleFile, 'utf8')) as RunFile) : undefined;
    const basePct = num('base') ?? idle?.figures.cpuPctPerNode;
    const ab = flag('ab');
    p = calibrate(JSON.parse(readFileSync(calFile, 'utf8')) as RunFile, basePct !== undefined ? { basePct } : {}, ab ? (JSON.parse(readFileSync(ab, 'utf8')) as RunFile) : undefined);
    console.log(`calibrated on ${calFile}${ab ? ` and ${ab}` : ''}: copies ${p.copies.toFixed(2)}, control ${p.controlPerMsg.toFixed(0)} B/msg, base ${p.basePct.toFixed(2)} %, per copy ${p.perCopyUs.toFixed(0)} µs, per connection opened ${(p.perOpenUs / 1000).toFixed(1)} ms at ${p.opensPerNodeMin.toFixed(1)} opened per node·min, validate ${p.validateUs} µs`);
  }
  // the per-copy cost measured directly (`npm run bench -- copies`) instead of fitted from the run's CPU
  const perCopy = num('per-copy');
  if (perCopy !== undefined) {
    p = { ...p, perCopyUs: perCopy };
    console.log(`per copy set to ${p.perCopyUs} µs`);
  }
  // the CPU per connection opened, at each end, measured directly (`npm run bench -- opens`) instead of fitted
  const perOpen = num('per-open');
  if (perOpen !== undefined) {
    p = { ...p, perOpenUs: perOpen };
    console.log(`per connection opened set to ${(p.perOpenUs / 1000).toFixed(1)} ms`);
  }
  // copies of each record a node receives, for a what-if (a smaller gossipsub D); the calibration's otherwise
  const copies = num('copies');
  if (copies !== undefined) {
    p = { ...p, copies };
    console.log(`copies set to ${p.copies}`);
  }
  // the validation cost per first copy of a node in its own process (`bench copies`' advert rows), for the projection
  // only: the calibration above keeps the warm figure of the sim runs it is fitted on
  const validate = num('validate');
  if (validate !== undefined) {
    p = { ...p, validateUs: validate };
    console.log(`validate set to ${p.validateUs} µs for the projection`);
  }
  if (valFile) {
    const run = JSON.parse(readFileSync(valFile, 'utf8')) as RunFile;
    const pr = predict(run, p);
    const t = new Map(run.figures.traffic.map((x) => [x.kind, x]));
    console.log(`\nthe model against ${valFile} (per node, in kB/s):`);
    let mt = 0;
    // outcome-direct (thirteenth round's runs on): the run's own rate is the model's input, so only its CPU is predicted
    for (const k of [...KINDS, 'control', ...(pr.kBps['outcome-direct'] !== undefined ? (['outcome-direct'] as const) : [])]) {
      const m = (t.get(k)?.inBytesPerSec ?? 0) / 1000;
      mt += m;
      console.log(`  ${k.padEnd(14)} model ${pr.kBps[k]!.toFixed(2).padStart(7)}  measured ${m.toFixed(2).padStart(7)}  error ${m ? ((100 * (pr.kBps[k]! - m)) / m).toFixed(0) : '-'} %`);
    }
    console.log(`  ${'total'.padEnd(14)} model ${pr.kBps.total!.toFixed(2).padStart(7)}  measured ${mt.toFixed(2).padStart(7)}  error ${((100 * (pr.kBps.total! - mt)) / mt).toFixed(0)} %`);
    console.log(`  CPU % of a core: model ${pr.cpuPct.toFixed(2)}  measured ${run.figures.cpuPctPerNode.toFixed(2)}  error ${((100 * (pr.cpuPct - run.figures.cpuPctPerNode)) / run.figures.cpuPctPerNode).toFixed(0)} %`);
  }
  const presenceSec = Number(process.env.MODEL_PRESENCE_SEC ?? 15);
  console.log('\n## before issue #16: every node on every topic, offers flooded with their advert, presence every 5 s\n');
  console.log(table(p));
  const sharded: ModelParams = { ...p, offersDirect: true, offerCarriesAdvert: true, marketShare: 1 / SHARD_COUNT };
  console.log(`\n## implemented (docs/scale.md §4): offers to the buyer only (advert attached), advert/job/presence topics sharded into ${SHARD_COUNT} markets of which a provider or buyer joins one; presence every 5 s\n`);
  console.log(table(sharded));
  console.log(`\n## implemented, with presence every ${presenceSec} s (window ${presenceSec * 3} s)\n`);
  console.log(table({ ...sharded, presenceEverySec: presenceSec }));
  const target = Number(process.env.MODEL_PRESENCE_TARGET ?? 5);
  const adaptive: ModelParams = { ...sharded, presenceEverySec: presenceSec, presenceTargetPerMarket: target };
  console.log(`\n## implemented, presence adaptive (docs/scale.md §4): every max(${presenceSec} s, providers in the market / ${target} per s), window 3 × (≤ 600 s)\n`);
  for (const n of SCALES) {
    const perMarket = n * providerShare(adaptive);
    const iv = presenceInterval(perMarket, { everyMs: presenceSec * 1000, windowMs: presenceSec * 3000 }, target);
    console.log(`- ${n.toLocaleString('en')} providers: ${perMarket.toFixed(0)} in a market, presence every ${(iv.everyMs / 1000).toFixed(1)} s, window ${(iv.windowMs / 1000).toFixed(0)} s, ${(presenceRate(n, adaptive) * providerShare(adaptive)).toFixed(1)} records/s per market`);
  }
  console.log('');
  console.log(table(adaptive));
  const m = Number(process.env.MODEL_MARKETS_PER_PROVIDER ?? 2);
  console.log(`\n## the same, each provider in ${m} markets (its advert and presence on each: docs/network.md §14)\n`);
  console.log(table({ ...adaptive, marketsPerProvider: m }));
  const at = Number(process.env.MODEL_ADVERT_TARGET ?? 1);
  const adverts: ModelParams = { ...adaptive, advertTargetPerMarket: at };
  console.log(`\n## implemented (sixth round): adverts adaptive too, every max(${p.advertEverySec} s, providers in the market / ${at} per s), lifetime 2 × (≤ 1 h)\n`);
  for (const n of SCALES) {
    for (const mm of [1, m]) {
      const q = { ...adverts, marketsPerProvider: mm };
      const perMarket = n * providerShare(q);
      console.log(`- ${n.toLocaleString('en')} providers, ${mm} market(s) each: ${perMarket.toFixed(0)} in a market, advert every ${(advertInterval(perMarket, 2 * p.advertEverySec * 1000, at).everyMs / 1000).toFixed(0)} s, ${(advertRate(n, q) * providerShare(q)).toFixed(2)} adverts/s per market`);
    }
  }
  console.log('');
  console.log(table(adverts));
  console.log(`\n## the same, each provider in ${m} markets\n`);
  console.log(table({ ...adverts, marketsPerProvider: m }));
  // the ninth round: a direct offer opens a connection at both ends unless buyer and provider are connected
  const held = num('held') ?? NETWORK_DEFAULTS.maxConnections;
  const withOpens: ModelParams = { ...adverts, connectionsHeld: held };
  console.log(`\n## the ninth round: a direct offer opens a connection (both ends, ${(p.perOpenUs / 1000).toFixed(1)} ms each) unless the pair is connected; a buyer keeps at most ${held}\n`);
  const opensLines = (q: ModelParams, what: string) => {
    for (const n of SCALES) console.log(`- ${n.toLocaleString('en')} providers: ${offersPerJob(n, q).toFixed(0)} offers per job, ${(100 * offerOpenShare(n, q)).toFixed(0)} % of them open a connection; CPU on ${what}: provider ${project(n, 'provider', q).offerOpensPct.toFixed(2)} %, buyer ${project(n, 'buyer', q).offerOpensPct.toFixed(2)} % of a core`);
    console.log('');
  };
  opensLines(withOpens, 'those opens');
  console.log(table(withOpens, ['provider', 'buyer']));
  console.log(`\n## the same, each provider in ${m} markets\n`);
  opensLines({ ...withOpens, marketsPerProvider: m }, 'those opens');
  console.log(table({ ...withOpens, marketsPerProvider: m }, ['provider', 'buyer']));
  const cap = num('offers-cap') ?? OFFER_RANK;
  const capped: ModelParams = { ...withOpens, offersPerJobCap: cap };
  console.log(
    cap === OFFER_RANK
      ? `\n## as built (tenth round; docs/market.md §12): providers outranked on price hold back, so a job draws at most ${cap} offers on gossip (provider.offerRank). Pushes by a buyer short of offers are not charged (docs/scale.md §3 "Tenth round")\n`
      : `\n## what-if: a job draws at most ${cap} offers (as built: ${OFFER_RANK}, provider.offerRank)\n`,
  );
  opensLines(capped, "offers' connections");
  console.log(table(capped, ['provider', 'buyer']));
  console.log(`\n## the same, each provider in ${m} markets\n`);
  opensLines({ ...capped, marketsPerProvider: m }, "offers' connections");
  console.log(table({ ...capped, marketsPerProvider: m }, ['provider', 'buyer']));
  const above = num('invite-above') ?? INVITE_ABOVE;
  const invited: ModelParams = { ...capped, inviteAbove: above };
  console.log(
    `\n## ${above === INVITE_ABOVE ? 'as built (eleventh round' : 'what-if (as built: ' + INVITE_ABOVE}; docs/market.md §13): in a market of more than ${above} providers a job goes to ${invited.invitesPerJob} candidates directly (at most ${invited.inviteDials} dials), not on gossip; each invited provider quotes over the invitation's stream. The fallback to gossip is not charged\n`,
  );
  const inviteLines = (q: ModelParams) => {
    for (const n of SCALES) {
      const inMarket = n * providerShare(q);
      console.log(`- ${n.toLocaleString('en')} providers: ${inMarket.toFixed(0)} in a market, ${invites(n, q) ? `by invitation: a provider takes ${invitationsPerProvider(n, q).toFixed(3)} invitations/s; connections opened for them: provider ${project(n, 'provider', q).offerOpensPct.toFixed(2)} %, buyer ${project(n, 'buyer', q).offerOpensPct.toFixed(2)} % of a core` : 'on gossip'}`);
    }
    console.log('');
  };
  inviteLines(invited);
  console.log(table(invited, ['provider', 'buyer']));
  console.log(`\n## the same, each provider in ${m} markets\n`);
  inviteLines({ ...invited, marketsPerProvider: m });
  console.log(table({ ...invited, marketsPerProvider: m }, ['provider', 'buyer']));
  // the twelfth round: a job's outcome, left out of every table above
  const outcomeLines = (q: ModelParams) => {
    for (const n of SCALES) console.log(`- ${n.toLocaleString('en')} providers: a node takes the outcome of ${outcomeRate(n, 'provider', q).toFixed(2)} (provider), ${outcomeRate(n, 'buyer', q).toFixed(2)} (buyer), ${outcomeRate(n, 'relay', q).toFixed(1)} (relay) jobs/s, three records each; it hears ${evidencePerDayMB(n, 'provider', q).toFixed(0)} / ${evidencePerDayMB(n, 'buyer', q).toFixed(0)} / ${evidencePerDayMB(n, 'relay', q).toFixed(0)} MB of evidence a day (kept: at most reputation.maxEvidence records)`);
    console.log('');
  };
  const network: ModelParams = { ...invited, outcomes: 'network' };
  console.log(`\n## twelfth round: with a job's outcome (selection naming its offers, receipt, acceptance), which no table above charges. As built until this round: one topic each, so every node takes every job's of the whole network\n`);
  outcomeLines(network);
  console.log(table(network));
  console.log(`\n## the same, each provider in ${m} markets\n`);
  console.log(table({ ...network, marketsPerProvider: m }));
  const market: ModelParams = { ...invited, outcomes: 'market' };
  console.log(`\n## as built (twelfth round; docs/network.md §14): a job's outcome on its market's topics, as its job\n`);
  outcomeLines(market);
  console.log(table(market));
  console.log(`\n## the same, each provider in ${m} markets\n`);
  outcomeLines({ ...market, marketsPerProvider: m });
  console.log(table({ ...market, marketsPerProvider: m }));
  const lean: ModelParams = { ...invited, outcomes: 'market-lean' };
  console.log(`\n## what-if (not built): the same, a spot job's selection sent directly to the providers it names, the acceptance carrying its receipt (one gossip message a job)\n`);
  console.log(table(lean, ['provider', 'buyer']));
  console.log(`\n## the same, each provider in ${m} markets\n`);
  console.log(table({ ...lean, marketsPerProvider: m }, ['provider', 'buyer']));
  const own: ModelParams = { ...invited, outcomes: 'own' };
  console.log(`\n## as built (thirteenth round; docs/network.md §14 "Who hears a job's outcome"): a spot job's selection directly to the providers it names, the acceptance to the winner as well; a node that counts no second-hand evidence (the default: network.outcomes auto, no trusted buyer) joins no outcome topic (a buyer's outcome column is what it sends)\n`);
  console.log(table(own));
  console.log(`\n## the same, each provider in ${m} markets\n`);
  console.log(table({ ...own, marketsPerProvider: m }, ['provider', 'buyer']));
  const direct: ModelParams = { ...invited, outcomes: 'market-direct' };
  console.log(`\n## as built, a node that counts second-hand evidence (reputation.trustedBuyers, an overlay's members, dealtWith) or sets network.outcomes all: it also takes every receipt and acceptance of its markets on gossip\n`);
  outcomeLines(direct);
  console.log(table(direct));
  console.log(`\n## the same, each provider in ${m} markets\n`);
  console.log(table({ ...direct, marketsPerProvider: m }, ['provider', 'buyer']));
}
