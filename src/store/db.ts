/**
 * LevelDB, opened once per process per path (STACK pitfall 7: a second open of
 * the same path in one process fails and drops the first handle's lock).
 * Every store takes a sublevel of the one database under the node's data dir.
 *
 * Writes that must not be lost go through `db.batch(ops, { sync: true })`:
 * acknowledged only after the batch is on disk.
 *
 * A failed write poisons the handle (docs/node.md "When a write fails"). A
 * LevelDB write that fails part-way (ENOSPC, EIO) can leave a torn record at the
 * end of the write-ahead log; every record appended after it, synced and
 * acknowledged, would be dropped by the recovery at the next open. So from the
 * first failed write on, every write on the handle is refused at once with
 * STORE_WRITE_FAILED, nothing more is acknowledged, and the handle is reopened
 * (close + open: the recovery keeps every acknowledged record, drops only the
 * torn unacknowledged one, and starts a fresh log) once a probe shows that the
 * disk takes writes again. Writes are issued one group at a time (the writes
 * that queued while the last group was written go as one batch: a group
 * commit), so no write can slip into LevelDB's log behind the one that fails.
 */
import { basename, resolve, join } from 'node:path';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { open as openFile, rm } from 'node:fs/promises';
import { EventEmitter } from 'node:events';
import { Level } from 'level';
import { C0Error } from '../errors.js';
import { osReason } from '../util/os-reason.js';
import { makeDirs } from '../util/make-dirs.js';
import { printable } from '../util/text.js';
import { STORE_CORRUPT, STORE_READ_FAILED, STORE_RECOVERY, readFailedMessage, readFailure, tableDamage } from '../util/store-damage.js';
import { checkLogs, type LogDamage } from './wal-check.js';

export const STORE_WRITE_FAILED = 'STORE_WRITE_FAILED';
/** A read (get, an iterator) that reached the database while it was closed for its reopen (docs/node.md "When a write fails"). */
export const STORE_REOPENING = 'STORE_REOPENING';
/** A write made while the database closes (closeDb, the daemon stopping): not taken; a read made then: not answered. */
export const STORE_CLOSED = 'STORE_CLOSED';
/** abstract-level's codes for an operation on a closed database or on an iterator the close ended. */
const NOT_OPEN = new Set(['LEVEL_DATABASE_NOT_OPEN', 'LEVEL_ITERATOR_NOT_OPEN']);

/** What `storeHealth` reports. */
export interface StoreHealth {
  /** false while the handle refuses writes (from a failed write until the reopen) */
  ok: boolean;
  /** the failed write's error, while not ok */
  cause?: string;
  /** when the handle was poisoned (ms since the epoch), while not ok */
  since?: number;
  /** writes that failed in LevelDB since the open (each poisons the handle) */
  writeErrors: number;
  /** reopens that recovered the handle */
  reopens: number;
  /**
   * The last read that failed since the open (a damaged table, STORE_CORRUPT; a table LevelDB may not read,
   * STORE_READ_FAILED): `status` says so rather than "writable" alone.
   */
  readFailed?: { code: string; cause: string; since: number; count: number };
}

/** Tuning of the recovery (tests shorten it). */
export interface RecoveryOptions {
  /** the first wait between probes, doubled after each failed one up to maxDelayMs (default 500 ms) */
  firstDelayMs?: number;
  /** default 30 s */
  maxDelayMs?: number;
  /** the probe file's size: the reopen writes the log into a table first (LevelDB's write buffer, 4 MiB); default 4.5 MiB */
  probeBytes?: number;
  /** tests: the probe itself (true: the disk takes writes) */
  probe?: () => Promise<boolean>;
  /** tests: runs between the close and the open of a reopen (holds the database closed; a throw fails that reopen) */
  beforeOpen?: () => Promise<void>;
}

type Hook = () => Promise<void> | void;
interface Internals {
  _put(key: unknown, value: unknown, options: unknown): Promise<void>;
  _del(key: unknown, options: unknown): Promise<void>;
  _batch(ops: unknown, options: unknown): Promise<void>;
  _clear(options: unknown): Promise<void>;
  _chainedBatch(): { _write(options: unknown): Promise<void> };
  _open(options: unknown): Promise<void>;
  _close(): Promise<void>;
}
const base = Level.prototype as unknown as Internals;
/** The most writes one group takes (#drain): LevelDB's own group commit stops near 1 MiB; ours at this many writes. */
const MAX_GROUP = 512;
interface WriteOptions {
  sync?: boolean;
  keyEncoding?: string;
  valueEncoding?: string;
}
/** A write waiting for its group: operations to merge, or one to write alone. */
interface QueuedWrite {
  ops?: unknown[];
  solo?: () => Promise<unknown>;
  sync: boolean;
}
interface Queued extends QueuedWrite {
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}
interface Reopenable {
  status: string;
  open(): Promise<void>;
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((res) => {
    if (signal.aborted) return res();
    const t = setTimeout(done, ms);
    t.unref();
    function done() {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      res();
    }
    signal.addEventListener('abort', done, { once: true });
  });

/**
 * The Level every store opens: writes are issued one group at a time, and the first that fails poisons the handle (the
 * module comment). Sublevels are remembered so that they are opened again after a reopen.
 */
class GuardedLevel extends Level<string, Uint8Array> {
  readonly path: string;
  readonly events = new EventEmitter();
  recovery: RecoveryOptions = {};
  #poison: { cause: string; since: number; error: unknown } | undefined;
  #writeErrors = 0;
  #reopens = 0;
  #readFailed: StoreHealth['readFailed'];
  /** Writes waiting for their group (#drain). */
  readonly #queue: Queued[] = [];
  /** The last drain (settled once the queue is empty), and whether it is under way. */
  #tail: Promise<void> = Promise.resolve();
  #draining = false;
  /** From closeDb or a close() on: writes made from now on are refused at once (those queued before are written). */
  #closing = false;
  readonly #subs = new Set<Reopenable>();
  readonly #hooks = new Set<Hook>();
  #fault: Error | undefined;
  #recovering: Promise<void> | undefined;
  readonly #stop = new AbortController();

  /** Told of a torn log end an open goes on past (OpenDbOptions.onTornLog), at the first open and at each reopen. */
  readonly #onTornLog: ((t: LogDamage) => void) | undefined;

  constructor(path: string, onTornLog?: (t: LogDamage) => void) {
    super(path, { valueEncoding: 'view' });
    this.path = path;
    this.#onTornLog = onTornLog;
    this.hooks.newsub.add((s) => {
      this.#subs.add(s as unknown as Reopenable);
      this.#mapNotOpen(s as unknown as Record<string, unknown>);
    });
    this.#mapNotOpen(this as unknown as Record<string, unknown>);
  }

  /**
   * From a failed write until the reopen is done, the handle is closed for a moment (or, if the open fails, until a
   * later one succeeds): what reaches it then fails in abstract-level with LEVEL_DATABASE_NOT_OPEN, before any of
   * the _ methods runs, and an iterator the close ended with LEVEL_ITERATOR_NOT_OPEN. Those are answered with the
   * store's own codes: a write STORE_WRITE_FAILED (as every write in that window), a read STORE_REOPENING; the API
   * answers both 503.
   */
  #mapNotOpen(level: Record<string, unknown>): void {
    const map = (e: unknown, write: boolean): unknown => {
      // a read that meets a damaged table (a bit flipped on disk): the store's code, not a bare LevelDB error (a bug, exit 70)
      // (a table cut short or emptied is LevelDB's IO error naming it: TABLE_IO_DAMAGE)
      if (!write && isTableDamage(e)) return this.#readFailedWith(corrupt(this.path, e));
      // another IO error on a read (a table it may not open, EACCES; the disk's EIO): the store's code with the OS's
      // reason, not a bare LevelDB error (a bug, exit 70)
      const failed = write ? undefined : readFailure(e);
      if (failed) return this.#readFailedWith(new C0Error(STORE_READ_FAILED, readFailedMessage(this.path, failed), { cause: e, detail: { path: this.path, ...failed } }));
      if (!NOT_OPEN.has((e as { code?: string } | undefined)?.code ?? '')) return e;
      // closed (or closing) for good, the node stopping: a read or an iterator still going then (a record being
      // validated as the network stops) is STORE_CLOSED, not a bare LevelDB error that reads as a bug (review s42 R2:
      // 'validation failed internally' at error level on a clean stop)
      if (!this.#poison) return this.status === 'closing' || this.status === 'closed' ? (write ? this.#closed() : new C0Error(STORE_CLOSED, `the database at ${this.path} is closed (the node stopping): the read was not answered`, { cause: e })) : e;
      if (write) return this.#refusal();
      return new C0Error(STORE_REOPENING, `the database at ${this.path} is being reopened after a failed write (${this.#poison.cause}); read again shortly`, { cause: e, detail: { cause: this.#poison.cause, since: this.#poison.since } });
    };
    const wrap = (name: string, write: boolean) => {
      const f = level[name] as ((...a: unknown[]) => unknown) | undefined;
      if (typeof f !== 'function') return;
      level[name] = function (this: unknown, ...a: unknown[]) {
        try {
          const r = f.apply(this, a);
          return r instanceof Promise ? r.catch((e: unknown) => Promise.reject(map(e, write))) : r;
        } catch (e) {
          throw map(e, write);
        }
      };
    };
    for (const m of ['get', 'getMany', 'has', 'hasMany']) wrap(m, false);
    for (const m of ['put', 'del', 'batch', 'clear']) wrap(m, true);
    for (const m of ['iterator', 'keys', 'values']) {
      const f = level[m] as ((...a: unknown[]) => Record<string, unknown>) | undefined;
      if (typeof f !== 'function') continue;
      level[m] = function (this: unknown, ...a: unknown[]) {
        let it: Record<string, unknown>;
        try {
          it = f.apply(this, a);
        } catch (e) {
          throw map(e, false);
        }
        for (const n of ['next', 'nextv', 'all', 'seek']) {
          const g = it[n] as ((...b: unknown[]) => unknown) | undefined;
          if (typeof g !== 'function') continue;
          it[n] = (...b: unknown[]) => {
            try {
              const r = g.apply(it, b);
              return r instanceof Promise ? r.catch((e: unknown) => Promise.reject(map(e, false))) : r;
            } catch (e) {
              throw map(e, false);
            }
          };
        }
        return it;
      };
    }
  }

  health(): StoreHealth {
    return { ok: this.#poison === undefined, ...(this.#poison ? { cause: this.#poison.cause, since: this.#poison.since } : {}), writeErrors: this.#writeErrors, reopens: this.#reopens, ...(this.#readFailed ? { readFailed: { ...this.#readFailed } } : {}) };
  }

  /** A read failed with `err` (STORE_CORRUPT, STORE_READ_FAILED): remembered for `status` (health). */
  #readFailedWith(err: C0Error): C0Error {
    const cause = (err.cause as { message?: string } | undefined)?.message ?? err.message;
    this.#readFailed = { code: err.code, cause, since: Date.now(), count: (this.#readFailed?.count ?? 0) + 1 };
    return err;
  }

  onReopen(h: Hook): () => void {
    this.#hooks.add(h);
    return () => void this.#hooks.delete(h);
  }

  /** Tests: the next write fails with `err` in place of reaching LevelDB. */
  injectFault(err: Error): void {
    this.#fault = err;
  }

  #closed(): C0Error {
    return new C0Error(STORE_CLOSED, `the database at ${this.path} is closing: the write was not taken`);
  }

  /** LevelDB is opened (at start, or again at a reopen): writes are taken again. */
  async _open(options: unknown): Promise<void> {
    await base._open.call(this, options);
    this.#closing = false;
  }

  /** The writes queued before the close are written first; none is taken after it began; then LevelDB closes. */
  async _close(): Promise<void> {
    this.#closing = true;
    await this.#tail;
    await base._close.call(this);
  }

  #refusal(): C0Error {
    const p = this.#poison!;
    return new C0Error(STORE_WRITE_FAILED, `the database at ${this.path} takes no writes since one failed (${p.cause}); it is reopened once the disk takes writes again, and nothing is acknowledged meanwhile`, { cause: p.error, detail: { cause: p.cause, since: p.since } });
  }

  /**
   * Writes go to LevelDB one group at a time, and a failed one poisons the handle: every write after it is refused at
   * once. While a group is being written, the writes that arrive queue, and the next group takes them all (up to
   * MAX_GROUP) as one LevelDB batch, synced if any of them asked to be: the group commit LevelDB does for concurrent
   * writers, which writing one at a time would lose (2,000 concurrent synced batches: ~900/s one at a time, ~6,000/s
   * raw). A batch is atomic, so a group that fails fails every write in it, none of them acknowledged; a clear or a
   * chained batch is written alone.
   */
  #write<T>(w: QueuedWrite): Promise<T> {
    // A database closing takes no new write: else writers that keep writing keep the drain, and so the close, going
    // for ever. (Those queued before are written: the close waits for them, then closes LevelDB.)
    if (this.#closing) return Promise.reject(this.#poison ? this.#refusal() : this.#closed());
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ ...w, resolve: resolve as (v: unknown) => void, reject });
      // (#drain clears #draining in the same step as it finds the queue empty: no write is left waiting behind it;
      // set before the call, as a drain of writes refused at once ends before it returns)
      if (!this.#draining) {
        this.#draining = true;
        this.#tail = this.#drain();
      }
    });
  }

  async #drain(): Promise<void> {
    const q = this.#queue;
    try {
      while (q.length) {
        let n = 1;
        if (!q[0]!.solo) while (n < q.length && n < MAX_GROUP && !q[n]!.solo) n++;
        const group = q.splice(0, n);
        try {
          if (this.#poison) throw this.#refusal();
          // (never a write on a closed LevelDB: the binding is called directly, past abstract-level's own check)
          if (this.status !== 'open' && this.status !== 'closing') throw this.#closed();
          const v = await this.#writeGroup(group);
          for (const g of group) g.resolve(v);
        } catch (e) {
          for (const g of group) g.reject(e);
        }
      }
    } finally {
      this.#draining = false;
    }
  }

  async #writeGroup(group: Queued[]): Promise<unknown> {
    try {
      if (this.#fault) {
        const f = this.#fault;
        this.#fault = undefined;
        throw f;
      }
      const first = group[0]!;
      if (first.solo) return await first.solo();
      if (group.length === 1) return await base._batch.call(this, first.ops, { sync: first.sync });
      return await base._batch.call(this, group.flatMap((g) => g.ops!), { sync: group.some((g) => g.sync) });
    } catch (e) {
      this.#writeErrors++;
      const cause = (e as Error).message ?? String(e);
      this.#poison = { cause, since: Date.now(), error: e };
      this.events.emit('poisoned', this.health());
      this.#startRecovery();
      throw new C0Error(STORE_WRITE_FAILED, `a write to the database at ${this.path} failed: ${cause}`, { cause: e, detail: { cause } });
    }
  }

  _put(key: unknown, value: unknown, options: unknown): Promise<void> {
    const o = options as WriteOptions;
    return this.#write({ ops: [{ type: 'put', key, value, keyEncoding: o?.keyEncoding, valueEncoding: o?.valueEncoding }], sync: !!o?.sync });
  }
  _del(key: unknown, options: unknown): Promise<void> {
    const o = options as WriteOptions;
    return this.#write({ ops: [{ type: 'del', key, keyEncoding: o?.keyEncoding }], sync: !!o?.sync });
  }
  _batch(ops: unknown, options: unknown): Promise<void> {
    return this.#write({ ops: ops as unknown[], sync: !!(options as WriteOptions)?.sync });
  }
  _clear(options: unknown): Promise<void> {
    return this.#write({ solo: () => base._clear.call(this, options), sync: false });
  }
  _chainedBatch(): { _write(options: unknown): Promise<void> } {
    const b = base._chainedBatch.call(this);
    const w = b._write.bind(b);
    b._write = (options: unknown) => this.#write({ solo: () => w(options), sync: false });
    return b;
  }

  #startRecovery(): void {
    this.#recovering ??= this.#recover().finally(() => (this.#recovering = undefined));
  }

  /** Probe, with backoff, until the disk takes a write; then reopen. */
  async #recover(): Promise<void> {
    let delay = this.recovery.firstDelayMs ?? 500;
    const max = this.recovery.maxDelayMs ?? 30_000;
    for (;;) {
      if (this.#stop.signal.aborted) return;
      if (await this.#probe()) {
        try {
          await this.#reopen();
          return;
        } catch (e) {
          // (a log found damaged at the reopen: the restart refuses it too, STORE_CORRUPT, exit 3)
          if (e instanceof C0Error && (e.code === STORE_REOPEN_REFUSED || e.code === STORE_CORRUPT)) {
            storeFatal(e);
            return;
          }
          this.events.emit('reopen-failed', (e as Error).message);
        }
      }
      await sleep(delay, this.#stop.signal);
      delay = Math.min(delay * 2, max);
    }
  }

  async #probe(): Promise<boolean> {
    if (this.recovery.probe) return this.recovery.probe().catch(() => false);
    const p = join(this.path, `C0PROBE-${process.pid}`);
    try {
      const fh = await openFile(p, 'w');
      try {
        const size = this.recovery.probeBytes ?? 4.5 * 1024 * 1024;
        const chunk = Buffer.alloc(Math.min(size, 1 << 20));
        for (let done = 0; done < size; done += chunk.length) await fh.write(chunk, 0, Math.min(chunk.length, size - done));
        await fh.sync();
      } finally {
        await fh.close();
      }
      return true;
    } catch {
      return false;
    } finally {
      await rm(p, { force: true }).catch(() => undefined);
    }
  }

  async #reopen(): Promise<void> {
    await this.#tail;
    if (this.status === 'open') await this.close();
    if (this.#stop.signal.aborted) return;
    await this.recovery.beforeOpen?.();
    // LevelDB replays the log at the open and drops a damaged record without a word (wal-check.ts)
    const damaged = logDamage(this.path, undefined, this.#onTornLog);
    if (damaged) throw logCorrupt(this.path, damaged);
    // never a new empty database in place of this one (openDb)
    await this.open({ createIfMissing: false });
    for (const s of this.#subs) if (s.status === 'closed') await s.open();
    // the holders re-read what they keep in memory before a write is taken again; one that cannot go on refuses
    for (const h of this.#hooks) await h();
    this.#reopens++;
    this.#poison = undefined;
    this.events.emit('recovered', this.health());
  }

  /** closeDb: stop recovering, wait for the writes in flight. */
  async shutdown(): Promise<void> {
    this.#closing = true;
    this.#stop.abort();
    await this.#recovering?.catch(() => undefined);
    await this.#tail;
  }
}

/** A holder's reopen hook throws this when what it keeps in memory cannot go on after the reopen (the node must restart). */
export const STORE_REOPEN_REFUSED = 'STORE_REOPEN_REFUSED';

let fatalHandler: ((e: C0Error) => void) | undefined;
/** The daemon's handler for a store that cannot recover in process (it stops, exiting EXIT.STORE). */
export function onStoreFatal(h: ((e: C0Error) => void) | undefined): void {
  fatalHandler = h;
}
/** Report a store that cannot go on in this process to the onStoreFatal handler (the daemon stops, exit 75). */
export function storeFatal(e: C0Error): void {
  fatalHandler?.(e);
}

export type Db = Level<string, Uint8Array>;

const guarded = (db: Db): GuardedLevel => {
  if (!((db as unknown) instanceof GuardedLevel)) throw new TypeError('not a database opened by openDb');
  return db as unknown as GuardedLevel;
};

/** Whether the handle takes writes, and its failed writes so far. */
export function storeHealth(db: Db): StoreHealth {
  return guarded(db).health();
}

/** The failed write's error while the handle takes no writes, else undefined. */
export function storeProblem(db: Db): string | undefined {
  const h = guarded(db).health();
  return h.ok ? undefined : h.cause;
}

/** Call `h` when the handle is poisoned (`poisoned`) or recovered (`recovered`). Returns the unsubscribe. */
export function onStoreEvent(db: Db, ev: 'poisoned' | 'recovered', h: (health: StoreHealth) => void): () => void {
  const e = guarded(db).events;
  e.on(ev, h);
  return () => void e.off(ev, h);
}

/**
 * Run `h` after a reopen, before a write is taken again: a holder re-reads there what it keeps in memory from
 * disk. A hook that throws C0Error STORE_REOPEN_REFUSED leaves the handle refusing writes and reports the error
 * to the onStoreFatal handler. Returns the unsubscribe.
 */
export function onReopen(db: Db, h: Hook): () => void {
  return guarded(db).onReopen(h);
}

/** Tests: shorten the recovery's waits and probe. */
export function setRecovery(db: Db, o: RecoveryOptions): void {
  guarded(db).recovery = o;
}

/** Tests: the next write fails with `err` in place of reaching LevelDB (as a write that hit ENOSPC does). */
export function injectWriteFault(db: Db, err: Error): void {
  guarded(db).injectFault(err);
}

interface Entry {
  db: Db;
  refs: number;
}
const open = new Map<string, Entry>();
const opening = new Map<string, Promise<Db>>();

export { STORE_CORRUPT, STORE_READ_FAILED, TABLE_IO_DAMAGE } from '../util/store-damage.js';

/** The error (a LevelDB error) is a damaged table: LevelDB's LEVEL_CORRUPTION, or TABLE_IO_DAMAGE (util/store-damage.ts). */
export function isTableDamage(e: unknown): boolean {
  return tableDamage(e) !== undefined;
}

/** STORE_CORRUPT for a damaged table (an open's cause, or a read's error). */
export function corrupt(path: string, err: unknown): C0Error {
  const why = (err as { message?: string } | undefined)?.message ?? 'corruption';
  return new C0Error(STORE_CORRUPT, `the database at ${path} is damaged (${why}); nothing was changed: ${STORE_RECOVERY}`, { cause: err, detail: { path } });
}

/**
 * The damage in the database's write-ahead logs (wal-check.ts); one it cannot read is left to LevelDB's open to report.
 * A torn end of the newest log (a zero-filled, unsynced last record a power cut left) is not damage: `torn` is told.
 */
function logDamage(dir: string, files?: string[], torn: (t: LogDamage) => void = (t) => warnTorn(dir, t)): LogDamage | undefined {
  try {
    return checkLogs(dir, files, torn);
  } catch {
    return undefined;
  }
}

/** The words for a torn log end the open goes on past (OpenDbOptions.onTornLog). */
export function tornLogMessage(path: string, t: LogDamage): string {
  return `the database at ${path}: the last record of its write-ahead log ${t.file} (at byte ${t.offset}) is zero-filled, a write a power cut left unfinished (never synced, so never acknowledged); LevelDB's open drops it and keeps every record before it`;
}

/** By default a torn log end is said on stderr (a process with a log passes OpenDbOptions.onTornLog). */
function warnTorn(path: string, t: LogDamage): void {
  process.stderr.write(`warning: ${tornLogMessage(path, t)}\n`);
}

/** STORE_CORRUPT for a damaged write-ahead log, found before LevelDB's open (which would drop its records). */
function logCorrupt(path: string, d: LogDamage): C0Error {
  return new C0Error(STORE_CORRUPT, `the database at ${path} is damaged: its write-ahead log ${d.file} fails LevelDB's check at byte ${d.offset} (${d.reason}); opening it would drop the records from there on, acknowledged ones among them, and delete the log; nothing was changed: ${STORE_RECOVERY}`, { detail: { path, log: d.file, offset: d.offset, reason: d.reason } });
}

/** A database that was there is gone (db/ empty or missing while the data directory's record says one was created). */
export const STORE_MISSING = 'STORE_MISSING';

/** The note an opener leaves in the database's directory while it holds the lock: who holds it, for STORE_LOCKED. */
const HOLDER = 'C0HOLDER';

/** Options of openDb. */
export interface OpenDbOptions {
  /**
   * How long to wait for a database another process holds (LevelDB's lock), trying again with backoff, before
   * STORE_LOCKED (default 0: at once). The daemon's `start` waits: a one-shot command (`run`, an offline `jobs`) may
   * hold it for a moment during a restart.
   */
  lockWaitMs?: number;
  /** Called once when the lock is found held and openDb waits, with who holds it (the holder note, if any). */
  onLockWait?: (holder: string | undefined) => void;
  /**
   * A file outside the database's directory (the daemon: <data-dir>/db.created) written once the database has been
   * opened. While it is there, a directory that is empty or missing (a volume not mounted, a restore that left db/
   * out) is refused STORE_MISSING, not created anew as an empty database. Remove it to start on a new one on purpose.
   */
  createdMark?: string;
  /**
   * Called before anything is made when the open would begin a new database: none was created there before (no
   * `createdMark` file) and there is none at `path` (no CURRENT). It may refuse by throwing (the open throws that, and
   * nothing is made: no directory, no mark). Not called when this process has the database open already.
   */
  beforeCreate?: () => void | Promise<void>;
  /**
   * Told when the newest write-ahead log ends in a torn, zero-filled record (a power cut; wal-check.ts): the open goes
   * on (LevelDB drops that unacknowledged record). Default: a warning line on stderr (tornLogMessage).
   */
  onTornLog?: (t: LogDamage) => void;
}

/**
 * A LevelDB file that holds records: a table or a write-ahead log. A manifest (MANIFEST-*) or a half-written CURRENT
 * (*.dbtmp) alone holds none: LevelDB writes them first when it creates a database, so a process killed then leaves
 * them without a CURRENT.
 */
const DATA_FILE = /^\d+\.(ldb|sst|log)$/;

/** The holder note of the database at `dir` while the process it names (not this one) is alive; undefined otherwise. */
export function dbHolder(dir: string): { pid: number; cmd?: string; since?: number } | undefined {
  try {
    const h = JSON.parse(readFileSync(join(dir, HOLDER), 'utf8')) as { pid?: unknown; cmd?: unknown; since?: unknown };
    if (typeof h.pid !== 'number' || !Number.isSafeInteger(h.pid) || h.pid <= 0 || h.pid === process.pid) return undefined;
    try {
      process.kill(h.pid, 0);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EPERM') return undefined; // gone: a note left by a crash
    }
    return { pid: h.pid, ...(typeof h.cmd === 'string' ? { cmd: h.cmd } : {}), ...(typeof h.since === 'number' ? { since: h.since } : {}) };
  } catch {
    return undefined;
  }
}

/** Who holds the database at `dir` by its holder note, while that process is alive (undefined when nothing is known). */
function holderOf(dir: string): string | undefined {
  const h = dbHolder(dir);
  if (!h) return undefined;
  const cmd = h.cmd !== undefined ? ` (\`${printable(h.cmd.slice(0, 160), true)}\`` + (h.since !== undefined ? `, since ${new Date(h.since).toISOString()}` : '') + ')' : '';
  return `process ${h.pid}${cmd}`;
}

function writeHolder(dir: string): void {
  // best effort: a note that cannot be written (a full disk) only makes a later STORE_LOCKED say less
  try {
    writeFileSync(join(dir, HOLDER), JSON.stringify({ pid: process.pid, cmd: ['c0mpute', ...process.argv.slice(2)].join(' '), since: Date.now() }) + '\n');
  } catch {
    /* ignored */
  }
}

/** The record that a database was created at `dir` (OpenDbOptions.createdMark); best effort, as the holder note. */
function writeMark(mark: string, dir: string): void {
  try {
    writeFileSync(mark, JSON.stringify({ db: dir, since: new Date().toISOString(), note: 'a database was created in db/: while this file is here, an empty or missing db/ is refused (STORE_MISSING) rather than started anew; remove it to begin a new empty database on purpose' }) + '\n');
  } catch {
    /* ignored */
  }
}

function removeHolder(dir: string): void {
  try {
    const h = JSON.parse(readFileSync(join(dir, HOLDER), 'utf8')) as { pid?: unknown };
    if (h.pid === process.pid) rmSync(join(dir, HOLDER), { force: true });
  } catch {
    /* none, or not ours */
  }
}

/**
 * Open (or share) the database at `path`. Pair every call with closeDb().
 *
 * A directory that already holds LevelDB's tables or logs is never created anew: LevelDB's createIfMissing, on a
 * directory whose CURRENT is lost, made a new empty database there and deleted the old tables as obsolete (a read-only
 * `c0mpute jobs` wiped the job history). Such a directory is STORE_CORRUPT, as is one LevelDB reports damaged. One
 * with neither CURRENT nor a table or log (a first open killed before LevelDB wrote CURRENT) is created.
 */
export async function openDb(path: string, opts: OpenDbOptions = {}): Promise<Db> {
  const key = resolve(path);
  const e = open.get(key);
  if (e) {
    e.refs++;
    return e.db;
  }
  const pending = opening.get(key);
  if (pending) {
    const db = await pending;
    open.get(key)!.refs++;
    return db;
  }
  const p = (async () => {
    let files: string[];
    const mark = opts.createdMark;
    const created = mark !== undefined && existsSync(mark);
    if (!created && opts.beforeCreate && !existsSync(join(key, 'CURRENT'))) await opts.beforeCreate();
    // not mkdirSync's recursive form, which never returns under /proc (src/util/make-dirs.ts)
    if (!created) makeDirs(key, { code: 'STORE_OPEN_FAILED', what: `cannot open the database at ${key}` });
    try {
      files = readdirSync(key);
    } catch (err) {
      if (!(created && (err as NodeJS.ErrnoException).code === 'ENOENT')) throw new C0Error('STORE_OPEN_FAILED', `cannot open the database at ${key}: ${osReason(err)}`, { cause: err });
      files = [];
    }
    // no CURRENT and no table or log: a fresh directory, or a creation that was killed before it wrote CURRENT (its
    // manifest and .dbtmp hold nothing; LevelDB's createIfMissing writes them anew)
    const exists = files.includes('CURRENT');
    const data = files.filter((f) => DATA_FILE.test(f)).sort();
    if (created && !exists && data.length === 0) {
      const base = basename(key);
      const state = existsSync(key) ? (files.length ? `holds no database (only ${files.slice(0, 4).join(', ')})` : 'is empty') : 'is missing';
      throw new C0Error(STORE_MISSING, `the database directory ${key} ${state}, but a database was created there before (${mark}): a volume not mounted (${base}/ a link to it, or its mount point), or a restore that left ${base}/ out; opening it would begin a new empty database in its place. Nothing was changed: mount the volume or restore ${base}/, then run the command again; to begin a new empty database on purpose, remove ${mark}`, { detail: { path: key, mark } });
    }
    if (!exists && data.length > 0) {
      const tables = data.filter((f) => !f.endsWith('.log')).length;
      const logs = data.length - tables;
      const what = [tables ? `${tables} table file${tables === 1 ? '' : 's'}` : '', logs ? `${logs} log file${logs === 1 ? '' : 's'}` : ''].filter(Boolean).join(' and ');
      const names = data.slice(0, 4).join(', ') + (data.length > 4 ? ', …' : '');
      throw new C0Error(STORE_CORRUPT, `the database at ${key} is damaged: its CURRENT file is missing while ${what} (${names}) ${data.length === 1 ? 'is' : 'are'} there (opening it would make a new empty database and delete them); nothing was changed: ${STORE_RECOVERY}`, { detail: { path: key, missing: 'CURRENT', files: data.slice(0, 20) } });
    }
    if (exists) {
      // CURRENT names the manifest (LevelDB's index of the tables); one it names that is not there cannot be opened
      let manifest = '';
      try {
        manifest = readFileSync(join(key, 'CURRENT'), 'utf8').trim();
      } catch {
        /* the open says why */
      }
      if (/^MANIFEST-\d+$/.test(manifest) ? !files.includes(manifest) : manifest !== '' && !manifest.includes('\n')) {
        throw new C0Error(STORE_CORRUPT, `the database at ${key} is damaged: its CURRENT file names "${printable(manifest.slice(0, 40))}", not a manifest in that directory; nothing was changed: ${STORE_RECOVERY}`, { detail: { path: key, missing: manifest.slice(0, 40) } });
      }
      // a damaged record in a write-ahead log: LevelDB's open would drop it (and what follows in its block) and delete
      // the log, saying so only in db/LOG (wal-check.ts)
      const damaged = logDamage(key, files, opts.onTornLog);
      if (damaged) throw logCorrupt(key, damaged);
    }
    const deadline = Date.now() + (opts.lockWaitMs ?? 0);
    let delay = 100;
    let waited = false;
    for (;;) {
      const db = new GuardedLevel(key, opts.onTornLog) as unknown as Db;
      try {
        // (createIfMissing: false on a database that is there: should CURRENT go between the check and the open)
        await db.open({ createIfMissing: !exists });
        open.set(key, { db, refs: 1 });
        writeHolder(key);
        if (mark !== undefined && !created) writeMark(mark, key);
        return db;
      } catch (err) {
        const cause = (err as { cause?: { code?: string; message?: string } }).cause;
        if ((err as { code?: string }).code === 'LEVEL_DATABASE_NOT_OPEN' && cause?.code === 'LEVEL_LOCKED') {
          const holder = holderOf(key);
          if (Date.now() < deadline) {
            if (!waited) opts.onLockWait?.(holder);
            waited = true;
            await new Promise((r) => setTimeout(r, Math.min(delay, Math.max(1, deadline - Date.now()))));
            delay = Math.min(delay * 2, 1000);
            continue;
          }
          const by = holder ? `held by ${holder}` : 'in use by another process';
          const waitedFor = waited ? ` (waited ${Math.round((opts.lockWaitMs ?? 0) / 1000)} s)` : '';
          throw new C0Error('STORE_LOCKED', `the database at ${key} is ${by}${waitedFor}: a daemon running on this data directory, or a one-shot command (\`c0mpute run\`, an offline \`c0mpute jobs\`) that lets go of it when it ends`, { cause: err, ...(holder ? { detail: { holder } } : {}) });
        }
        if (isTableDamage(cause)) throw corrupt(key, cause);
        // LevelDB's own reason ("IO error: …: No space left on device") is the cause's message
        const why = cause?.message ? `${(err as Error).message}: ${cause.message}` : (err as Error).message;
        throw new C0Error('STORE_OPEN_FAILED', `cannot open the database at ${key}: ${why}`, { cause: err });
      }
    }
  })();
  opening.set(key, p);
  try {
    return await p;
  } finally {
    opening.delete(key);
  }
}

export async function closeDb(db: Db): Promise<void> {
  for (const [key, e] of open) {
    if (e.db === db) {
      e.refs--;
      if (e.refs <= 0) {
        open.delete(key);
        await guarded(db).shutdown();
        if (db.status === 'open' || db.status === 'opening') await db.close();
        removeHolder(key);
      }
      return;
    }
  }
}

/** A named sublevel with binary values. */
export function sub(db: Db, name: string) {
  return db.sublevel<string, Uint8Array>(name, { valueEncoding: 'view' });
}

export type Sub = ReturnType<typeof sub>;

/** A time (ms since the epoch; any safe integer ≥ 0) as 16 decimal digits, so keys sort by time. */
export const timeKey = (t: number): string => String(Math.max(0, Math.floor(t))).padStart(16, '0');

/**
 * Write a batch and resolve only once it is on disk (classic-level's `sync`
 * option, which abstract-level's types do not declare).
 */
export async function syncBatch(db: Db, ops: unknown[]): Promise<void> {
  await db.batch(ops as never, { sync: true } as never);
}
