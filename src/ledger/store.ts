/**
 * The steward's ledger on LevelDB (pool/1 §6.1–§6.5).
 *
 * Layout of a ledger directory (its own LevelDB, e.g. `<data-dir>/ledger`):
 *   sublevel `entries`  key = seq as 16 decimal digits → the pool/1 envelope bytes
 *   sublevel `meta`     key `head` → canonical CBOR {length, head (32 bytes), steward}
 *   sublevel `receipts` key = content address of the receipt → pool-witness/1 envelope,
 *                       the newest (longest) of each witness only: a longer receipt covers every
 *                       shorter one of the same witness (its head commits to the whole prefix); without
 *                       a witness list, of the first `maxWitnesses` witness keys only
 *
 * One writer: appends are serialised in-process, and LevelDB's lock keeps any
 * other process out. The entry and the head move in one synced batch; an
 * append resolves only after that batch is on disk. Opening replays and
 * verifies everything before the ledger is usable.
 *
 * In memory an open ledger keeps its head (length and last address) and the
 * usage book (src/pool/usage.ts), nothing per entry: an older entry's address
 * is read from `entries` when asked (addressAt; a witness receipt's check).
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { C0Error } from '../errors.js';
import { openDb, closeDb, sub, onReopen, STORE_REOPEN_REFUSED, type Db, type Sub } from '../store/db.js';
import { open, seal } from '../records/envelope.js';
import { didFromPublicKey } from '../records/did.js';
import type { Signer } from '../records/ed25519.js';
import { encodeCanonical } from '../records/cbor.js';
import { addressToBytes, hashHex } from '../records/address.js';
import { systemClock, type Clock } from '../util/clock.js';
import type { Logger } from '../util/log.js';
import type { UsageBook, PoolEvent, UsageDelta } from '../pool/usage.js';
import { GENESIS, POOL_TYPE, entryFor, type LedgerEntry } from './entry.js';
import { decodeHeadRecord, readHeadRecord, type HeadRecord } from './head-record.js';
import { replay, replayParallel, type ReplayResult } from './replay.js';
import { compareDids } from '../records/did.js';
import { checkReceipt, checkNamedStoredReceipt, gradeStoredAttestation, type Attestation, type LedgerView, type ReceiptStatus, type StoredLedgerView } from './attest.js';

export const LEDGER_ERR = {
  READ_ONLY: 'LEDGER_READ_ONLY',
  CORRUPT: 'LEDGER_CORRUPT',
  HEAD_MISMATCH: 'LEDGER_HEAD_MISMATCH',
  WRONG_STEWARD: 'LEDGER_WRONG_STEWARD',
  RANGE: 'LEDGER_BAD_RANGE',
  RECEIPT: 'LEDGER_RECEIPT_REFUSED',
  NOT_EMPTY: 'LEDGER_NOT_EMPTY',
  CLOSED: 'LEDGER_CLOSED',
  NOT_FOUND: 'LEDGER_NOT_FOUND',
  IMPORT_NOT_EMPTY: 'LEDGER_IMPORT_NOT_EMPTY',
} as const;

export const seqKey = (n: number): string => String(n).padStart(16, '0');

/** Something that checks and applies events beside the ledger (a UsageBook, or a PoolState over the same book). */
export interface EventSink {
  check?(ev: PoolEvent): void;
  apply(ev: PoolEvent): UsageDelta;
}

export interface AppendOptions {
  /**
   * Run right before the entry is sealed, after every append queued before this one has been applied to the book
   * (and so against the book this entry lands on); throwing refuses the append, nothing written, and the caller gets
   * that error. The steward re-checks an `Admitted` decision here (src/roles/steward-reclaim.ts appendAdmitted): a
   * `Released` queued ahead of it may have moved the entitlement's usage since it was decided.
   */
  precondition?: () => void;
}

export interface LedgerOptions {
  /** the steward's key; without it the ledger is read-only */
  signer?: Signer;
  /** the steward the ledger must belong to (default: the signer's DID, else entry 0's signer) */
  steward?: string;
  now?: Clock;
  logger?: Logger;
  /**
   * The witnesses whose receipts this ledger takes and counts (DIDs; attest.ts). Absent: any key's. A receipt an
   * earlier run stored from a key not named now stays on disk and is reported `not-named`.
   */
  witnesses?: readonly string[];
  /**
   * Without `witnesses`: the receipts of at most this many witness keys are held (default 64), the first heard; a
   * valid receipt from a further key is not stored (anyone can make a key, and sign the head the steward publishes).
   * A directory holding more keeps, at open, the keys with the longest receipts (then in DID order).
   */
  maxWitnesses?: number;
  /**
   * A live ledger's record that it was created (the steward's: <data-dir>/steward/<overlay>/ledger.created; openDb's
   * createdMark): while it is there, a ledger directory that is empty or missing (moved aside, a volume not mounted)
   * is refused STORE_MISSING, not begun anew at length 0. Ledger directories given to `ledger import`/`verify` have none.
   */
  createdMark?: string;
  /** Called before a new ledger is begun (openDb's beforeCreate): it may refuse by throwing, and nothing is made. */
  beforeCreate?: () => void | Promise<void>;
}

/** Default `LedgerOptions.maxWitnesses`: witness keys whose receipts a ledger without a witness list holds. */
export const DEFAULT_LEDGER_MAX_WITNESSES = 64;

export interface Head {
  length: number;
  head: string;
}

export interface RawLedger {
  entries: Uint8Array[];
  receipts: Uint8Array[];
  meta?: HeadRecord;
  /** A directory whose head record (`meta/head`) is there but unreadable: why (`meta` is then absent). */
  metaUnreadable?: string;
  /**
   * The head record's bytes as stored (a directory, or a file exported from one: src/ledger/file.ts carries them), so
   * an export of a directory that does not verify keeps the head that proves what was lost. Absent: none stored.
   */
  metaRecord?: Uint8Array;
}

async function readAll(s: Sub): Promise<Uint8Array[]> {
  const out: Uint8Array[] = [];
  for await (const v of s.values()) out.push(v);
  return out;
}

/** The head record read (undefined when there is none), checked (head-record.ts: unreadable is LEDGER_HEAD_MISMATCH). */
function decodeMeta(b: Uint8Array | undefined): RawLedger['meta'] {
  return b === undefined ? undefined : decodeHeadRecord(b);
}

const LEDGER_SUBLEVELS = ['entries', 'meta', 'receipts'] as const;

/**
 * The names of up to 4 sublevels (or `a key outside any sublevel`) that a ledger's database does not have: one key
 * looked up in each gap between the ledger's own key ranges, so a long ledger's entries are not read for it.
 */
async function otherSublevels(db: Db): Promise<string[]> {
  // a sublevel `name` holds the keys from `!name!` up to (not including) `!name"`, '"' being the code point after '!'
  const bounds = LEDGER_SUBLEVELS.map((n) => [`!${n}!`, `!${n}"`] as const);
  const gaps: Array<{ gte?: string; lt?: string }> = [{ lt: bounds[0]![0] }];
  for (let i = 0; i < bounds.length; i++) gaps.push({ gte: bounds[i]![1], ...(i + 1 < bounds.length ? { lt: bounds[i + 1]![0] } : {}) });
  const found = new Set<string>();
  for (const range of gaps) {
    for await (const k of db.keys({ ...range, limit: 4 })) {
      const m = /^!([^!]*)!/.exec(k);
      found.add(m ? m[1]! : 'a key outside any sublevel');
    }
  }
  return [...found].slice(0, 4);
}

/** The signer an entry's envelope names (nothing verified), or nothing when it cannot be read as a pool/1 entry. */
function signerOf(entry: Uint8Array): { steward?: string } {
  try {
    return { steward: open(entry, POOL_TYPE, { trusted: true }).signer };
  } catch (e) {
    if (e instanceof C0Error) return {};
    throw e;
  }
}

/**
 * Whose ledger a directory holds and how long, from its stored head alone (no entry verified, none read but the first
 * when the head names no steward: a directory written by `ledger import`); undefined when it holds no database. A
 * head that cannot be read leaves `length` out. Database tables without the CURRENT file that names them are
 * STORE_CORRUPT (a damaged ledger is not "no ledger"); a database another process holds is STORE_LOCKED.
 */
export async function ledgerOwner(dir: string): Promise<{ steward?: string; length?: number } | undefined> {
  if (!existsSync(join(dir, 'CURRENT'))) {
    let files: string[];
    try {
      files = readdirSync(dir);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
      // not readable (EACCES, EIO): whose ledger it holds is unknown, not "none"
      throw new C0Error('STORE_OPEN_FAILED', `cannot read ${dir}: ${(e as Error).message}`);
    }
    if (files.some((f) => /^\d+\.(ldb|sst|log)$/.test(f))) throw new C0Error('STORE_CORRUPT', `${dir} holds database tables but no CURRENT file naming them: whose ledger it is cannot be read`);
    return undefined;
  }
  const db = await openDb(dir);
  try {
    const stored = await sub(db, 'meta').get('head');
    const read = stored === undefined ? undefined : readHeadRecord(stored);
    const length = read === undefined ? { length: 0 } : 'meta' in read ? { length: read.meta.length } : {};
    if (read && 'meta' in read && read.meta.steward !== undefined) return { steward: read.meta.steward, ...length };
    for await (const first of sub(db, 'entries').values({ limit: 1 })) return { ...signerOf(first), ...length };
    return length;
  } finally {
    await closeDb(db);
  }
}

/** Read a ledger directory's raw contents without verifying anything (for `ledger verify`); a node's database is refused. */
export async function readLedgerDir(dir: string): Promise<RawLedger> {
  // never create a database where none is: reading is not writing
  if (!existsSync(join(dir, 'CURRENT'))) {
    // a node's data directory given for its steward's ledger: say where the ledgers are kept in it
    const node = existsSync(join(dir, 'identity.key')) || existsSync(join(dir, 'config.yaml'));
    throw new C0Error(LEDGER_ERR.NOT_FOUND, `${dir} is not a ledger directory (no LevelDB database there)${node ? `; it looks like a node's data directory: a steward's ledger is ${join(dir, 'steward', '<overlay>', 'ledger')}` : ''}`);
  }
  const db = await openDb(dir);
  try {
    // A node's own database (`<data-dir>/db`) holds no ledger entries either, and read as a ledger it was an empty one
    // that verifies (`ledger verify` exit 0, `problem none`): the wrong directory given reads as a good answer. A
    // ledger's database holds its three sublevels and nothing else; an empty one (a steward's before its first
    // admission) is still a ledger, of length 0.
    const other = await otherSublevels(db);
    if (other.length) {
      throw new C0Error(LEDGER_ERR.NOT_FOUND, `${dir} is not a ledger directory: its database holds other data (${other.join(', ')}), as a node's own database does; a steward's ledger is <data-dir>/steward/<overlay>/ledger`, {
        detail: { other },
      });
    }
    const entries = await readAll(sub(db, 'entries'));
    const receipts = await readAll(sub(db, 'receipts'));
    // a missing head reads as the empty ledger's, exactly as Ledger.open reads it; an unreadable one is reported
    // (verifyLedger: LEDGER_HEAD_MISMATCH) with the entries still read, to be verified and exported
    const stored = await sub(db, 'meta').get('head');
    if (stored === undefined) return { entries, receipts, meta: { length: 0, head: GENESIS } };
    return { entries, receipts, ...readHeadRecord(stored), metaRecord: stored };
  } finally {
    await closeDb(db);
  }
}

export class Ledger {
  readonly dir: string;
  readonly steward: string | undefined;
  readonly #db: Db;
  readonly #entries: Sub;
  readonly #meta: Sub;
  readonly #receipts: Sub;
  readonly #signer: Signer | undefined;
  readonly #now: Clock;
  readonly #log: Logger | undefined;
  #length: number;
  #head: string;
  readonly book: UsageBook;
  #sink: EventSink;
  #tail: Promise<unknown> = Promise.resolve();
  #receiptTail: Promise<unknown> = Promise.resolve();
  /** each witness's receipt held: the longest it signed */
  readonly #witnessed = new Map<string, { length: number; key: string }>();
  readonly #named: ReadonlySet<string> | undefined;
  readonly #maxWitnesses: number;
  #closed = false;
  /** set when the store's reopen found another head on disk than the one in memory: nothing more is written */
  #failed: C0Error | undefined;
  #unhook: () => void = () => {};

  private constructor(dir: string, db: Db, r: ReplayResult & { book: UsageBook }, steward: string | undefined, opts: LedgerOptions) {
    this.dir = dir;
    this.#db = db;
    this.#entries = sub(db, 'entries');
    this.#meta = sub(db, 'meta');
    this.#receipts = sub(db, 'receipts');
    this.#signer = opts.signer;
    this.#now = opts.now ?? systemClock;
    this.#log = opts.logger;
    this.#named = opts.witnesses === undefined ? undefined : new Set(opts.witnesses);
    this.#maxWitnesses = opts.maxWitnesses ?? DEFAULT_LEDGER_MAX_WITNESSES;
    this.#length = r.length;
    this.#head = r.head;
    this.book = r.book;
    this.#sink = r.book;
    this.steward = steward;
  }

  /** Open (creating if absent) the ledger at `dir`: replays and verifies every entry first. */
  static async open(dir: string, opts: LedgerOptions = {}): Promise<Ledger> {
    const signerDid = opts.signer ? didFromPublicKey(opts.signer.publicKey) : undefined;
    if (opts.steward !== undefined && signerDid !== undefined && opts.steward !== signerDid) {
      throw new C0Error(LEDGER_ERR.WRONG_STEWARD, 'steward: the signer is not the named steward', { field: 'steward' });
    }
    const expected = opts.steward ?? signerDid;
    const db = await openDb(dir, { ...(opts.createdMark === undefined ? {} : { createdMark: opts.createdMark }), ...(opts.beforeCreate ? { beforeCreate: opts.beforeCreate } : {}) });
    try {
      const entries = await readAll(sub(db, 'entries'));
      const metaBytes = await sub(db, 'meta').get('head');
      const r = await replayParallel(entries, expected === undefined ? {} : { steward: expected });
      if (!r.ok) {
        const p = r.problem!;
        throw new C0Error(p.code === 'LEDGER_WRONG_STEWARD' && p.index === 0 ? LEDGER_ERR.WRONG_STEWARD : LEDGER_ERR.CORRUPT, `ledger at ${dir} refused at entry ${p.index}: ${p.code}: ${p.message}`, { detail: { ...p } });
      }
      let meta: RawLedger['meta'];
      try {
        meta = decodeMeta(metaBytes);
      } catch (e) {
        if (!(e instanceof C0Error)) throw e;
        // Nothing is rewritten: an unreadable head cannot show that no entry after it was lost. The entries verify;
        // `ledger export` and `ledger import` into a new directory rebuild the head from them (docs/pool.md).
        throw new C0Error(LEDGER_ERR.HEAD_MISMATCH, `ledger at ${dir}: ${e.message}; its entries verify (${r.length}, ${r.head}); nothing was changed`, { detail: { ...e.detail, entries: { length: r.length, head: r.head } } });
      }
      const metaLen = meta?.length ?? 0;
      const metaHead = meta?.head ?? GENESIS;
      if (metaLen !== r.length || metaHead !== r.head) {
        throw new C0Error(LEDGER_ERR.HEAD_MISMATCH, `ledger at ${dir}: stored head (${metaLen}, ${metaHead}) does not match its entries (${r.length}, ${r.head})`);
      }
      const l = new Ledger(dir, db, r as ReplayResult & { book: UsageBook }, expected ?? r.steward, opts);
      l.#unhook = onReopen(db, () => l.#afterReopen());
      // the replay's addresses are at hand: the receipts held are checked against them, not read back one by one
      await l.#keepNewestReceipts({ ...(l.steward === undefined ? {} : { steward: l.steward }), addresses: r.addresses });
      opts.logger?.info({ dir, length: r.length, head: r.head }, 'ledger replayed');
      return l;
    } catch (e) {
      await closeDb(db);
      throw e;
    }
  }

  get length(): number {
    return this.#length;
  }

  head(): Head {
    return { length: this.#length, head: this.#head };
  }

  /**
   * Content address of the entry at `seq` (undefined unless 0 ≤ seq < length): the head's from memory, an older
   * one's read from the store (the SHA-256 of its envelope, as replay computed it when the ledger was opened).
   */
  async addressAt(seq: number): Promise<string | undefined> {
    if (this.#closed) throw new C0Error(LEDGER_ERR.CLOSED, 'the ledger is closed');
    if (!Number.isSafeInteger(seq) || seq < 0 || seq >= this.#length) return undefined;
    if (seq === this.#length - 1) return this.#head;
    const bytes = await this.#entries.get(seqKey(seq));
    // an entry below the head is on disk for as long as the ledger is open (appends only; one writer)
    if (bytes === undefined) throw new C0Error(LEDGER_ERR.CORRUPT, `ledger at ${this.dir}: entry ${seq} is missing from the store`, { detail: { seq } });
    return hashHex(bytes);
  }

  /** Route applied events through `sink` (e.g. a PoolState built over `ledger.book`). */
  attach(sink: EventSink): void {
    this.#sink = sink;
  }

  /**
   * Append an event. Checked against the derived state first (an inconsistent
   * event is refused and nothing is written), then against `opts.precondition`
   * if given; resolves only after the entry and the new head are on disk in one
   * synced batch.
   */
  append(ev: PoolEvent, opts: AppendOptions = {}): Promise<{ seq: number; address: string; bytes: Uint8Array }> {
    const run = async () => {
      if (this.#closed) throw new C0Error(LEDGER_ERR.CLOSED, 'the ledger is closed');
      if (this.#failed) throw this.#failed;
      if (!this.#signer || this.steward === undefined) throw new C0Error(LEDGER_ERR.READ_ONLY, 'this ledger was opened without the steward key');
      if (this.#sink.check) this.#sink.check(ev);
      else this.book.check(ev);
      opts.precondition?.();
      const { length: seq, head: prev } = this.head();
      const env = seal(POOL_TYPE, entryFor(ev, seq, prev, this.steward, this.#now()), this.#signer);
      const meta = encodeCanonical({ length: seq + 1, head: addressToBytes(env.address), steward: this.steward });
      await this.#db.batch(
        [
          { type: 'put', sublevel: this.#entries, key: seqKey(seq), value: env.bytes },
          { type: 'put', sublevel: this.#meta, key: 'head', value: meta },
        ] as never,
        { sync: true },
      );
      this.#length = seq + 1;
      this.#head = env.address;
      this.#sink.apply(ev);
      this.#log?.debug({ seq, address: env.address, event: ev.event, claim: ev.claim }, 'ledger append');
      return { seq, address: env.address, bytes: env.bytes };
    };
    const p = this.#tail.then(run, run);
    this.#tail = p.catch(() => undefined);
    return p;
  }

  /**
   * The database was reopened after a failed write (store/db.ts): the head on disk must be the one in memory. A
   * failed append whose entry reached the disk anyway (a sync that failed after the write) would make them differ:
   * the ledger then takes no more appends and the node stops, for the restart to replay the entries on disk.
   */
  async #afterReopen(): Promise<void> {
    const disk = decodeMeta(await this.#meta.get('head')) ?? { length: 0, head: GENESIS };
    const mem = this.head();
    if (disk.length === mem.length && disk.head === mem.head) return;
    this.#failed = new C0Error(STORE_REOPEN_REFUSED, `ledger at ${this.dir}: after the store was reopened its head on disk (${disk.length}, ${disk.head}) is not the one in memory (${mem.length}, ${mem.head}); restart the node to replay it`, { detail: { disk, memory: mem } });
    this.#log?.error({ dir: this.dir, disk, memory: mem }, 'ledger: the head on disk changed across the store reopen');
    throw this.#failed;
  }

  /** Entries with from ≤ seq < to (for `/c0mpute/ledger/1` range requests). */
  async entries(from = 0, to = this.length): Promise<Uint8Array[]> {
    if (!Number.isSafeInteger(from) || !Number.isSafeInteger(to) || from < 0 || to < from) throw new C0Error(LEDGER_ERR.RANGE, `range: expected 0 ≤ from ≤ to, got ${from}..${to}`, { field: 'from' });
    const end = Math.min(to, this.length);
    if (from >= end) return [];
    const out: Uint8Array[] = [];
    for await (const v of this.#entries.values({ gte: seqKey(from), lt: seqKey(end) })) out.push(v);
    return out;
  }

  /** What a witness receipt is checked against: this steward, its length, and its entries' addresses read from the store. */
  #view(): StoredLedgerView {
    return { ...(this.steward === undefined ? {} : { steward: this.steward }), length: this.#length, addressAt: (seq) => this.addressAt(seq) };
  }

  /** Decoded entries (for display). */
  async records(from = 0, to = this.length): Promise<LedgerEntry[]> {
    return (await this.entries(from, to)).map((b) => open(b, POOL_TYPE, { trusted: true }).record as LedgerEntry);
  }

  /**
   * Hold only each witness's longest receipt (a ledger directory from before this rule kept every receipt: a
   * witness cosigns every head, so that was one per entry and witness, for ever). Each is checked as addReceipt
   * checks it (an imported directory's receipts were stored as given): only a valid receipt, covering this ledger's
   * own head at its length, is superseded by a longer valid one of its witness; any other is kept as it is, for
   * attestation() to report (evidence is never dropped).
   */
  async #keepNewestReceipts(view: LedgerView): Promise<void> {
    let drop: string[] = [];
    let dropped = 0;
    const flush = async () => {
      dropped += drop.length;
      await this.#db.batch(drop.map((k) => ({ type: 'del', sublevel: this.#receipts, key: k })) as never, { sync: true });
      drop = [];
    };
    for await (const [key, bytes] of this.#receipts.iterator()) {
      const s = checkReceipt(view, bytes);
      if (s.status !== 'valid') continue;
      const best = this.#witnessed.get(s.witness);
      if (best && best.length >= s.length) drop.push(key);
      else {
        if (best) drop.push(best.key);
        this.#witnessed.set(s.witness, { length: s.length, key });
      }
      if (drop.length >= 2000) await flush();
    }
    // without a witness list, only so many keys' receipts: the longest coverage first, then DID order (a directory
    // from before the bound, or a bound lowered)
    if (!this.#named && this.#witnessed.size > this.#maxWitnesses) {
      const ranked = [...this.#witnessed].sort(([a, x], [b, y]) => y.length - x.length || compareDids(a, b));
      for (const [w, { key }] of ranked.slice(this.#maxWitnesses)) {
        drop.push(key);
        this.#witnessed.delete(w);
      }
    }
    if (drop.length) await flush();
    if (dropped) this.#log?.info({ dir: this.dir, dropped, witnesses: this.#witnessed.size }, 'ledger: kept only the newest witness receipt of each witness');
  }

  /**
   * Check a witness receipt against this ledger and hold it if it is the longest its witness signed (it then
   * replaces the witness's shorter one; a receipt no longer than the one held adds nothing and is not stored).
   * A refused receipt (not valid, or from a key not among `witnesses` when they are named) is not stored. `stored` says
   * whether this one is now held.
   */
  addReceipt(bytes: Uint8Array): Promise<Extract<ReceiptStatus, { status: 'valid' }> & { stored: boolean }> {
    const run = async () => {
      const s = await checkNamedStoredReceipt(this.#view(), bytes, this.#named);
      if (s.status !== 'valid') throw new C0Error(LEDGER_ERR.RECEIPT, `witness receipt refused: ${s.status}${'code' in s ? ` ${s.code}` : ''}`, { detail: { status: s.status } });
      if (this.#closed) throw new C0Error(LEDGER_ERR.CLOSED, 'the ledger is closed');
      const best = this.#witnessed.get(s.witness);
      if (best && best.length >= s.length) return { ...s, stored: false };
      // no witness list: the first keys heard keep their place (with a list, its keys are the bound)
      if (!best && !this.#named && this.#witnessed.size >= this.#maxWitnesses) return { ...s, stored: false };
      const key = hashHex(bytes);
      await this.#db.batch(
        [{ type: 'put', sublevel: this.#receipts, key, value: bytes }, ...(best ? [{ type: 'del', sublevel: this.#receipts, key: best.key }] : [])] as never,
        { sync: true },
      );
      this.#witnessed.set(s.witness, { length: s.length, key });
      return { ...s, stored: true };
    };
    // one at a time: two receipts of one witness must not both replace the same shorter one
    const p = this.#receiptTail.then(run, run);
    this.#receiptTail = p.catch(() => undefined);
    return p;
  }

  /** The receipts held: each witness's longest valid one, and any an imported directory held that is not valid. */
  async receipts(): Promise<Uint8Array[]> {
    return readAll(this.#receipts);
  }

  async attestation(): Promise<Attestation> {
    return gradeStoredAttestation(this.#view(), await this.receipts(), this.#named ? { witnesses: this.#named } : {});
  }

  /** Wait for pending appends, then close the database. */
  async close(): Promise<void> {
    if (this.#closed) return;
    await this.#tail;
    await this.#receiptTail;
    this.#closed = true;
    this.#unhook();
    await closeDb(this.#db);
  }
}

/**
 * An import's target is a missing directory (openDb makes it) or an empty one: LEDGER_IMPORT_NOT_EMPTY otherwise, with
 * nothing opened. The check after opening (a stored head: LEDGER_NOT_EMPTY) was the only one, and it let an import
 * write a foreign ledger's entries into a node's own database (`<data-dir>/db`, whose `meta`/`entries` sublevels no
 * ledger had used yet), or LevelDB's files into the data directory itself. A path that cannot be read is left to
 * openDb, which says why (STORE_OPEN_FAILED).
 */
export function assertImportTarget(dir: string): void {
  let names: string[];
  try {
    if (!statSync(dir).isDirectory()) throw new C0Error(LEDGER_ERR.IMPORT_NOT_EMPTY, `${dir} is a file, not a directory: ledger import writes into a new or empty directory; name one`, { field: 'dir' });
    names = readdirSync(dir);
  } catch (e) {
    if (e instanceof C0Error) throw e;
    return;
  }
  if (names.length === 0) return;
  const shown = names.slice(0, 4).join(', ') + (names.length > 4 ? ', …' : '');
  throw new C0Error(LEDGER_ERR.IMPORT_NOT_EMPTY, `${dir} is not empty (it holds ${shown}); nothing was written: ledger import writes into a new or empty directory, never beside other files (a node's database, a data directory); name one`, {
    field: 'dir',
  });
}

/** Write verified entries and receipts into a new or empty ledger directory (import; assertImportTarget). */
export async function writeLedgerDir(dir: string, raw: RawLedger): Promise<ReplayResult> {
  assertImportTarget(dir);
  const r = replay(raw.entries);
  if (!r.ok) {
    const p = r.problem!;
    throw new C0Error(LEDGER_ERR.CORRUPT, `refusing to import: entry ${p.index}: ${p.code}: ${p.message}`, { detail: { ...p } });
  }
  const db = await openDb(dir);
  try {
    const entries = sub(db, 'entries');
    const meta = sub(db, 'meta');
    const receipts = sub(db, 'receipts');
    // filled between the check above and the open (another process)
    if ((await meta.get('head')) !== undefined) throw new C0Error(LEDGER_ERR.NOT_EMPTY, `${dir} already holds a ledger`);
    const ops: unknown[] = raw.entries.map((b, i) => ({ type: 'put', sublevel: entries, key: seqKey(i), value: b }));
    // every receipt is kept as given (a mismatching one is evidence); `verify` grades them
    for (const b of raw.receipts) ops.push({ type: 'put', sublevel: receipts, key: hashHex(b), value: b });
    ops.push({ type: 'put', sublevel: meta, key: 'head', value: encodeCanonical({ length: r.length, head: addressToBytes(r.head), ...(r.steward === undefined ? {} : { steward: r.steward }) }) });
    await db.batch(ops as never, { sync: true });
    return r;
  } finally {
    await closeDb(db);
  }
}
