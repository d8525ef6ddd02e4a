/**
 * The daemon: one process, one data directory, one identity, any set of roles.
 * Wires identity → LevelDB stores → network → roles → control API, and stops
 * in the reverse order.
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Counter, Histogram, Registry } from 'prom-client';
import { C0Error } from '../errors.js';
import { T, type Advert, type Job, type Offer, type Receipt, type Acceptance } from '../records/kinds.js';
import type { Opened } from '../records/envelope.js';
import { closeDb, openDb, sub, type Db } from '../store/db.js';
import { RecordStore } from '../store/records.js';
import { systemClock, type Clock } from '../util/clock.js';
import type { Logger } from '../util/log.js';
import { createNetwork, type Network } from '../net/node.js';
import { rejectError, type SemanticHook } from '../net/gossip-validation.js';
import { MemoryRecordCache, type RecordSource } from '../net/record-cache.js';
import type { TopicKind } from '../net/topics.js';
import { boxKeyFromIdentitySeed } from '../crypto/sealed-box.js';
import { Provider } from '../roles/provider/provider.js';
import { detectHardware, mergeHardware } from '../roles/provider/hardware.js';
import { createMeter } from '../roles/provider/meters.js';
import { Buyer, type BuyerEvent, type JobResult, type JobSpec } from '../roles/buyer.js';
import { EXEC_PROTOCOL, type ExecRequest } from '../roles/exec-protocol.js';
import { MarketService } from './market-service.js';
import type { NodeConfig } from './config.js';
import type { Identity } from './identity.js';
import { DAEMON_FILE, type DaemonInfo } from './daemon-info.js';

export { DAEMON_FILE, readDaemonInfo, type DaemonInfo } from './daemon-info.js';

export interface DaemonOptions {
  dataDir: string;
  config: NodeConfig;
  identity: Identity;
  log: Logger;
  clock?: Clock;
  /** Write daemon.json so CLI commands find this process (false for in-process one-shot nodes). */
  advertise?: boolean;
  /** Serve the control API (false for one-shot nodes). */
  api?: boolean;
}

export class Daemon {
  readonly registry = new Registry();
  readonly clock: Clock;
  readonly log: Logger;
  readonly did: string;
  net!: Network;
  db!: Db;
  records!: RecordStore;
  market!: MarketService;
  provider: Provider | undefined;
  buyer: Buyer | undefined;
  apiAddress: string | undefined;
  readonly startedAt: number;
  #stops: Array<() => Promise<void>> = [];
  #offerWaiters = new Map<string, Set<(o: Opened<Offer>) => void>>();
  #jobsMetric: Counter<'role' | 'outcome'>;
  #jobLatency: Histogram<'outcome'>;

  private constructor(readonly opts: DaemonOptions) {
    this.clock = opts.clock ?? systemClock;
    this.log = opts.log;
    this.did = opts.identity.did;
    this.startedAt = this.clock();
    this.#jobsMetric = new Counter({ name: 'c0mpute_jobs_total', help: 'Jobs by role and outcome', labelNames: ['role', 'outcome'], registers: [this.registry] });
    this.#jobLatency = new Histogram({ name: 'c0mpute_job_seconds', help: 'Buyer job latency, run to countersigned receipt', labelNames: ['outcome'], buckets: [0.1, 0.5, 1, 2, 5, 10, 30, 60, 300], registers: [this.registry] });
  }

  get roles(): NodeConfig['roles'] {
    return this.opts.config.roles;
  }

  static async start(opts: DaemonOptions): Promise<Daemon> {
    const d = new Daemon(opts);
    try {
      await d.#start();
    } catch (e) {
      await d.stop();
      throw e;
    }
    return d;
  }

  async #start(): Promise<void> {
    const { config, dataDir, identity } = this.opts;
    const now = this.clock();
    this.db = await openDb(join(dataDir, 'db'));
    this.#stops.push(() => closeDb(this.db));
    // Each overlay keeps its own stores: a record from one never leaks into another.
    const prefix = config.network.overlay === 'public' ? '' : `${config.network.overlay}~`;
    this.records = await RecordStore.open(this.db, prefix);
    this.market = await MarketService.open({ db: this.db, prefix, records: this.records, now, log: this.log, signer: identity.signer, did: this.did, skewMs: config.network.clockSkewMs });

    const cache = new MemoryRecordCache();
    const source: RecordSource = {
      live: async (kind, t, limit) => {
        if (kind === 'advert') return this.records.adverts().filter((a) => a.record.expiresAt > t).slice(0, limit).map((a) => a.bytes);
        return cache.live(kind, t, limit);
      },
      get: async (address) => (await this.records.getBytes(address)) ?? cache.get(address) ?? (await this.market.getBytes(address)),
      add: (kind, rec) => cache.add(kind, rec),
    };
    const swarmKey = config.network.swarmKeyFile ? readSwarmKey(config.network.swarmKeyFile) : undefined;
    this.net = await createNetwork({
      signer: identity.signer,
      listen: config.network.listen,
      announce: config.network.announce,
      bootstrap: config.network.bootstrap,
      overlay: config.network.overlay,
      loopback: config.network.loopback,
      ...(swarmKey ? { swarmKey } : {}),
      ...(config.network.allowlist ? { allowlist: config.network.allowlist } : {}),
      clock: this.clock,
      skewMs: config.network.clockSkewMs,
      records: source,
      registry: this.registry,
      logger: this.log.child({ mod: 'net' }),
      hooks: { offer: this.#offerHook },
    });
    this.#stops.push(() => this.net.stop());

    this.net.subscribe('advert', async (rec) => {
      await this.records.put(rec);
      this.market.addAdvert(rec as Opened<Advert>);
    });
    this.net.subscribe('offer', async (rec) => {
      const offer = rec as Opened<Offer>;
      await this.market.addOffer(offer, this.clock());
      for (const w of this.#offerWaiters.get(offer.record.job) ?? []) w(offer);
    });
    this.net.subscribe('job', async (rec) => {
      await this.records.put(rec);
      if (this.provider) await this.provider.onJob(rec as Opened<Job>).catch((e) => this.log.warn({ err: (e as Error).message }, 'quoting failed'));
    });
    this.net.subscribe('receipt', async (rec) => {
      await this.market.addEvidence(rec as Opened<Receipt>);
    });
    this.net.subscribe('acceptance', async (rec) => {
      await this.market.addEvidence(rec as Opened<Acceptance>);
    });

    if (config.roles.includes('provider')) await this.#setupProvider();
    if (config.roles.includes('buyer')) this.#setupBuyer();

    await this.net.start();
    if (this.provider) await this.provider.start();

    if (this.opts.api !== false) {
      const { startControlApi } = await import('./control.js');
      const api = await startControlApi(this);
      this.apiAddress = api.address;
      this.#stops.push(() => api.close());
    }
    if (this.opts.advertise !== false) {
      const info: DaemonInfo = { pid: process.pid, did: this.did, api: this.apiAddress ?? '', startedAt: this.startedAt };
      writeFileSync(join(dataDir, DAEMON_FILE), JSON.stringify(info, null, 2) + '\n', { mode: 0o600 });
      this.#stops.push(async () => rmSync(join(dataDir, DAEMON_FILE), { force: true }));
    }
    this.log.info({ did: this.did, peerId: this.net.peerId.toString(), addrs: this.net.addrs(), roles: config.roles, overlay: config.network.overlay, api: this.apiAddress }, 'node started');
  }

  /** An offer that travels with an advert must cite exactly that advert, signed by the same provider. */
  #offerHook: SemanticHook = (rec, ctx) => {
    const offer = rec as Opened<Offer>;
    for (const a of ctx.attachments) {
      if (a.type !== T.advert || a.address !== offer.record.advert || a.signer !== offer.signer) {
        throw rejectError('OFFER_ADVERT_MISMATCH', 'the attached advert is not the one the offer cites, or another provider signed it', 'advert');
      }
    }
  };

  async #setupProvider(): Promise<void> {
    const { config, identity } = this.opts;
    const pc = config.provider;
    if (!pc) throw new C0Error('CONFIG_INVALID', 'the provider role needs a `provider` section in the config', { field: 'provider' });
    if (Object.keys(pc.workloads).length === 0) throw new C0Error('CONFIG_INVALID', 'the provider role needs at least one workload under provider.workloads', { field: 'provider.workloads' });
    const detected = await detectHardware({ nvidiaSmi: pc.detectGpus ? 'nvidia-smi' : false });
    const hardware = mergeHardware(detected, pc.hardware);
    const meter = createMeter({ type: pc.meter.type, estimatorWatts: pc.meter.estimatorWatts });
    const seed = identity.signer.exportSeed();
    const box = boxKeyFromIdentitySeed(seed);
    seed.fill(0);
    const state = sub(this.db, 'provider');
    const runs = sub(this.db, 'provider-runs');
    this.provider = new Provider({
      signer: identity.signer,
      did: this.did,
      config: pc,
      hardware,
      meter,
      box,
      clock: this.clock,
      log: this.log.child({ role: 'provider' }),
      eligibility: (job, advert, now) => this.market.providerEligibility(job, advert, now),
      publish: async (kind, env, withAdvert) => {
        if (kind === 'advert') {
          await this.records.put(env);
          this.market.addAdvert(env as Opened<Advert>);
        }
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
      onOutcome: (status) => this.#jobsMetric.inc({ role: 'provider', outcome: status }),
    });
    this.#stops.push(() => this.provider!.stop());
    await this.net.handle(
      EXEC_PROTOCOL,
      async (frames, ctx) => {
        await this.provider!.handleExec(frames[0], (f) => ctx.send(f as never), ctx.signal);
      },
      { maxFrameBytes: pc.maxInputBytes + 1024 * 1024, deadlineMs: 6 * 3600_000 },
    );
  }

  #setupBuyer(): void {
    const { config, identity } = this.opts;
    this.buyer = new Buyer({
      signer: identity.signer,
      did: this.did,
      clock: this.clock,
      log: this.log.child({ role: 'buyer' }),
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
        if (rec.type === T.receipt || rec.type === T.acceptance) await this.market.addEvidence(rec as never);
        else await this.records.put(rec);
      },
      waitForOffers: (job, windowMs, enough, onOffer) => this.#waitForOffers(job, windowMs, enough, onOffer),
      collectWindowMs: config.buyer.collectWindowMs,
      enoughOffers: config.buyer.enoughOffers,
      defaultPolicy: config.buyer.policy,
    });
  }

  /** Adapt the network's callback-style request into an async iterable of frames. */
  async *#execStream(did: string, protocol: string, request: ExecRequest, signal: AbortSignal): AsyncIterable<unknown> {
    const queue: unknown[] = [];
    let wake: (() => void) | undefined;
    let done = false;
    let failure: unknown;
    const p = this.net
      .request(did, protocol, [request as never], {
        signal,
        limits: { maxFrameBytes: 64 * 1024 * 1024, deadlineMs: 6 * 3600_000 },
        onFrame: (f) => {
          queue.push(f);
          wake?.();
        },
      })
      .then(
        () => {
          done = true;
          wake?.();
        },
        (e) => {
          failure = e;
          done = true;
          wake?.();
        },
      );
    while (true) {
      if (queue.length) {
        yield queue.shift();
        continue;
      }
      if (done) break;
      await new Promise<void>((r) => (wake = r));
      wake = undefined;
    }
    await p;
    if (failure) throw failure;
  }

  #waitForOffers(job: string, windowMs: number, enough: number, onOffer: (o: Opened<Offer>, count: number) => void): Promise<number> {
    return new Promise((resolve) => {
      let count = this.market.offerCount(job, this.clock());
      const seen = new Set<string>();
      const finish = () => {
        clearTimeout(timer);
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
      if (!this.#offerWaiters.has(job)) this.#offerWaiters.set(job, new Set());
      this.#offerWaiters.get(job)!.add(waiter);
      if (enough > 0 && count >= enough) finish();
    });
  }

  /** Run a job as buyer (the CLI's `run`, through the API or in-process). */
  async runJob(spec: JobSpec, onEvent: (e: BuyerEvent) => void = () => {}): Promise<JobResult> {
    if (!this.buyer) throw new C0Error('ROLE_NOT_ENABLED', 'this node does not have the buyer role (add `buyer` to roles)');
    const t0 = this.clock();
    const r = await this.buyer.run(spec, onEvent);
    this.#jobsMetric.inc({ role: 'buyer', outcome: r.status });
    this.#jobLatency.observe({ outcome: r.status }, (this.clock() - t0) / 1000);
    return r;
  }

  async stop(): Promise<void> {
    const stops = this.#stops.reverse();
    this.#stops = [];
    for (const s of stops) {
      try {
        await s();
      } catch (e) {
        this.log.warn({ err: (e as Error).message }, 'error while stopping');
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

export type { TopicKind };
