/**
 * The durable state of a pool member (docs/pools.md "Dispatch trail" and
 * "At most once"; spec/compute-pool.md "record the dispatch before the call").
 *
 * - DispatchTrail (the coordinator's side): a signed dispatch is written in a
 *   synced batch, with the job and offer envelopes it needs to finish or fail
 *   the job later, before the input goes to the member. Each entry ends
 *   `completed` or `failed` with its receipt; `pending()` is what a restarted
 *   coordinator (or the next epoch's) must close.
 * - RunLog (the member's side): a job is claimed once, durably, before it runs;
 *   a second claim of the same job, whoever asks, is refused (POOL_ALREADY_RUN).
 *
 * Values are canonical CBOR maps; keys are job addresses (`sha256:…`), so the
 * index keys, which start with `~`, never meet them. Both are job history
 * (docs/node.md "Job history"), dropped `history.keepDays` after the job's
 * deadline (`~t!<time>!<key>`, like the provider's runs, provider-runs.ts); the
 * trail also indexes its open entries (`~o!<key>`), so the coordinator's
 * recovery tick reads only those. Trail entries written before the indexes
 * are indexed by the first open that finds them, dated by the later of that
 * open and their job's deadline; run notes from before then are kept.
 * Watchers (`watch`) are told of each durable write of the trail: the
 * operator's figures (src/roles/pool-member/status.ts) keep up with it so.
 */
import { C0Error } from '../errors.js';
import { decodeCanonical, encodeCanonical } from '../records/cbor.js';
import { open, type Opened } from '../records/envelope.js';
import { T, type PoolRoster } from '../records/kinds.js';
import { timeKey, type Sub } from '../store/db.js';
import type { HistoryPruned } from '../store/records.js';
import type { Clock } from '../util/clock.js';
import type { Logger } from '../util/log.js';

/**
 * What a write changed, told to the trail's watchers (DispatchTrail.watch) once its synced batch is done: the jobs
 * whose entries changed (recorded, closed, dropped with the history), and the roster a new dispatch kept (`~r!`).
 */
export interface TrailChange {
  jobs: readonly string[];
  roster?: string;
}

export interface TrailEntry {
  dispatch: Uint8Array;
  job: Uint8Array;
  offer: Uint8Array;
  state: 'dispatched' | 'completed' | 'failed';
  receipt?: Uint8Array;
  settlement?: Uint8Array;
}

/** Marks a sublevel whose entries are indexed. */
const INDEXED = '~indexed';
/** Age keys: `~t!<timeKey>!<key>`. */
const AGE = '~t!';
/** Open trail entries: `~o!<job>|<coordinator>` → the entry's timeKey (its KEPT key's; empty from a build before). */
const OPEN = '~o!';
/** The rosters the trail's dispatches were recorded under: `~r!<roster address>` → the roster envelope (a few per pool, kept for good). */
const ROSTER = '~r!';
/**
 * Every entry by its coordinator, in the order its age key dates it: `~c!<coordinator>|<timeKey>!<job>|<coordinator>`
 * → the size of the entry's envelopes (decimal): dispatch, job and offer, and once closed its receipt and settlement.
 * What bounds the entries one coordinator keeps here (`record`'s and `close`'s `keep`), closed ones included.
 */
const KEPT = '~c!';
/**
 * Marks a trail whose entries are in the KEPT index, with its version: '2' once each size counts the receipt and
 * settlement (a trail indexed before, '1', counted the dispatch, job and offer only: indexed again at the next open).
 */
const KEPT_INDEXED = '~indexed-kept';
const KEPT_VERSION = '2';
const EMPTY = new Uint8Array(0);
/** Ops per synced batch when indexing an old sublevel. */
const INDEX_BATCH = 2000;

function enc(v: unknown): Uint8Array {
  return encodeCanonical(v as never);
}

const sync = { sync: true } as never;

type Op = { type: 'put'; key: string; value: Uint8Array } | { type: 'del'; key: string };

/** The KEPT key of the entry `key` dated `time` (a timeKey). */
function keptKey(key: string, time: string): string {
  return `${KEPT}${key.slice(key.indexOf('|') + 1)}|${time}!${key}`;
}

/** The default bound of the dispatches (closed ones included) another coordinator keeps on a member: about a month of 136 a day (config `pool.maxKeptDispatches`). */
export const TRAIL_KEPT_ENTRIES = 4096;
/** The default bound of their envelopes' bytes: 4,096 entries of 4 KiB (config `pool.maxKeptBytes`). */
export const TRAIL_KEPT_BYTES = 16 * 1024 * 1024;

/**
 * How many entries, and how many bytes of their envelopes, one coordinator may keep here (closed ones included): past
 * either, a new entry drops that coordinator's earliest-dated closed entries (`evict`; never an open one), or is
 * refused POOL_TRAIL_FULL (nothing written) when that is not enough or `evict` is off.
 */
export interface TrailKeep {
  entries: number;
  bytes: number;
  evict: boolean;
}

/**
 * Index a sublevel written before the age index (and, for the trail, the open
 * index) once: each entry dated by `dateOf` (no age key, so kept, when it
 * gives undefined), `extra` adds its own keys. Synced batches of at most
 * INDEX_BATCH ops, the marker last.
 */
/**
 * One key's value, read at once when the database is open (a small read from LevelDB's memtable or block cache, no
 * trip through libuv's thread pool: a dispatch's idempotency check cost about as much as its signature), else as an
 * ordinary read, which waits for a database being reopened (docs/node.md "When a write fails").
 */
async function readNow(db: Sub, key: string): Promise<Uint8Array | undefined> {
  if (db.status === 'open') {
    try {
      return db.getSync(key);
    } catch {
      /* closing under it: the ordinary read says what happened */
    }
  }
  return db.get(key);
}

async function indexOnce(db: Sub, dateOf: (key: string, value: Uint8Array) => number | undefined, extra?: (key: string, value: Uint8Array) => Op[]): Promise<void> {
  if ((await db.get(INDEXED)) !== undefined) return;
  let ops: Op[] = [];
  for await (const [key, value] of db.iterator({ lt: '~' })) {
    const date = dateOf(key, value);
    if (date !== undefined) ops.push({ type: 'put', key: `${AGE}${timeKey(date)}!${key}`, value: EMPTY });
    ops.push(...(extra?.(key, value) ?? []));
    if (ops.length >= INDEX_BATCH) {
      await db.batch(ops, sync);
      ops = [];
    }
  }
  ops.push({ type: 'put', key: INDEXED, value: new TextEncoder().encode('1') });
  await db.batch(ops, sync);
}

/**
 * Drop the entries whose age key is before `before`, at most `max` a synced
 * batch, from after `after`; `also(key)` adds what else goes with an entry.
 */
async function pruneAged(db: Sub, before: number, max: number, after: string | undefined, also?: (key: string, age: string) => Promise<Op[]>): Promise<HistoryPruned> {
  const ops: Op[] = [];
  let removed = 0;
  let more = false;
  let last: string | undefined;
  for await (const age of db.keys({ gt: after ?? AGE, lt: `${AGE}${timeKey(before)}` })) {
    if (removed >= max) {
      more = true;
      break;
    }
    last = age;
    const key = age.slice(AGE.length + 17);
    ops.push({ type: 'del', key: age }, { type: 'del', key }, ...((await also?.(key, age)) ?? []));
    removed++;
  }
  if (ops.length) await db.batch(ops, sync);
  return { removed, more, ...(last !== undefined ? { after: last } : {}) };
}

/**
 * Keys are `<job>|<coordinator DID>`: two coordinators that briefly both
 * believe they are elected each keep their own dispatch of the same job (the
 * member refuses the second run), and each entry is closed on its own.
 */
export class DispatchTrail {
  /** Writes one at a time: a close read before a prune's batch must not write its entry back after it (with no age key). */
  #chain: Promise<unknown> = Promise.resolve();
  /** Open entries per coordinator (from the open index; counted at the first bounded record, kept up to date after). */
  #openBy: Map<string, number> | undefined;
  /** Entries (and bytes of their envelopes) kept per coordinator, from the KEPT index: each read at its first bounded record. */
  #keptBy = new Map<string, { n: number; bytes: number }>();
  /** The rosters dispatches were recorded under (`~r!`), by address. */
  #rosters = new Map<string, Uint8Array>();
  #watchers = new Set<(c: TrailChange) => void>();

  constructor(
    private db: Sub,
    private log?: Logger,
  ) {}

  /**
   * The roster a dispatch kept here was recorded under, by address: the one its recorder checked the pool was using
   * when the dispatch came (docs/pools.md "What a member believes of another"), kept after the member moves on to a
   * newer roster so that a job dispatched before the change is still settled by the weights it was dispatched under.
   */
  rosterOf(address: string): Opened<PoolRoster> | undefined {
    const b = this.#rosters.get(address);
    return b ? open(b, T.poolRoster, { trusted: true }) : undefined;
  }

  /** Whether a roster a dispatch was recorded under is kept here (`rosterOf` finds it, now and from now on). */
  hasRoster(address: string): boolean {
    return this.#rosters.has(address);
  }

  /**
   * Be told of each write once it is durable (the operator's figures, src/roles/pool-member/status.ts, keep up with
   * the trail this way instead of reading it whole). Returns the function that stops it.
   */
  watch(f: (c: TrailChange) => void): () => void {
    this.#watchers.add(f);
    return () => this.#watchers.delete(f);
  }

  #told(c: TrailChange): void {
    for (const f of this.#watchers) {
      try {
        f(c);
      } catch (e) {
        this.log?.warn({ err: (e as Error).message }, 'pool: a watcher of the dispatch trail failed');
      }
    }
  }

  /**
   * Open the trail, indexing once what an earlier build wrote: open entries by `~o!`, each dated by the later of now
   * and its job's deadline (never dropped before the job could still be dispatched).
   */
  static async open(db: Sub, clock: Clock, log?: Logger): Promise<DispatchTrail> {
    const now = clock();
    await indexOnce(
      db,
      (_key, value) => {
        try {
          return Math.max(now, open((decodeCanonical(value) as unknown as TrailEntry).job, T.job, { trusted: true }).record.deadline);
        } catch {
          return now;
        }
      },
      (key, value) => ((decodeCanonical(value) as unknown as TrailEntry).state === 'dispatched' ? [{ type: 'put', key: `${OPEN}${key}`, value: EMPTY }] : []),
    );
    const indexed = await db.get(KEPT_INDEXED);
    if (indexed === undefined || new TextDecoder().decode(indexed) !== KEPT_VERSION) {
      let ops: Op[] = [];
      for await (const age of db.keys({ gt: AGE, lt: `${AGE}\uffff` })) {
        const key = age.slice(AGE.length + 17);
        const v = await db.get(key);
        if (v === undefined) continue;
        ops.push({ type: 'put', key: keptKey(key, age.slice(AGE.length, AGE.length + 16)), value: new TextEncoder().encode(String(DispatchTrail.#size(decodeCanonical(v) as unknown as TrailEntry))) });
        if (ops.length >= INDEX_BATCH) {
          await db.batch(ops, sync);
          ops = [];
        }
      }
      ops.push({ type: 'put', key: KEPT_INDEXED, value: new TextEncoder().encode(KEPT_VERSION) });
      await db.batch(ops, sync);
    }
    const trail = new DispatchTrail(db, log);
    for await (const [k, v] of db.iterator({ gt: ROSTER, lt: `${ROSTER}\uffff` })) trail.#rosters.set(k.slice(ROSTER.length), v);
    return trail;
  }

  #serial<R>(f: () => Promise<R>): Promise<R> {
    const p = this.#chain.then(f, f);
    this.#chain = p.catch(() => undefined);
    return p;
  }

  static key(job: string, coordinator: string): string {
    return `${job}|${coordinator}`;
  }

  async #counts(): Promise<Map<string, number>> {
    if (this.#openBy) return this.#openBy;
    const by = new Map<string, number>();
    for await (const o of this.db.keys({ gt: OPEN, lt: `${OPEN}\uffff` })) {
      const c = o.slice(o.indexOf('|') + 1);
      by.set(c, (by.get(c) ?? 0) + 1);
    }
    this.#openBy = by;
    return by;
  }

  /**
   * The bytes an entry counts toward its coordinator's `keep.bytes`: its dispatch, job and offer envelopes, and once
   * closed its receipt and settlement (a pooled receipt carries its pool proof, up to 24 KiB of roster: review s43 R2 F2).
   */
  static #size(e: Pick<TrailEntry, 'dispatch' | 'job' | 'offer' | 'receipt' | 'settlement'>): number {
    return e.dispatch.length + e.job.length + e.offer.length + (e.receipt?.length ?? 0) + (e.settlement?.length ?? 0);
  }

  async #kept(coordinator: string): Promise<{ n: number; bytes: number }> {
    let k = this.#keptBy.get(coordinator);
    if (k) return k;
    k = { n: 0, bytes: 0 };
    for await (const v of this.db.values({ gt: `${KEPT}${coordinator}|`, lt: `${KEPT}${coordinator}|\uffff` })) {
      k.n++;
      k.bytes += Number(new TextDecoder().decode(v)) || 0;
    }
    this.#keptBy.set(coordinator, k);
    return k;
  }

  /** Count an entry of `coordinator` kept (+1) or dropped (−1), once its count is held. */
  #keep(coordinator: string, d: 1 | -1, bytes: number): void {
    const k = this.#keptBy.get(coordinator);
    if (!k) return;
    k.n += d;
    k.bytes += d * bytes;
  }

  /** Entries (and bytes of their envelopes) `coordinator` keeps here, open and closed. */
  async keptOf(coordinator: string): Promise<{ n: number; bytes: number }> {
    return this.#serial(async () => ({ ...(await this.#kept(coordinator)) }));
  }

  /** Count an entry of `key` opened (+1) or closed (−1) once the counts are held. */
  #count(key: string, d: 1 | -1): void {
    if (!this.#openBy) return;
    const c = key.slice(key.indexOf('|') + 1);
    const n = (this.#openBy.get(c) ?? 0) + d;
    if (n > 0) this.#openBy.set(c, n);
    else this.#openBy.delete(c);
  }

  /** How many open entries `coordinator` has here. */
  async openOf(coordinator: string): Promise<number> {
    return this.#serial(async () => (await this.#counts()).get(coordinator) ?? 0);
  }

  /** Every entry for `job` (one per coordinator that dispatched it), in key order. */
  async entries(job: string): Promise<Array<{ key: string; entry: TrailEntry }>> {
    const out: Array<{ key: string; entry: TrailEntry }> = [];
    for await (const [k, v] of this.db.iterator({ gt: `${job}|`, lt: `${job}|\uffff` })) out.push({ key: k, entry: decodeCanonical(v) as unknown as TrailEntry });
    return out;
  }

  /** The first entry for `job` (any coordinator). */
  async get(job: string): Promise<TrailEntry | undefined> {
    return (await this.entries(job))[0]?.entry;
  }

  /**
   * Make a dispatch durable (synced) unless this coordinator already has one for the job; returns the entry that
   * holds. `until` dates it for the history's pruning: a coordinator's own dispatch by its job's deadline (dropping
   * it sooner would let it dispatch the job again); one another member sent, by that deadline at most a horizon ahead
   * (the caller bounds it, as the record store bounds a heard job). `maxOpen`: refuse a new entry when `coordinator`
   * already has that many open here (POOL_TRAIL_FULL; nothing is written). `roster`: the roster envelope the dispatch
   * names, as the caller checked it is the pool's in use (kept once, in the same batch: `rosterOf`). `keep`: how many
   * entries, closed ones included, `coordinator` may keep here (TrailKeep): its earliest-dated closed ones are dropped
   * in the same batch to make room, or the entry is refused POOL_TRAIL_FULL.
   */
  record(job: string, coordinator: string, e: Omit<TrailEntry, 'state'>, until: number, maxOpen?: number, roster?: Opened<PoolRoster>, keep?: TrailKeep): Promise<{ entry: TrailEntry; fresh: boolean }> {
    return this.#serial(() => this.#record(job, coordinator, e, until, maxOpen, roster, keep));
  }

  /**
   * The ops that drop `coordinator`'s earliest-dated closed entries until one more of `size` bytes fits `keep` (`added`
   * 0: `size` more bytes for an entry already counted, one being closed, which is never dropped: `not`); POOL_TRAIL_FULL
   * if they cannot.
   */
  async #room(coordinator: string, size: number, keep: TrailKeep, added: 0 | 1 = 1, not?: string): Promise<{ ops: Op[]; jobs: string[]; n: number; bytes: number }> {
    const k = await this.#kept(coordinator);
    const out = { ops: [] as Op[], jobs: [] as string[], n: 0, bytes: 0 };
    const fits = () => k.n - out.n + added <= keep.entries && k.bytes - out.bytes + size <= keep.bytes;
    if (fits()) return out;
    const full = () => new C0Error('POOL_TRAIL_FULL', `coordinator ${coordinator} already keeps ${k.n} dispatches (${k.bytes} bytes) here, at most ${keep.entries} (${keep.bytes} bytes)`);
    if (!keep.evict) throw full();
    const prefix = `${KEPT}${coordinator}|`;
    for await (const [c, v] of this.db.iterator({ gt: prefix, lt: `${prefix}\uffff` })) {
      const key = c.slice(prefix.length + 17);
      if (key === not || (await this.db.get(`${OPEN}${key}`)) !== undefined) continue;
      out.ops.push({ type: 'del', key: c }, { type: 'del', key: `${AGE}${c.slice(prefix.length, prefix.length + 16)}!${key}` }, { type: 'del', key });
      out.jobs.push(key.slice(0, key.indexOf('|')));
      out.n++;
      out.bytes += Number(new TextDecoder().decode(v)) || 0;
      if (fits()) return out;
    }
    throw full();
  }

  async #record(job: string, coordinator: string, e: Omit<TrailEntry, 'state'>, until: number, maxOpen: number | undefined, roster: Opened<PoolRoster> | undefined, keep: TrailKeep | undefined): Promise<{ entry: TrailEntry; fresh: boolean }> {
    const key = DispatchTrail.key(job, coordinator);
    const cur = await readNow(this.db, key);
    if (cur !== undefined) return { entry: decodeCanonical(cur) as unknown as TrailEntry, fresh: false };
    if (maxOpen !== undefined && ((await this.#counts()).get(coordinator) ?? 0) >= maxOpen) {
      throw new C0Error('POOL_TRAIL_FULL', `coordinator ${coordinator} already has ${maxOpen} open dispatches here (pool.maxOpenDispatches)`);
    }
    const entry: TrailEntry = { ...e, state: 'dispatched' };
    const at = until;
    const size = DispatchTrail.#size(e);
    const room = keep ? await this.#room(coordinator, size, keep) : { ops: [], jobs: [], n: 0, bytes: 0 };
    const newRoster = roster && !this.#rosters.has(roster.address) ? roster : undefined;
    await this.db.batch(
      [
        ...room.ops,
        { type: 'put', key, value: enc(entry) },
        { type: 'put', key: `${OPEN}${key}`, value: new TextEncoder().encode(timeKey(at)) },
        { type: 'put', key: `${AGE}${timeKey(at)}!${key}`, value: EMPTY },
        { type: 'put', key: keptKey(key, timeKey(at)), value: new TextEncoder().encode(String(size)) },
        ...(newRoster ? [{ type: 'put' as const, key: `${ROSTER}${newRoster.address}`, value: newRoster.bytes }] : []),
      ],
      sync,
    );
    if (newRoster) this.#rosters.set(newRoster.address, newRoster.bytes);
    this.#count(key, 1);
    const k = this.#keptBy.get(coordinator);
    if (k) {
      k.n += 1 - room.n;
      k.bytes += size - room.bytes;
    }
    if (room.n) this.log?.debug({ coordinator, dropped: room.n }, 'pool: dropped a coordinator’s earliest closed dispatches to keep its new one (pool.maxKeptDispatches)');
    this.#told({ jobs: [...new Set([job, ...room.jobs])], ...(newRoster ? { roster: newRoster.address } : {}) });
    return { entry, fresh: true };
  }

  /**
   * Close the entry of `job` made by `coordinator` with its receipt (and settlement, when completed); returns 1 when
   * it changed, else 0. An entry already closed keeps its outcome, unless `over` says it gives way (an outcome the
   * job's coordinator signed replaces one another member closed it with as lost: docs/pools.md "What a member
   * believes of another"). Callers check the outcome first (src/pools/outcome.ts): the trail stores what it is given.
   */
  close(job: string, coordinator: string, state: 'completed' | 'failed', receipt: Uint8Array, settlement?: Uint8Array, over?: (closed: TrailEntry) => boolean, keep?: TrailKeep): Promise<number> {
    return this.#serial(() => this.#close(job, coordinator, state, receipt, settlement, over, keep));
  }

  /** The KEPT key of the entry `key`: by the timeKey its open index holds, else (an entry closed, or indexed by a build before) found among its coordinator's. */
  async #keptKeyOf(key: string): Promise<string | undefined> {
    const t = await this.db.get(`${OPEN}${key}`);
    if (t !== undefined && t.length === 16) return keptKey(key, new TextDecoder().decode(t));
    const prefix = `${KEPT}${key.slice(key.indexOf('|') + 1)}|`;
    for await (const c of this.db.keys({ gt: prefix, lt: `${prefix}\uffff` })) if (c.slice(prefix.length + 17) === key) return c;
    return undefined;
  }

  /**
   * The entry closed counts its receipt and settlement toward its coordinator's `keep.bytes` (its KEPT value, and
   * #keptBy). Past the bound, with `keep.evict`, that coordinator's earliest-dated closed entries go in the same batch,
   * as for a new entry (#room); when they cannot make room (its other entries are open), or without `evict`, the
   * entry is closed all the same (an outcome is never refused for the bound) and the coordinator's next entry is
   * refused until it fits: its open entries' receipts are what it can keep past the bound.
   */
  async #close(job: string, coordinator: string, state: 'completed' | 'failed', receipt: Uint8Array, settlement: Uint8Array | undefined, over: ((closed: TrailEntry) => boolean) | undefined, keep: TrailKeep | undefined): Promise<number> {
    const key = DispatchTrail.key(job, coordinator);
    const cur = await this.db.get(key);
    if (cur === undefined) return 0;
    const entry = decodeCanonical(cur) as unknown as TrailEntry;
    const open = entry.state === 'dispatched';
    if (!open && !over?.(entry)) return 0;
    const { receipt: _r, settlement: _s, ...kept } = entry;
    const closed: TrailEntry = { ...kept, state, receipt, ...(settlement ? { settlement } : {}) };
    const grown = DispatchTrail.#size(closed) - DispatchTrail.#size(entry);
    const at = await this.#keptKeyOf(key);
    const none = { ops: [] as Op[], jobs: [] as string[], n: 0, bytes: 0 };
    const room = keep?.evict && grown > 0 ? await this.#room(coordinator, grown, keep, 0, key).catch((e: unknown) => {
      if ((e as { code?: unknown }).code === 'POOL_TRAIL_FULL') return none;
      throw e;
    }) : none;
    const ops: Op[] = [...room.ops, { type: 'put', key, value: enc(closed) }];
    if (at !== undefined) ops.push({ type: 'put', key: at, value: new TextEncoder().encode(String(DispatchTrail.#size(closed))) });
    if (open) ops.push({ type: 'del', key: `${OPEN}${key}` });
    await this.db.batch(ops, sync);
    if (open) this.#count(key, -1);
    const k = this.#keptBy.get(coordinator);
    if (k) {
      k.n -= room.n;
      k.bytes += (at !== undefined ? grown : 0) - room.bytes;
    }
    if (room.n) this.log?.debug({ coordinator, dropped: room.n }, 'pool: dropped a coordinator’s earliest closed dispatches to keep the receipt of one it closed (pool.maxKeptDispatches)');
    this.#told({ jobs: [...new Set([job, ...room.jobs])] });
    return 1;
  }

  /** Dispatches not yet closed (a crashed or replaced coordinator's trail): read from the open index, not the whole trail. */
  async pending(): Promise<Array<{ job: string; key: string; entry: TrailEntry }>> {
    const out: Array<{ job: string; key: string; entry: TrailEntry }> = [];
    for await (const o of this.db.keys({ gt: OPEN, lt: `${OPEN}\uffff` })) {
      const key = o.slice(OPEN.length);
      const v = await this.db.get(key);
      if (v === undefined) continue;
      const entry = decodeCanonical(v) as unknown as TrailEntry;
      if (entry.state === 'dispatched') out.push({ job: key.slice(0, key.indexOf('|')), key, entry });
    }
    return out;
  }

  /**
   * At most `limit` entries in key order (`<job>|<coordinator>`) after the key `after`: one page of the trail another
   * member lists to catch up on what it missed (src/roles/pool-member/sync.ts).
   */
  async page(after: string | undefined, limit: number): Promise<Array<{ key: string; entry: TrailEntry }>> {
    const out: Array<{ key: string; entry: TrailEntry }> = [];
    for await (const [k, v] of this.db.iterator({ ...(after !== undefined ? { gt: after } : {}), lt: '~', limit })) out.push({ key: k, entry: decodeCanonical(v) as unknown as TrailEntry });
    return out;
  }

  /** Every entry kept (the history of `history.keepDays`), all at once: tests and benches; the operator's figures read `byJob`. */
  async all(): Promise<Array<{ job: string; entry: TrailEntry }>> {
    const out: Array<{ job: string; entry: TrailEntry }> = [];
    for await (const [k, v] of this.db.iterator({ lt: '~' })) out.push({ job: k.slice(0, k.indexOf('|')), entry: decodeCanonical(v) as unknown as TrailEntry });
    return out;
  }

  /**
   * Every entry kept, one job at a time (its entries in key order, as `entries` gives them), read from one iterator:
   * the caller may wait between jobs (the iterator reads what the trail held when it began).
   */
  async *byJob(): AsyncGenerator<{ job: string; entries: TrailEntry[] }> {
    let cur: { job: string; entries: TrailEntry[] } | undefined;
    for await (const [k, v] of this.db.iterator({ lt: '~' })) {
      const job = k.slice(0, k.indexOf('|'));
      const entry = decodeCanonical(v) as unknown as TrailEntry;
      if (cur?.job === job) {
        cur.entries.push(entry);
        continue;
      }
      if (cur) yield cur;
      cur = { job, entries: [entry] };
    }
    if (cur) yield cur;
  }

  /**
   * Drop the entries dated before `before`, at most `max` in one synced batch; pass the result's `after` to the next
   * call (HistoryPruned). An entry still open goes too, with a warning: this member never heard how the job ended
   * (it was away when it was closed), and by now the other members have dropped their closed copies, so recovery
   * could only fail a job that may well have completed and settled (recovery leaves such entries alone).
   */
  pruneHistory(before: number, max = 1000, after?: string): Promise<HistoryPruned> {
    return this.#serial(async () => {
      const open: string[] = [];
      const jobs = new Set<string>();
      const r = await pruneAged(this.db, before, max, after, async (key, age) => {
        jobs.add(key.slice(0, key.indexOf('|')));
        const kept = keptKey(key, age.slice(AGE.length, AGE.length + 16));
        const ops: Op[] = [{ type: 'del', key: kept }];
        const coordinator = key.slice(key.indexOf('|') + 1);
        if (this.#keptBy.has(coordinator)) {
          const v = await this.db.get(kept);
          if (v !== undefined) this.#keep(coordinator, -1, Number(new TextDecoder().decode(v)) || 0);
        }
        if ((await this.db.get(`${OPEN}${key}`)) === undefined) return ops;
        open.push(key);
        return [...ops, { type: 'del', key: `${OPEN}${key}` }];
      });
      for (const k of open) this.#count(k, -1);
      if (jobs.size) this.#told({ jobs: [...jobs] });
      if (open.length) this.log?.warn({ dropped: open.length, entries: open.slice(0, 5) }, 'pool: dropped dispatches never closed here, past history.keepDays (their outcome was never heard by this member)');
      return r;
    });
  }
}

/** A member's at-most-once log of the jobs it agreed to run. */
export class RunLog {
  /** Jobs whose claim is under way (between the check and the durable put). */
  #claiming = new Set<string>();
  constructor(private db: Sub) {}

  /**
   * Open the log. Notes an earlier build wrote are kept for good: a note does not name its job's deadline, and one
   * dropped before it would let the job run twice (they are small, and as many as there were at the upgrade).
   */
  static async open(db: Sub): Promise<RunLog> {
    await indexOnce(db, () => undefined);
    return new RunLog(db);
  }

  /**
   * Claim `job` for running: durable before it returns; POOL_ALREADY_RUN if it was claimed before (by any
   * coordinator). `until` (the job's deadline, not bounded: see DispatchTrail.record) dates the note for the history's
   * pruning; the member refuses a job past its deadline before claiming it, and the note is kept past that deadline,
   * so a dropped note never lets the job run twice.
   */
  async claim(job: string, by: string, at: number, until: number): Promise<void> {
    if (this.#claiming.has(job)) throw new C0Error('POOL_ALREADY_RUN', 'this member already runs or ran this job');
    this.#claiming.add(job);
    try {
      if ((await this.db.get(job)) !== undefined) throw new C0Error('POOL_ALREADY_RUN', 'this member already runs or ran this job');
      const date = until;
      await this.db.batch(
        [
          { type: 'put', key: job, value: enc({ by, at }) },
          { type: 'put', key: `${AGE}${timeKey(date)}!${job}`, value: EMPTY },
        ],
        sync,
      );
    } finally {
      // The set only covers the awaits between the check and the durable put (a racer there is refused by it). Once
      // the put is done it is not needed: a racer that checks after this finds the durable entry. A failed put
      // leaves no entry, and the job may be claimed again.
      this.#claiming.delete(job);
    }
  }

  /** How many claims are under way (tests: the set does not keep claimed jobs). */
  get claiming(): number {
    return this.#claiming.size;
  }

  /** Drop the notes dated before `before`, at most `max` in one synced batch; pass the result's `after` to the next call. */
  pruneHistory(before: number, max = 1000, after?: string): Promise<HistoryPruned> {
    return pruneAged(this.db, before, max, after);
  }
}
