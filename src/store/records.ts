/**
 * The node's record store: every verified record by content address, an index
 * by type, and each provider's current advert (a higher seq replaces, an equal
 * one does not). Superseded adverts stay stored while within the advert cap: live
 * offers cite the advert they were made against. Only records that passed `open()` are stored; reading back
 * re-opens them as trusted (the signature was checked on the way in).
 * Writes are synced batches: acknowledged only once on disk.
 *
 * Adverts can be capped (`setAdvertCap`, docs/market.md "The advert cap"): a
 * put that takes the store over the cap (every record counts, current and
 * superseded) evicts superseded records, or whole providers (every advert record
 * of theirs), in the same synced batch, so what is stored and what the market's
 * index holds stay one set, across restarts too.
 *
 * Jobs are also indexed by signer and time (sublevel `jobindex`, written in the
 * same batch as the job): `a!<signer>!<announcedAt>!<address>` lists a buyer's
 * jobs newest first a page at a time, `d!<signer>!<deadline>!<address>` finds
 * its live ones, so neither reads every job the node ever stored (a provider
 * stores each job it ran, and a bounded set of those it quoted on); `s!<job>!<address>` finds a job's
 * selections. A store from before the index is indexed once at open.
 *
 * The job history is dropped by age (`pruneHistory`, docs/node.md "Job
 * history"): `e!<time>!<type>!<address>` orders jobs by deadline, and what
 * belongs to a job (its selections, the offers and claims they weighed, claim
 * refusals) by the later of that job's deadline, when the job is held, and its
 * own time. A time another node chose counts only so far ahead of this node's
 * clock (`#historyKey`), so no one can date a record into the next century.
 * Sublevel `decisions` keeps, by a selection's address, the settings a selection this node signed was decided
 * under (`putDecision`, in the selection's batch; dropped with it), which its audit needs (docs/market.md §9), and
 * sublevel `attemptnotes` how the attempt ended when no receipt and no non-delivery say (`noteAttempt`; dropped with it).
 *
 * Witness records (pool-evidence/1, pool-witness/1) are bounded in all (witness-keep.ts `WitnessRecordBounds`,
 * docs/overlays.md "What a node keeps of witness records"): sublevel `witnesskeep` orders them by arrival,
 * `o!<kind>!<seq>` for those about a steward this node's config does not name (the first to arrive is evicted, in
 * the batch that takes the store past the cap) and `n!<kind>!<steward>!<seq>` for a named steward's (outside the
 * caps, bounded by a count of their own); `a!<address>` finds a receipt's place when witness-keep.ts displaces it.
 * The counts are read once at open, when records move between the two as the named stewards changed.
 *
 * Jobs a provider quoted on are bounded too (`putQuoted`, `QuotedJobBounds`, docs/node.md "Job history"): anyone can
 * sign a job with a fresh key, and a provider quotes on every one it can run within its quoting budget, which the
 * job's own selection frees again. Sublevel `quoted` orders them by arrival, `o!<seq>` (the job's size, address and
 * index keys) and `a!<address>` (its place); past `maxJobs` or `maxBytes` the first quoted goes, with its index keys, in
 * the batch that stores the new one. A job stored with `put` (one this node ran, its own, one a steward admitted)
 * leaves that order and is kept as the job history keeps it. The counts are read once at open. What moves the order
 * runs in one lane (#drain): promotions out of it and history passes one at a time, and the putQuoted calls waiting
 * together, in one synced batch with the evictions they need (group commit: a burst costs one fsync, not one a job).
 * Other job writes do not wait for the lane (#putJobs).
 */
import { open, type Opened } from '../records/envelope.js';
import { T, type Advert, type Claim, type ClaimRefusal, type Job, type Offer, type RecordTypes, type Selection } from '../records/kinds.js';
import { sub, syncBatch, timeKey as ts, type Db, type Sub } from './db.js';
import type { Logger } from '../util/log.js';
import { truncateText } from '../util/text.js';
import { WITNESS_TYPE, type WitnessReceipt } from '../ledger/entry.js';
import { EVIDENCE_TYPE, type EquivocationEvidence } from '../ledger/evidence.js';
import { bandOf, offerReceipt, WITNESS_RECORD_DEFAULTS, type KeptReceipt, type WitnessPair, type WitnessRecordBounds } from './witness-keep.js';

/** How an attempt ended when no receipt and no non-delivery say (RecordStore.noteAttempt): the run's words, and its code when it has one. */
export interface AttemptNote {
  code?: string;
  message: string;
}

/** The longest attempt note kept, in UTF-16 code units. */
export const ATTEMPT_NOTE_MAX = 512;

/** What the advert cap needs from its owner: the bound, the choice of victims, and a word when they go. */
export interface AdvertCapPolicy {
  max: number;
  /**
   * Advert records to let go so that at least `excess` are freed (may name the incoming advert, which is then not
   * stored). A provider whose current advert is named goes whole; otherwise only the records named go.
   */
  victims(excess: number, providers: Array<{ did: string; current: Opened<Advert>; adverts: readonly Opened<Advert>[] }>): Array<{ did: string; adverts: ReadonlyArray<Opened<Advert>> }>;
  /** Called after the eviction is on disk, with every advert record removed. */
  onEvict(evicted: Array<Opened<Advert>>, refused: Opened<Advert> | undefined): void;
}

/**
 * The job index's marker, holding the version of the index every record held is in (1: jobs; 2: and selections;
 * 3: and the history by age; 5: and the witness receipts kept for each witness and steward, witness-keep.ts; 4 was
 * an unreleased form of 5).
 */
const JOB_INDEX_DONE = '~indexed';
const JOB_INDEX_VERSION = '5';
/** The witness record index's marker: every witness record held is in the arrival index. */
const WITNESS_KEEP_DONE = '~indexed';
/** The kind letter of a witness record in the arrival index. */
type WKind = 'e' | 'w';
const WKIND_TYPE: Record<WKind, string> = { e: EVIDENCE_TYPE, w: WITNESS_TYPE };
const seqKey = (n: number) => String(n).padStart(16, '0');

/** The kinds that make up the job history, dropped by age (besides jobs themselves): each names its job. */
const OF_A_JOB: ReadonlySet<string> = new Set([T.selection, T.offer, T.claim, T.claimRefusal]);

/** A record of the job history's own time: a job's deadline, the latest a selection, offer, claim or refusal matters on its own. */
function ownTime(r: Opened): number | undefined {
  switch (r.type) {
    case T.job:
      return (r as Opened<Job>).record.deadline;
    case T.selection:
      return (r as Opened<Selection>).record.decidedAt;
    case T.offer: {
      const o = (r as Opened<Offer>).record;
      return Math.max(o.expiresAt, o.startBy + o.durationMs);
    }
    case T.claim:
      return (r as Opened<Claim>).record.issuedAt;
    case T.claimRefusal:
      return (r as Opened<ClaimRefusal>).record.signedAt;
    default:
      return undefined;
  }
}

/**
 * The jobs another node signed that a provider quoted on and has not run (`putQuoted`): at most `maxJobs` of them and
 * `maxBytes` of their envelopes; past either the first quoted goes (docs/config.md `history.maxQuotedJobs`).
 */
export interface QuotedJobBounds {
  maxJobs: number;
  maxBytes: number;
}
export const QUOTED_JOB_DEFAULTS: Readonly<QuotedJobBounds> = { maxJobs: 20_000, maxBytes: 32 * 1024 * 1024 };

/**
 * The most putQuoted calls committed in one synced batch: a burst of quoted jobs costs one sync per this many, and a
 * promotion out of the quoted order (a job that ran) waits for one such batch at most, not for the whole backlog.
 */
const QUOTED_GROUP_MAX = 1024;

/** A putQuoted call waiting for its group commit. */
interface QuotedWrite {
  job: Opened<Job>;
  promise: Promise<boolean>;
  resolve(stored: boolean): void;
  reject(err: unknown): void;
}

/** A quoted job's place in the arrival order (sublevel `quoted`, `o!<seq>`): what evicting it deletes. */
interface QuotedPlace {
  /** the job's address */
  a: string;
  /** its envelope bytes */
  n: number;
  /** its job index keys (lookup and age), as written */
  k: string[];
}

/** What one pass of `pruneHistory` did. */
export interface HistoryPruned {
  /** Records dropped. */
  removed: number;
  /** More were due than the pass took: call again, with `after`. */
  more: boolean;
  /** Where the next call starts (past the keys this one deleted, which LevelDB keeps as markers until it compacts). */
  after?: string;
}

/** How far ahead of this node's clock a record's own time may date it (a time the node did not choose, like a buyer's decidedAt). */
const OWN_TIME_AHEAD_MS = 24 * 3600_000;
/** How far ahead of this node's clock another node's job deadline may date the job (nothing bounds a deadline). */
const FOREIGN_DEADLINE_AHEAD_MS = 30 * 24 * 3600_000;

/** One page of a signer's jobs, newest first; `next` continues it. */
export interface JobPage {
  jobs: Array<Opened<Job>>;
  /** Pass as `before` for the next page; absent on the last. */
  next?: string;
}

export class RecordStore {
  #records: Sub;
  #byType: Sub;
  #adverts: Sub;
  #jobIndex: Sub;
  /** the settings each selection this node signed was decided under, by the selection's address (putDecision) */
  #decisions: Sub;
  /** how an attempt of this node's own job ended when nothing it signed says (noteAttempt), by the selection's address */
  #attemptNotes: Sub;
  #keep: Sub;
  #bounds: WitnessRecordBounds;
  /** stewards this node's config names: their witness records are kept outside the caps */
  #named: ReadonlySet<string>;
  /** witness records held about stewards not named, per kind */
  #loose: Record<WKind, number> = { e: 0, w: 0 };
  /** evidence records held per named steward */
  #namedEvidence = new Map<string, number>();
  /** witness keys whose receipts are held, per named steward */
  #namedWitnesses = new Map<string, Set<string>>();
  /** the next arrival number of a witness record */
  #arrival = 0;
  /** per kind, the last arrival-index key evicted: everything before it is gone (LevelDB keeps deleted keys as markers until it compacts, so eviction starts here rather than reading past them all) */
  #evictedTo: Partial<Record<WKind, string>> = {};
  #advertCache = new Map<string, Opened<Advert>>();
  /** every advert record held, by signer then address */
  #advertsBySigner = new Map<string, Map<string, Opened<Advert>>>();
  #advertCount = 0;
  #cap: AdvertCapPolicy | undefined;
  #advertChain: Promise<unknown> = Promise.resolve();
  #witnessChain: Promise<unknown> = Promise.resolve();
  #inflight = new Map<string, Promise<boolean>>();
  #db: Db;
  #clock: () => number;
  #self: string | undefined;
  #quoted: Sub;
  #quotedBounds: QuotedJobBounds;
  /** jobs held in the quoted order, and their envelope bytes */
  #quotedHeld = { count: 0, bytes: 0 };
  #quotedSeq = 0;
  /** the last place evicted from the quoted order: the next eviction starts past it (see #evictedTo) */
  #quotedEvictedTo: string | undefined;
  #onQuotedEvicted: ((n: number) => void) | undefined;
  // The quoted order's lane (see #drain): every write that moves it runs here, one at a time, so its counts cannot
  // drift and an eviction never takes a job being promoted out of it. Jobs entering it are group-committed.
  /** putQuoted calls waiting for the next group commit, by job address, in arrival order */
  #quotedPending = new Map<string, QuotedWrite>();
  /** the jobs of the group commit on its way to disk, and the promise that settles with it */
  #quotedTaken = new Map<string, Promise<unknown>>();
  /** promotions out of the quoted order and history passes: run before the next group, not behind the pending ones */
  #laneOps: Array<() => Promise<void>> = [];
  #laneBusy = false;
  /** job writes that do not go through the lane (their job has no place in the quoted order), by job address */
  #directJobs = new Map<string, Promise<unknown>>();

  private constructor(db: Db, prefix: string, clock: () => number, self: string | undefined, bounds: WitnessRecordBounds, named: readonly string[], quoted: QuotedJobBounds) {
    this.#db = db;
    this.#quotedBounds = quoted;
    this.#quoted = sub(db, `${prefix}quoted`);
    this.#clock = clock;
    this.#self = self;
    this.#bounds = bounds;
    this.#named = new Set(named);
    this.#keep = sub(db, `${prefix}witnesskeep`);
    this.#records = sub(db, `${prefix}records`);
    this.#byType = sub(db, `${prefix}bytype`);
    this.#adverts = sub(db, `${prefix}adverts`);
    this.#jobIndex = sub(db, `${prefix}jobindex`);
    this.#decisions = sub(db, `${prefix}decisions`);
    this.#attemptNotes = sub(db, `${prefix}attemptnotes`);
  }

  /** The job index's lookup keys for a record: a job's by signer and time, a selection's by job; none for other kinds. */
  static #lookupKeys(r: Opened): string[] {
    if (r.type === T.job) {
      const j = r as Opened<Job>;
      return [`a!${j.signer}!${ts(j.record.announcedAt)}!${j.address}`, `d!${j.signer}!${ts(j.record.deadline)}!${j.address}`];
    }
    if (r.type === T.selection) return [`s!${(r as Opened<Selection>).record.job}!${r.address}`];
    return [];
  }

  /** The date a job goes by: its deadline, at most FOREIGN_DEADLINE_AHEAD_MS ahead of the clock when another node signed it. */
  #jobDate(j: Opened<Job>): number {
    return j.signer === this.#self ? j.record.deadline : Math.min(j.record.deadline, this.#clock() + FOREIGN_DEADLINE_AHEAD_MS);
  }

  /**
   * A record's key in the history by age, or undefined when it is not job history. A job is dated by its deadline
   * (another node's deadline at most 30 days ahead of this node's clock: nothing bounds it). What belongs to a job
   * held when it is stored is dated by the later of the job's date and its own time, so it goes with the job: a
   * selection, its offers and claims are what the job is audited against. Its own time, which another node chose,
   * counts at most a day ahead of the clock. `jobs` caches the jobs looked up (and holds those being written in the
   * same batch).
   */
  async #historyKey(r: Opened, jobs: Map<string, Opened<Job> | undefined>): Promise<string | undefined> {
    const own = ownTime(r);
    if (own === undefined) return undefined;
    let at = r.type === T.job ? this.#jobDate(r as Opened<Job>) : Math.min(own, this.#clock() + OWN_TIME_AHEAD_MS);
    if (OF_A_JOB.has(r.type)) {
      const addr = (r.record as { job: string }).job;
      if (!jobs.has(addr)) jobs.set(addr, await this.get(addr, T.job));
      const job = jobs.get(addr);
      if (job) at = Math.max(at, this.#jobDate(job));
    }
    return `e!${ts(at)}!${r.type}!${r.address}`;
  }

  /** Every job index key of a record. */
  async #indexKeys(r: Opened, jobs: Map<string, Opened<Job> | undefined> = new Map()): Promise<string[]> {
    const e = await this.#historyKey(r, jobs);
    return e === undefined ? RecordStore.#lookupKeys(r) : [...RecordStore.#lookupKeys(r), e];
  }

  /**
   * Index the job history held, once per index version (a store written before the index, or by an earlier build;
   * from version 2 only the age index is missing, so only it is written). The marker is written last: a start cut
   * short indexes again. Running an earlier build on the store after this one leaves what it stores without the
   * age index (it sees a marker it takes as done): such records are kept for ever (docs/node.md "Job history").
   */
  async #indexJobs(log?: Logger): Promise<void> {
    const raw = await this.#jobIndex.get(JOB_INDEX_DONE);
    const from = raw === undefined ? 0 : Number(new TextDecoder().decode(raw));
    if (from >= Number(JOB_INDEX_VERSION)) return;
    // a store of a busy node holds millions of these: say why the start takes a while (about 100 µs a record)
    const t0 = Date.now();
    let n = 0;
    let held = false;
    for await (const _ of this.#byType.keys({ limit: 1 })) held = true;
    if (held) log?.info({ from, to: Number(JOB_INDEX_VERSION) }, 'indexing the job history held, once after an upgrade');
    let ops: unknown[] = [];
    const flush = async (atLeast: number) => {
      if (ops.length < atLeast) return;
      await syncBatch(this.#db, ops);
      ops = [];
    };
    const jobs = new Map<string, Opened<Job> | undefined>();
    // from version 3 the job history is indexed: only the witness receipts are new
    for (const type of from >= 3 ? [] : [T.job, ...OF_A_JOB]) {
      for await (const key of this.#byType.keys({ gt: `${type}!`, lt: `${type}!\xff` })) {
        const r = await this.get(key.slice(type.length + 1), type);
        if (!r) continue;
        n++;
        // from version 2 the lookup keys are there already: only the age key is new
        const keys = from >= 2 ? [] : RecordStore.#lookupKeys(r);
        const e = await this.#historyKey(r, jobs);
        if (e !== undefined) keys.push(e);
        for (const k of keys) ops.push({ type: 'put', key: k, value: new Uint8Array(0), sublevel: this.#jobIndex });
        await flush(2000);
        if (jobs.size >= 10_000) jobs.clear();
      }
    }
    // the witness receipts kept for each witness and steward (witness-keep.ts): what else an earlier build kept goes.
    // Version 4 (never released: a build of the same round) kept only the longest, under keys of another form.
    if (from === 4) for await (const k of this.#jobIndex.keys({ gt: 'w!', lt: 'w!\xff' })) ops.push({ type: 'del', key: k, sublevel: this.#jobIndex });
    const pairs = new Map<string, WitnessPair>();
    for await (const key of this.#byType.keys({ gt: `${WITNESS_TYPE}!`, lt: `${WITNESS_TYPE}!\xff` })) {
      const r = (await this.get(key.slice(WITNESS_TYPE.length + 1), WITNESS_TYPE)) as Opened<WitnessReceipt> | undefined;
      if (!r) continue;
      n++;
      const k = RecordStore.#witnessPrefix(r.record.steward, r.signer);
      let pair = pairs.get(k);
      if (!pair) pairs.set(k, (pair = { bands: new Map() }));
      const { band, top, dropped } = offerReceipt(pair, RecordStore.#kept(r), { bySigned: true });
      for (const a of band || top ? dropped : [r.address, ...dropped]) ops.push(...this.#dropWitnessOps(a));
      await flush(2000);
    }
    for (const [k, pair] of pairs) {
      ops.push(...[...pair.bands.values()].map((x) => this.#witnessKeyOp(k, x, false)), ...(pair.top ? [this.#witnessKeyOp(k, pair.top, true)] : []));
      await flush(2000);
    }
    ops.push({ type: 'put', key: JOB_INDEX_DONE, value: new TextEncoder().encode(JOB_INDEX_VERSION), sublevel: this.#jobIndex });
    await syncBatch(this.#db, ops);
    if (held) log?.info({ records: n, ms: Date.now() - t0 }, 'job history indexed');
  }

  /**
   * `prefix` separates overlays: records of one overlay never mix with another's. `log` hears of an index built at
   * open; `clock` (default Date.now) bounds how far ahead a time another node chose may date a record, and `self`
   * (this node's DID) tells its own jobs, whose deadlines count as they are. `witnessRecords` bounds the witness
   * records held (default WITNESS_RECORD_DEFAULTS), `stewards` names the stewards whose are kept outside the caps.
   * `quotedJobs` bounds the jobs quoted on and not run (default QUOTED_JOB_DEFAULTS; a lower bound than the last
   * run's applies here), and `onQuotedEvicted` hears how many of them each eviction let go.
   */
  static async open(
    db: Db,
    prefix = '',
    o: { log?: Logger; clock?: () => number; self?: string; witnessRecords?: Partial<WitnessRecordBounds>; stewards?: readonly string[]; quotedJobs?: Partial<QuotedJobBounds>; onQuotedEvicted?: (n: number) => void } = {},
  ): Promise<RecordStore> {
    const s = new RecordStore(db, prefix, o.clock ?? Date.now, o.self, { ...WITNESS_RECORD_DEFAULTS, ...o.witnessRecords }, o.stewards ?? [], { ...QUOTED_JOB_DEFAULTS, ...o.quotedJobs });
    s.#onQuotedEvicted = o.onQuotedEvicted;
    for await (const [did, addr] of s.#adverts.iterator()) {
      const a = await s.get(Buffer.from(addr).toString(), T.advert);
      if (a) s.#advertCache.set(did, a);
    }
    for (const a of await s.list(T.advert)) s.#hold(a);
    await s.#indexJobs(o.log);
    await s.#indexWitnessRecords(o.log);
    await s.#readQuoted(o.log);
    return s;
  }

  #hold(a: Opened<Advert>): void {
    let m = this.#advertsBySigner.get(a.signer);
    if (!m) this.#advertsBySigner.set(a.signer, (m = new Map()));
    if (!m.has(a.address)) {
      m.set(a.address, a);
      this.#advertCount++;
    }
  }

  /** Advert records held (current and superseded). */
  get advertCount(): number {
    return this.#advertCount;
  }

  /** Every advert record held, in address order per signer. */
  allAdverts(): Array<Opened<Advert>> {
    return [...this.#advertsBySigner.values()].flatMap((m) => [...m.values()]);
  }

  /**
   * Cap the adverts held, and apply the cap to what is held now (a cap
   * lowered between runs, or a store from before the cap). Serialised with
   * advert writes.
   */
  async setAdvertCap(policy: AdvertCapPolicy): Promise<void> {
    this.#cap = policy;
    const p = this.#advertChain.then(() => this.#enforce(undefined));
    this.#advertChain = p.catch(() => undefined);
    await p;
  }

  /**
   * Evict down to the cap (with `incoming` counted as held, not yet written).
   * Returns the batch operations, the adverts removed, and whether `incoming` itself was refused.
   */
  #evictions(incoming: Opened<Advert> | undefined): { ops: unknown[]; removed: Array<Opened<Advert>>; refused: boolean; whole: string[] } {
    const none = { ops: [], removed: [], refused: false, whole: [] };
    const cap = this.#cap;
    if (!cap) return none;
    const count = this.#advertCount + (incoming ? 1 : 0);
    if (count <= cap.max) return none;
    // Evict a little below the cap (1 %), so a flood does not pay a full ranking per advert.
    const excess = count - cap.max + Math.floor(cap.max / 100);
    const providers: Array<{ did: string; current: Opened<Advert>; adverts: Array<Opened<Advert>> }> = [];
    for (const [did, m] of this.#advertsBySigner) {
      const cur = this.#advertCache.get(did);
      if (!cur) continue;
      const isIncoming = incoming?.signer === did;
      const current = isIncoming && cur.record.seq < incoming.record.seq ? incoming : cur;
      const adverts = [...m.values()];
      if (isIncoming) adverts.push(incoming);
      providers.push({ did, current, adverts });
    }
    if (incoming && !this.#advertCache.has(incoming.signer)) providers.push({ did: incoming.signer, current: incoming, adverts: [incoming] });
    const currentOf = new Map(providers.map((p) => [p.did, p.current.address]));
    const ops: unknown[] = [];
    const removed: Array<Opened<Advert>> = [];
    const whole: string[] = [];
    let refused = false;
    for (const v of cap.victims(excess, providers)) {
      const held = this.#advertsBySigner.get(v.did);
      // naming a provider's current advert takes the provider whole; else only the superseded records named go
      const all = v.adverts.some((a) => a.address === currentOf.get(v.did));
      const list = all ? [...(held?.values() ?? []), ...(incoming?.signer === v.did ? [incoming] : [])] : v.adverts;
      for (const a of list) {
        if (a.address === incoming?.address) {
          refused = true;
          continue;
        }
        if (!held?.has(a.address)) continue;
        removed.push(a);
        ops.push({ type: 'del', key: a.address, sublevel: this.#records }, { type: 'del', key: `${T.advert}!${a.address}`, sublevel: this.#byType });
      }
      if (all) {
        whole.push(v.did);
        if (this.#advertCache.has(v.did)) ops.push({ type: 'del', key: v.did, sublevel: this.#adverts });
      }
    }
    return { ops, removed, refused, whole };
  }

  #forget(ev: { removed: ReadonlyArray<Opened<Advert>>; whole: readonly string[] }): void {
    for (const a of ev.removed) {
      if (this.#advertsBySigner.get(a.signer)?.delete(a.address)) this.#advertCount--;
    }
    for (const did of ev.whole) {
      this.#advertCount -= this.#advertsBySigner.get(did)?.size ?? 0;
      this.#advertsBySigner.delete(did);
      this.#advertCache.delete(did);
    }
  }

  async #enforce(incoming: Opened<Advert> | undefined): Promise<void> {
    const ev = this.#evictions(incoming);
    if (!ev.removed.length && !ev.whole.length) return;
    await syncBatch(this.#db, ev.ops);
    this.#forget(ev);
    this.#cap?.onEvict(ev.removed, undefined);
  }

  async has(address: string): Promise<boolean> {
    return (await this.#records.get(address)) !== undefined;
  }

  /** Store a verified record. Returns false when it was already held. An advert becomes its provider’s current one only with a higher seq. */
  async put(rec: Opened): Promise<boolean> {
    // The same record arriving twice at once (gossip and sync, two peers) is stored, and reported new, once.
    const pending = this.#inflight.get(rec.address);
    if (pending) return pending.then(() => false);
    // Adverts are written one at a time: the seq comparison and the write must not interleave, or a
    // lower seq whose write lands last would become the provider's current advert.
    // Witness receipts likewise: which receipts of a witness are kept is decided one write at a time.
    // Witness records too, and evidence with them: their counts against the caps move one write at a time.
    // Jobs: one held in the quoted order leaves it here, ordered against its evictions (#putJobs); others go at once.
    const p =
      rec.type === T.advert
        ? this.#advertChain.then(() => this.#putNow(rec))
        : rec.type === T.job
          ? this.#putJobs([rec]).then((n) => n === 1)
        : rec.type === WITNESS_TYPE
          ? this.#witnessChain.then(() => this.#putWitness(rec as Opened<WitnessReceipt>))
          : rec.type === EVIDENCE_TYPE
            ? this.#witnessChain.then(() => this.#putEvidence(rec as Opened<EquivocationEvidence>))
            : this.#putNow(rec);
    if (rec.type === T.advert) this.#advertChain = p.catch(() => undefined);
    if (rec.type === WITNESS_TYPE || rec.type === EVIDENCE_TYPE) this.#witnessChain = p.catch(() => undefined);
    this.#inflight.set(rec.address, p);
    try {
      return await p;
    } finally {
      this.#inflight.delete(rec.address);
    }
  }

  async #putNow(rec: Opened): Promise<boolean> {
    if (rec.type === T.advert) {
      const a = rec as Opened<Advert>;
      if (await this.has(rec.address)) return false;
      const ev = this.#evictions(a);
      if (ev.refused) {
        // The newcomer is the least useful advert: it is not stored (what the evictions free is still freed).
        if (ev.ops.length) await syncBatch(this.#db, ev.ops);
        this.#forget(ev);
        this.#cap?.onEvict(ev.removed, a);
        return false;
      }
      const cur = this.#advertCache.get(rec.signer);
      const replaces = !cur || cur.record.seq < a.record.seq;
      await syncBatch(
        this.#db,
        [
          ...ev.ops,
          { type: 'put', key: rec.address, value: rec.bytes, sublevel: this.#records },
          { type: 'put', key: `${rec.type}!${rec.address}`, value: new Uint8Array(0), sublevel: this.#byType },
          ...(replaces ? [{ type: 'put', key: rec.signer, value: new TextEncoder().encode(rec.address), sublevel: this.#adverts }] : []),
        ],
      );
      this.#forget(ev);
      if (replaces) this.#advertCache.set(rec.signer, a);
      this.#hold(a);
      if (ev.removed.length) this.#cap?.onEvict(ev.removed, undefined);
      return true;
    }
    return (await this.putMany([rec])) === 1;
  }

  /**
   * A witness receipt (pool-witness/1) is kept only in a bounded set per witness and steward (witness-keep.ts): the
   * longest, and the first stored of each doubling of length. A witness cosigns every head, so keeping them all
   * was one record per ledger entry and witness, for ever, on every node of the overlay. One that takes no place in
   * the set is not stored (false); what it displaces goes in the same batch. Then the overall bound: for a steward
   * not named, the receipt that first arrived goes once `maxReceipts` are held; for a named one, a receipt from a
   * key past its first `maxWitnesses` is not stored.
   */
  async #putWitness(rec: Opened<WitnessReceipt>): Promise<boolean> {
    if (await this.has(rec.address)) return false;
    const steward = rec.record.steward;
    const named = this.#named.has(steward);
    const keys = this.#namedWitnesses.get(steward);
    if (named && !keys?.has(rec.signer) && (keys?.size ?? 0) >= this.#bounds.maxWitnesses) return false;
    const prefix = RecordStore.#witnessPrefix(steward, rec.signer);
    const pair: WitnessPair = { bands: new Map() };
    for await (const [k, v] of this.#jobIndex.iterator({ gt: prefix, lt: `${prefix}\xff` })) {
      const x = RecordStore.#parseKept(v);
      if (k.slice(prefix.length) === 'top') pair.top = x;
      else pair.bands.set(bandOf(x.length), x);
    }
    const kept = RecordStore.#kept(rec);
    const { band, top, dropped } = offerReceipt(pair, kept);
    if (!band && !top) return false;
    // what witness-keep displaces leaves the arrival index too
    let looseDropped = 0;
    const droppedOps: unknown[] = [];
    for (const a of dropped) {
      droppedOps.push(...this.#dropWitnessOps(a));
      const place = await this.#keep.get(`a!${a}`);
      if (place === undefined) continue;
      const key = new TextDecoder().decode(place);
      if (key.startsWith('o!')) looseDropped++;
      droppedOps.push({ type: 'del', key, sublevel: this.#keep }, { type: 'del', key: `a!${a}`, sublevel: this.#keep });
    }
    const seq = this.#arrival++;
    const place = named ? `n!w!${steward}!${seqKey(seq)}` : `o!w!${seqKey(seq)}`;
    const ev = named ? { ops: [], n: 0 } : await this.#evictOps('w', this.#loose.w - looseDropped + 1 - this.#bounds.maxReceipts, new Set(dropped));
    await syncBatch(this.#db, [
      // evictions first: a place they free may be taken again below
      ...ev.ops,
      { type: 'put', key: rec.address, value: rec.bytes, sublevel: this.#records },
      { type: 'put', key: `${rec.type}!${rec.address}`, value: new Uint8Array(0), sublevel: this.#byType },
      // only the places it took: the others are unchanged
      ...(band ? [this.#witnessKeyOp(prefix, kept, false)] : []),
      ...(top ? [this.#witnessKeyOp(prefix, kept, true)] : []),
      ...droppedOps,
      { type: 'put', key: place, value: RecordStore.#placeValue(steward, rec.signer, rec.address), sublevel: this.#keep },
      { type: 'put', key: `a!${rec.address}`, value: new TextEncoder().encode(place), sublevel: this.#keep },
    ]);
    this.#evicted('w', ev);
    if (named) {
      if (keys) keys.add(rec.signer);
      else this.#namedWitnesses.set(steward, new Set([rec.signer]));
    } else this.#loose.w += 1 - looseDropped - ev.n;
    return true;
  }

  /**
   * Evidence of a steward's equivocation (pool-evidence/1). About a steward not named, it is kept until
   * `maxEvidence` newer ones arrived (the first to arrive is evicted in the same batch); about a named one, only the
   * first `maxEvidence` are kept (strangers can wrap a genuine equivocation in keys of their own for ever).
   */
  async #putEvidence(rec: Opened<EquivocationEvidence>): Promise<boolean> {
    if (await this.has(rec.address)) return false;
    const steward = rec.record.steward;
    const named = this.#named.has(steward);
    const held = this.#namedEvidence.get(steward) ?? 0;
    if (named && held >= this.#bounds.maxEvidence) return false;
    const seq = this.#arrival++;
    const place = named ? `n!e!${steward}!${seqKey(seq)}` : `o!e!${seqKey(seq)}`;
    const ev = named ? { ops: [], n: 0 } : await this.#evictOps('e', this.#loose.e + 1 - this.#bounds.maxEvidence, new Set());
    await syncBatch(this.#db, [
      ...ev.ops,
      { type: 'put', key: rec.address, value: rec.bytes, sublevel: this.#records },
      { type: 'put', key: `${rec.type}!${rec.address}`, value: new Uint8Array(0), sublevel: this.#byType },
      { type: 'put', key: place, value: RecordStore.#placeValue(steward, rec.signer, rec.address), sublevel: this.#keep },
    ]);
    this.#evicted('e', ev);
    if (named) this.#namedEvidence.set(steward, held + 1);
    else this.#loose.e += 1 - ev.n;
    return true;
  }

  static #placeValue(steward: string, signer: string, address: string): Uint8Array {
    return new TextEncoder().encode(`${steward}!${signer}!${address}`);
  }

  static #parsePlace(v: Uint8Array): { steward: string; signer: string; address: string } {
    const [steward, signer, address] = new TextDecoder().decode(v).split('!');
    return { steward: steward!, signer: signer!, address: address! };
  }

  /**
   * The batch operations that evict the `n` witness records of kind `k` about stewards not named that arrived first
   * (none when n ≤ 0), skipping `skip` (records the same batch drops anyway): each record, its place in the arrival
   * index, and a receipt's places in witness-keep.ts's index. Reads only what it evicts.
   */
  async #evictOps(k: WKind, n: number, skip: ReadonlySet<string>): Promise<{ ops: unknown[]; n: number; last?: string }> {
    const ops: unknown[] = [];
    let done = 0;
    let last: string | undefined;
    if (n <= 0) return { ops, n: 0 };
    const type = WKIND_TYPE[k];
    for await (const [key, v] of this.#keep.iterator({ gt: this.#evictedTo[k] ?? `o!${k}!`, lt: `o!${k}!\xff` })) {
      if (done >= n) break;
      const { steward, signer, address } = RecordStore.#parsePlace(v);
      if (skip.has(address)) continue;
      done++;
      last = key;
      ops.push(
        { type: 'del', key: address, sublevel: this.#records },
        { type: 'del', key: `${type}!${address}`, sublevel: this.#byType },
        { type: 'del', key, sublevel: this.#keep },
      );
      if (k !== 'w') continue;
      ops.push({ type: 'del', key: `a!${address}`, sublevel: this.#keep });
      const prefix = RecordStore.#witnessPrefix(steward, signer);
      for await (const [pk, pv] of this.#jobIndex.iterator({ gt: prefix, lt: `${prefix}\xff` })) {
        if (RecordStore.#parseKept(pv).address === address) ops.push({ type: 'del', key: pk, sublevel: this.#jobIndex });
      }
    }
    return { ops, n: done, ...(last === undefined ? {} : { last }) };
  }

  /** After an eviction's batch is on disk: the next starts past what it removed. */
  #evicted(k: WKind, ev: { last?: string }): void {
    if (ev.last !== undefined) this.#evictedTo[k] = ev.last;
  }

  /**
   * The arrival index of the witness records (see the class comment): built once for a store from before it (in
   * address order: the order of arrival is not known), then read for the counts, with records moved between the
   * named and the others' order as the named stewards changed since the last run, and the caps applied (a cap
   * lowered between runs, or such a move). A named steward's records held past its own bounds stay.
   */
  async #indexWitnessRecords(log?: Logger): Promise<void> {
    let ops: unknown[] = [];
    const flush = async (atLeast: number) => {
      if (ops.length < atLeast || !ops.length) return;
      await syncBatch(this.#db, ops);
      ops = [];
    };
    if ((await this.#keep.get(WITNESS_KEEP_DONE)) === undefined) {
      let n = 0;
      for (const k of ['e', 'w'] as const) {
        const type = WKIND_TYPE[k];
        for await (const key of this.#byType.keys({ gt: `${type}!`, lt: `${type}!\xff` })) {
          const address = key.slice(type.length + 1);
          const r = (await this.get(address, type)) as Opened<{ steward: string }> | undefined;
          if (!r) continue;
          const place = `o!${k}!${seqKey(this.#arrival++)}`;
          ops.push({ type: 'put', key: place, value: RecordStore.#placeValue(r.record.steward, r.signer, address), sublevel: this.#keep });
          if (k === 'w') ops.push({ type: 'put', key: `a!${address}`, value: new TextEncoder().encode(place), sublevel: this.#keep });
          n++;
          await flush(2000);
        }
      }
      ops.push({ type: 'put', key: WITNESS_KEEP_DONE, value: new TextEncoder().encode('1'), sublevel: this.#keep });
      await flush(1);
      if (n) log?.info({ records: n }, 'witness records indexed by arrival, once after an upgrade');
    }
    const move = (k: WKind, from: string, to: string, v: Uint8Array, address: string) => {
      ops.push({ type: 'del', key: from, sublevel: this.#keep }, { type: 'put', key: to, value: v, sublevel: this.#keep });
      if (k === 'w') ops.push({ type: 'put', key: `a!${address}`, value: new TextEncoder().encode(to), sublevel: this.#keep });
    };
    // the others' records about a steward now named join its own; then each named one is counted, or rejoins the others
    for await (const [key, v] of this.#keep.iterator({ gt: 'o!', lt: 'o!\xff' })) {
      const [, k, seq] = key.split('!') as [string, WKind, string];
      this.#arrival = Math.max(this.#arrival, Number(seq) + 1);
      const p = RecordStore.#parsePlace(v);
      if (this.#named.has(p.steward)) move(k, key, `n!${k}!${p.steward}!${seq}`, v, p.address);
      else this.#loose[k]++;
      await flush(2000);
    }
    await flush(1);
    for await (const [key, v] of this.#keep.iterator({ gt: 'n!', lt: 'n!\xff' })) {
      const parts = key.split('!');
      const k = parts[1] as WKind;
      const seq = parts[parts.length - 1]!;
      this.#arrival = Math.max(this.#arrival, Number(seq) + 1);
      const p = RecordStore.#parsePlace(v);
      if (!this.#named.has(p.steward)) {
        move(k, key, `o!${k}!${seq}`, v, p.address);
        this.#loose[k]++;
      } else if (k === 'e') this.#namedEvidence.set(p.steward, (this.#namedEvidence.get(p.steward) ?? 0) + 1);
      else {
        const keys = this.#namedWitnesses.get(p.steward);
        if (keys) keys.add(p.signer);
        else this.#namedWitnesses.set(p.steward, new Set([p.signer]));
      }
      await flush(2000);
    }
    await flush(1);
    for (const k of ['e', 'w'] as const) {
      const max = k === 'e' ? this.#bounds.maxEvidence : this.#bounds.maxReceipts;
      let evicted = 0;
      while (this.#loose[k] > max) {
        const ev = await this.#evictOps(k, Math.min(2000, this.#loose[k] - max), new Set());
        if (!ev.n) break;
        await syncBatch(this.#db, ev.ops);
        this.#evicted(k, ev);
        this.#loose[k] -= ev.n;
        evicted += ev.n;
      }
      if (evicted) log?.info({ kind: WKIND_TYPE[k], evicted, max }, 'witness records past the cap evicted, the first to arrive first');
    }
  }

  /** Witness records held about stewards this node's config does not name, per kind (evidence, receipts). */
  get looseWitnessRecords(): { evidence: number; receipts: number } {
    return { evidence: this.#loose.e, receipts: this.#loose.w };
  }

  /** `w!<steward>!<witness>!`: then `b<band>` for each band's checkpoint, `top` for the longest. */
  static #witnessPrefix(steward: string, witness: string): string {
    return `w!${steward}!${witness}!`;
  }

  static #kept(r: Opened<WitnessReceipt>): KeptReceipt {
    return { length: r.record.length, at: r.record.witnessedAt, address: r.address };
  }

  static #parseKept(v: Uint8Array): KeptReceipt {
    const [length, at, address] = new TextDecoder().decode(v).split('!');
    return { length: Number(length), at: Number(at), address: address! };
  }

  /** The index key holding `x` in its place: its band's checkpoint (`b<band>`) or the longest (`top`). */
  #witnessKeyOp(prefix: string, x: KeptReceipt, top: boolean): unknown {
    const place = top ? 'top' : `b${String(bandOf(x.length)).padStart(2, '0')}`;
    return { type: 'put', key: `${prefix}${place}`, value: new TextEncoder().encode(`${x.length}!${x.at}!${x.address}`), sublevel: this.#jobIndex };
  }

  #dropWitnessOps(address: string): unknown[] {
    return [
      { type: 'del', key: address, sublevel: this.#records },
      { type: 'del', key: `${WITNESS_TYPE}!${address}`, sublevel: this.#byType },
    ];
  }

  /** The witness receipts held for `steward`: for each witness, its longest and a checkpoint about every doubling of length. */
  async witnessReceiptsFor(steward: string): Promise<Array<Opened<WitnessReceipt>>> {
    const seen = new Set<string>();
    const out: Array<Opened<WitnessReceipt>> = [];
    for await (const v of this.#jobIndex.values({ gt: `w!${steward}!`, lt: `w!${steward}!\xff` })) {
      const { address } = RecordStore.#parseKept(v);
      if (seen.has(address)) continue;
      seen.add(address);
      const r = await this.get(address, WITNESS_TYPE);
      if (r) out.push(r as Opened<WitnessReceipt>);
    }
    return out;
  }

  /**
   * The equivocation evidence (pool-evidence/1) held about `steward`, in the order it arrived, at most `limit` records.
   * Read from a named steward's own places (`n!e!<steward>!…`: this node's config names it, as a steward names itself);
   * about a steward not named, it is found among the others' places (`o!e!…`, whose values name the steward), reading
   * at most the `maxEvidence` such places.
   */
  async evidenceAbout(steward: string, limit: number): Promise<Array<Opened<EquivocationEvidence>>> {
    const out: Array<Opened<EquivocationEvidence>> = [];
    if (limit <= 0) return out;
    const named = this.#named.has(steward);
    const [gt, lt] = named ? [`n!e!${steward}!`, `n!e!${steward}!\xff`] : ['o!e!', 'o!e!\xff'];
    for await (const v of this.#keep.values({ gt, lt })) {
      const place = RecordStore.#parsePlace(v);
      if (place.steward !== steward) continue;
      const r = await this.get(place.address, EVIDENCE_TYPE);
      if (r) out.push(r as Opened<EquivocationEvidence>);
      if (out.length >= limit) break;
    }
    return out;
  }

  /**
   * The witness receipts for `steward` a node's store holds (witnessReceiptsFor), read without opening the store as the
   * daemon does (nothing written: `c0mpute ledger verify` on a steward's ledger directory, src/roles/steward-held.ts).
   */
  static async witnessReceiptsHeld(db: Db, prefix: string, steward: string): Promise<Array<Opened<WitnessReceipt>>> {
    return new RecordStore(db, prefix, Date.now, undefined, WITNESS_RECORD_DEFAULTS, [steward], QUOTED_JOB_DEFAULTS).witnessReceiptsFor(steward);
  }

  /**
   * The equivocation evidence about `steward` a node's store holds, read without opening the store as the daemon does
   * (no index built, nothing written: `c0mpute ledger verify` on a steward's ledger directory, src/roles/steward-held.ts):
   * from both places a record can be in (the steward named by the node's config, or not), at most `limit` records.
   */
  static async evidenceHeld(db: Db, prefix: string, steward: string, limit: number): Promise<Array<Opened<EquivocationEvidence>>> {
    const as = (named: string[]) => new RecordStore(db, prefix, Date.now, undefined, WITNESS_RECORD_DEFAULTS, named, QUOTED_JOB_DEFAULTS);
    const seen = new Set<string>();
    const out: Array<Opened<EquivocationEvidence>> = [];
    for (const s of [as([steward]), as([])]) {
      for (const r of await s.evidenceAbout(steward, limit)) {
        if (seen.has(r.address) || out.length >= limit) continue;
        seen.add(r.address);
        out.push(r);
      }
    }
    return out;
  }

  /**
   * Store verified records that are not adverts or witness receipts, in one synced batch; returns how many were new.
   * A job among them held in the quoted order (`putQuoted`) leaves it: it is kept as the job history keeps it.
   */
  async putMany(recs: readonly Opened[]): Promise<number> {
    for (const r of recs) {
      if (r.type === T.advert) throw new Error('putMany takes no adverts: put() orders their seq');
      if (r.type === WITNESS_TYPE) throw new Error('putMany takes no witness receipts: put() decides which of a witness are kept');
      if (r.type === EVIDENCE_TYPE) throw new Error('putMany takes no witness evidence: put() bounds what is kept');
    }
    return recs.some((r) => r.type === T.job) ? this.#putJobs(recs) : this.#putManyNow(recs);
  }

  /**
   * Write records among which are jobs (put, putMany). A job with no place in the quoted order (this node's own, one
   * a steward admitted, one that ran after it was evicted or was never quoted on) is written at once, beside any
   * quoted backlog: only the quoted order's own writes go one group at a time. What must be ordered is handled here:
   * - the same job waiting to enter the quoted order (putQuoted not yet taken): it does not enter; it is written here
   *   as a kept job, and that putQuoted answers false (held);
   * - the same job in the group commit on its way to disk: this waits for that batch, then promotes it;
   * - a job held in the quoted order (quoted on, now run here): promoted in the lane, so no eviction or history
   *   pass takes it meanwhile and the counts move once. The lane runs it before the next group, not behind them.
   * A putQuoted of one of these jobs meanwhile waits for this write, then answers false (held).
   */
  #putJobs(recs: readonly Opened[]): Promise<number> {
    const addrs = [...new Set(recs.filter((r) => r.type === T.job).map((r) => r.address))];
    const first: Promise<unknown>[] = [];
    const displaced: QuotedWrite[] = [];
    for (const a of addrs) {
      const taken = this.#quotedTaken.get(a);
      if (taken) first.push(taken);
      const other = this.#directJobs.get(a);
      if (other) first.push(other);
      const w = this.#quotedPending.get(a);
      if (w) {
        this.#quotedPending.delete(a);
        displaced.push(w);
      }
    }
    const p = (async () => {
      if (first.length) await Promise.allSettled(first);
      // nothing can give these jobs a place meanwhile: putQuoted of them waits for this write (#directJobs)
      for (const a of addrs) if ((await this.#quoted.get(`a!${a}`)) !== undefined) return this.#inLane(() => this.#putManyNow(recs));
      return this.#putManyNow(recs);
    })();
    for (const a of addrs) this.#directJobs.set(a, p);
    const done = () => {
      for (const a of addrs) if (this.#directJobs.get(a) === p) this.#directJobs.delete(a);
    };
    p.then(done, done);
    for (const w of displaced) p.then(() => w.resolve(false), (e: unknown) => w.reject(e));
    return p;
  }

  /**
   * Store a selection this node signed, with the settings it was decided under (`settings`: audit-settings.ts, kept
   * by the selection's address in sublevel `decisions`) and the records it names (`also`: the offers it considered),
   * in one synced batch. The settings go with the selection when the job history drops it. `market export` gives
   * them to the audit: a decision recomputed under the node's settings of a later day (another trusted buyer, skew
   * window or weight) need not reproduce (docs/market.md §9). Local: a `selection/1` cannot carry them.
   */
  putDecision(selection: Opened<Selection>, settings: Uint8Array, also: readonly Opened[] = []): Promise<number> {
    if (selection.type !== T.selection) throw new Error('putDecision takes a selection');
    return this.#putManyWith([selection, ...also], [{ type: 'put', key: selection.address, value: settings, sublevel: this.#decisions }]);
  }

  /** The settings kept with a selection this node signed (putDecision); undefined for one decided before they were kept, or another node's. */
  async decisionOf(selection: string): Promise<Uint8Array | undefined> {
    return (await this.#decisions.get(selection)) ?? undefined;
  }

  /**
   * Note how an attempt of this node's own job ended when it got no receipt and signed no non-delivery (the provider
   * busy with another of its jobs, a refusal that is not the provider's fault, the node stopping…): by the selection's
   * address in sublevel `attemptnotes`, dropped with the selection when the job history drops it. Local, never on the
   * wire: `c0mpute jobs`, `GET /v1/jobs` and the console's job page show it (docs/node.md "Job history"; before, such an
   * attempt read "no receipt, no non-delivery" with no reason, QA qaPnet F4). The text is cut to ATTEMPT_NOTE_MAX.
   */
  async noteAttempt(selection: string, note: AttemptNote): Promise<void> {
    const text = truncateText(note.message, ATTEMPT_NOTE_MAX);
    const value = new TextEncoder().encode(JSON.stringify({ ...(note.code !== undefined ? { code: note.code } : {}), message: text }));
    await syncBatch(this.#db, [{ type: 'put', key: selection, value, sublevel: this.#attemptNotes }]);
  }

  /** The note of an attempt (noteAttempt), if one was kept; one that does not read is none. */
  async attemptNoteOf(selection: string): Promise<AttemptNote | undefined> {
    const v = await this.#attemptNotes.get(selection);
    if (!v) return undefined;
    try {
      const o = JSON.parse(new TextDecoder().decode(v)) as { code?: unknown; message?: unknown };
      if (typeof o.message !== 'string') return undefined;
      return { ...(typeof o.code === 'string' ? { code: o.code } : {}), message: o.message };
    } catch {
      return undefined;
    }
  }

  /** putMany, with `extra` batch operations in the same synced batch (no jobs among `recs`). */
  async #putManyWith(recs: readonly Opened[], extra: unknown[]): Promise<number> {
    for (const r of recs) if (r.type === T.advert || r.type === T.job || r.type === WITNESS_TYPE || r.type === EVIDENCE_TYPE) throw new Error(`putDecision takes no ${r.type}`);
    return this.#putManyNow(recs, extra);
  }

  async #putManyNow(recs: readonly Opened[], extra: readonly unknown[] = []): Promise<number> {
    const fresh = new Map<string, Opened>();
    const ops: unknown[] = [...extra];
    const leaving: QuotedPlace[] = [];
    for (const r of recs) {
      if (fresh.has(r.address)) continue;
      if (!(await this.has(r.address))) fresh.set(r.address, r);
      else if (r.type === T.job && !leaving.some((q) => q.a === r.address)) {
        const q = await this.#quotedPlaceOf(r.address);
        if (q) {
          leaving.push(q.place);
          ops.push({ type: 'del', key: q.key, sublevel: this.#quoted }, { type: 'del', key: `a!${r.address}`, sublevel: this.#quoted });
        }
      }
    }
    if (!fresh.size && !ops.length) return 0;
    const jobs = new Map<string, Opened<Job> | undefined>();
    for (const r of fresh.values()) if (r.type === T.job) jobs.set(r.address, r as Opened<Job>);
    for (const rec of fresh.values()) {
      ops.push({ type: 'put', key: rec.address, value: rec.bytes, sublevel: this.#records }, { type: 'put', key: `${rec.type}!${rec.address}`, value: new Uint8Array(0), sublevel: this.#byType });
      for (const key of await this.#indexKeys(rec, jobs)) ops.push({ type: 'put', key, value: new Uint8Array(0), sublevel: this.#jobIndex });
    }
    await syncBatch(this.#db, ops);
    for (const q of leaving) this.#quotedLeft(q);
    return fresh.size;
  }

  /**
   * Store a job this provider quoted on: within `QuotedJobBounds`, the first quoted going (with its index keys) in
   * the batch that stores this one, until it is stored with `put` (it ran here) or the job history drops it. This
   * node's own job is stored as `put` stores it. False when the job is held already, or alone exceeds `maxBytes`.
   * Calls made while a batch is on its way to disk are committed together in the next (group commit, #drain): a
   * burst of N costs about one sync, not N, and the outcome is the one N calls in turn would have had.
   */
  putQuoted(job: Opened<Job>): Promise<boolean> {
    if (job.signer === this.#self) return this.put(job);
    // the same job being written as a kept one (#putJobs): it is held once that is done
    const direct = this.#directJobs.get(job.address);
    if (direct) return direct.then(() => false);
    const pending = this.#quotedPending.get(job.address);
    if (pending) return pending.promise.then(() => false);
    let resolve!: (stored: boolean) => void;
    let reject!: (err: unknown) => void;
    const promise = new Promise<boolean>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    this.#quotedPending.set(job.address, { job, promise, resolve, reject });
    this.#pump();
    return promise;
  }

  /** Run `f` in the quoted order's lane: after the batch on its way to disk, before the quoted jobs waiting. */
  #inLane<R>(f: () => Promise<R>): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.#laneOps.push(() => f().then(resolve, reject));
      this.#pump();
    });
  }

  #pump(): void {
    if (this.#laneBusy) return;
    this.#laneBusy = true;
    const idle = () => {
      this.#laneBusy = false;
      if (this.#laneOps.length || this.#quotedPending.size) this.#pump();
    };
    this.#drain().then(idle, idle);
  }

  /**
   * The lane: promotions and history passes first, one at a time; then every putQuoted waiting (up to
   * QUOTED_GROUP_MAX) in one synced batch with the evictions they need; again until nothing waits. A quoted job's
   * answer comes when its batch is on disk.
   */
  async #drain(): Promise<void> {
    // calls made together (in the same tick) go in the same batch
    await Promise.resolve();
    for (;;) {
      const op = this.#laneOps.shift();
      if (op) {
        await op();
        continue;
      }
      if (!this.#quotedPending.size) return;
      const group: QuotedWrite[] = [];
      for (const [a, w] of this.#quotedPending) {
        if (group.length >= QUOTED_GROUP_MAX) break;
        group.push(w);
        this.#quotedPending.delete(a);
      }
      const commit = this.#commitQuoted(group.map((w) => w.job));
      for (const w of group) this.#quotedTaken.set(w.job.address, commit);
      try {
        const stored = await commit;
        group.forEach((w, i) => w.resolve(stored[i] ?? false));
      } catch (e) {
        for (const w of group) w.reject(e);
      } finally {
        this.#quotedTaken.clear();
      }
    }
  }

  /**
   * One group commit of quoted jobs (in the lane): those not held and within `maxBytes` enter the order in arrival
   * order, and the first quoted go until the order fits its bounds again, all in one synced batch. The order kept is
   * the longest run of the last quoted that fits, as one call at a time would keep: the jobs held first go first,
   * then, when the group alone is past the bounds, its own first (never written). Returns each job's answer.
   */
  async #commitQuoted(jobs: ReadonlyArray<Opened<Job>>): Promise<boolean[]> {
    const max = this.#quotedBounds;
    const stored: boolean[] = [];
    const adding: Array<{ key: string; job: Opened<Job>; place: QuotedPlace }> = [];
    const seen = new Set<string>();
    for (const job of jobs) {
      if (seen.has(job.address) || job.bytes.length > max.maxBytes || (await this.has(job.address))) {
        stored.push(false);
        continue;
      }
      seen.add(job.address);
      adding.push({ key: `o!${seqKey(this.#quotedSeq++)}`, job, place: { a: job.address, n: job.bytes.length, k: await this.#indexKeys(job) } });
      stored.push(true);
    }
    if (!adding.length) return stored;
    const count = this.#quotedHeld.count + adding.length;
    const bytes = this.#quotedHeld.bytes + adding.reduce((n, x) => n + x.place.n, 0);
    const ev = await this.#quotedEvictOps(count - max.maxJobs, bytes - max.maxBytes);
    // past what is held: the group's own first quoted go (taken, then let go: not written)
    let gone = 0;
    let goneBytes = 0;
    while (gone < adding.length && (count - ev.n - gone > max.maxJobs || bytes - ev.bytes - goneBytes > max.maxBytes)) goneBytes += adding[gone++]!.place.n;
    const kept = adding.slice(gone);
    const enc = new TextEncoder();
    await syncBatch(this.#db, [
      ...ev.ops,
      ...kept.flatMap(({ key, job, place }) => [
        { type: 'put', key: job.address, value: job.bytes, sublevel: this.#records },
        { type: 'put', key: `${job.type}!${job.address}`, value: new Uint8Array(0), sublevel: this.#byType },
        ...place.k.map((k) => ({ type: 'put', key: k, value: new Uint8Array(0), sublevel: this.#jobIndex })),
        { type: 'put', key, value: enc.encode(JSON.stringify(place)), sublevel: this.#quoted },
        { type: 'put', key: `a!${job.address}`, value: enc.encode(key), sublevel: this.#quoted },
      ]),
    ]);
    this.#quotedEvicted(ev);
    this.#quotedHeld.count += kept.length;
    this.#quotedHeld.bytes += kept.reduce((n, x) => n + x.place.n, 0);
    if (gone) {
      this.#quotedEvictedTo = adding[gone - 1]!.key;
      this.#onQuotedEvicted?.(gone);
    }
    return stored;
  }

  /** Jobs held in the quoted order (quoted on, not run here) and their envelope bytes. */
  get quotedJobs(): { count: number; bytes: number } {
    return { ...this.#quotedHeld };
  }

  /** A job's place in the quoted order, when it is held there. */
  async #quotedPlaceOf(address: string): Promise<{ key: string; place: QuotedPlace } | undefined> {
    const k = await this.#quoted.get(`a!${address}`);
    if (k === undefined) return undefined;
    const key = new TextDecoder().decode(k);
    const v = await this.#quoted.get(key);
    return { key, place: v === undefined ? { a: address, n: 0, k: [] } : RecordStore.#parseQuoted(v) };
  }

  static #parseQuoted(v: Uint8Array): QuotedPlace {
    return JSON.parse(new TextDecoder().decode(v)) as QuotedPlace;
  }

  /** A job left the quoted order (its batch is on disk). */
  #quotedLeft(q: QuotedPlace): void {
    this.#quotedHeld.count = Math.max(0, this.#quotedHeld.count - 1);
    this.#quotedHeld.bytes = Math.max(0, this.#quotedHeld.bytes - q.n);
  }

  /**
   * The batch operations that evict the first quoted jobs until `count` of them and `bytes` of their envelopes are
   * freed (none when both ≤ 0): each job, its type and job index keys, and its two places. Reads only what it evicts.
   */
  async #quotedEvictOps(count: number, bytes: number): Promise<{ ops: unknown[]; n: number; bytes: number; last?: string }> {
    const ops: unknown[] = [];
    let n = 0;
    let freed = 0;
    let last: string | undefined;
    if (count <= 0 && bytes <= 0) return { ops, n, bytes: freed };
    for await (const [key, v] of this.#quoted.iterator({ gt: this.#quotedEvictedTo ?? 'o!', lt: 'o!\xff' })) {
      if (n >= count && freed >= bytes) break;
      const q = RecordStore.#parseQuoted(v);
      n++;
      freed += q.n;
      last = key;
      ops.push(
        { type: 'del', key: q.a, sublevel: this.#records },
        { type: 'del', key: `${T.job}!${q.a}`, sublevel: this.#byType },
        ...q.k.map((k) => ({ type: 'del', key: k, sublevel: this.#jobIndex })),
        { type: 'del', key, sublevel: this.#quoted },
        { type: 'del', key: `a!${q.a}`, sublevel: this.#quoted },
      );
    }
    return { ops, n, bytes: freed, ...(last === undefined ? {} : { last }) };
  }

  /** After an eviction's batch is on disk: the counts, where the next starts, and a word to the owner. */
  #quotedEvicted(ev: { n: number; bytes: number; last?: string }): void {
    if (!ev.n) return;
    this.#quotedHeld.count -= ev.n;
    this.#quotedHeld.bytes -= ev.bytes;
    if (ev.last !== undefined) this.#quotedEvictedTo = ev.last;
    this.#onQuotedEvicted?.(ev.n);
  }

  /** The quoted order's counts, read at open; then its bounds (lower than the last run's, say) applied, the first quoted going. */
  async #readQuoted(log?: Logger): Promise<void> {
    for await (const [key, v] of this.#quoted.iterator({ gt: 'o!', lt: 'o!\xff' })) {
      this.#quotedSeq = Math.max(this.#quotedSeq, Number(key.slice(2)) + 1);
      this.#quotedHeld.count++;
      this.#quotedHeld.bytes += RecordStore.#parseQuoted(v).n;
    }
    const max = this.#quotedBounds;
    let evicted = 0;
    for (;;) {
      const over = this.#quotedHeld.count - max.maxJobs;
      const ev = await this.#quotedEvictOps(Math.min(2000, over), over > 2000 ? 0 : this.#quotedHeld.bytes - max.maxBytes);
      if (!ev.n) break;
      await syncBatch(this.#db, ev.ops);
      this.#quotedEvicted(ev);
      evicted += ev.n;
    }
    if (evicted) log?.info({ evicted, held: this.#quotedHeld.count, maxJobs: max.maxJobs, maxBytes: max.maxBytes }, 'jobs quoted on past history.maxQuotedJobs(Bytes) dropped, the first quoted first');
  }

  /**
   * Drop the job history whose time is before `before` (ms): jobs past their deadline, and what belongs to them (see
   * the class comment), with their index entries, at most `max` records in one synced batch; pass the result's
   * `after` to the next call. Only jobs and selections are read (for their lookup keys); anything else goes by its
   * key, and so does a record that no longer opens (its lookup keys, if any, stay: lookups skip a missing record).
   * Adverts, pool and witness records are not history and are never dropped here (witness records have their own
   * bound: the class comment).
   */
  pruneHistory(before: number, max = 1000, after?: string): Promise<HistoryPruned> {
    // in the quoted order's lane: a quoted job it drops leaves the order, counted once
    return this.#inLane(() => this.#pruneHistoryNow(before, max, after));
  }

  /**
   * The date (as the history index has it: history-prune.ts) of the newest job history held, or undefined when none is:
   * a pass whose cutoff is past it would drop the whole history (startHistoryPruning holds such a pass until the clock
   * is corroborated). One read of the index's last key.
   */
  async newestHistoryAt(): Promise<number | undefined> {
    for await (const key of this.#jobIndex.keys({ gt: 'e!', lt: 'e!\xff', reverse: true, limit: 1 })) return Number(key.split('!')[1]);
    return undefined;
  }

  async #pruneHistoryNow(before: number, max: number, after?: string): Promise<HistoryPruned> {
    const ops: unknown[] = [];
    const leaving: QuotedPlace[] = [];
    let removed = 0;
    let more = false;
    let last: string | undefined;
    for await (const key of this.#jobIndex.keys({ gt: after ?? 'e!', lt: `e!${ts(before)}` })) {
      if (removed >= max) {
        more = true;
        break;
      }
      last = key;
      removed++;
      ops.push({ type: 'del', key, sublevel: this.#jobIndex });
      const [, , type, address] = key.split('!');
      if (!type || !address) continue;
      ops.push({ type: 'del', key: address, sublevel: this.#records }, { type: 'del', key: `${type}!${address}`, sublevel: this.#byType });
      if (type === T.job || type === T.selection) {
        const r = await this.get(address, type);
        if (r) for (const k of RecordStore.#lookupKeys(r)) ops.push({ type: 'del', key: k, sublevel: this.#jobIndex });
      }
      // the settings a selection of this node's was decided under go with it
      if (type === T.selection) ops.push({ type: 'del', key: address, sublevel: this.#decisions }, { type: 'del', key: address, sublevel: this.#attemptNotes });
      // an order's run noted by the job's address (no claim taken: job-history.ts HistoryJob.ended) goes with the job
      if (type === T.job) ops.push({ type: 'del', key: address, sublevel: this.#attemptNotes });
      // a job held in the quoted order leaves it
      const q = type === T.job ? await this.#quotedPlaceOf(address) : undefined;
      if (q) {
        leaving.push(q.place);
        ops.push({ type: 'del', key: q.key, sublevel: this.#quoted }, { type: 'del', key: `a!${address}`, sublevel: this.#quoted });
      }
    }
    if (ops.length) await syncBatch(this.#db, ops);
    for (const q of leaving) this.#quotedLeft(q);
    return { removed, more, ...(last !== undefined ? { after: last } : {}) };
  }

  /**
   * A signer's jobs, newest first (by announcedAt, then address), `limit` at a time: pass the page's `next` as
   * `before` for the one after. Reads only the page.
   */
  async jobsOf(signer: string, o: { limit: number; before?: string }): Promise<JobPage> {
    const lo = `a!${signer}!`;
    const jobs: Array<Opened<Job>> = [];
    let last: string | undefined;
    let more = false;
    for await (const key of this.#jobIndex.keys({ gt: lo, lt: o.before !== undefined ? `${lo}${o.before}` : `${lo}\xff`, reverse: true })) {
      if (jobs.length >= o.limit) {
        more = true;
        break;
      }
      const j = await this.get(key.slice(key.lastIndexOf('!') + 1), T.job);
      if (!j) continue;
      jobs.push(j);
      last = key.slice(lo.length);
    }
    return { jobs, ...(more && last !== undefined ? { next: last } : {}) };
  }

  /** The selections held for a job, by decision time. */
  async selectionsOf(job: string): Promise<Array<Opened<Selection>>> {
    const out: Array<Opened<Selection>> = [];
    for await (const key of this.#jobIndex.keys({ gt: `s!${job}!`, lt: `s!${job}!\xff` })) {
      const sel = await this.get(key.slice(key.lastIndexOf('!') + 1), T.selection);
      if (sel) out.push(sel);
    }
    return out.sort((a, b) => a.record.decidedAt - b.record.decidedAt);
  }

  /** A signer's jobs whose deadline is after `now` (what it may still hear offers and outcomes for). */
  async liveJobsOf(signer: string, now: number): Promise<Array<Opened<Job>>> {
    const out: Array<Opened<Job>> = [];
    for await (const key of this.#jobIndex.keys({ gt: `d!${signer}!${ts(now)}\xff`, lt: `d!${signer}!\xff` })) {
      const j = await this.get(key.slice(key.lastIndexOf('!') + 1), T.job);
      if (j) out.push(j);
    }
    return out;
  }

  async get<K extends string>(address: string, type: K): Promise<Opened<K extends keyof RecordTypes ? RecordTypes[K] : unknown> | undefined> {
    const bytes = await this.#records.get(address);
    if (!bytes) return undefined;
    try {
      return open(bytes, type, { trusted: true }) as never;
    } catch {
      return undefined;
    }
  }

  async getBytes(address: string): Promise<Uint8Array | undefined> {
    return (await this.#records.get(address)) ?? undefined;
  }

  /** Every stored record of a type, in address order. */
  async list<K extends string>(type: K, limit = Infinity): Promise<Array<Opened<K extends keyof RecordTypes ? RecordTypes[K] : unknown>>> {
    const out = [];
    for await (const key of this.#byType.keys({ gt: `${type}!`, lt: `${type}!\xff` })) {
      const r = await this.get(key.slice(type.length + 1), type);
      if (r) out.push(r);
      if (out.length >= limit) break;
    }
    return out as never;
  }

  /** Each provider's current advert, in DID order (expired ones included; callers check freshness). */
  adverts(): Array<Opened<Advert>> {
    return [...this.#advertCache.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, v]) => v);
  }

  advertOf(did: string): Opened<Advert> | undefined {
    return this.#advertCache.get(did);
  }
}
