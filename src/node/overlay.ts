/**
 * One overlay a node is on: its own libp2p instance (own listen address, own
 * swarm key for a private overlay, own topics), its own stores (LevelDB
 * sublevels under the overlay's prefix, so a record from one overlay never
 * reaches another's) and the roles it runs there.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Counter, Histogram, Registry } from 'prom-client';
import { C0Error } from '../errors.js';
import { T, type Advert, type Presence, type Job, type Offer, type Receipt, type Acceptance, type NonDelivery, type PolicyName, type Selection } from '../records/kinds.js';
import type { Opened } from '../records/envelope.js';
import { sub, type Db } from '../store/db.js';
import { RecordStore } from '../store/records.js';
import type { Clock } from '../util/clock.js';
import type { Logger } from '../util/log.js';
import { createNetwork, type Network } from '../net/node.js';
import { openHeld, recordHooks } from './record-hooks.js';
import { MemoryRecordCache, type RecordSource } from '../net/record-cache.js';
import { boxKeyFromIdentitySeed } from '../crypto/sealed-box.js';
import { Provider } from '../roles/provider/provider.js';
import { ProcessRegistry } from '../roles/provider/orphans.js';
import { detectHardware, mergeHardware } from '../roles/provider/hardware.js';
import { createMeter } from '../roles/provider/meters.js';
import { Buyer, type Admission, type BuyerEvent, type JobResult, type JobSpec } from '../roles/buyer.js';
import { Steward, STEWARD_PROTOCOL, PREEMPT_PROTOCOL, LEDGER_PROTOCOL, MAX_LEDGER_RANGE } from '../roles/steward.js';
import { WitnessRole } from '../roles/witness.js';
import { requestAdmission } from '../roles/admission-client.js';
import { didFromPeerId } from './peer-id.js';
import { open } from '../records/envelope.js';
import { EXEC_PROTOCOL, SEALED_OVERHEAD_BYTES, execExchange, type ExecRequest } from '../roles/exec-protocol.js';
import { MarketService } from './market-service.js';
import { nondeliveryHook, trustFor } from './reputation-trust.js';
import { JOB_PUSH_LIMITS, JOB_PUSH_PROTOCOL, MAX_PUSH_TARGETS, jobPushHandler, pushToSilent } from './job-push.js';
import { QuoteBudget } from '../roles/provider/quote-budget.js';
import { openNodeProbe, type ProbeResult, type ProbeService } from '../matching/probe.js';
import type { CandidateOrder } from '../matching/candidates.js';
import type { LiveProvider } from '../matching/types.js';
import type { NetworkConfig, NodeConfig, Role } from './config.js';
import type { Identity } from './identity.js';
import { assessNetwork, reconnectOptions, type NetworkAssessment } from './net-health.js';
import { PresenceView } from '../matching/presence.js';
import type { PresencePublisher } from '../roles/provider/presence-publisher.js';
import { presenceHook, providerPresence } from './presence-wiring.js';
import { wireOrders, type OrdersWiring } from './orders-wiring.js';
import { startPoolMember } from '../roles/pool-member/wiring.js';
import type { PoolMember } from '../roles/pool-member/member.js';
import { createExecutor } from '../roles/provider/executors.js';
import { offerToBuyer } from './offer-wiring.js';
import { marketShards } from './markets.js';

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
}

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
  /** Leases and jobs each provider holds now (filled by src/node/orders-wiring.ts). */
  heldByProvider: () => ReadonlyMap<string, number> = () => new Map();
  /** Open orders designated to a provider (filled by src/node/orders-wiring.ts). */
  designatedOrders: (did: string) => number = () => 0;
  /** Open orders, leases and claims (src/node/orders-wiring.ts; it fills the two hooks above). */
  orders: OrdersWiring | undefined;
  #stops: Array<() => Promise<void>> = [];
  #offerWaiters = new Map<string, Set<(o: Opened<Offer>) => void>>();
  readonly #jobs: Counter<'role' | 'outcome'>;
  readonly #latency: Histogram<'outcome'>;
  #probe: Promise<ProbeService> | undefined;

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

  /** A sublevel of this overlay (for roles that keep state). */
  sub(name: string) {
    return sub(this.d.db, `${this.prefix}${name}`);
  }

  async #start(): Promise<void> {
    const { db, identity, network: nc } = this.d;
    const now = this.clock();
    this.records = await RecordStore.open(db, this.prefix);
    this.market = await MarketService.open({ db, prefix: this.prefix, records: this.records, now, log: this.log, signer: identity.signer, did: this.did, skewMs: nc.clockSkewMs, trust: trustFor(this.d.config, nc),
      clock: this.clock, maxAdverts: this.d.config.market.maxAdverts, registry: this.registry, connected: () => new Set(this.net ? this.net.peers().map((p) => p.did ?? '') : []) });

    const cache = new MemoryRecordCache();
    const liveAdvert = (did: string, t: number) => {
      const a = this.market.adverts.latest.get(did);
      return a && a.record.expiresAt > t ? a : undefined;
    };
    this.presence = new PresenceView(liveAdvert, { skewMs: nc.clockSkewMs });
    const source: RecordSource = {
      live: async (kind, t, limit) => {
        if (kind === 'advert') return this.records.adverts().filter((a) => a.record.expiresAt > t).slice(0, limit).map((a) => a.bytes);
        if (kind === 'presence') return this.presence.records(t, limit).map((p) => p.bytes);
        return cache.live(kind, t, limit);
      },
      get: async (address) => (await this.records.getBytes(address)) ?? cache.get(address) ?? (await this.market.getBytes(address)),
      add: (kind, rec) => cache.add(kind, rec),
    };
    const swarmKey = nc.swarmKeyFile ? readSwarmKey(nc.swarmKeyFile) : undefined;
    if (this.name !== 'public' && !swarmKey) this.log.warn({ overlay: this.name }, 'overlay has no swarm key: anyone can connect (set network.swarmKeyFile)');
    const shards = marketShards(this.d.config, nc, this.roles);
    this.net = await createNetwork({
      signer: identity.signer,
      listen: nc.listen,
      announce: nc.announce,
      bootstrap: nc.bootstrap,
      overlay: this.name,
      ...(shards ? { shards } : {}),
      loopback: nc.loopback,
      ...(swarmKey ? { swarmKey } : {}),
      ...(nc.allowlist ? { allowlist: nc.allowlist } : {}),
      clock: this.clock,
      skewMs: nc.clockSkewMs,
      records: source,
      registry: this.registry,
      logger: this.log.child({ mod: 'net', overlay: this.name }),
      hooks: {
        ...recordHooks({
          advert: (a) => this.market.adverts.get(a) ?? openHeld(cache.get(a), T.advert),
          offer: (a) => this.market.book.get(a) ?? openHeld(cache.get(a), T.offer),
          job: async (a) => (await this.records.get(a, T.job)) ?? openHeld(cache.get(a), T.job),
          receipt: (a) => this.market.evidence.receipts.get(a) ?? openHeld(cache.get(a), T.receipt),
        }),
        nondelivery: nondeliveryHook,
        presence: presenceHook(liveAdvert, this.clock),
      },
      ...(nc.floodLimits ? { floodLimits: nc.floodLimits } : {}),
      ...(nc.verifyThreads === undefined ? {} : { verifyThreads: nc.verifyThreads }),
      ...(nc.abuse ? { abuse: nc.abuse } : {}),
      ...(nc.recordsServe ? { recordsServe: nc.recordsServe } : {}),
      ...reconnectOptions(nc.reconnect, join(this.d.dataDir, `peers-${this.name}.json`)),
    });
    this.#stops.push(() => this.net.stop());

    this.net.subscribe('advert', async (rec) => {
      await this.market.putAdvert(rec as Opened<Advert>);
    });
    // Relaying is not storing: only offers for this node's own jobs (or, on a steward, every offer) are kept.
    this.net.subscribe('offer', async (rec, meta) => {
      if (this.steward || this.market.wantsOffer(rec as Opened<Offer>)) await this.#onOffer(rec as Opened<Offer>, meta.attachments);
      else this.market.notStored();
    });
    // Not awaited: publishing an offer can wait on a congested gossip stream, and must not hold up
    // the delivery of every record behind it (the quoting decision itself is made synchronously).
    this.net.subscribe('job', (rec) => void this.#quote(rec as Opened<Job>).catch((e) => this.log.warn({ err: (e as Error).message }, 'quoting failed')));
    this.net.subscribe('presence', (rec) => void this.presence.add(rec as Opened<Presence>, this.clock()));
    this.net.subscribe('selection', (rec) => this.provider?.onSelection(rec as Opened<Selection>));
    this.net.subscribe('receipt', async (rec) => {
      await this.market.addEvidence(rec as Opened<Receipt>);
    });
    this.net.subscribe('acceptance', async (rec) => {
      await this.market.addEvidence(rec as Opened<Acceptance>);
    });
    this.net.subscribe('nondelivery', async (rec) => {
      await this.market.addEvidence(rec as Opened<NonDelivery>);
    });
    // Witness receipts and equivocation evidence are kept by every node on the
    // overlay, so any of them can grade a steward's ledger (c0mpute ledger fetch).
    this.net.subscribe('pool-witness', (rec) => void this.records.put(rec));
    this.net.subscribe('pool-evidence', (rec) => {
      this.log.warn({ steward: (rec.record as { steward?: string }).steward, witness: rec.signer, evidence: rec.address }, 'a witness published evidence that the steward equivocated');
      void this.records.put(rec);
    });

    if (nc.steward) this.selectionAuthority = (signer) => signer === nc.steward;
    if (this.roles.includes('provider')) await this.#setupProvider();
    if (this.roles.includes('buyer')) this.#setupBuyer();
    this.orders = await wireOrders(this, { claimMode: this.d.config.provider?.claimMode ?? 'leased', skewMs: nc.clockSkewMs });
    this.#stops.push(async () => this.orders?.claimer?.stop());
    if (this.roles.includes('steward')) {
      const sc = this.d.config.steward;
      if (!sc) throw new C0Error('CONFIG_INVALID', 'the steward role needs a `steward` section with treeFile', { field: 'steward' });
      this.steward = await Steward.start(this, this.d.dataDir, { ...sc, managed: sc.managed || nc.managed }, identity);
      this.addRole('steward', this.steward);
    }
    if (this.roles.includes('witness')) {
      this.witness = await WitnessRole.start(this, this.d.db, identity, { ...(this.d.config.witness.stewards ? { stewards: this.d.config.witness.stewards } : {}) });
      this.addRole('witness', this.witness);
    }

    await this.net.start();
    if (this.provider) await this.provider.start();
    await this.poolMember?.start();
    this.presencePublisher?.start();
    this.#antiEntropy(nc.resyncMs);
  }

  /**
   * Re-sync live adverts (and, for a provider, live jobs it may still quote on)
   * from a random peer at 2 s, 5 s, then every `everyMs` (0 = never).
   */
  #antiEntropy(everyMs: number): void {
    if (everyMs <= 0) return;
    const timers: NodeJS.Timeout[] = [];
    const once = () => {
      const peers = this.net.peers();
      if (!peers.length) return;
      const p = peers[Math.floor(Math.random() * peers.length)]!;
      void this.net.syncFrom(p.peerId, this.provider ? ['advert', 'job'] : ['advert']).then(
        (r) => r.accepted && this.log.debug({ peer: p.did, accepted: r.accepted }, 'anti-entropy sync found records gossip had missed'),
        () => {},
      );
    };
    timers.push(setTimeout(once, 2000), setTimeout(once, 5000), setInterval(once, everyMs));
    for (const t of timers) t.unref();
    this.#stops.push(async () => timers.forEach((t) => clearTimeout(t)));
  }

  /** Register a role's stop (steward, witness) so it stops before the network. */
  addRole(name: string, role: OverlayRole): void {
    this.extra.set(name, role);
    this.#stops.push(() => role.stop());
  }

  async #setupProvider(): Promise<void> {
    const { config, identity } = this.d;
    const pc = config.provider;
    if (!pc) throw new C0Error('CONFIG_INVALID', 'the provider role needs a `provider` section in the config', { field: 'provider' });
    if (Object.keys(pc.workloads).length === 0) throw new C0Error('CONFIG_INVALID', 'the provider role needs at least one workload under provider.workloads', { field: 'provider.workloads' });
    const detected = await detectHardware({ nvidiaSmi: pc.detectGpus ? 'nvidia-smi' : false });
    const hardware = mergeHardware(detected, pc.hardware);
    const meter = createMeter({ type: pc.meter.type, estimatorWatts: pc.meter.estimatorWatts, ...(pc.meter.powercapRoot ? { powercapRoot: pc.meter.powercapRoot } : {}) });
    const seed = identity.signer.exportSeed();
    const box = boxKeyFromIdentitySeed(seed);
    seed.fill(0);
    const state = this.sub('provider');
    const runs = this.sub('provider-runs');
    const quoteBudget = new QuoteBudget<Opened<Offer>>({ ...pc.quoteBudget, windowMs: pc.offerLifetimeMs, registry: this.registry });
    for (const r of this.market.evidence.receipts.values()) if (r.signer === this.did) quoteBudget.markKnownBuyer(r.record.buyer);
    if (config.pool) {
      this.poolMember = await startPoolMember({
        config: config.pool, did: this.did, signer: identity.signer, clock: this.clock, log: this.log.child({ role: 'pool', overlay: this.name }), sub: (n) => this.sub(n), registry: this.registry,
        executor: (w) => (pc.workloads[w] ? createExecutor(pc.workloads[w].executor) : undefined), maxOutputBytes: pc.maxOutputBytes, net: this.net as never,
        publishReceipt: async (r) => {
          await this.market.addEvidence(r);
          await this.net.publish('receipt', r.bytes).catch(() => undefined);
        },
        slots: { take: (job) => this.provider?.takeSlot(job) ?? false, give: (job) => this.provider?.giveSlot(job) },
        onRosterChanged: () => void this.provider?.publishAdvert().catch((e) => this.log.warn({ err: (e as Error).message }, 'pool: advert after a roster change failed')),
        ...(this.d.failpoint ? { failpoint: this.d.failpoint } : {}),
      });
      this.#stops.push(async () => this.poolMember?.stop());
    }
    this.provider = new Provider({
      ...(this.poolMember ? { pool: this.poolMember.hooks() } : {}),
      quoteBudget,
      signer: identity.signer,
      did: this.did,
      config: pc,
      // Running exec process groups, ended on the next start after a crash (docs/node.md).
      processes: new ProcessRegistry(join(this.d.dataDir, 'exec-groups', encodeURIComponent(this.name))),
      execHost: { signer: identity.signer, did: this.did, net: this.net, dir: join(this.d.dataDir, 'train') },
      hardware,
      meter,
      box,
      clock: this.clock,
      log: this.log.child({ role: 'provider', overlay: this.name }),
      eligibility: (job, advert, now) => this.market.providerEligibility(job, advert, now),
      publish: async (kind, env, withAdvert, buyer) => {
        if (kind === 'advert') await this.market.putAdvert(env as Opened<Advert>);
        if (kind === 'offer') await this.market.addOffer(env as Opened<Offer>, this.clock());
        // An offer goes to its buyer (and the overlay's steward) only, not on gossip (src/net/offer-route.ts).
        if (kind === 'offer') return offerToBuyer(this.net, env, withAdvert, buyer, this.d.network.steward, this.log);
        try {
          return (await this.net.publish(kind, env.bytes, withAdvert ? [withAdvert.bytes] : [])).recipients;
        } catch (e) {
          // No peers yet is not an error for a provider: it retries, and the advert is served on sync.
          this.log.debug({ kind, err: (e as Error).message }, 'publish reached no peer');
          return 0;
        }
      },
      state: {
        loadSeq: async () => {
          const v = await state.get('seq');
          return v ? Number(Buffer.from(v).toString()) : 0;
        },
        saveSeq: async (seq) => {
          await state.batch([{ type: 'put', key: 'seq', value: new TextEncoder().encode(String(seq)) }], { sync: true } as never);
        },
        hasReceiptFor: async (job) => (await runs.get(job)) !== undefined,
      },
      onReceipt: async (r) => {
        await runs.batch([{ type: 'put', key: r.record.job, value: new TextEncoder().encode(r.address) }], { sync: true } as never);
        await this.market.addEvidence(r);
      },
      onOutcome: (status) => this.#jobs.inc({ role: 'provider', outcome: status }),
      ...(this.selectionAuthority ? { selectionAuthority: this.selectionAuthority } : {}),
      onSlotsChanged: () => this.presencePublisher?.changed(),
    });
    this.#stops.push(() => this.provider!.stop());
    this.presencePublisher = providerPresence(this, pc, identity.signer);
    this.#stops.push(async () => this.presencePublisher?.stop());
    // exec/1 streams its input and output in chunks; the stream starts with the request phase's deadline
    // and may hold one sealed input plus a frame (docs/network.md "Direct streams: limits and framing").
    await this.net.handleStream(
      EXEC_PROTOCOL,
      (ctx) => this.provider!.handleExec({ next: ctx.next, send: (f) => ctx.send(f as never), signal: ctx.signal, reserve: ctx.reserve, setDeadline: ctx.setDeadline }),
      { deadlineMs: pc.execRequestMs, maxStreamBytes: pc.maxInputBytes + SEALED_OVERHEAD_BYTES + 1024 * 1024 },
    );
    await this.net.handle(JOB_PUSH_PROTOCOL, jobPushHandler({ clock: this.clock, skewMs: this.d.network.clockSkewMs, quote: (job) => this.#quote(job), advert: (a) => this.market.adverts.get(a) }), JOB_PUSH_LIMITS);
    // Only this overlay's steward may stop work it admitted (pool/1 §5); the connection's key says who asks.
    const stewardDid = this.d.network.steward;
    if (stewardDid) {
      await this.net.handle(PREEMPT_PROTOCOL, async (frames, ctx) => {
        if (didFromPeerId(ctx.peer) !== stewardDid) throw new C0Error('PREEMPT_UNAUTHORISED', 'only the overlay’s steward may preempt work');
        const req = frames[0] as { op?: unknown; job?: unknown; reason?: unknown };
        if (typeof req?.job !== 'string') throw new C0Error('PREEMPT_BAD_REQUEST', 'job address required');
        if (req.op === 'usage') {
          // The steward's idle check (pool/1 §2.7): energy so far, with its grade.
          const u = this.provider!.usage(req.job);
          await ctx.send((u ?? { running: 'no' }) as never);
          return;
        }
        const receipt = await this.provider!.preempt(req.job, req.reason === 'idle' ? 'idle' : 'priority');
        await ctx.send((receipt ? { stopped: 'yes', receipt: receipt.bytes } : { stopped: 'no' }) as never);
      });
    }
  }

  /** Who besides the job's buyer may sign a selection a provider will run (an overlay's steward). */
  selectionAuthority: ((selectionSigner: string, jobBuyer: string) => boolean) | undefined;

  #setupBuyer(): void {
    const { config, identity } = this.d;
    this.buyer = new Buyer({
      signer: identity.signer,
      did: this.did,
      clock: this.clock,
      log: this.log.child({ role: 'buyer', overlay: this.name }),
      market: this.market,
      adverts: (did) => this.records.advertOf(did),
      publish: async (kind, env) => {
        await this.net.publish(kind, env.bytes).catch((e) => {
          if (kind === 'job') throw e;
          this.log.debug({ kind, err: (e as Error).message }, 'publish found no peers');
        });
      },
      exec: (did, protocol, request, signal) => this.#execStream(did, protocol, request, signal),
      store: async (rec) => {
        if (rec.type === T.receipt || rec.type === T.acceptance || rec.type === T.nondelivery) await this.market.addEvidence(rec as never);
        else await this.records.put(rec);
        if (rec.type === T.job && rec.signer === this.did) this.market.noteOwnJob(rec as Opened<Job>);
      },
      waitForOffers: (job, windowMs, enough, onOffer) => this.#waitForOffers(job, windowMs, enough, onOffer),
      collectWindowMs: config.buyer.collectWindowMs,
      enoughOffers: config.buyer.enoughOffers,
      defaultPolicy: config.buyer.policy,
      ...(this.d.network.steward
        ? {
            admission: (job, spec, onQueued) => this.#admission(this.d.network.steward!, job, spec, onQueued),
            withdraw: async (job) => {
              await this.net.request(this.d.network.steward!, STEWARD_PROTOCOL, [{ op: 'withdraw', job: job.address } as never], { limits: { deadlineMs: 15_000 } });
            },
          }
        : {}),
      // Open orders skip admission and the steward's selection: not on an overlay with a steward.
      ...(this.d.network.steward ? {} : { orders: { inbox: (job: string) => this.orders!.inbox(job) } }),
      ...(this.d.network.steward && this.d.network.managed ? { managedSelect: (job, policy, excluded) => this.#managedSelect(this.d.network.steward!, job, policy, excluded) } : {}),
    });
  }

  /**
   * A steward's ledger as any node on the overlay can hold it: the entries
   * fetched over /c0mpute/ledger/1 and every witness receipt for that steward
   * this node has heard. `c0mpute ledger verify` grades the result.
   */
  async fetchLedger(steward: string): Promise<{ entries: Uint8Array[]; receipts: Uint8Array[] }> {
    const entries: Uint8Array[] = [];
    for (;;) {
      const frames = await this.net.request(steward, LEDGER_PROTOCOL, [{ from: entries.length } as never], { limits: { deadlineMs: 60_000 } });
      const got = frames.filter((f): f is Uint8Array => f instanceof Uint8Array);
      entries.push(...got);
      if (got.length < MAX_LEDGER_RANGE) break;
    }
    const receipts = (await this.records.list('pool-witness/1')).filter((r) => (r.record as { steward?: string }).steward === steward).map((r) => r.bytes);
    return { entries, receipts };
  }

  /** Ask the overlay's steward to admit a claim (pool/1 §4); the stream stays open while it is queued. */
  async #admission(steward: string, job: Opened<Job>, spec: JobSpec, onQueued: (reason: string, reasons: string[]) => void): Promise<Admission> {
    if (!spec.entitlement) throw new C0Error('JOB_NEEDS_ENTITLEMENT', `overlay ${this.name} has a steward: name the entitlement the job runs under (entitlement:)`, { field: 'entitlement' });
    const request = [{ op: 'admit', job: job.bytes, entitlement: spec.entitlement, ...(spec.class ? { class: spec.class } : {}), ...(spec.energy ? { estimate: spec.energy } : {}), ...(spec.gang ? { gang: spec.gang } : {}) } as never];
    // Asks again by itself when the stream fails while the claim is queued (src/roles/admission-client.ts).
    return requestAdmission({
      ask: async (onFrame) => {
        await this.net.request(steward, STEWARD_PROTOCOL, request, { limits: { deadlineMs: Math.max(1000, job.record.deadline - this.clock() + 5000) }, onFrame });
      },
      deadline: job.record.deadline,
      clock: this.clock,
      onQueued,
      log: this.log.child({ role: 'buyer', overlay: this.name, job: job.address }),
    });
  }

  async #managedSelect(steward: string, job: Opened<Job>, policy: PolicyName, excluded: ReadonlySet<string>): Promise<{ selection: Opened<Selection>; offer: Opened<Offer> }> {
    const frames = await this.net.request(steward, STEWARD_PROTOCOL, [{ op: 'select', job: job.address, policy, excluded: [...excluded] } as never], { limits: { deadlineMs: 30_000 } });
    const f = frames[0] as { selection?: Uint8Array; offer?: Uint8Array } | undefined;
    if (!f?.selection || !f.offer) throw new C0Error('STEWARD_NO_ANSWER', 'the steward sent no selection');
    const selection = open(f.selection, T.selection);
    const offer = open(f.offer, T.offer);
    if (selection.signer !== steward || selection.record.job !== job.address || selection.record.winner !== offer.address) throw new C0Error('STEWARD_BAD_SELECTION', 'the steward’s selection does not match this job and offer');
    await this.market.addOffer(offer, this.clock());
    return { selection, offer };
  }

  /** One exec/1 exchange as an async iterable of the provider's frames (input and output chunked, src/roles/exec-protocol.ts). */
  async *#execStream(did: string, protocol: string, request: ExecRequest, signal: AbortSignal): AsyncIterable<unknown> {
    // The buyer's signal bounds the exchange (the job's deadline plus a grace period).
    const ch = await this.net.openStream(did, protocol, { signal, limits: { deadlineMs: 7 * 24 * 3600_000 } });
    yield* execExchange(ch, request);
  }

  #waitForOffers(job: string, windowMs: number, enough: number, onOffer: (o: Opened<Offer>, count: number) => void): Promise<number> {
    return new Promise((resolve) => {
      let count = this.market.offerCount(job, this.clock());
      const seen = new Set<string>();
      const finish = () => {
        clearTimeout(timer);
        clearTimeout(push);
        this.#offerWaiters.get(job)?.delete(waiter);
        resolve(count);
      };
      const waiter = (o: Opened<Offer>) => {
        if (seen.has(o.address)) return;
        seen.add(o.address);
        count = this.market.offerCount(job, this.clock());
        onOffer(o, count);
        if (enough > 0 && count >= enough) finish();
      };
      const timer = setTimeout(finish, windowMs);
      const push = setTimeout(() => void this.#pushJob(job, windowMs / 2 + 2000).catch((e) => this.log.debug({ err: (e as Error).message }, 'job push failed')), windowMs / 2);
      push.unref();
      if (!this.#offerWaiters.has(job)) this.#offerWaiters.set(job, new Set());
      this.#offerWaiters.get(job)!.add(waiter);
      if (enough > 0 && count >= enough) finish();
    });
  }

  /** A stored offer (gossip, or the answer to a pushed job) wakes the buyer waiting on its job. */
  async #onOffer(offer: Opened<Offer>, attachments: readonly Opened[]): Promise<void> {
    await this.market.addOffer(offer, this.clock(), attachments);
    for (const w of this.#offerWaiters.get(offer.record.job) ?? []) w(offer);
  }

  /** A provider heard a job (gossip or push): quote, and keep the jobs it quoted on. */
  async #quote(job: Opened<Job>): Promise<Opened<Offer> | undefined> {
    if (!this.provider) return undefined;
    const made = await this.provider.onJob(job).catch((e) => void this.log.warn({ err: (e as Error).message }, 'quoting failed'));
    if (made) await this.records.put(job);
    return made ?? this.provider.offerFor(job.address);
  }

  /** Halfway through the offer window: send the job directly to connected providers that fit it and have not quoted (job-push.ts). */
  async #pushJob(address: string, deadlineMs: number): Promise<void> {
    const job = this.market.ownJob(address);
    if (!job) return;
    const now = this.clock();
    const targets = this.market.silentProviders(job, this.net.peers().map((p) => p.did ?? ''), now, MAX_PUSH_TARGETS);
    if (!targets.length) return;
    await pushToSilent({ net: this.net, job, targets, deadlineMs, clock: this.clock, skewMs: this.d.network.clockSkewMs, log: this.log, onOffer: (o, a) => this.#onOffer(o, [a]) });
  }

  /** Run a job as buyer on this overlay. */
  async runJob(spec: JobSpec, onEvent: (e: BuyerEvent) => void = () => {}): Promise<JobResult> {
    if (!this.buyer) throw new C0Error('ROLE_NOT_ENABLED', `this node is not a buyer on overlay ${this.name} (add \`buyer\` to roles)`);
    const t0 = this.clock();
    // Say plainly when the node has no peers or hears no market, before and (beside "no offers") after.
    const before = this.networkHealth();
    if (before.state !== 'ok') onEvent({ e: 'network', ...before });
    const r = await this.buyer.run(spec, onEvent);
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
    return assessNetwork(this.net.connectivity(), live);
  }

  async stop(): Promise<void> {
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
  try {
    return new Uint8Array(readFileSync(path));
  } catch (e) {
    throw new C0Error('SWARM_KEY_UNREADABLE', `cannot read the overlay key ${path}: ${(e as Error).message}`);
  }
}
