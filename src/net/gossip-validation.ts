/**
 * Validation of records arriving from peers, before anything is forwarded or
 * delivered (DESIGN §3.4). Cheapest check first:
 *
 *   size bound → seen (bounded LRU of message ids and record addresses) →
 *   per-peer rate limit (gossip) → decode (framing, envelope header) →
 *   content type matches the topic → shape (payload canonical, schema, kind
 *   rules) → freshness (clock-skew window, injected clock) → per-signer and
 *   new-advertiser limits (per peer, then all peers together for gossip),
 *   reserved (flood-limits.ts) → signature (a cheap
 *   verify first for a key not checked yet; on the process's worker threads
 *   when there are any, verify-pool.ts, else inline; the reservations are kept
 *   when it verifies, refunded when not) → seen again (the same record may have
 *   been accepted during the await) → semantic checks (built-in advert
 *   staleness, then the hook the roles supply per kind, record-hooks.ts) →
 *   seen and staleness once more at accept (a hook may await too).
 *
 * Checks throw coded errors; `verdictOf` is the ONE adapter mapping an error to
 * a verdict (reject: the sender's gossipsub score drops; ignore: no penalty),
 * and `RecordPipeline.validate` is the one place that counts and logs them.
 * The same pipeline serves gossip and sync, so no unverified record enters.
 */
import { C0Error, isC0Error } from '../errors.js';
import { hashHex } from '../records/address.js';
import { isKnownType, open, peekType, type Opened } from '../records/envelope.js';
import { didFromPeerId } from '../node/peer-id.js';
import { checkFresh, DEFAULT_SKEW_MS } from '../records/freshness.js';
import type { Advert } from '../records/kinds.js';
import { monotonicClock, systemClock, type Clock } from '../util/clock.js';
import type { Logger } from '../util/log.js';
import { isStoreFailure } from '../util/store-damage.js';
import { PeerLog } from '../util/peer-log.js';
import { decodeMessage } from './framing.js';
import type { NetMetrics } from './metrics.js';
import { FloodGuard, RATE_LIMITED, type FloodLimitOptions } from './flood-limits.js';
import { ATTACHABLE, expectedType, kindForType, type TopicKind } from './topics.js';
import { VERIFY_ERR, verifyOne, type SignatureVerifier, type VerifyFailure } from './verify-pool.js';
import { MAX_ENVELOPE_BYTES } from '../records/envelope.js';

export type Verdict = 'accept' | 'ignore' | 'reject';
/** Where a record came from: gossip, a sync answer, or a direct stream to this node (offer/1, src/net/offer-route.ts). */
export type RecordSourceKind = 'gossip' | 'sync' | 'direct';

export const VAL_ERR = {
  TOO_LARGE: 'MESSAGE_TOO_LARGE',
  DUPLICATE: 'DUPLICATE',
  QUEUE_FULL: 'QUEUE_FULL',
  NOT_REGISTERED: 'KIND_NOT_REGISTERED',
  BAD_ATTACHMENT: 'MESSAGE_BAD_ATTACHMENT',
  ADVERT_STALE: 'ADVERT_STALE',
  INTERNAL: 'INTERNAL',
  RATE_LIMITED,
  VERIFY_WORKER_FAILED: VERIFY_ERR.WORKER_FAILED,
} as const;

/** A coded error that says which verdict it earns. Roles throw these from hooks. */
export class ValidationError extends C0Error {
  readonly verdict: 'ignore' | 'reject';
  constructor(verdict: 'ignore' | 'reject', code: string, message: string, opts: { field?: string; detail?: Record<string, unknown> } = {}) {
    super(code, message, opts);
    this.name = 'ValidationError';
    this.verdict = verdict;
  }
}

/** For hooks: the record may be fine, we just will not take it (no penalty). */
export function ignoreError(code: string, message: string, field?: string): ValidationError {
  return new ValidationError('ignore', code, message, field === undefined ? {} : { field });
}
/**
 * For hooks: the record is provably invalid (the sender's score drops). Remembered by the message's bytes (refused
 * on every route after), so only for what the records themselves prove, never for where, when or from whom they came.
 */
export function rejectError(code: string, message: string, field?: string): ValidationError {
  return new ValidationError('reject', code, message, field === undefined ? {} : { field });
}

/** Codes from the checks themselves that earn ignore; every other coded error earns reject. */
const IGNORE_CODES = new Set<string>(['RECORD_EXPIRED', 'RECORD_FROM_FUTURE', 'JOB_DEADLINE_TOO_FAR', VAL_ERR.DUPLICATE, VAL_ERR.QUEUE_FULL, VAL_ERR.NOT_REGISTERED, VAL_ERR.ADVERT_STALE, VAL_ERR.RATE_LIMITED, VAL_ERR.VERIFY_WORKER_FAILED]);

/**
 * Rejects not remembered as seen. The seen LRU is keyed by the message bytes (for one envelope, the record's own
 * address), so a verdict goes in it only when the bytes alone earn it, wherever they come from: malformed, not
 * canonical, bad shape, bad signature, a bad attachment, a hook's reject (hooks reject only what the records prove).
 * RECORD_WRONG_TYPE is the topic's (or the route's, or the sync request's) kind against the record's: remembered, a
 * genuine record sent first on another kind's topic would have every later copy of it refused on its own
 * (PREVIOUSLY_REJECTED). It is found from the header alone, before any signature work, so it costs little to find
 * again. The ignores (expired, from the future, rate-limited…) are never remembered.
 */
const CONTEXT_REJECTS = new Set<string>(['RECORD_WRONG_TYPE']);

/** THE adapter: error → verdict and reason. */
export function verdictOf(err: unknown): { verdict: 'ignore' | 'reject'; reason: string } {
  if (err instanceof ValidationError) return { verdict: err.verdict, reason: err.code };
  // this node's own store failing, reopening or closed (STORE_*) is never the record's fault: not rejected, not
  // remembered, not charged to the peer (review s42 R2)
  if (isC0Error(err)) return { verdict: IGNORE_CODES.has(err.code) || isStoreFailure(err) ? 'ignore' : 'reject', reason: err.code };
  return { verdict: 'ignore', reason: VAL_ERR.INTERNAL };
}

export interface HookContext {
  kind: TopicKind;
  source: RecordSourceKind;
  /** PeerId (string) of the peer the record came from (for gossip: the propagation source). */
  from: string;
  /** Records that travelled with this one (already checked), e.g. the advert an offer cites. */
  attachments: Opened[];
  now: number;
}

/**
 * A semantic check the roles supply per kind. Throw `ignoreError`/`rejectError`;
 * any other C0Error counts as ignore (a gap in local knowledge is not the
 * sender's fault), any other exception as ignore with reason INTERNAL (logged).
 */
export type SemanticHook = (rec: Opened, ctx: HookContext) => void | Promise<void>;

/** A bounded map in insertion order (oldest evicted first). */
export class Lru<K, V> {
  readonly #max: number;
  readonly #m = new Map<K, V>();
  constructor(max: number) {
    this.#max = Math.max(1, max);
  }
  get(k: K): V | undefined {
    return this.#m.get(k);
  }
  has(k: K): boolean {
    return this.#m.has(k);
  }
  delete(k: K): void {
    this.#m.delete(k);
  }
  set(k: K, v: V): void {
    this.#m.delete(k);
    this.#m.set(k, v);
    if (this.#m.size > this.#max) {
      const first = this.#m.keys().next();
      if (!first.done) this.#m.delete(first.value);
    }
  }
  get size(): number {
    return this.#m.size;
  }
}

export interface PipelineOptions {
  /** Injected wall clock, for freshness (default: system clock). */
  clock?: Clock;
  /** Injected monotonic clock, for the flood limits' buckets and abuse decay (default: performance.now; util/clock.ts). */
  monoClock?: Clock;
  /** Clock-skew window for records issued in the future, ms (default 30 000, records/freshness). */
  skewMs?: number;
  /** Bound on one gossip message (envelope or framed array), bytes (default MAX_ENVELOPE_BYTES × 2 = 128 KiB). */
  maxMessageBytes?: number;
  /** Entries in the seen LRU (message ids and record addresses; default 65 536). */
  seenSize?: number;
  /** Validations in flight before new messages are ignored and counted as dropped (default 1 024). */
  maxInFlight?: number;
  /** Semantic hooks per kind. */
  hooks?: Partial<Record<TopicKind, SemanticHook>>;
  /** Flood limits (per peer, per signer, new advertisers; defaults in flood-limits.ts FLOOD_DEFAULTS). */
  floodLimits?: Partial<FloodLimitOptions>;
  /** Where signatures are checked (createNetwork: the process's worker pool, verify-pool.ts). Default: inline, on this thread. */
  verifier?: SignatureVerifier;
  /**
   * A message ignored for its primary record's dates or an attachment's (RECORD_FROM_FUTURE, RECORD_EXPIRED), from any
   * source (`from`: the peer it came from). Called on the validation path: it must be cheap; what it throws is logged.
   */
  onDateDropped?: (kind: TopicKind, data: Uint8Array, from: string, code: 'RECORD_FROM_FUTURE' | 'RECORD_EXPIRED', source: RecordSourceKind) => void;
  metrics: NetMetrics;
  log: Logger;
}

export const PIPELINE_DEFAULTS = {
  skewMs: DEFAULT_SKEW_MS,
  maxMessageBytes: MAX_ENVELOPE_BYTES * 2,
  seenSize: 65_536,
  maxInFlight: 1_024,
} as const;

export interface ValidationOutcome {
  verdict: Verdict;
  reason: string;
  /** The accepted records new to this node, primary first (empty unless accept). */
  fresh: Array<{ kind: TopicKind; rec: Opened; knownAdvertiser?: boolean }>;
  /** The primary record (when accepted). */
  primary?: Opened;
  attachments?: Opened[];
}

export class RecordPipeline {
  readonly #clock: Clock;
  readonly #skewMs: number;
  readonly #maxBytes: number;
  readonly #maxInFlight: number;
  readonly #hooks = new Map<TopicKind, SemanticHook>();
  /** message id / record address → verdict it earned (accept, or a reject the bytes earn: CONTEXT_REJECTS; ignores may change). */
  readonly #seen: Lru<string, 'accept' | 'reject'>;
  /** advert signer → highest seq accepted. */
  readonly #advertSeq: Lru<string, number>;
  readonly #m: NetMetrics;
  readonly #log: Logger;
  /** The new-advertiser limit's turn-aways, at info, summarised (#turnedAway). */
  readonly #limitLog: PeerLog;
  readonly #verifier: SignatureVerifier | undefined;
  readonly #onDateDropped: PipelineOptions['onDateDropped'];
  #inFlight = 0;
  /** The flood limits (the network's abuse policy reads its per-peer abuse scores). */
  readonly guard: FloodGuard;

  constructor(opts: PipelineOptions) {
    this.#clock = opts.clock ?? systemClock;
    this.#skewMs = opts.skewMs ?? PIPELINE_DEFAULTS.skewMs;
    this.#maxBytes = opts.maxMessageBytes ?? PIPELINE_DEFAULTS.maxMessageBytes;
    this.#maxInFlight = opts.maxInFlight ?? PIPELINE_DEFAULTS.maxInFlight;
    const seenSize = opts.seenSize ?? PIPELINE_DEFAULTS.seenSize;
    this.#seen = new Lru(seenSize);
    this.#advertSeq = new Lru(seenSize);
    this.#m = opts.metrics;
    this.#log = opts.log;
    this.#limitLog = new PeerLog({ log: opts.log, level: 'info', ...(opts.monoClock ? { clock: opts.monoClock } : {}) });
    this.#verifier = opts.verifier;
    this.#onDateDropped = opts.onDateDropped;
    for (const [k, h] of Object.entries(opts.hooks ?? {})) if (h) this.#hooks.set(k as TopicKind, h);
    this.guard = new FloodGuard(opts.floodLimits ?? {}, opts.monoClock ?? monotonicClock, opts.metrics.registry);
    opts.metrics.queueSources.set('validation', () => this.#inFlight);
  }

  get maxMessageBytes(): number {
    return this.#maxBytes;
  }

  setHook(kind: TopicKind, hook: SemanticHook | undefined): void {
    if (hook) this.#hooks.set(kind, hook);
    else this.#hooks.delete(kind);
  }

  /** Has this record (by address) been accepted here? */
  known(address: string): boolean {
    return this.#seen.get(address) === 'accept';
  }

  /**
   * Forget that the message `data` (primary record `address`) was accepted: a record that came directly and that
   * this node did not keep (its delivery was dropped, or a handler failed: offer-route.ts `*_NOT_KEPT`), so that a
   * copy sent again is validated and delivered afresh instead of answered as a duplicate. Records that travelled
   * with it stay accepted (an advert's seq is held: taking it again would be stale).
   */
  forget(data: Uint8Array, address: string): void {
    for (const id of new Set([hashHex(data), address])) if (this.#seen.get(id) === 'accept') this.#seen.delete(id);
  }

  /**
   * An advert from a key not seen before turned away by a new-advertiser limit (docs/network.md §10): said at info, the
   * first in full and then at most one summary line a minute with the count (PeerLog by code: a flood of fresh keys
   * writes one line a minute), since the market then lacks the provider until its advert is heard again (QA qaWit F4:
   * 148 of 400 dropped, said only in /metrics). `market` and the console show the count since start.
   */
  #turnedAway(from: string, limiter: 'new-advertiser' | 'new-advertiser-total'): void {
    this.#limitLog.warn(undefined, 'NET_NEW_ADVERTISER_LIMIT', 'adverts from new advertisers turned away by the new-advertiser rate limit: the market lacks those providers until their adverts are heard again', { peer: from, limiter, turnedAway: this.guard.advertsTurnedAway });
  }

  /** Mark a record as accepted without validation (our own publications); whether it was not accepted here before. */
  markOwn(kind: TopicKind, rec: Opened, messageId?: string): boolean {
    const fresh = this.#seen.get(rec.address) !== 'accept';
    this.#seen.set(rec.address, 'accept');
    if (messageId) this.#seen.set(messageId, 'accept');
    if (kind === 'advert') this.#noteAdvert(rec);
    return fresh;
  }

  /**
   * Validate one message (gossip) or one record (sync) of `kind`. Never throws:
   * counts, logs and returns the verdict. Accepted records new to this node are
   * marked seen here, so each is returned in `fresh` exactly once. `history`: a record this node asked a peer for as
   * history (an outcome catch-up, records-sync.ts), not held to its signer's live rate: a catch-up brings up to an
   * hour of a signer's outcomes at once (a busy buyer's 150 acceptances), and the per-signer limit (60, then 10 a
   * second) refused all but the first ~60 from every peer asked (second-round review s42 R1 F3). What a catch-up
   * brings is bounded by the request (at most `limit` records a kind from each peer asked, once per peer in the
   * window), and a peer could bring as many records from as many fresh keys.
   */
  /** Write the rate limits' pending summary (adverts turned away since its last line) and stop its timer: at stop. */
  stopLog(): void {
    this.#limitLog.stop();
  }

  async validate(kind: TopicKind, data: Uint8Array, from: string, source: RecordSourceKind, opts: { history?: boolean } = {}): Promise<ValidationOutcome> {
    if (this.#inFlight >= this.#maxInFlight) {
      this.#m.dropped.inc({ queue: 'validation' });
      return this.#count(source, kind, from, { verdict: 'ignore', reason: VAL_ERR.QUEUE_FULL });
    }
    // one peer may hold only its share of the in-flight slots (a flood from one peer cannot starve the others)
    if (!this.guard.enter(kind, from)) {
      this.#m.dropped.inc({ queue: 'validation' });
      return this.#count(source, kind, from, { verdict: 'ignore', reason: VAL_ERR.RATE_LIMITED });
    }
    this.#inFlight++;
    try {
      const out = await this.#run(kind, data, from, source, opts.history === true);
      return this.#count(source, kind, from, out, undefined, data);
    } catch (e) {
      const v = verdictOf(e);
      if (v.reason === VAL_ERR.INTERNAL) this.#log.error({ err: e, kind, from }, 'validation failed internally');
      // only what the bytes earn wherever they come is remembered (a refusal the topic or route decides is not)
      if (v.verdict === 'reject' && !CONTEXT_REJECTS.has(v.reason)) this.#seen.set(hashHex(data), 'reject');
      return this.#count(source, kind, from, { ...v, fresh: [] }, e, data);
    } finally {
      this.guard.release(from);
      this.#inFlight--;
    }
  }

  /**
   * Check one record fetched by address (no freshness: evidence may be old; no
   * seen check; no hooks). Throws a C0Error when it fails.
   */
  checkFetched(bytes: Uint8Array, expected?: string): Opened {
    if (bytes.length > MAX_ENVELOPE_BYTES) throw new C0Error(VAL_ERR.TOO_LARGE, `record of ${bytes.length} bytes exceeds ${MAX_ENVELOPE_BYTES}`);
    const { type } = peekType(bytes);
    if (expected !== undefined && type !== expected) throw new C0Error('RECORD_WRONG_TYPE', `expected ${expected}, got ${type.slice(0, 40)}`);
    if (!isKnownType(type)) throw new C0Error(VAL_ERR.NOT_REGISTERED, `record type ${type.slice(0, 40)} is not registered here`);
    return open(bytes, type);
  }

  #count(source: RecordSourceKind, kind: TopicKind, from: string, out: ValidationOutcome | { verdict: Verdict; reason: string; fresh?: never[] }, err?: unknown, data?: Uint8Array): ValidationOutcome {
    this.#m.records.inc({ source, kind, verdict: out.verdict, reason: out.reason });
    if (data && this.#onDateDropped && out.verdict === 'ignore' && (out.reason === 'RECORD_FROM_FUTURE' || out.reason === 'RECORD_EXPIRED')) {
      try {
        this.#onDateDropped(kind, data, from, out.reason, source);
      } catch (e) {
        this.#log.warn({ kind, from, err: (e as Error).message }, 'a record dropped for its dates could not be noted');
      }
    }
    if (out.verdict === 'reject') this.#log.debug({ kind, from, source, reason: out.reason, msg2: err instanceof Error ? err.message : undefined }, 'record rejected');
    else if (out.verdict === 'ignore' && out.reason !== VAL_ERR.DUPLICATE) this.#log.trace({ kind, from, source, reason: out.reason }, 'record ignored');
    return { fresh: [], ...out } as ValidationOutcome;
  }

  async #run(kind: TopicKind, data: Uint8Array, from: string, source: RecordSourceKind, history: boolean): Promise<ValidationOutcome> {
    // 1. size
    if (data.length > this.#maxBytes) throw new C0Error(VAL_ERR.TOO_LARGE, `message of ${data.length} bytes exceeds ${this.#maxBytes}`);
    // 2. seen (message id)
    const msgId = hashHex(data);
    this.#seenCheck(msgId);
    // 2b. per-peer rate (gossip and direct: what a peer pushes; sync answers what we asked for). Blamed only for a
    // direct sender (its own records): a gossip peer passes on what it accepted from all its peers, and an honest
    // relay of a flood from many identities goes past this node's limit for it without any excess of its own
    if (source !== 'sync' && !this.guard.admitPeer(kind, from, source === 'direct')) throw rateLimited(`peer ${from.slice(0, 60)} is over its message rate`);
    // 3. decode the framing
    const framed = decodeMessage(data);
    const primaryAddr = framed.attachments.length ? hashHex(framed.primary) : msgId;
    if (framed.attachments.length) this.#seenCheck(primaryAddr);
    const now = this.#clock();
    // 4–7. type, shape, freshness, flood-limit reservations: every record of the message, on this thread
    const holds: Hold[] = [];
    const toVerify: Array<{ bytes: Uint8Array; signer: string }> = [];
    let primary: Opened;
    const attachments: Array<{ kind: TopicKind; rec: Opened; known: boolean }> = [];
    try {
      primary = this.#checkRecord(framed.primary, kind, now, from, source, primaryAddr, holds, toVerify, history);
      for (const a of framed.attachments) {
        const { type } = peekType(a);
        const ak = kindForType(type);
        if (!ak || !(ATTACHABLE[kind] ?? []).includes(ak)) throw new C0Error(VAL_ERR.BAD_ATTACHMENT, `a ${kind} message may not carry a ${type.slice(0, 40)} record`);
        const addr = hashHex(a);
        const known = this.#seen.get(addr) === 'accept';
        const rec = known ? open(a, type, { trusted: true, address: addr }) : this.#checkRecord(a, ak, now, from, source, addr, holds, toVerify, history);
        if (!citedBy(primary, addr)) throw new C0Error(VAL_ERR.BAD_ATTACHMENT, `the ${kind} does not cite the attached ${ak} ${addr}`);
        attachments.push({ kind: ak, rec, known });
      }
      // 7b. signatures: the one check the trusted opens skipped, all of the message's at once
      const failed = await this.#verifyAll(toVerify);
      if (failed) throw new C0Error(failed.code, failed.message); // VERIFY_WORKER_FAILED earns ignore (IGNORE_CODES), a refusal reject
    } catch (e) {
      // not verified: the reservations go back (a forged signer header holds a bucket only while in flight)
      for (const h of holds) this.#refund(h);
      throw e;
    }
    // after the await: the same record may have been accepted (or refused) meanwhile; then it costs its signers nothing
    try {
      this.#seenCheck(primaryAddr);
      if (msgId !== primaryAddr) this.#seenCheck(msgId);
    } catch (e) {
      for (const h of holds) this.#refund(h);
      throw e;
    }
    // 8. semantic checks: built-in staleness (a newer advert may have been accepted during the await), then the roles' hook
    if (kind === 'advert') this.#staleCheck(primary);
    // an attached advert accepted meanwhile (another offer carrying it, validated alongside) is known now, not stale
    for (const a of attachments) if (a.kind === 'advert' && !a.known && this.#seen.get(a.rec.address) !== 'accept') this.#staleCheck(a.rec);
    const hook = this.#hooks.get(kind);
    if (hook) {
      try {
        await hook(primary, { kind, source, from, attachments: attachments.map((a) => a.rec), now });
      } catch (e) {
        if (e instanceof ValidationError) throw e;
        if (isC0Error(e)) throw new ValidationError('ignore', e.code, e.message);
        throw e;
      }
    }
    // Accept. Re-check seen and staleness after the hook's await: the same record, or a newer advert, may have been accepted meanwhile.
    if (this.#seen.get(primaryAddr) === 'accept') {
      for (const h of holds) this.#refund(h);
      throw new C0Error(VAL_ERR.DUPLICATE, 'already accepted');
    }
    if (kind === 'advert') this.#staleCheck(primary);
    const fresh: Array<{ kind: TopicKind; rec: Opened; knownAdvertiser?: boolean }> = [];
    this.#seen.set(msgId, 'accept');
    if (primaryAddr !== msgId) this.#seen.set(primaryAddr, 'accept');
    // an advert whose signer had an advert accepted here before (heal.ts re-gossips only those)
    fresh.push(kind === 'advert' ? { kind, rec: primary, knownAdvertiser: this.#advertSeq.get(primary.signer) !== undefined } : { kind, rec: primary });
    if (kind === 'advert') this.#noteAdvert(primary);
    for (const a of attachments) {
      if (this.#seen.get(a.rec.address) === 'accept') continue;
      this.#seen.set(a.rec.address, 'accept');
      if (a.kind === 'advert') this.#noteAdvert(a.rec);
      fresh.push(a);
    }
    return { verdict: 'accept', reason: 'ok', fresh, primary, attachments: attachments.map((a) => a.rec) };
  }

  #seenCheck(id: string): void {
    const v = this.#seen.get(id);
    if (v === 'accept') throw new C0Error(VAL_ERR.DUPLICATE, 'already seen');
    if (v === 'reject') throw new C0Error('PREVIOUSLY_REJECTED', 'this message was rejected before');
  }

  /**
   * Type, shape, freshness and the flood-limit reservations of one record
   * (pushed to `holds`); the record's signature is left to `#verifyAll` (queued
   * in `toVerify`). Returns the shaped record, not yet verified.
   */
  #checkRecord(bytes: Uint8Array, kind: TopicKind, now: number, from: string, source: RecordSourceKind, address: string, holds: Hold[], toVerify: Array<{ bytes: Uint8Array; signer: string }>, history = false): Opened {
    const type = expectedType(kind);
    // decode the header only (cheap), then the type check against the topic
    const { type: got, signer } = peekType(bytes);
    if (got !== type) throw new C0Error('RECORD_WRONG_TYPE', `expected a ${type} record, got ${got.slice(0, 40)}`, { field: 'type' });
    if (!isKnownType(type)) throw new C0Error(VAL_ERR.NOT_REGISTERED, `record type ${type} is not registered on this node`);
    // shape: canonical payload, schema, kind rules (no signature work yet)
    const shaped = open(bytes, type, { trusted: true, deferKeyCheck: true, address });
    // freshness
    checkFresh(type, shaped.record, now, this.#skewMs);
    // flood limits, before any signature work: a token is reserved now (several records of one signer may be
    // in flight at once), kept once the signature verifies, refunded when it does not (the header's signer is
    // not authenticated yet: a forged one must not drain its bucket); history asked for is not (validate's `history`)
    if (!history) {
      if (!this.guard.reserveSigner(kind, signer)) {
        // the sender's own excess is its fault, pushed by gossip or sent directly (offer/1, outcome/1: always its own records)
        this.guard.signerHit(kind, source !== 'sync' && selfSent(from, signer) ? from : undefined);
        throw rateLimited(`signer ${signer.slice(0, 60)} is over its ${kind} rate`);
      }
      holds.push({ kind, signer });
    }
    if (kind === 'advert' && this.#advertSeq.get(signer) === undefined) {
      if (!this.guard.reserveNewAdvertiser(from, source !== 'sync')) {
        this.#turnedAway(from, 'new-advertiser');
        throw rateLimited(`peer ${from.slice(0, 60)} is over its rate of new advertisers`);
      }
      // Gossip is passed on, and each neighbour counts what this node forwards as one peer's: all peers together may
      // not bring more new advertisers than that (identities rotated from one host each come with a fresh per-peer
      // budget). Blames no one. The peer's own token stays spent, as a neighbour's count of it would.
      const total = source === 'gossip';
      if (total && !this.guard.reserveNewAdvertiserTotal()) {
        this.#turnedAway(from, 'new-advertiser-total');
        throw rateLimited('this node is over its rate of new advertisers from all peers together');
      }
      holds.push({ kind, signer, newAdvertiserOf: from, total });
    }
    toVerify.push({ bytes, signer });
    return shaped;
  }

  /** The signatures of a message's records: on the pool when there is one, else here. The first failure, or undefined. */
  async #verifyAll(items: Array<{ bytes: Uint8Array; signer: string }>): Promise<VerifyFailure | undefined> {
    if (!this.#verifier) {
      for (const it of items) {
        const f = verifyOne(it.bytes, it.signer);
        if (f) return f;
      }
      return undefined;
    }
    const v = this.#verifier;
    const results = await Promise.all(items.map((it) => v.verify(it.bytes)));
    return results.find((r): r is VerifyFailure => r !== null);
  }

  #refund(h: Hold): void {
    if (h.newAdvertiserOf !== undefined) {
      this.guard.refundNewAdvertiser(h.newAdvertiserOf);
      if (h.total) this.guard.refundNewAdvertiserTotal();
    } else this.guard.refundSigner(h.kind, h.signer);
  }

  #staleCheck(rec: Opened): void {
    const seq = (rec.record as Advert).seq;
    const held = this.#advertSeq.get(rec.signer);
    if (held !== undefined && seq <= held) throw new C0Error(VAL_ERR.ADVERT_STALE, `advert seq ${seq} is not above the held seq ${held}`, { field: 'seq' });
  }

  #noteAdvert(rec: Opened): void {
    const seq = (rec.record as Advert).seq;
    const held = this.#advertSeq.get(rec.signer);
    if (held === undefined || seq > held) this.#advertSeq.set(rec.signer, seq);
  }
}

/**
 * A flood-limit token taken before the signature check: the signer's, or (newAdvertiserOf) the peer's new-advertiser
 * one, with (total) one of the node's new-advertiser budget for all peers together.
 */
interface Hold {
  kind: TopicKind;
  signer: string;
  newAdvertiserOf?: string;
  total?: boolean;
}

function rateLimited(message: string): ValidationError {
  return new ValidationError('ignore', VAL_ERR.RATE_LIMITED, message);
}

/** Is the propagating peer the record's signer (its first hop)? Only then is the excess its own fault. */
function selfSent(from: string, signer: string): boolean {
  try {
    return didFromPeerId(from) === signer;
  } catch {
    return false;
  }
}

/** Does the primary record cite `address`? (An offer cites its advert.) */
function citedBy(primary: Opened, address: string): boolean {
  const r = primary.record as Record<string, unknown>;
  return r.advert === address;
}
