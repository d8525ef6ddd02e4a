/**
 * The daemon: one process, one data directory, one identity, any set of roles,
 * on one or more overlays. Wires identity → LevelDB → one OverlayNode per
 * overlay (network, stores, roles) → control API, and stops in reverse order.
 */
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AggregatorRegistry, Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import { C0Error } from '../errors.js';
import { checkDataDirWritable, writingDataFile } from './data-files.js';
import { closeDb, onStoreEvent, openDb, storeHealth, tornLogMessage, type Db, type StoreHealth } from '../store/db.js';
import { systemClock, type Clock } from '../util/clock.js';
import { logLinesDropped, type Logger } from '../util/log.js';
import { plural } from '../util/text.js';
import type { BuyerEvent, JobResult, JobSpec } from '../roles/buyer.js';
import { networksOf, type NodeConfig } from './config.js';
import type { Identity } from './identity.js';
import { DAEMON_FILE, dataDirIno, processStart, realDataDir, type DaemonInfo } from './daemon-info.js';
import { OverlayNode } from './overlay.js';
import { checkStamp, readStamp, stampDataDir, STAMP_FILE } from './data-stamp.js';
import { buildIdentity, buildText } from '../util/build-id.js';
import type { Route } from './api.js';

export { DAEMON_FILE, readDaemonInfo, type DaemonInfo } from './daemon-info.js';
export { readSwarmKey } from './overlay.js';

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
  /** Add role modules (steward, witness) to each overlay after it starts. */
  roleSetups?: Array<(o: OverlayNode, d: Daemon) => Promise<void>>;
  /** Control API routes added by role modules. */
  extraRoutes?: (d: Daemon) => Route[];
  /** Called at named failpoints (docs/pools.md "Failure modes, tested"); only the CLI sets it, from C0MPUTE_FAILPOINT. */
  failpoint?: (name: string) => void;
  /** A display command's node: no peer dialled or let in, no earlier provider work recovered (OverlayDeps.display). */
  display?: boolean;
  /** A one-shot command's node (`c0mpute run` without a daemon): its peers are told not to remember it (OverlayDeps.oneShot). */
  oneShot?: boolean;
}

export class Daemon {
  /** Process-wide metrics; each overlay has its own registry labelled with its name. */
  readonly registry = new Registry();
  readonly clock: Clock;
  readonly log: Logger;
  readonly did: string;
  readonly overlays = new Map<string, OverlayNode>();
  db!: Db;
  apiAddress: string | undefined;
  readonly startedAt: number;
  /**
   * What this start said at warn of the data directory's stamp (DATA_DIR_NEWER_FORMAT, DATA_DIR_ROLLED_BACK,
   * DATA_DIR_STAMP_UNREADABLE, DATA_DIR_STAMP_UNWRITTEN), kept for `status` (`dataDir.warnings`): the stamp is
   * rewritten at the start, so the log line was the only place it was said (QA qaTrn F10).
   */
  readonly dataDirWarnings: Array<{ code: string; message: string }> = [];
  #stops: Array<() => Promise<void>> = [];
  #stopping: Promise<void> | undefined;

  private constructor(readonly opts: DaemonOptions) {
    this.clock = opts.clock ?? systemClock;
    this.log = opts.log;
    this.did = opts.identity.did;
    this.startedAt = this.clock();
  }

  /** The first overlay (the `network` section): what commands address by default. */
  get primary(): OverlayNode {
    const o = this.overlays.get(this.opts.config.network.overlay);
    if (!o) throw new C0Error('NODE_NOT_STARTED', 'the node has not started');
    return o;
  }
  get net() {
    return this.primary.net;
  }
  get records() {
    return this.primary.records;
  }
  get market() {
    return this.primary.market;
  }
  get provider() {
    return this.primary.provider;
  }
  get buyer() {
    return this.primary.buyer;
  }
  get roles(): NodeConfig['roles'] {
    return this.opts.config.roles;
  }
  /** The buyer's settings (the offer window a job's deadline must outlast: docs/jobfile.md `deadline`). */
  get buyerConfig(): NodeConfig['buyer'] {
    return this.opts.config.buyer;
  }

  overlay(name?: string): OverlayNode {
    if (name === undefined || name === '') return this.primary;
    const o = this.overlays.get(name);
    if (!o) throw new C0Error('OVERLAY_NOT_FOUND', `this node is not on overlay "${name}"; it is on ${[...this.overlays.keys()].join(', ')}`, { field: 'overlay' });
    return o;
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
    // Default metrics are already named process_* / nodejs_*: the prefix makes c0mpute_process_cpu_seconds_total.
    // Event-loop lag sampled every 100 ms, not prom-client's 10 ms: that timer alone cost an idle daemon ~0.25 % of a core (docs/scale.md "Idle cost").
    collectDefaultMetrics({ register: this.registry, prefix: 'c0mpute_', eventLoopMonitoringPrecision: 100 });
    let logDropped = logLinesDropped();
    new Counter({
      name: 'c0mpute_log_lines_dropped_total',
      help: 'Log lines that could not be written (the log\'s disk full, its pipe closed) and were dropped (docs/node.md "Logs")',
      registers: [this.registry],
      collect() {
        const n = logLinesDropped();
        this.inc(n - logDropped);
        logDropped = n;
      },
    });
    // a full or read-only data directory is said before anything starts (DATA_DIR_UNWRITABLE), not once the network is up
    checkDataDirWritable(dataDir);
    if (this.opts.api !== false) {
      const api = await import('./api.js');
      await api.checkApiListen(config.api.listen);
      // the token file's faults (others can read it; a directory in its place) are said before the network starts
      api.ensureToken(dataDir);
    }
    // a daemon's start waits a while for a database a one-shot command (`run`, an offline `jobs`) holds during a restart
    const lockWaitMs = this.opts.advertise === false ? 0 : 10_000;
    const hadData = existsSync(join(dataDir, 'db.created')) || existsSync(join(dataDir, 'db'));
    this.db = await openDb(join(dataDir, 'db'), { lockWaitMs, createdMark: join(dataDir, 'db.created'), onTornLog: (t) => this.log.warn({ code: 'STORE_LOG_TORN', file: t.file, offset: t.offset }, tornLogMessage(join(dataDir, 'db'), t)), onLockWait: (holder) => this.log.warn({ code: 'STORE_LOCKED', holder }, `the database is held by ${holder ?? 'another process'}; waiting up to ${lockWaitMs / 1000} s for it`) });
    this.#stops.push(() => closeDb(this.db));
    this.#watchStore(this.db);
    // which build wrote this directory last, and with which data format (data-stamp.ts): written with the database's
    // lock held, before anything upgrades what is stored; a display command's node writes nothing
    if (this.opts.display) this.#noteStampOnDisplay(dataDir, hadData);
    else {
      const { said, written } = stampDataDir(dataDir, hadData, buildIdentity(), this.clock());
      if (said) this.log[said.level]({ code: said.code, build: buildText() }, said.message);
      if (said?.level === 'warn') this.dataDirWarnings.push({ code: said.code, message: said.message });
      if (!written) {
        const message = 'the data directory’s stamp could not be written (the next start cannot tell which build wrote the directory)';
        this.log.warn({ code: 'DATA_DIR_STAMP_UNWRITTEN', file: join(dataDir, STAMP_FILE) }, message);
        this.dataDirWarnings.push({ code: 'DATA_DIR_STAMP_UNWRITTEN', message });
      }
    }
    for (const n of networksOf(config)) {
      const { roles, ...network } = n;
      const o = await OverlayNode.start({ dataDir, db: this.db, identity, config, network, roles, clock: this.clock, log: this.log, ...(this.opts.failpoint ? { failpoint: this.opts.failpoint } : {}), ...(this.opts.display ? { display: true } : {}), ...(this.opts.oneShot ? { oneShot: true } : {}) });
      this.overlays.set(o.name, o);
      this.#stops.push(() => o.stop());
      for (const setup of this.opts.roleSetups ?? []) await setup(o, this);
    }
    if (this.opts.api !== false) {
      const { startControlApi } = await import('./control.js');
      const api = await startControlApi(this);
      this.apiAddress = api.address;
      this.#stops.push(() => api.close());
    }
    // First at the stop: buyer runs in flight end as interrupted while the API still streams their last event and
    // the network and stores still work (OverlayNode.interruptRuns; the overlay's own stop does it again, at no cost).
    this.#stops.push(async () => void (await Promise.all([...this.overlays.values()].map((o) => o.interruptRuns()))));
    if (this.opts.advertise !== false) {
      const procStart = processStart('self');
      const info: DaemonInfo = { pid: process.pid, did: this.did, api: this.apiAddress ?? '', startedAt: this.startedAt, ...(procStart === undefined ? {} : { procStart }), dataDir: realDataDir(dataDir) };
      const ino = dataDirIno(dataDir);
      if (ino !== undefined) info.dataDirIno = ino;
      writingDataFile(join(dataDir, DAEMON_FILE), 'the daemon file', () => writeFileSync(join(dataDir, DAEMON_FILE), JSON.stringify(info, null, 2) + '\n', { mode: 0o600 }));
      this.#stops.push(async () => rmSync(join(dataDir, DAEMON_FILE), { force: true }));
    }
    for (const o of this.overlays.values()) {
      this.log.info({ did: this.did, overlay: o.name, peerId: o.net.peerId.toString(), addrs: o.net.addrs(), roles: o.roles, api: this.apiAddress }, 'node started');
    }
  }

  /**
   * A display node (an offline `jobs`, `reputation`) writes no stamp, but keeps what a start would say of a directory a
   * later build wrote or that was rolled back since one did (dataDirWarnings): what it shows of that store may be
   * misread. Before, it showed it without a word while `start` and `run` said DATA_DIR_NEWER_FORMAT.
   */
  #noteStampOnDisplay(dataDir: string, hadData: boolean): void {
    const { said } = checkStamp(readStamp(dataDir), hadData, buildIdentity(), this.clock());
    if (said?.code === 'DATA_DIR_NEWER_FORMAT' || said?.code === 'DATA_DIR_ROLLED_BACK') this.dataDirWarnings.push({ code: said.code, message: said.message });
  }

  /**
   * A failed write makes the database refuse writes until it is reopened (store/db.ts): said in the log, counted
   * (c0mpute_store_write_errors_total), shown as c0mpute_store_writable and by `status` (storeStatus).
   */
  #watchStore(db: Db): void {
    const errors = new Counter({ name: 'c0mpute_store_write_errors_total', help: 'Database writes that failed (a full disk, an I/O error); each makes the database refuse writes until it is reopened (docs/node.md "When a write fails")', registers: [this.registry] });
    new Gauge({ name: 'c0mpute_store_writable', help: "1 while the node's database takes writes; 0 from a failed write until it is reopened", registers: [this.registry], collect() { this.set(storeHealth(db).ok ? 1 : 0); } });
    const offs = [
      onStoreEvent(db, 'poisoned', (h) => {
        errors.inc();
        this.log.error({ code: 'STORE_WRITE_FAILED', err: h.cause }, 'a database write failed: no write is taken (no work run, nothing quoted) until the database is reopened, once the disk takes writes again');
      }),
      onStoreEvent(db, 'recovered', (h) => this.log.info({ reopens: h.reopens }, 'the database was reopened: writes are taken again')),
    ];
    this.#stops.push(async () => offs.forEach((off) => off()));
  }

  /** The database as `status` shows it: `code` STORE_WRITE_FAILED while it takes no writes. */
  storeStatus(): { message: string; code?: string } & Pick<StoreHealth, 'writeErrors' | 'reopens'> {
    const h = storeHealth(this.db);
    // reads that fail (a damaged table, one it may not read) are said even while writes are taken
    const r = h.readFailed;
    if (h.ok && r) return { code: r.code, message: `${h.writeErrors ? 'writable after a reopen' : 'writable'}, but reads fail: ${r.count} since the start, the last at ${new Date(r.since).toISOString()}: ${r.cause}`, writeErrors: h.writeErrors, reopens: h.reopens };
    if (h.ok) return { message: h.writeErrors ? `writable (reopened ${plural(h.reopens, 'time')} after ${plural(h.writeErrors, 'failed write')})` : 'writable', writeErrors: h.writeErrors, reopens: h.reopens };
    return { code: 'STORE_WRITE_FAILED', message: `takes no writes since ${new Date(h.since!).toISOString()}: ${h.cause}; reopened once the disk takes writes again (nothing is quoted or run meanwhile)`, writeErrors: h.writeErrors, reopens: h.reopens };
  }

  /** Every registry's metrics in one exposition (overlays are told apart by their `overlay` label). */
  metrics(): { contentType: string; metrics(): Promise<string> } {
    return {
      contentType: this.registry.contentType,
      metrics: async () => {
        const all = [await this.registry.getMetricsAsJSON(), ...(await Promise.all([...this.overlays.values()].map((o) => o.registry.getMetricsAsJSON())))];
        return AggregatorRegistry.aggregate(all as never).metrics();
      },
    };
  }

  /** Run a job as buyer (on the primary overlay unless named). */
  async runJob(spec: JobSpec, onEvent: (e: BuyerEvent) => void = () => {}, overlay?: string): Promise<JobResult> {
    return this.overlay(overlay).runJob(spec, onEvent);
  }

  /** Stop everything, in reverse start order. A second call (a bug during a SIGTERM's stop) waits for the first. */
  stop(): Promise<void> {
    this.#stopping ??= this.#stopAll();
    return this.#stopping;
  }

  async #stopAll(): Promise<void> {
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
