/**
 * One overlay a node is on: its own libp2p instance (own listen address, own
 * swarm key for a private overlay, own topics), its own stores (LevelDB
 * sublevels under the overlay's prefix, so a record from one overlay never
 * reaches another's) and the roles it runs there. The roles are wired in
 * their own modules: provider-wiring.ts, buyer-wiring.ts, orders-wiring.ts,
 * presence-wiring.ts; what the overlay serves on records/1, overlay-records.ts.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { C0Error } from '../errors.js';
import { T, validityWindow, type Advert, type Presence, type Job, type Offer, type Receipt, type Acceptance, type AnyNonDelivery, type Selection } from '../records/kinds.js';
import { DEFAULT_SKEW_MS } from '../records/freshness.js';
import { seal, type Opened } from '../records/envelope.js';
import { onStoreEvent, sub, type Db } from '../store/db.js';
import { RecordStore, type HistoryPruned } from '../store/records.js';
import type { ProviderRuns } from '../store/provider-runs.js';
import { monotonicClock, type Clock } from '../util/clock.js';
import type { Logger } from '../util/log.js';
import { Slots } from '../util/serial.js';
import { STEWARD_ASKS } from '../roles/admission-client.js';
import { createNetwork, type Network } from '../net/node.js';
import { NONDELIVERY_TOPIC_KINDS, perNonDeliveryKind, type TopicKind } from '../net/topics.js';
import { keptWitness, stewardLedgerLeft } from './ledger-role-leftovers.js';
import { evidenceHook, ForeignHeads, notFromTheFuture, openHeld, poolHeadHook, recordHooks, witnessHook } from './record-hooks.js';
import { countersignsLate, directReceiptLog, ownReceiptLookups, receiptHook, type OwnReceiptLookups } from './late-receipts.js';
import { buyerVerdict } from '../reputation/derive.js';
import { MemoryRecordCache, RECORD_CACHE_DEFAULTS } from '../net/record-cache.js';
import { CATCH_UP_DEFAULTS, type CatchUpOptions } from '../net/network-api.js';
import { overlayRecordSource } from './overlay-records.js';
import type { Provider } from '../roles/provider/provider.js';
import type { Buyer, BuyerEvent, JobResult, JobSpec } from '../roles/buyer.js';
import { Steward } from '../roles/steward.js';
import { fetchLedgerEntries, type LedgerFetchOptions } from './ledger-fetch.js';
import { WitnessRole } from '../roles/witness.js';
import { MarketService } from './market-service.js';
import { nondeliveryHook, trustFor } from './reputation-trust.js';
import { openNodeProbe, type ProbeResult, type ProbeService } from '../matching/probe.js';
import type { CandidateOrder } from '../matching/candidates.js';
import type { LiveProvider } from '../matching/types.js';
import type { HeldLeases } from '../matching/open-orders.js';
import { networksOf, roleSectionProblem, type NetworkConfig, type NodeConfig, type Role } from './config.js';
import type { Identity } from './identity.js';
import { assessNetwork, reconnectOptions, type NetworkAssessment } from './net-health.js';
import { PresenceView } from '../matching/presence.js';
import type { PresencePublisher } from '../roles/provider/presence-publisher.js';
import { presenceHook } from './presence-wiring.js';
import { keepConnected } from './keep-connected.js';
import { wireOrders, type OrdersWiring } from './orders-wiring.js';
import { ClockCorroboration, startHistoryPruning } from './history-prune.js';
import type { PoolMember } from '../roles/pool-member/member.js';
import { poolHistoryLeftovers, providerLeftovers, setupProvider } from './provider-wiring.js';
import { BuyerWiring } from './buyer-wiring.js';
import { hearsOutcomes, marketShards, OUTCOME_EVIDENCE_KINDS } from './markets.js';
import { AbuseReports } from '../net/peer-abuse.js';
import { budgetForInput } from '../net/byte-budget.js';
import { setLongInterval, setLongTimeout, type LongTimer } from '../util/timers.js';
import type { DeliveryMeta } from '../net/dispatch.js';
import { isStoreFailure } from '../util/store-damage.js';
import { PeerLog } from '../util/peer-log.js';

/**
 * Outcome records (receipts, acceptances, non-deliveries) on their way to disk before a gossiped one is waited for
 * (docs/network.md "The delivery queue"): at most 256 records of 64 KiB, 16 MiB, beside the delivery queue's bound.
 */
export const OUTCOME_WRITES_IN_FLIGHT = 256;

export interface OverlayDeps {
  dataDir: string;
  db: Db;
  identity: Identity;
  config: NodeConfig;
  network: NetworkConfig;
  roles: Role[];
  clock: Clock;
  log: Logger;
  /** Called at named failpoints (tests; set by the CLI from C0MPUTE_FAILPOINT). */
  failpoint?: (name: string) => void;
  /**
   * A display command's node (an offline `jobs`, `reputation`): it reads what is held and acts on nothing. No peer is
   * dialled or let in (remembered ones included, and the peers file is neither read nor written), and an earlier run's
   * provider work is not recovered here (that ends processes and signs receipts: the next `start` does it, and says so).
   */
  display?: boolean;
  /** A one-shot command's node: its user agent says so, and its peers do not remember it (docs/network.md §11). */
  oneShot?: boolean;
}

/**
 * What the periodic anti-entropy sync asks a peer for (docs/network.md §5, docs/matching.md "Open orders after a
 * restart"): adverts; for a provider also live jobs (it may still quote on or claim them) and selections, so an open
 * order already decided is not taken as open again by a provider that restarted or joined after its selection was
 * gossiped (each request carries the sync digest, so a round brings only the selections this node lacks).
 */
export function antiEntropyKinds(provider: boolean): TopicKind[] {
  // selections before jobs: a job that comes first wakes the claimer at once, which would claim orders whose selection
  // is one request behind (each claim answered ORDER_UNKNOWN, or an ORDER_TAKEN refusal while the buyer's run goes on);
  // a selection that comes first is remembered until its job (OpenOrders.selected)
  return provider ? ['advert', 'selection', 'job'] : ['advert'];
}

/**
 * What a node that hears outcomes catches up on after it was away (docs/network.md §5 "Catching up on outcomes"): the
 * outcome kinds, from the newest outcome its evidence store holds (a receipt's completion, an acceptance's or a
 * non-delivery's signing; none later than now), less the clock-skew window and a margin for what was in flight, and
 * never further back than the record cache's time-to-live (what a peer still holds to serve: `network.recordCache.ttlMs`).
 */
export function outcomeCatchUp(market: Pick<MarketService, 'evidence'>, now: number, skewMs: number, ttlMs: number = RECORD_CACHE_DEFAULTS.ttlMs, failedAt?: number): CatchUpOptions {
  const e = market.evidence;
  let newest = -Infinity;
  for (const r of e.receipts.values()) newest = Math.max(newest, r.record.completedAt);
  for (const a of e.acceptances.values()) newest = Math.max(newest, a.record.signedAt);
  for (const n of e.nondeliveries.values()) newest = Math.max(newest, n.record.signedAt);
  // an earlier run's store failed a write at `failedAt` and was reopened (OUTCOME_GAP): what came from then until the
  // reopen was not kept, and the outcomes stored after the reopen are newer than that gap
  const from = Math.min(newest, now, failedAt ?? Infinity) - skewMs - CATCH_UP_DEFAULTS.marginMs;
  return { kinds: [...OUTCOME_EVIDENCE_KINDS], from: Math.max(from, now - ttlMs), maxAgeMs: ttlMs };
}

/**
 * The overlay's sublevel, and its one key, holding when the store first failed a write before the reopen of a run that
 * then went on storing outcomes (docs/network.md §5 "Catching up on outcomes"): the next start's catch-up reaches back
 * to it while it is within the record cache's time-to-live (a peer holds nothing older), and forgets it after.
 */
export const OUTCOME_GAP = { sublevel: 'outcome-gap', key: 'failed-at' } as const;

/** Extension point for roles that live beside provider and buyer (steward, witness). */
export interface OverlayRole {
  stop(): Promise<void>;
}

export class OverlayNode {
  readonly name: string;
  readonly registry = new Registry();
  readonly did: string;
  net!: Network;
  records!: RecordStore;
  market!: MarketService;
  provider: Provider | undefined;
  /** The jobs this provider ran (provider-wiring.ts), dropped with the job history. */
  providerRuns: ProviderRuns | undefined;
  /** This provider's pool membership (docs/pools.md), when the config has a `pool` section. */
  poolMember: PoolMember | undefined;
  buyer: Buyer | undefined;
  /** Further roles by name (steward, witness), set up by their modules. */
  readonly extra = new Map<string, OverlayRole>();
  steward: Steward | undefined;
  witness: WitnessRole | undefined;
  /** Live providers from presence and adverts (src/matching/presence.ts; memory only). */
  presence!: PresenceView;
  /** This provider's presence publisher (provider role only). */
  presencePublisher: PresencePublisher | undefined;
  /** Matching (docs/matching.md): the live-provider view and the budget each provider already draws on; wired by the presence and lease modules. */
  liveProviders: (now: number) => LiveProvider[] = (now) => this.presence.live(now);
  /**
   * Leases and jobs each provider holds now (filled by src/node/orders-wiring.ts): every lease by default (candidates,
   * the probe, rankAhead); `open-bids` for the batch planner, which subtracts designated orders on its own.
   */
  heldByProvider: (leases?: HeldLeases) => ReadonlyMap<string, number> = () => new Map();
  /** Open orders designated to a provider (filled by src/node/orders-wiring.ts). */
  designatedOrders: (did: string) => number = () => 0;
  /** Open orders, leases and claims (src/node/orders-wiring.ts; it fills the two hooks above). */
  orders: OrdersWiring | undefined;
  /** Admission asks (`admit`, `admit-gang`) open at this overlay's steward at once; a further one waits here (src/roles/admission-client.ts inAskSlot). */
  readonly stewardAsks = new Slots(STEWARD_ASKS);
  /** Over-limit requests on this node's own servers (claim/1) into the network's peer-abuse score (net/peer-abuse.ts). */
  readonly abuseReports = new AbuseReports();
  #stops: Array<() => Promise<void>> = [];
  readonly #buyerSide = new BuyerWiring(this);
  readonly #jobs: Counter<'role' | 'outcome'>;
  readonly #latency: Histogram<'outcome'>;
  #probe: Promise<ProbeService> | undefined;
  /** Heads dropped as HEAD_FOREIGN_STEWARD since start (the witness's status shows them: foreignHeads below). */
  readonly #foreignHeads = new ForeignHeads(() => this.clock());
  /** A pool member's trail and run log left by an earlier run, when no pool member runs now: pruned with the history. */
  #poolHistory: ReadonlyArray<{ pruneHistory(before: number, max?: number, after?: string): Promise<HistoryPruned> }> = [];

  private constructor(readonly d: OverlayDeps) {
    this.name = d.network.overlay;
    this.did = d.identity.did;
    this.registry.setDefaultLabels({ overlay: this.name });
    this.#jobs = new Counter({ name: 'c0mpute_jobs_total', help: 'Jobs by role and outcome', labelNames: ['role', 'outcome'], registers: [this.registry] });
    this.#latency = new Histogram({ name: 'c0mpute_job_seconds', help: 'Buyer job latency, run to countersigned receipt', labelNames: ['outcome'], buckets: [0.1, 0.5, 1, 2, 5, 10, 30, 60, 300], registers: [this.registry] });
  }

  get clock(): Clock {
    return this.d.clock;
  }
  get log(): Logger {
    return this.d.log;
  }
  get roles(): Role[] {
    return this.d.roles;
  }

  /** Heads on pool-head signed by another key than network.steward, dropped since start: how many, the last signer and when (WitnessPorts.foreignHeads). */
  foreignHeads(): { dropped: number; last: { signer: string; at: number } } | undefined {
    return this.#foreignHeads.view();
  }

  static async start(d: OverlayDeps): Promise<OverlayNode> {
    const o = new OverlayNode(d);
    try {
      await o.#start();
    } catch (e) {
      await o.stop();
      throw e;
    }
    return o;
  }

  /** Sublevel prefix of this overlay's stores: none for `public` (the stores before overlays existed). */
  get prefix(): string {
    return this.name === 'public' ? '' : `${this.name}~`;
  }

  /**
   * When an earlier run's store first failed a write before a reopen (OUTCOME_GAP), while within `ttlMs` of `now`; an
   * older one is deleted (nothing a peer holds reaches back to it). Undefined when none (or it cannot be read).
   */
  async #outcomeGap(now: number, ttlMs: number): Promise<number | undefined> {
    const s = this.sub(OUTCOME_GAP.sublevel);
    try {
      const v = await s.get(OUTCOME_GAP.key);
      if (v === undefined) return undefined;
      const at = Number(new TextDecoder().decode(v));
      if (Number.isSafeInteger(at) && at > now - ttlMs) return at;
      await s.del(OUTCOME_GAP.key);
    } catch (e) {
      this.log.warn({ err: (e as Error).message }, 'could not read or clear when the store last failed a write: the outcome catch-up reaches back to the newest outcome held only');
    }
    return undefined;
  }

  /**
   * Outcomes accepted while the store takes no writes are not kept (each forgotten as seen: `outcome` in #start). When
   * the database is reopened, a catch-up gap opens from the first failed write, less the clock-skew window and the
   * margin, and the peers connected are asked for what they took since (docs/network.md §5 "Catching up on outcomes");
   * that time is written down then (OUTCOME_GAP, with an earlier one still within reach) for a restart before the
   * catch-up is done. A run stopped before the reopen stored nothing after the failure: the newest outcome held dates
   * its gap then.
   */
  #catchUpAfterReopen(earlier: number | undefined): void {
    const db = this.d.db;
    const skew = this.d.network.clockSkewMs;
    let failedAt: number | undefined;
    let mark = earlier;
    const offPoisoned = onStoreEvent(db, 'poisoned', (h) => {
      failedAt ??= h.since ?? this.clock();
    });
    const offRecovered = onStoreEvent(db, 'recovered', () => {
      if (failedAt === undefined) return;
      const at = Math.min(failedAt, mark ?? Infinity);
      failedAt = undefined;
      mark = at;
      this.log.info({ since: new Date(at).toISOString() }, 'the store was reopened: asking peers for the outcomes taken since its first failed write');
      this.net.catchUpFrom(at - skew - CATCH_UP_DEFAULTS.marginMs);
      this.sub(OUTCOME_GAP.sublevel).put(OUTCOME_GAP.key, new TextEncoder().encode(String(at)), { sync: true } as never).catch((e: unknown) =>
        this.log.warn({ err: (e as Error).message }, 'could not write down when the store failed a write: a restart before the catch-up is done reaches back to the newest outcome held only'),
      );
    });
    this.#stops.push(async () => {
      offPoisoned();
      offRecovered();
    });
  }

  /** A sublevel of this overlay (for roles that keep state). */
  sub(name: string) {
    return sub(this.d.db, `${this.prefix}${name}`);
  }

  async #start(): Promise<void> {
    const { db, identity, network: nc } = this.d;
    const now = this.clock();
    // Witness records about the stewards this node's config names are kept outside the caps strangers' fill (records.ts).
    const named = this.namedStewards();
    // Jobs a provider quoted on and did not run are kept within history.maxQuotedJobs(Bytes) (records.ts putQuoted).
    const hc = this.d.config.history;
    const quotedEvicted = new Counter({ name: 'c0mpute_provider_quoted_jobs_evicted_total', help: 'Jobs quoted on and not run let go past history.maxQuotedJobs or maxQuotedJobBytes, the first quoted first', registers: [this.registry] });
    this.records = await RecordStore.open(db, this.prefix, {
      log: this.log, clock: this.clock, self: this.did, witnessRecords: this.d.config.witnessRecords, stewards: [...named],
      quotedJobs: { maxJobs: hc.maxQuotedJobs, maxBytes: hc.maxQuotedJobBytes }, onQuotedEvicted: (n) => quotedEvicted.inc(n),
    });
    const records = this.records;
    new Gauge({ name: 'c0mpute_provider_quoted_jobs_held', help: 'Jobs of other nodes quoted on and not run, held (bounded by history.maxQuotedJobs)', registers: [this.registry], collect() { this.set(records.quotedJobs.count); } });
    new Gauge({ name: 'c0mpute_provider_quoted_jobs_bytes', help: 'Envelope bytes of the jobs quoted on and not run, held (bounded by history.maxQuotedJobBytes)', registers: [this.registry], collect() { this.set(records.quotedJobs.bytes); } });
    this.market = await MarketService.open({ db, prefix: this.prefix, records: this.records, now, log: this.log, signer: identity.signer, did: this.did, skewMs: nc.clockSkewMs, trust: trustFor(this.d.config, nc), maxEvidence: this.d.config.reputation.maxEvidence, maxEvidenceBytes: this.d.config.reputation.maxEvidenceBytes,
      clock: this.clock, maxAdverts: this.d.config.market.maxAdverts, registry: this.registry, connected: () => new Set(this.net ? this.net.peers().map((p) => p.did ?? '') : []), live: (did, t) => this.presence?.get(did, t) !== undefined, clockDropped: (job) => this.net?.clockDropped?.(job) ?? new Map() });

    const cache = new MemoryRecordCache({ ...nc.recordCache, clock: this.clock });
    const liveAdvert = (did: string, t: number) => {
      const a = this.market.adverts.latest.get(did);
      return a && a.record.expiresAt > t ? a : undefined;
    };
    this.presence = new PresenceView(liveAdvert, { skewMs: nc.clockSkewMs });
    const source = overlayRecordSource({ adverts: () => this.records.adverts(), presence: (t) => this.presence.records(t), getBytes: (a) => this.records.getBytes(a), marketBytes: (a) => this.market.getBytes(a), cache });
    const swarmKey = nc.swarmKeyFile ? readSwarmKey(nc.swarmKeyFile) : undefined;
    if (this.name !== 'public' && !swarmKey) this.log.warn({ overlay: this.name }, 'overlay has no swarm key: anyone can connect (set network.swarmKeyFile)');
    const shards = marketShards(this.d.config, nc, this.roles);
    const hears = hearsOutcomes(this.d.config, nc, this.roles);
    const witnesses = witnessHook({ ...(nc.witnesses ? { witnesses: nc.witnesses } : {}), ...(nc.steward ? { steward: nc.steward } : {}) });
    const evidence = evidenceHook(nc.steward ? { steward: nc.steward } : {});
    const heads = poolHeadHook(nc.steward ? { steward: nc.steward } : {}, (signer) => this.#foreignHeads.note(signer));
    const base = recordHooks({
      advert: (a) => this.market.adverts.get(a) ?? openHeld(cache.get(a), T.advert),
      offer: (a) => this.market.book.get(a) ?? openHeld(cache.get(a), T.offer),
      job: async (a) => (await this.records.get(a, T.job)) ?? openHeld(cache.get(a), T.job),
      receipt: (a) => this.market.evidence.receipts.get(a) ?? openHeld(cache.get(a), T.receipt),
    }, { skewMs: nc.clockSkewMs });
    const failedAt = hears ? await this.#outcomeGap(now, nc.recordCache?.ttlMs ?? RECORD_CACHE_DEFAULTS.ttlMs) : undefined;
    this.net = await createNetwork({
      signer: identity.signer,
      listen: nc.listen,
      announce: nc.announce,
      bootstrap: nc.bootstrap,
      overlay: this.name,
      ...(shards ? { shards } : {}),
      ...(hears ? { catchUp: outcomeCatchUp(this.market, now, nc.clockSkewMs, nc.recordCache?.ttlMs, failedAt) } : { publishOnly: [...OUTCOME_EVIDENCE_KINDS] }),
      loopback: nc.loopback,
      ...(swarmKey ? { swarmKey } : {}),
      ...(nc.allowlist ? { allowlist: nc.allowlist } : {}),
      clock: this.clock,
      skewMs: nc.clockSkewMs,
      records: source,
      registry: this.registry,
      logger: this.log.child({ mod: 'net', overlay: this.name }),
      hooks: {
        ...base,
        // a receipt sent directly (its exec stream broke) is kept only as this buyer's own (late-receipts.ts)
        receipt: receiptHook(base.receipt, () => this.#ownReceipts()),
        ...perNonDeliveryKind(() => notFromTheFuture(nondeliveryHook, nc.clockSkewMs)),
        presence: presenceHook(liveAdvert, this.clock),
        ...(witnesses ? { 'pool-witness': witnesses } : {}),
        ...(evidence ? { 'pool-evidence': evidence } : {}),
        ...(heads ? { 'pool-head': heads } : {}),
      },
      ...(nc.floodLimits ? { floodLimits: nc.floodLimits } : {}),
      ...(nc.verifyThreads === undefined ? {} : { verifyThreads: nc.verifyThreads }),
      abuse: { ...(nc.abuse ?? {}), reports: this.abuseReports },
      ...(nc.recordsServe ? { recordsServe: nc.recordsServe } : {}),
      ...(this.d.oneShot ? { oneShot: true } : {}),
      ...(this.d.display ? { unreachable: () => true } : reconnectOptions(nc.reconnect, join(this.d.dataDir, `peers-${this.name}.json`))),
      // a provider must be able to hold every input it quotes for (provider.maxInputBytes may exceed the 16 MiB the defaults fit)
      ...(this.roles.includes('provider') && this.d.config.provider ? { directBudget: budgetForInput(this.d.config.provider.maxInputBytes) } : {}),
    });
    // (stops run last first) the outcomes still on their way to disk are settled once the network has stopped delivering
    this.#stops.push(() => this.market.evidence.settled());
    this.#stops.push(() => this.net.stop());
    if (hears) this.#catchUpAfterReopen(failedAt);
    this.#stops.push(async () => this.#buyerSide.stop());

    this.net.subscribe('advert', async (rec) => {
      await this.market.putAdvert(rec as Opened<Advert>);
    });
    // Relaying is not storing: only offers for this node's own jobs (or, on a steward, for a job it holds) are kept.
    // A steward selects only for a job it admitted (steward-handlers.ts `select`: the job is read from the record
    // store), and stores every job asked for admission before it answers, so before the job is published and
    // quoted on; an offer for a job it never saw could never be weighed (docs/market.md §3 "Which offers a node keeps").
    this.net.subscribe('offer', async (rec, meta) => {
      const o = rec as Opened<Offer>;
      if (this.market.wantsOffer(o) || (this.steward && (await this.records.get(o.record.job, T.job)) !== undefined)) await this.#buyerSide.onOffer(o, meta.attachments);
      else this.market.notStored();
    });
    // Not awaited: publishing an offer can wait on a congested gossip stream, and must not hold up
    // the delivery of every record behind it (the quoting decision itself is made synchronously).
    this.net.subscribe('job', (rec) => void this.#quote(rec as Opened<Job>).catch((e) => this.log.warn({ err: (e as Error).message }, 'quoting failed')));
    this.net.subscribe('presence', (rec) => void this.presence.add(rec as Opened<Presence>, this.clock()));
    this.net.subscribe('selection', (rec) => this.provider?.onSelection(rec as Opened<Selection>));
    // Outcomes are evidence, written a batch at a time (EvidenceStore.add: those that come while one batch is written go
    // together in the next). A gossiped one is not waited for while fewer than OUTCOME_WRITES_IN_FLIGHT are on their way
    // to disk, so the next is handed over and joins the batch (before, one synced write a record: some 60 a second, and a
    // flood of outcomes waited in the delivery queue); past that, and for one sent directly (outcome/1: its sender is
    // answered only once it is stored), the delivery waits for the write. A write not waited for that fails is logged
    // summarised (a store that takes no writes fails them all: PeerLog by code, the store logs its own state).
    const notStored = new PeerLog({ log: this.log });
    this.#stops.push(async () => notStored.stop());
    const outcome = (rec: Opened, meta: DeliveryMeta): Promise<void> | undefined => {
      const stored = this.market.addEvidence(rec as Opened<Receipt> | Opened<Acceptance> | Opened<AnyNonDelivery>);
      // not kept because this node's store takes no writes: forgotten as seen and left out of the record cache (what a
      // catch-up's digest lists), so the catch-up once the store is reopened (#catchUpAfterReopen) brings it again (as
      // outcome/1 forgets one it answers not kept); before, it stayed seen and was never stored (review s43 R2 F1)
      stored.catch((e: unknown) => {
        if (isStoreFailure(e)) this.net.notKept(rec);
      });
      if (meta.source === 'direct' || this.market.evidence.pending >= OUTCOME_WRITES_IN_FLIGHT) return stored;
      stored.catch((e: unknown) => {
        const code = (e as { code?: unknown }).code;
        const fields = { kind: meta.kind, address: rec.address, err: e };
        if (isStoreFailure(e)) notStored.warn(undefined, code as string, 'outcome not stored: this node\'s store takes no writes', fields);
        else notStored.warn(meta.from, typeof code === 'string' ? code : 'INTERNAL', 'outcome not stored', fields);
      });
      return undefined;
    };
    this.net.subscribe('receipt', (rec, meta) => {
      // directly: this buyer's own receipt, which the provider's exec stream could not deliver (checked: late-receipts.ts)
      if (meta.source === 'direct') this.#directReceipt(rec as Opened<Receipt>);
      const stored = outcome(rec, meta);
      // one of this node's own jobs (direct, or heard on gossip: both checked by checkOwnReceipt) whose provider admits
      // it stalled: countersigned once stored (late-receipts.ts countersignsLate)
      const r = rec as Opened<Receipt>;
      if (r.record.buyer !== this.did || !countersignsLate(r.record)) return stored;
      const sign = () => void this.#countersignLate(r).catch((e: unknown) => this.log.warn({ receipt: r.address, err: (e as Error).message }, 'a late receipt could not be countersigned'));
      if (stored) return stored.then(sign);
      sign();
      return undefined;
    });
    this.net.subscribe('acceptance', outcome);
    // every version: a /2 (a pooled offer's, counted against the pool) and a /3 (an open order's) each on its own topic kind
    for (const kind of NONDELIVERY_TOPIC_KINDS) this.net.subscribe(kind, outcome);
    // Witness receipts (a bounded set per witness and steward: witness-keep.ts) and equivocation
    // evidence are kept by every node on the overlay, so any of them can grade a steward's
    // ledger (c0mpute ledger fetch); within witnessRecords (records.ts), since anyone can mint both.
    const keep = (rec: Opened) =>
      this.records.put(rec).catch((e: unknown) => {
        this.log.warn({ kind: rec.type, record: rec.address, err: (e as Error).message }, 'could not store a witness record');
        return false;
      });
    this.net.subscribe('pool-witness', (rec) => void keep(rec));
    // A warning only for a steward this node's config names, once per record stored (at most witnessRecords.maxEvidence
    // a steward): evidence about any other costs nothing to make, and a flood of it must not fill the log.
    this.net.subscribe('pool-evidence', (rec) =>
      void keep(rec).then((stored) => {
        const steward = (rec.record as { steward?: string }).steward;
        const loud = stored && steward !== undefined && named.has(steward);
        this.log[loud ? 'warn' : 'debug']({ steward, witness: rec.signer, evidence: rec.address, stored }, 'a witness published evidence that the steward equivocated');
      }),
    );

    if (nc.steward) this.selectionAuthority = (signer) => signer === nc.steward;
    const providerHooks = { onStop: (stop: () => Promise<void>) => void this.#stops.push(stop), quote: (job: Opened<Job>, opts?: { invited?: boolean }) => this.#quote(job, opts), countJob: (outcome: string) => void this.#jobs.inc({ role: 'provider', outcome }) };
    if (this.roles.includes('provider')) await setupProvider(this, providerHooks);
    // Without the role: what an earlier run left of its work is still recovered and delivered (docs/node.md "Changing roles").
    const leftovers = this.roles.includes('provider') || this.d.display ? undefined : await providerLeftovers(this, providerHooks);
    if (!this.poolMember) this.#poolHistory = await poolHistoryLeftovers(this);
    if (this.roles.includes('buyer')) this.buyer = this.#buyerSide.createBuyer();
    this.orders = await wireOrders(this, { claimMode: this.d.config.provider?.claimMode ?? 'leased', skewMs: nc.clockSkewMs });
    this.#stops.push(async () => this.orders?.claimer?.stop());
    // after the runs were interrupted and before the network stops: claims still waiting are answered NODE_CLOSING
    this.#stops.push(async () => this.orders?.desk?.close());
    if (this.roles.includes('steward')) {
      const sc = this.d.config.steward;
      if (nc.witnesses?.includes(this.did)) throw new C0Error('CONFIG_INVALID', `network.witnesses names this steward's own key ${this.did}: a witness must hold a key the steward does not (pool/1 §6.7)`, { field: 'network.witnesses' });
      const missing = roleSectionProblem('steward', this.d.config);
      if (missing || !sc) throw missing;
      this.steward = await Steward.start(this, this.d.dataDir, { ...sc, managed: sc.managed || nc.managed, ...(nc.witnesses ? { witnesses: nc.witnesses } : {}), maxWitnesses: this.d.config.witnessRecords.maxWitnesses, headRepublishMs: nc.resyncMs, catchUpMs: nc.resyncMs, ...(nc.allowlist ? { allowlist: nc.allowlist } : {}) }, identity);
      this.addRole('steward', this.steward);
    } else if (!this.d.display) stewardLedgerLeft(this, this.d.dataDir, nc.steward, this.did);
    if (this.roles.includes('witness')) {
      // On an overlay that names its steward, receipts for any other are dropped by every member: witness only it.
      const stewards = this.d.config.witness.stewards ?? (nc.steward ? [nc.steward] : undefined);
      if (nc.witnesses && !nc.witnesses.includes(this.did)) {
        this.log.warn({ overlay: this.name, witnesses: nc.witnesses }, 'this node is a witness but network.witnesses does not name it: every member configured alike ignores its receipts');
      }
      // the node's other overlays' stewards: shown in their overlay's witness view, not in this one's (one store for all)
      const elsewhere = networksOf(this.d.config).filter((n) => n.overlay !== this.name && n.steward !== undefined && n.steward !== nc.steward).map((n) => n.steward!);
      this.witness = await WitnessRole.start(this, this.d.db, identity, { ...(stewards ? { stewards } : {}), maxStewards: this.d.config.witness.maxStewards, ...(nc.witnesses ? { overlayWitnesses: nc.witnesses } : {}), ...(elsewhere.length ? { elsewhere } : {}) });
      this.addRole('witness', this.witness);
      // heads from keys neither held nor named (docs/overlays.md "What a witness takes on"): what they cost, bounded
      const w = this.witness;
      new Gauge({ name: 'c0mpute_witness_strangers_held_back', help: 'Keys neither held nor named whose heads the witness holds back (a head refused or not reached lately)', labelNames: ['state'], registers: [this.registry], collect() { const s = w.strangers(); this.set({ state: 'refused' }, s.heldBack - s.unreached); this.set({ state: 'unreached' }, s.unreached); } });
      new Counter({ name: 'c0mpute_witness_stranger_heads_ignored_total', help: 'Heads of keys neither held nor named the witness dropped without a fetch (held back, or past its limits on such catch-ups)', registers: [this.registry], collect() { this.reset(); this.inc(w.strangers().ignored); } });
    } else if (!networksOf(this.d.config).some((n) => n.roles.includes('witness'))) {
      // the role taken off (on every overlay: one that still witnesses reads and gossips the same store): what it kept
      // stays readable, and its evidence gossiped (docs/node.md "Changing roles")
      this.witness = await keptWitness(this, this.d.db, identity, this.d.display === true);
      if (this.witness) this.addRole('witness', this.witness);
    }

    await this.net.start();
    // peers begin to connect from here: what waits on the network runs now (a buyer's withdraw of leftover claims)
    if (this.buyer) this.#buyerSide.netStarted();
    if (this.provider) await this.provider.start();
    await leftovers?.recover();
    await this.poolMember?.start();
    this.presencePublisher?.start();
    this.#antiEntropy(nc.resyncMs);
    this.#pruneOffers();
    this.#pruneHistory();
    if (hears) this.#keepTrusted();
    if (nc.outcomes === 'own' && nc.steward && !this.roles.includes('steward')) this.log.warn({ overlay: this.name }, 'network.outcomes is own on an overlay with a steward: this node relays no receipt, and the steward hears each only if gossip reaches it without it');
  }

  /**
   * The buyers this node trusts by name (`reputation.trustedBuyers`) are kept connected, so their outcomes reach it
   * by fanout however few nodes joined the outcome topics (keep-connected.ts). Only when this node joined them.
   */
  #keepTrusted(): void {
    const stop = keepConnected(this.net, this.d.config.reputation.trustedBuyers, this.log);
    this.#stops.push(async () => stop());
  }

  /**
   * Re-sync live adverts (and, for a provider, live jobs it may still quote on
   * or claim, and the selections that decided them: antiEntropyKinds) from a
   * random peer at 2 s, 5 s, then every `everyMs` (0 = never).
   */
  #antiEntropy(everyMs: number): void {
    if (everyMs <= 0) return;
    const timers: LongTimer[] = [];
    const once = () => {
      const peers = this.net.peers();
      if (!peers.length) return;
      const p = peers[Math.floor(Math.random() * peers.length)]!;
      void this.net.syncFrom(p.peerId, antiEntropyKinds(!!this.provider)).then(
        (r) => r.accepted && this.log.debug({ peer: p.did, accepted: r.accepted }, 'anti-entropy sync found records gossip had missed'),
        () => {},
      );
    };
    // network.resyncMs has no upper bound: a period past a Node timer's 24.8 days would otherwise run every 1 ms
    timers.push(setLongTimeout(once, 2000), setLongTimeout(once, 5000), setLongInterval(once, everyMs));
    for (const t of timers) t.unref();
    this.#stops.push(async () => timers.forEach((t) => t.clear()));
  }

  /** Every minute, drop the offers no decision or outcome can still want (OfferBook.prune). */
  #pruneOffers(): void {
    const t = setInterval(() => {
      this.market.book.prune(this.clock()).then(
        (n) => n && this.log.debug({ dropped: n, held: this.market.book.size }, 'dropped offers past their start-by time'),
        (e: unknown) => this.log.warn({ err: (e as Error).message }, 'dropping stale offers failed; tried again in a minute'),
      );
    }, 60_000);
    t.unref();
    this.#stops.push(async () => clearInterval(t));
  }

  /** Drop the job history past `history.keepDays` (history-prune.ts). */
  #pruneHistory(): void {
    const keepDays = this.d.config.history.keepDays;
    if (keepDays <= 0) return;
    const pruned = new Counter({ name: 'c0mpute_history_pruned_total', help: 'Job history records dropped past history.keepDays (jobs, selections, offers, claims, claim refusals; a provider\'s run notes; a pool member\'s dispatch trail entries and run log notes)', registers: [this.registry] });
    // A pass that would drop all of it waits for a peer's fresh record to confirm the clock (history-prune.ts): the
    // records that say when now is are the ones signed just now, which a peer's clock dated
    const clockCheck = new ClockCorroboration(this.clock, monotonicClock, DEFAULT_SKEW_MS);
    const note = (rec: Opened) => {
      if (rec.signer === this.did) return;
      const w = validityWindow(rec.type, rec.record);
      if (w) clockCheck.note(w[0]);
    };
    for (const kind of ['advert', 'presence', 'job', 'offer'] as const) {
      try {
        this.net.subscribe(kind, note);
      } catch (e) {
        // a kind this node's roles do not join (NET_TOPIC_NOT_JOINED): the others corroborate
        if (!(e instanceof C0Error) || e.code !== 'NET_TOPIC_NOT_JOINED') throw e;
      }
    }
    const p = startHistoryPruning({
      stores: [this.records, ...(this.providerRuns ? [this.providerRuns] : []), ...(this.poolMember?.historyStores() ?? this.#poolHistory)],
      keepDays,
      clock: this.clock,
      log: this.log,
      onPruned: (n) => pruned.inc(n),
      wholeHistory: { newest: () => this.records.newestHistoryAt(), corroborated: () => clockCheck.holds() },
    });
    // a pass held for the clock runs as soon as a peer's record confirms it, not at the next pass 10 min on
    clockCheck.onCorroborated = () => p.corroborated();
    this.#stops.push(() => p.stop());
  }

  /**
   * The stewards this node's config names on this overlay (`network.steward`, `witness.stewards`, itself when it is
   * the steward): their witness records are kept outside the caps strangers' records fill (witnessRecords).
   */
  namedStewards(): ReadonlySet<string> {
    const nc = this.d.network;
    return new Set([...(nc.steward ? [nc.steward] : []), ...(this.d.config.witness.stewards ?? []), ...(this.roles.includes('steward') ? [this.did] : [])]);
  }

  /** Register a role's stop (steward, witness) so it stops before the network. */
  addRole(name: string, role: OverlayRole): void {
    this.extra.set(name, role);
    this.#stops.push(() => role.stop());
  }

  /** Log a receipt of this node's own job that came directly (checked: late-receipts.ts): a warning when the run ended without it. */
  #directReceipt(rec: Opened<Receipt>): void {
    const ev = this.market.evidence;
    const said = directReceiptLog(rec, ev.receipts.has(rec.address), buyerVerdict(rec, ev.acceptancesOf(rec.address)) !== undefined);
    this.log[said.level](said.fields, said.msg);
  }

  /**
   * Countersign a receipt of this node's own job that came after its run ended, whose provider admits the failure
   * (countersignsLate: EXEC_PROVIDER_STALLED), unless a verdict of this node's is held: `accepted`, as the run signs a
   * failed receipt it gets on the stream, kept and published, so reputation counts the failure (QA qaMatch F10).
   */
  async #countersignLate(rec: Opened<Receipt>): Promise<void> {
    const ev = this.market.evidence;
    if (buyerVerdict(rec, ev.acceptancesOf(rec.address)) !== undefined) return;
    const acceptance = seal(T.acceptance, { receipt: rec.address, verdict: 'accepted', signedAt: this.clock() }, this.d.identity.signer);
    await this.market.addEvidence(acceptance);
    await this.net.publish('acceptance', acceptance.bytes).catch(() => undefined);
    this.log.info({ job: rec.record.job, receipt: rec.address, acceptance: acceptance.address, failure: rec.record.failure?.code }, 'late receipt countersigned: the provider admits it stalled');
  }

  /** What a receipt sent directly is checked against: this node's own jobs, selections and offers, whatever its roles now (late-receipts.ts). */
  #ownReceipts(): OwnReceiptLookups {
    return ownReceiptLookups({
      did: this.did,
      book: (a) => this.market.book.get(a),
      records: this.records,
      advert: (a) => this.market.adverts.get(a),
      ...(this.d.network.clockSkewMs === undefined ? {} : { skewMs: this.d.network.clockSkewMs }),
    });
  }


  /** Who besides the job's buyer may sign a selection a provider will run (an overlay's steward). */
  selectionAuthority: ((selectionSigner: string, jobBuyer: string) => boolean) | undefined;

  /**
   * A steward's ledger as any node on the overlay can hold it: the entries
   * fetched over /c0mpute/ledger/1 and the witness receipts for that steward
   * this node keeps (for each witness, its longest and a checkpoint about
   * every doubling of length: witness-keep.ts). `c0mpute ledger verify`
   * grades the result. The fetch is bounded in bytes and time, and each entry
   * must chain as it comes (ledger-fetch.ts).
   */
  async fetchLedger(steward: string, opts: LedgerFetchOptions = {}): Promise<{ entries: Uint8Array[]; receipts: Uint8Array[] }> {
    // this node's own ledger, as this overlay's steward: read from its store (a node cannot dial itself)
    const own = this.steward && steward === this.did ? this.steward.ledger : undefined;
    // The receipts are read before the entries: a ledger only grows, so every receipt read first covers a length the
    // entries fetched after it reach. Read after, a head appended and cosigned while the entries came gave the file a
    // receipt longer than its entries, and `ledger verify` called an honest ledger truncated or rewritten
    // (WITNESS_LENGTH_BEYOND; QA ffLedger F2).
    // Named witnesses (network.witnesses): a receipt kept before they were named is left out, as validation now leaves it.
    const named = this.d.network.witnesses;
    const heard = await this.records.witnessReceiptsFor(steward);
    // A witness's own receipt is not among those heard (gossip does not bring a node what it published itself): the
    // node that countersigned the ledger fetched it as self-attested (QA pass, session 48). Its receipt for the head
    // it holds goes with the others.
    const mine = await this.witness?.witness.receipt(steward).catch(() => undefined);
    const all = mine && !heard.some((r) => r.address === mine.address) ? [...heard, mine] : heard;
    const receipts = all.filter((r) => !named || named.includes(r.signer)).map((r) => r.bytes);
    const entries = await fetchLedgerEntries(this.net, steward, own ? { ...opts, own } : opts);
    return { entries, receipts };
  }

  /**
   * A provider heard a job (gossip or push): quote, and keep the jobs it quoted on, within history.maxQuotedJobs(Bytes)
   * (anyone can sign jobs with fresh keys, each quoted on): a job it runs is stored for good when its receipt is
   * (provider-wiring.ts onReceipt); one it only quoted on goes when newer quotes need the room.
   */
  async #quote(job: Opened<Job>, opts: { invited?: boolean } = {}): Promise<Opened<Offer> | undefined> {
    if (!this.provider) return undefined;
    const made = await this.provider.onJob(job, opts).catch((e) => void this.log.warn({ err: (e as Error).message }, 'quoting failed'));
    if (made) await this.records.putQuoted(job);
    return made ?? this.provider.offerFor(job.address);
  }

  /** What runJob would refuse before anything is signed or sent (ROLE_NOT_ENABLED, a bad spec), checked alone. */
  checkJob(spec: JobSpec): void {
    if (!this.buyer) throw new C0Error('ROLE_NOT_ENABLED', `this node is not a buyer on overlay ${this.name} (add \`buyer\` to roles)`);
    this.buyer.check(spec);
  }

  /** Run a job as buyer on this overlay; `opts.gone`: the run's client went away (Buyer.run). */
  async runJob(spec: JobSpec, onEvent: (e: BuyerEvent) => void = () => {}, opts: { gone?: AbortSignal } = {}): Promise<JobResult> {
    if (!this.buyer) throw new C0Error('ROLE_NOT_ENABLED', `this node is not a buyer on overlay ${this.name} (add \`buyer\` to roles)`);
    const t0 = this.clock();
    // Say plainly when the node has no peers or hears no market, before and (beside "no offers") after.
    const before = this.networkHealth();
    if (before.state !== 'ok') onEvent({ e: 'network', ...before });
    const r = await this.buyer.run(spec, onEvent, opts);
    if (r.status === 'no-offers' || r.status === 'no-eligible-provider') {
      const after = this.networkHealth();
      if (after.state !== 'ok') r.network = after;
    }
    this.#jobs.inc({ role: 'buyer', outcome: r.status });
    this.#latency.observe({ outcome: r.status }, (this.clock() - t0) / 1000);
    return r;
  }

  /** The probe service, opened on first use (its `rotation` is the one open orders advance too). */
  probeService(): Promise<ProbeService> {
    return (this.#probe ??= openNodeProbe(this));
  }
  /** The market probe (src/matching/probe.ts): every candidate ranked with its ask; nothing signed. */
  probe(order: CandidateOrder): Promise<ProbeResult> {
    return this.probeService().then((p) => p.probe(order));
  }

  /** Peers, live adverts and bootstrap errors, said plainly (see net-health.ts). */
  networkHealth(): NetworkAssessment {
    const now = this.clock();
    let live = 0;
    for (const a of this.market.adverts.latest.values()) if (a.record.expiresAt > now) live++;
    // NET_NO_MARKET only where adverts matter: a buyer's or a provider's node (a witness or steward alone needs none)
    return assessNetwork(this.net.connectivity(), live, { market: this.roles.includes('buyer') || this.roles.includes('provider'), duplicates: this.net.duplicates(), gossipQuietMs: this.net.gossipQuietMs(), now, advertsAhead: this.net.advertsAhead?.() ?? [], skewMs: this.d.network.clockSkewMs, inboundRefusals: this.net.inboundRefusals?.() ?? [] });
  }

  /**
   * Break off this overlay's buyer runs in flight with a local reason and wait for them to end (at most
   * INTERRUPT_WAIT_MS): each ends `interrupted` (JOB_INTERRUPTED), and an exec stream the stop aborted earns its
   * provider no non-delivery. At the same time the provider stops: its runs are aborted, and each one's receipt
   * (EXEC_ABORTED) is signed, stored and written on its stream, still open, before anything else stops (at most
   * STOP_DRAIN_MS; Provider.stop). The first step of `stop`, while the network, the receipt delivery and the stores
   * still work; the daemon calls it before it closes the control API too, so the run's last event still reaches its
   * client.
   */
  async interruptRuns(): Promise<void> {
    await Promise.all([this.buyer?.interrupt(), this.provider?.stop()]);
  }

  async stop(): Promise<void> {
    await this.interruptRuns().catch((e: unknown) => this.log.warn({ err: (e as Error).message, overlay: this.name }, 'error while interrupting runs'));
    const stops = this.#stops.reverse();
    this.#stops = [];
    for (const s of stops) {
      try {
        await s();
      } catch (e) {
        this.log.warn({ err: (e as Error).message, overlay: this.name }, 'error while stopping');
      }
    }
  }
}

export function readSwarmKey(path: string): Uint8Array {
  let bytes: Uint8Array;
  try {
    bytes = new Uint8Array(readFileSync(path));
  } catch (e) {
    throw new C0Error('SWARM_KEY_UNREADABLE', `cannot read the overlay key ${path}: ${(e as Error).message}`);
  }
  // libp2p's pnet key file (what `c0mpute overlay create` writes): a tag line, a codec line, 32 bytes in base16
  const lines = Buffer.from(bytes).toString('utf8').split(/\r\n|\r|\n/);
  if (lines[0] !== '/key/swarm/psk/1.0.0/' || lines[1] !== '/base16/' || !/^[0-9a-fA-F]{64}$/.test(lines[2] ?? '') || lines.slice(3).some((l) => l.trim() !== '')) {
    throw new C0Error('SWARM_KEY_INVALID', `${path} is not an overlay key: expected the three lines of a libp2p swarm key (/key/swarm/psk/1.0.0/, /base16/, 64 hex digits), as \`c0mpute overlay create\` writes`, { field: 'network.swarmKeyFile' });
  }
  return bytes;
}
