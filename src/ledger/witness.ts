/**
 * A witness (pool/1 §6.7, beyond the minimum: the C2SP tlog-witness model).
 *
 * Per steward it keeps the last head it cosigned (length, head address and the
 * head entry itself). It cosigns a new head only when the steward supplies the
 * entries that extend that head, each verifying under the steward's key and
 * chaining by seq and prev; never a shorter or forked history. A conflicting
 * request is refused with the head it holds (WITNESS_CONFLICT, detail.held),
 * so an honest steward can resend from there. When a request carries a
 * steward-signed entry at the held head's seq with different content, the two
 * entries are kept as equivocation evidence (verifiable from the two records
 * alone, see verifyEquivocation). So is a fork that begins right after the
 * held head: the witness cosigned length n with head h, and is shown an entry
 * at seq n (the first after its head, whether the run starts there or passes
 * through h) whose prev is not h — the steward signed h at seq n−1 and also a
 * history in which seq n−1 is another entry (form `successor`,
 * verifySuccessorFork). Likewise two consecutive entries in a request at seq k
 * and k + 1 where the second does not link to the first (form `successor`);
 * any other break in a request's chain (two entries at one seq, a gap) is only
 * refused (WITNESS_BROKEN_LINK). Evidence is refused with WITNESS_EQUIVOCATION
 * and kept before the refusal is returned.
 *
 * Evidence is kept only about a steward this witness holds a head for
 * (cosigned at least once) or was named to witness (`stewards`): anyone can
 * make a key and sign two entries that do not link, so evidence about any
 * other key is refused (WITNESS_BROKEN_LINK in a request; `keep` returns
 * undefined) and nothing is written. What is kept is thus bounded by the
 * stewards held and named, MAX_EVIDENCE_PER_STEWARD each, and never evicted.
 * State is written in one synced batch before the receipt is returned. A
 * witness whose key is the steward's is refused.
 *
 * One state per store: every Witness over one database (one per overlay the
 * node witnesses on) reads and writes the same `witness-heads`, and their
 * requests run one at a time over that database (not per instance), so two
 * overlays' catch-ups for one steward cannot both cosign from the same held
 * head: the second sees what the first cosigned and a fork of it is refused
 * and kept as evidence.
 *
 * The receipt for the held head is written in that same batch, so a receipt the
 * overlay never got (the witness killed before it was published, or a publish
 * that reached nobody) can be given again (`receipt`) with the same bytes.
 *
 * LevelDB layout (sublevels of the node's database):
 *   `witness-heads`     key = steward DID → canonical CBOR {length, head (32 bytes), entry (envelope), receipt? (the
 *                       pool-witness/1 envelope for that head; absent when written by a build before it was kept)}
 *   `witness-evidence`  key = `<steward DID>/<seq, 16 digits>/<address of b>` → canonical CBOR {a, b, form?, record?}
 *                       (form absent: a and b at one seq; `successor`: b at a's seq + 1, not linking to a; record:
 *                       the pool-evidence/1 envelope this witness sealed for the pair when it kept it, published
 *                       again as the same bytes; absent when kept by an earlier build: one is sealed when read)
 */
import { availableParallelism } from 'node:os';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { C0Error } from '../errors.js';
import { open, seal, type Opened } from '../records/envelope.js';
import { didFromPublicKey } from '../records/did.js';
import type { Signer } from '../records/ed25519.js';
import { compareBytes, decodeCanonical, encodeCanonical } from '../records/cbor.js';
import { addressToBytes, bytesToAddress, hashHex } from '../records/address.js';
import { sub, type Db, type Sub } from '../store/db.js';
import { systemClock, type Clock } from '../util/clock.js';
import type { Logger } from '../util/log.js';
import { GENESIS, POOL_TYPE, WITNESS_TYPE, type LedgerEntry, type WitnessReceipt } from './entry.js';
import { verifyEvidence, type Equivocation, type EquivocationForm } from './attest.js';
import { EVIDENCE_TYPE, type EquivocationEvidence } from './evidence.js';
import { seqKey, type Head } from './store.js';
import { firstRefusedEntry } from './replay.js';

export const WITNESS_ERR = {
  IS_STEWARD: 'WITNESS_IS_STEWARD',
  EMPTY: 'WITNESS_EMPTY_REQUEST',
  BAD_ENTRY: 'WITNESS_BAD_ENTRY',
  BROKEN_LINK: 'WITNESS_BROKEN_LINK',
  CONFLICT: 'WITNESS_CONFLICT',
  EQUIVOCATION: 'WITNESS_EQUIVOCATION',
  TOO_MANY: 'WITNESS_REQUEST_TOO_LARGE',
} as const;

export const MAX_COSIGN_ENTRIES = 100_000;
/** From this many entries on, a run's signatures are verified in worker threads; below it here, yielding as it goes. */
export const PARALLEL_FROM = 2_000;
/** Worker threads one cosign verifies in: one core is left to the daemon (its network, API and other roles). */
const VERIFY_WORKERS = Math.max(1, Math.min(4, availableParallelism() - 1));
/** The cheap pass (decoding and chaining, no signature: about 25 µs an entry) yields to the event loop this often. */
const CHEAP_YIELD_EVERY = 500;
/** Evidence pairs kept per steward: one proves the equivocation; the bound stops a key that equivocates on purpose. */
export const MAX_EVIDENCE_PER_STEWARD = 16;

/** Per database (openDb shares one handle per path in a process): the tail of the requests run over its witness state. */
const tails = new WeakMap<Db, Promise<unknown>>();

/**
 * Evidence verdicts held per database: the content address of a stored evidence value → what verifying it found.
 * `evidence()` (read by GET /v1/witness on every poll) verifies each stored pair once, when this process stores it or
 * first reads it back, not on every read: a value changed on disk has another address, so it is verified again. At
 * most VERDICTS_HELD (oldest dropped: it is only verified again when next read).
 */
const verdicts = new WeakMap<Db, Map<string, { steward: string; seq: number }>>();
const VERDICTS_HELD = 65_536;

/** A pair kept, with the pool-evidence/1 record this witness signed for it (what it publishes and hands out). */
export type KeptEvidence = Equivocation & { record: Uint8Array };

interface HeldState {
  length: number;
  head: string;
  entry?: Uint8Array;
  receipt?: Uint8Array;
}

export class Witness {
  readonly did: string;
  readonly #signer: Signer;
  readonly #db: Db;
  readonly #heads: Sub;
  readonly #evidence: Sub;
  readonly #now: Clock;
  readonly #log: Logger | undefined;
  readonly #named: ReadonlySet<string>;

  /** `stewards`: those this witness is named to witness: evidence about them is kept before any head is held. */
  constructor(db: Db, signer: Signer, opts: { now?: Clock; logger?: Logger; stewards?: readonly string[] } = {}) {
    this.#db = db;
    this.#signer = signer;
    this.did = didFromPublicKey(signer.publicKey);
    this.#heads = sub(db, 'witness-heads');
    this.#evidence = sub(db, 'witness-evidence');
    this.#now = opts.now ?? systemClock;
    this.#log = opts.logger;
    this.#named = new Set(opts.stewards ?? []);
  }

  /** The head this witness last cosigned for `steward` (length 0 and GENESIS when none). */
  async held(steward: string): Promise<Head> {
    const h = await this.#held(steward);
    return { length: h.length, head: h.head };
  }

  async #held(steward: string): Promise<HeldState> {
    const b = await this.#heads.get(steward);
    if (b === undefined) return { length: 0, head: GENESIS };
    const m = decodeCanonical(b) as { length: number; head: Uint8Array; entry: Uint8Array; receipt?: Uint8Array };
    return { length: m.length, head: bytesToAddress(m.head), entry: m.entry, ...(m.receipt ? { receipt: m.receipt } : {}) };
  }

  /**
   * The pool-witness/1 receipt for the head held for `steward` (the bytes first published for it), or undefined when
   * nothing is held. A head written by a build that did not keep its receipt gets one sealed now, kept from then on.
   */
  receipt(steward: string): Promise<Opened<WitnessReceipt> | undefined> {
    return this.#serial(async () => {
      const h = await this.#held(steward);
      if (h.length === 0 || !h.entry) return undefined;
      if (h.receipt) return open(h.receipt, WITNESS_TYPE, { trusted: true }) as Opened<WitnessReceipt>;
      const sealed = seal(WITNESS_TYPE, { steward, length: h.length, head: h.head, witnessedAt: this.#now() } as never, this.#signer) as Opened<WitnessReceipt>;
      await this.#db.batch([{ type: 'put', sublevel: this.#heads, key: steward, value: encodeCanonical({ length: h.length, head: addressToBytes(h.head), entry: h.entry, receipt: sealed.bytes }) }] as never, { sync: true });
      return sealed;
    });
  }

  /**
   * All equivocation evidence held for `steward`, each pair verified (a pair that does not verify throws): a stored
   * value is verified once in this process, when stored or first read back (the store is a directory on disk that
   * could be changed under it), and its verdict kept by its content address (see `verdicts`).
   */
  async evidence(steward: string): Promise<KeptEvidence[]> {
    const out: KeptEvidence[] = [];
    const unsealed: number[] = [];
    const keys: string[] = [];
    for await (const [k, v] of this.#evidence.iterator({ gte: `${steward}/`, lt: `${steward}0` })) {
      const m = decodeCanonical(v) as { a: Uint8Array; b: Uint8Array; form?: EquivocationForm; record?: Uint8Array };
      const key = hashHex(v);
      let r = this.#verdicts.get(key);
      if (r === undefined) {
        const checked = verifyEvidence(m.a, m.b, m.form);
        r = { steward: checked.steward, seq: checked.seq };
        this.#noteVerdict(key, r);
      }
      const ev = { steward: r.steward, seq: r.seq, a: m.a, b: m.b, ...(m.form ? { form: m.form } : {}) };
      if (!m.record) unsealed.push(out.length);
      keys.push(k);
      out.push({ ...ev, record: m.record ?? new Uint8Array() });
    }
    // a pair kept by a build that kept no record with it: sealed once and kept, so it is the same record from then on
    for (const i of unsealed) out[i]!.record = await this.#sealKept(keys[i]!, out[i]!);
    return out;
  }

  /** The record kept with the pair at `key` (a previous build's pair has none: one is sealed now and written back). */
  #sealKept(key: string, ev: Equivocation): Promise<Uint8Array> {
    return this.#serial(async () => {
      const cur = await this.#evidence.get(key);
      if (cur === undefined) return this.#sealEvidence(ev);
      const m = decodeCanonical(cur) as { a: Uint8Array; b: Uint8Array; form?: EquivocationForm; record?: Uint8Array };
      if (m.record) return m.record; // sealed meanwhile (another read)
      const record = this.#sealEvidence(ev);
      const value = encodeCanonical({ a: m.a, b: m.b, ...(m.form ? { form: m.form } : {}), record });
      await this.#db.batch([{ type: 'put', sublevel: this.#evidence, key, value }] as never, { sync: true });
      this.#noteVerdict(hashHex(value), { steward: ev.steward, seq: ev.seq });
      return record;
    });
  }

  /** Each steward with evidence kept, and how many pairs (one scan of the keys, nothing verified); at most `limit` stewards. */
  async evidenceCounts(limit = Infinity): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    for await (const k of this.#evidence.keys()) {
      const steward = k.slice(0, k.indexOf('/'));
      if (!out.has(steward) && out.size >= limit) break;
      out.set(steward, (out.get(steward) ?? 0) + 1);
    }
    return out;
  }

  /** The heads held, each steward's (at most `limit`), in key order. */
  async heads(limit = Infinity): Promise<Array<{ steward: string } & Head>> {
    const out: Array<{ steward: string } & Head> = [];
    for await (const [k, v] of this.#heads.iterator({ limit: Number.isFinite(limit) ? limit : -1 })) {
      const m = decodeCanonical(v) as { length: number; head: Uint8Array };
      out.push({ steward: k, length: m.length, head: bytesToAddress(m.head) });
    }
    return out;
  }

  /** The pool-evidence/1 record for a pair, signed by this witness (observedAt: now). */
  #sealEvidence(ev: Equivocation): Uint8Array {
    const rec: EquivocationEvidence = { steward: ev.steward, seq: ev.seq, held: ev.a, conflicting: ev.b, observedAt: this.#now(), ...(ev.form === 'successor' ? { form: 'successor' as const } : {}) };
    return seal(EVIDENCE_TYPE, rec as never, this.#signer).bytes;
  }

  get #verdicts(): Map<string, { steward: string; seq: number }> {
    let m = verdicts.get(this.#db);
    if (!m) verdicts.set(this.#db, (m = new Map()));
    return m;
  }

  #noteVerdict(key: string, r: { steward: string; seq: number }): void {
    const m = this.#verdicts;
    m.set(key, r);
    if (m.size > VERDICTS_HELD) m.delete(m.keys().next().value!);
  }

  /**
   * Cosign the head reached by `entries`: a contiguous run of the steward's
   * entries that extends (or, starting earlier, passes through) the held head.
   * Serialised: one request at a time over the database, whichever Witness
   * instance (overlay) it comes through.
   */
  cosign(steward: string, entries: readonly Uint8Array[]): Promise<Opened<WitnessReceipt>> {
    return this.#serial(() => this.#cosign(steward, entries));
  }

  /** Run `fn` after every request already queued on this database's witness state. */
  #serial<T>(fn: () => Promise<T>): Promise<T> {
    const p = (tails.get(this.#db) ?? Promise.resolve()).then(fn, fn);
    tails.set(this.#db, p.catch(() => undefined));
    return p;
  }

  async #cosign(steward: string, entries: readonly Uint8Array[]): Promise<Opened<WitnessReceipt>> {
    if (steward === this.did) throw new C0Error(WITNESS_ERR.IS_STEWARD, 'steward: this witness holds the steward’s own key; a self-countersignature establishes nothing', { field: 'steward' });
    if (entries.length === 0) throw new C0Error(WITNESS_ERR.EMPTY, 'entries: a cosign request must carry the entries that extend the held head', { field: 'entries' });
    if (entries.length > MAX_COSIGN_ENTRIES) throw new C0Error(WITNESS_ERR.TOO_MANY, `entries: more than ${MAX_COSIGN_ENTRIES}`, { field: 'entries' });
    const held = await this.#held(steward);
    const heldOut = { length: held.length, head: held.head };
    const badEntry = (i: number, code: string, message: string): C0Error =>
      new C0Error(WITNESS_ERR.BAD_ENTRY, `entries[${i}]: ${code}: ${message}`, { field: `entries[${i}]`, detail: { reason: code, held: heldOut } });
    /** Entry i's signature, before it is kept as evidence (the run's signatures are checked only once it is to be cosigned). */
    const verified = (...is: number[]): void => {
      for (const i of is) {
        try {
          open(entries[i]!, POOL_TYPE);
        } catch (e) {
          if (!(e instanceof C0Error)) throw e;
          throw badEntry(i, e.code, e.message);
        }
      }
    };
    // 1. the cheap checks first, no signature yet (any key can sign a long run once and serve it to every witness,
    //    again and again): every entry decodes as a canonical pool/1 entry whose header names the steward, and the
    //    run chains. A run refused here costs no signature check. Yields to the event loop as it goes.
    const recs: Array<{ rec: LedgerEntry; address: string; bytes: Uint8Array }> = [];
    for (let i = 0; i < entries.length; i++) {
      if (i > 0 && i % CHEAP_YIELD_EVERY === 0) await yieldToLoop();
      let o;
      try {
        o = open(entries[i]!, POOL_TYPE, { trusted: true });
      } catch (e) {
        if (!(e instanceof C0Error)) throw e;
        throw badEntry(i, e.code, e.message);
      }
      if (o.signer !== steward) throw new C0Error(WITNESS_ERR.BAD_ENTRY, `entries[${i}]: sealed by ${o.signer}, not by ${steward}`, { field: `entries[${i}]`, detail: { reason: 'LEDGER_WRONG_STEWARD', held: heldOut } });
      const rec = o.record as LedgerEntry;
      const prevRec = recs[i - 1];
      if (prevRec && rec.seq === prevRec.rec.seq + 1 && rec.prev !== prevRec.address && (held.length > 0 || this.#named.has(steward))) {
        // two steward-signed entries that no single history holds: a fork right after entries[i-1]
        // (about a key neither held nor named, only refused below: anyone can make one)
        verified(i - 1, i);
        await this.#keep(steward, { a: prevRec.bytes, b: entries[i]!, form: 'successor' }, heldOut);
      }
      if (prevRec && (rec.seq !== prevRec.rec.seq + 1 || rec.prev !== prevRec.address)) {
        throw new C0Error(WITNESS_ERR.BROKEN_LINK, `entries[${i}]: does not follow entries[${i - 1}]`, { field: `entries[${i}]`, detail: { held: heldOut } });
      }
      if (i === 0 && rec.seq === 0 && rec.prev !== GENESIS) throw new C0Error(WITNESS_ERR.BROKEN_LINK, 'entries[0]: seq 0 must follow the genesis sentinel', { field: 'entries[0]', detail: { held: heldOut } });
      recs.push({ rec, address: o.address, bytes: entries[i]! });
    }
    const first = recs[0]!;
    const last = recs[recs.length - 1]!;
    const newLength = last.rec.seq + 1;
    // 2. relate the run to the held head
    if (held.length > 0) {
      const atHead = recs.findIndex((r) => r.rec.seq === held.length - 1);
      if (atHead >= 0 && held.entry && compareBytes(recs[atHead]!.bytes, held.entry) !== 0) {
        // two steward-signed entries at one seq with different content: keep the evidence
        verified(atHead);
        await this.#keep(steward, { a: held.entry, b: recs[atHead]!.bytes }, heldOut);
      }
      if (atHead < 0 && held.entry && first.rec.seq === held.length && first.rec.prev !== held.head) {
        // a fork beginning right after the held head: the entry at seq n does not link to h
        verified(0);
        await this.#keep(steward, { a: held.entry, b: first.bytes, form: 'successor' }, heldOut);
      }
      if (atHead < 0) {
        // the run must start right after the held head, linking to it
        if (first.rec.seq !== held.length || first.rec.prev !== held.head) {
          throw new C0Error(WITNESS_ERR.CONFLICT, `the request (seq ${first.rec.seq}..${last.rec.seq}) does not extend the held head at length ${held.length}`, { detail: { held: heldOut } });
        }
      }
    } else if (first.rec.seq !== 0) {
      throw new C0Error(WITNESS_ERR.CONFLICT, `nothing cosigned yet for this steward: the request must start at seq 0, got ${first.rec.seq}`, { detail: { held: heldOut } });
    }
    if (newLength < held.length) {
      throw new C0Error(WITNESS_ERR.CONFLICT, `the request ends at length ${newLength}, shorter than the held length ${held.length}`, { detail: { held: heldOut } });
    }
    // 3. every signature (with the canonical and shape checks again), off the event loop: a long run in worker
    //    threads, a short one here with yields (replay.ts firstRefusedEntry)
    const refused = await firstRefusedEntry(entries, { workers: VERIFY_WORKERS, minEntries: PARALLEL_FROM });
    if (refused) throw badEntry(refused.index, refused.code, refused.message);
    // 4. state first, atomically and durably; then the answer
    const receipt: WitnessReceipt = { steward, length: newLength, head: last.address, witnessedAt: this.#now() };
    const sealed = seal(WITNESS_TYPE, receipt as never, this.#signer) as Opened<WitnessReceipt>;
    await this.#db.batch([{ type: 'put', sublevel: this.#heads, key: steward, value: encodeCanonical({ length: newLength, head: addressToBytes(last.address), entry: last.bytes, receipt: sealed.bytes }) }] as never, { sync: true });
    this.#log?.info({ steward, length: newLength, head: last.address }, 'witness: cosigned');
    return sealed;
  }

  /**
   * A head the steward announced (its signed entry, heard on pool-head)
   * checked against the held head, before anything is fetched: at the held
   * head's seq with other content, or at the next seq not linking to it, it
   * is kept as evidence and returned (nothing is cosigned). Otherwise
   * undefined. An entry that does not verify as the steward's is ignored.
   */
  observeHead(steward: string, bytes: Uint8Array): Promise<KeptEvidence | undefined> {
    return this.#serial(() => this.#observeHead(steward, bytes));
  }

  async #observeHead(steward: string, bytes: Uint8Array): Promise<KeptEvidence | undefined> {
    let o;
    try {
      o = open(bytes, POOL_TYPE);
    } catch (e) {
      if (e instanceof C0Error) return undefined;
      throw e;
    }
    if (o.signer !== steward || steward === this.did) return undefined;
    const held = await this.#held(steward);
    if (held.length === 0 || !held.entry) return undefined;
    const rec = o.record as LedgerEntry;
    if (rec.seq === held.length - 1 && compareBytes(bytes, held.entry) !== 0) return this.#store(steward, held.entry, bytes);
    if (rec.seq === held.length && rec.prev !== held.head) return this.#store(steward, held.entry, bytes, 'successor');
    return undefined;
  }

  /**
   * Verify and keep (synced) evidence that the steward signed two entries no single history holds. One pair proves
   * it; a steward that keeps equivocating gets at most MAX_EVIDENCE_PER_STEWARD kept (the rest is still returned).
   * Undefined, nothing written, for a steward this witness neither holds a head for nor is named to witness.
   */
  keep(steward: string, a: Uint8Array, b: Uint8Array, form?: EquivocationForm): Promise<KeptEvidence | undefined> {
    return this.#serial(async () => {
      if (this.#named.has(steward) || (await this.#heads.get(steward)) !== undefined) return this.#store(steward, a, b, form);
      const v = this.#verify(steward, a, b, form);
      this.#log?.debug({ steward, seq: v.seq }, 'witness: evidence about a steward neither held nor named is not kept');
      return undefined;
    });
  }

  #verify(steward: string, a: Uint8Array, b: Uint8Array, form?: EquivocationForm): ReturnType<typeof verifyEvidence> {
    const v = verifyEvidence(a, b, form);
    if (v.steward !== steward) throw new C0Error(WITNESS_ERR.BAD_ENTRY, `the evidence is signed by ${v.steward}, not by ${steward}`, { field: 'steward' });
    return v;
  }

  async #store(steward: string, a: Uint8Array, b: Uint8Array, form?: EquivocationForm): Promise<KeptEvidence> {
    const v = this.#verify(steward, a, b, form);
    const record = this.#sealEvidence({ steward, seq: v.seq, a, b, ...(form ? { form } : {}) });
    const ev = { a, b, ...(form ? { form } : {}), record };
    let kept = 0;
    for await (const _ of this.#evidence.keys({ gte: `${steward}/`, lt: `${steward}0`, limit: MAX_EVIDENCE_PER_STEWARD })) kept++;
    if (kept < MAX_EVIDENCE_PER_STEWARD) {
      const value = encodeCanonical(ev);
      await this.#db.batch([{ type: 'put', sublevel: this.#evidence, key: `${steward}/${seqKey(v.seq)}/${v.addresses[1]}`, value }] as never, { sync: true });
      // verified just above: reading it back (GET /v1/witness) need not verify it again
      this.#noteVerdict(hashHex(value), { steward: v.steward, seq: v.seq });
      this.#log?.warn({ steward, seq: v.seq, form: form ?? 'same-seq' }, 'witness: equivocation evidence kept');
    }
    return { steward, seq: v.seq, a, b, ...(form ? { form } : {}), record };
  }

  /** The stewards this witness holds a head for (at most `limit`). */
  async stewards(limit = Infinity): Promise<string[]> {
    const out: string[] = [];
    for await (const k of this.#heads.keys({ limit: Number.isFinite(limit) ? limit : -1 })) out.push(k);
    return out;
  }

  /** Keep evidence (verified first), synced, then refuse with WITNESS_EQUIVOCATION carrying it. */
  async #keep(steward: string, ev: { a: Uint8Array; b: Uint8Array; form?: EquivocationForm }, held: { length: number; head: string }): Promise<never> {
    const v = await this.#store(steward, ev.a, ev.b, ev.form);
    const what = ev.form === 'successor' ? `an entry at seq ${v.seq + 1} that does not follow its entry at seq ${v.seq}` : `two different entries at seq ${v.seq}`;
    throw new C0Error(WITNESS_ERR.EQUIVOCATION, `the steward signed ${what}`, { detail: { held, seq: v.seq, evidence: { ...ev, record: v.record }, ...(ev.form ? { form: ev.form } : {}) } });
  }
}
