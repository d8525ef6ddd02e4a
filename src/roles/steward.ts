/**
 * The steward role: an organisation's scheduler on a private overlay (pool/1).
 * This module assembles it and keeps its public face (start, status, stop);
 * the parts live beside it: admission and the queue (steward-admission.ts),
 * the open claims' accounts and releases (steward-accounts.ts), capacity,
 * preemption and idle reclamation (steward-reclaim.ts), the ledger, withdraw
 * and managed-select handlers (steward-handlers.ts), and the ports it uses of
 * its overlay (steward-ports.ts).
 *
 * - Holds the entitlement tree (config) and a sealed, hash-chained ledger
 *   (src/ledger) from which usage is rebuilt at every start (§6.1).
 * - `/c0mpute/steward/1` `admit`: a buyer names its entitlement before its job
 *   is announced. Admit → an `Admitted` entry is appended (durably) and the
 *   buyer proceeds. Queue → the claim is written to the queue store (synced,
 *   src/roles/steward-queue.ts: a queue is not a ledger event, §6.2, so the
 *   ledger cannot rebuild it), then the buyer is told why and its claim waits
 *   on the open stream; queued claims are decided again, in arrival order,
 *   whenever capacity frees. After a restart the queue comes back with no
 *   buyer attached; a buyer re-asking with the same job keeps its place, and
 *   a claim whose buyer is away (after a restart, or its stream closed while
 *   it waited) holds the line for at most `reaskGraceMs`. `withdraw` takes a
 *   queued claim out of line, and one being decided is not left admitted.
 *   Asking again for a job already admitted answers `admitted` again (the
 *   first answer may have been lost). Deny → the buyer is told why; nothing
 *   is recorded. `admit-gang`: a training gang as one claim, its member jobs
 *   citing it (src/roles/steward-gangs.ts).
 * - Release: when a job's work ends, `Released` charges the actual energy in
 *   place of the reservation (§6.2): the sum of every receipt the job's
 *   providers signed (a failed attempt spent energy too), at the worst grade
 *   among them (a grade never improves). A completed receipt closes the claim;
 *   failures alone close it at the deadline (the buyer may still fail over).
 *   The receipts and chosen providers are kept on disk until then, so a
 *   restart loses none of them (src/roles/steward-accounts.ts); those it
 *   never heard (published while it was down, or dropped by gossip) it asks
 *   the open claims' buyers and providers for, at start and every
 *   `catchUpMs` (catchUp).
 * - Proof of admission: an `admitted` answer carries the claim's signed
 *   `Admitted` entry, which the buyer hands its provider in the exec header
 *   (it admits a single job's own claim there); `admission` {job} gives it to
 *   a provider for a job whose claim is open or that this steward bound to an
 *   open gang (the only proof a provider takes for a gang member job).
 * - Preemption: an admission within its entitlement's guarantees that needs
 *   devices the overlay's providers are using for lower-priority claims
 *   reclaims them in the §5.2 order; their providers are asked to stop over
 *   `/c0mpute/preempt/1` (answering once the work has stopped), and the stopped
 *   work ends with a signed `failed` receipt (EXEC_PREEMPTED) that releases it.
 *   A stop that got no answer (the provider not reached) leaves the claim it
 *   was for in line `DEVICES_HELD`; the line is decided again for it on a
 *   backoff and when that provider connects again (libp2p `peer:connect`),
 *   asking the same victim again.
 * - Idle reclamation (§2.7), only with a configured policy: the steward
 *   samples running claims' energy from their providers and reclaims those
 *   measured idle over the policy's window (EXEC_IDLE_RECLAIMED).
 * - Who may claim: an entitlement's `buyers` in the tree (inherited down it;
 *   src/pool/tree.ts buyersOf) are the only keys whose `admit`, `admit-gang`
 *   and managed `select` under it are taken (STEWARD_NOT_ENTITLED otherwise);
 *   one with no list on its path is open to every member (warned at start).
 * - `managed` overlays: the steward signs selections on the buyer's behalf.
 * - After each append the new head entry is published on the overlay's
 *   pool-head topic, and the current head again soon after start and every
 *   `headRepublishMs` (the overlay's resync period): gossip does not replay
 *   history, so a head published while a witness was away, or before the mesh
 *   formed, would otherwise stay unwitnessed until the next append. Witness
 *   receipts heard on pool-witness are kept.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { C0Error } from '../errors.js';
import { NET_ERR } from '../net/protocols.js';
import { LOOKUP_REFUSED_RATE, refusals } from '../net/peer-abuse.js';
import { monotonicClock } from '../util/clock.js';
import { T, type Receipt, type Selection } from '../records/kinds.js';
import { open, type Opened } from '../records/envelope.js';
import type { CborValue } from '../records/cbor.js';
import { PoolState, type Claim, type Verdict } from '../pool/admission.js';
import { treeFromYaml } from '../pool/yaml.js';
import { openEntitlements, type Tree } from '../pool/tree.js';
import { Ledger, LEDGER_ERR } from '../ledger/store.js';
import { POOL_TYPE, WITNESS_TYPE, type LedgerEntry, type WitnessReceipt } from '../ledger/entry.js';
import { evidencePairAgainst, type EquivocationEvidence } from '../ledger/evidence.js';
import { Serial } from '../util/serial.js';
import { ClaimAccounts, ClaimStore, type OpenJob } from './steward-accounts.js';
import { Reclaimer } from './steward-reclaim.js';
import { WinnerResolver } from './steward-winners.js';
import { AdmissionLine, requireEntitled, type AdmitRequest, type AskInFlight } from './steward-admission.js';
import { TRAIN_T } from '../training/record-kinds.js';
import { Gangs, type AdmitGangRequest } from './steward-gangs.js';
import { CONTRADICTING_SUB, Contradictions, MAX_CONTRADICTING } from './steward-contradictions.js';
import { reclaimed, select, serveLedgerRange, withdraw } from './steward-handlers.js';
import { CATCH_UP_PEERS, LEDGER_PROTOCOL, STEWARD_PROTOCOL, WITHDRAW_ASK_MS, stewardInboundStreams, type StewardConfig, type StewardIdentity, type StewardPorts, type StewardStream } from './steward-ports.js';
import { ledgerFigures, notInTree, warnTreeAgainstLedger } from './steward-tree-usage.js';
import type { TopicKind } from '../net/topics.js';
import { setLongInterval, setLongTimeout, type LongTimer } from '../util/timers.js';
import { evidenceHeld, knownHistory, ledgersElsewhere, refuseSecondLedger, shorterThanWitnessed, type KnownHistory } from './steward-history.js';

export { STEWARD_PROTOCOL, LEDGER_PROTOCOL, PREEMPT_PROTOCOL, MAX_LEDGER_RANGE, REASK_GRACE_MS } from './steward-ports.js';
export type { StewardConfig, StewardIdentity, StewardPorts } from './steward-ports.js';
export type { AdmitRequest } from './steward-admission.js';

export { MAX_CONTRADICTING } from './steward-contradictions.js';

/** steward/1 refusals of a lookup: the job or claim asked about is not held here for this caller (#serve). */
const LOOKUP_REFUSALS: ReadonlySet<string> = new Set(['STEWARD_NOT_ADMITTED', 'STEWARD_NOT_BUYER', 'STEWARD_JOB_UNKNOWN', 'STEWARD_GANG_UNKNOWN', 'STEWARD_ALREADY_RELEASED']);

export class Steward {
  readonly tree: Tree;
  readonly pool: PoolState;
  readonly #accounts: ClaimAccounts;
  readonly #reclaim: Reclaimer;
  readonly #line: AdmissionLine;
  readonly #gangs: Gangs;
  #stopped = false;
  #idleTimer: LongTimer | undefined;
  /** Stops hearing libp2p's `peer:connect` (#wire). */
  #offConnect: (() => void) | undefined;
  #headTimers: LongTimer[] = [];
  #catchUpTimers: LongTimer[] = [];
  /** A catch-up round is running (a round is not started over one); where the next starts among the parties. */
  #catchingUp = false;
  #catchUpFrom = 0;
  /** witnesses whose first receipt since start was logged (at info; the rest at debug) */
  #witnessesHeard = new Set<string>();
  /** The longest head each witness has sent a valid receipt for since start (bounded as #witnessesHeard): the republish stops once they all cover the head. */
  readonly #witnessed = new Map<string, number>();
  /**
   * Witnesses whose last receipt contradicted this ledger (refused: it covers more entries than the ledger has,
   * WITNESS_LENGTH_BEYOND, or another head at its length, WITNESS_HEAD_MISMATCH), the most recent MAX_CONTRADICTING,
   * kept across restarts and checked against the ledger as it is whenever status() shows them (a ledger restored from
   * an old copy, or rewritten: steward-contradictions.ts). A valid receipt from the witness covering at least that
   * length, or signed after it, clears it (#resolved).
   */
  readonly #contradicting: Contradictions;
  /**
   * Without `witnesses` named: the keys this ledger holds a valid receipt from (at start, and each stored since), the
   * only ones whose contradicting receipt is shown one by one; contradicting receipts from any other key (anyone can
   * make keys and sign a receipt of any length) are only counted (`#othersContradicting`), and never push one out.
   */
  readonly #knownWitnesses = new Set<string>();
  #othersContradicting: { receipts: number; at: number } | undefined;
  /**
   * Equivocation evidence about this steward (pool-evidence/1, each pair verified), held in the node's store at start
   * (#loadEvidence) and heard since: by the pair's two entry addresses, its seq, form and the witnesses that published
   * it, at most MAX_CONTRADICTING pairs.
   */
  readonly #evidence = new Map<string, { seq: number; form: string; witnesses: Set<string>; at: number }>();
  /** Each open claim's `Admitted` entry (envelope bytes): the proof of admission a buyer carries to its provider. */
  readonly #admittedEntries = new Map<string, Uint8Array>();
  /** A bad request a buyer of another version may send (#serve): free up to REFUSED_RATE per peer, reported past it. */
  readonly #refused: (peer: string) => void;
  /** A lookup refused (#serve: LOOKUP_REFUSALS): free up to LOOKUP_REFUSED_RATE per peer, reported past it. */
  readonly #lookupRefused: (peer: string) => void;

  private constructor(
    private o: StewardPorts,
    readonly ledger: Ledger,
    tree: Tree,
    private cfg: StewardConfig,
    private identity: StewardIdentity,
  ) {
    this.tree = tree;
    this.#refused = refusals(o.abuseReports?.report, o.monoClock ?? monotonicClock);
    this.#lookupRefused = refusals(o.abuseReports?.report, o.monoClock ?? monotonicClock, LOOKUP_REFUSED_RATE);
    this.pool = new PoolState(tree, ledger.book);
    ledger.attach(this.pool);
    this.#contradicting = new Contradictions({
      sub: o.sub(CONTRADICTING_SUB),
      ledger: () => ({ steward: identity.did, length: this.ledger.length, addressAt: (seq) => this.ledger.addressAt(seq) }),
      clock: o.clock,
      log: o.log,
      ...(cfg.witnesses ? { named: cfg.witnesses } : {}),
    });
    const stopped = () => this.#stopped;
    const append: Ledger['append'] = (ev, opts) => this.#append(ev, opts);
    // One admission section for jobs and gangs: each decision sees the book after the previous Admitted append.
    const serial = new Serial();
    const gangs = { claimOf: (j: string) => this.#gangs.claimOf(j), memberOf: (j: string) => this.#gangs.memberOf(j), signedByMember: (r: Opened<Receipt>) => this.#gangs.signedByMember(r), noteReceipt: (c: string, r: Opened<Receipt>) => this.#gangs.noteReceipt(c, r), released: (c: string) => this.#gangs.released(c) };
    const winners = new WinnerResolver({
      offer: async (a) => (await o.records.get(a, T.offer)) ?? o.market.book?.get(a),
      advert: async (a) => o.market.adverts.get?.(a) ?? (await o.records.get(a, T.advert)),
      ...(o.net.fetchRecords ? { fetch: async (from, a, type) => (await o.net.fetchRecords!(from, [a], type))[0] } : {}),
    });
    this.#accounts = new ClaimAccounts({ ledger, did: identity.did, clock: o.clock, ...(o.monoClock ? { monoClock: o.monoClock } : {}), log: o.log, stopped, append, forget: (c) => this.#reclaim.forget(c), stopAsked: (c, p) => this.#reclaim.stopAsked(c, p), restoreAsked: (c, b, d, m, again) => this.#reclaim.restoreAsked(c, b, d, m, again), reclaimedNote: (c) => this.#reclaim.reclaimedNote(c), askJobs: (p, k, j) => this.#reclaim.askJobs(p, k, j), freed: () => this.#line.retry(), gangs, winners, store: new ClaimStore(o.sub('steward-claims')) });
    // a preemption whose stop got no answer decides the line again (on a backoff, or when the provider connects again)
    const line = { waiting: () => this.#line.waiting(), retry: () => void this.#line.retry() };
    this.#reclaim = new Reclaimer({ ports: o, ledger, tree, pool: this.pool, cfg, did: identity.did, accounts: this.#accounts, stopped, line });
    this.#gangs = new Gangs({ ports: o, ledger, cfg, accounts: this.#accounts, reclaim: this.#reclaim, append, serial, line: () => this.#line.serve() });
    this.#line = new AdmissionLine({ ports: o, ledger, cfg, accounts: this.#accounts, reclaim: this.#reclaim, stopped, append, serial, gangs: this.#gangs, tree });
  }

  static async start(o: StewardPorts, dataDir: string, cfg: StewardConfig, identity: StewardIdentity): Promise<Steward> {
    let text: string;
    try {
      text = readFileSync(cfg.treeFile, 'utf8');
    } catch (e) {
      throw new C0Error('STEWARD_TREE_UNREADABLE', `cannot read the entitlement tree ${cfg.treeFile}: ${(e as Error).message}`, { field: 'steward.treeFile' });
    }
    const tree = treeFromYaml(text, cfg.treeFile);
    const dir = join(dataDir, 'steward', o.name, 'ledger');
    const createdMark = join(dataDir, 'steward', o.name, 'ledger.created');
    // A key has one ledger (pool/1 §6.5, §6.7): what this node's store knows of this key's ledger (witness receipts,
    // evidence) refuses a ledger begun anew under it, and warns of one shorter than what was cosigned
    // (steward-history.ts). The receipts are read before anything is created; the evidence only when a ledger is about
    // to be begun (openDb's beforeCreate: nothing is made when it refuses), else once, by #loadEvidence.
    const history = await knownHistory(o.records, identity.did, cfg.witnesses);
    // ...and so does a ledger of this key kept for another overlay in this data directory (the overlay renamed)
    const beforeCreate = async () =>
      refuseSecondLedger(history, await evidenceHeld(o.records, identity.did), identity.did, dir, await ledgersElsewhere(dir, identity.did));
    // openDb makes the directory the first time only: with ledger.created there, a ledger directory moved aside or not
    // mounted is STORE_MISSING, not a new chain at length 0 (docs/pool.md)
    const ledger = await Ledger.open(dir, { createdMark, beforeCreate, signer: identity.signer, now: o.clock, logger: o.log.child({ role: 'steward', overlay: o.name }), ...(cfg.witnesses ? { witnesses: cfg.witnesses } : {}), ...(cfg.maxWitnesses === undefined ? {} : { maxWitnesses: cfg.maxWitnesses }) });
    const shorter = shorterThanWitnessed(history, ledger.length);
    if (shorter) o.log.warn({ overlay: o.name, ledger: dir, ...shorter.fields }, shorter.msg);
    const s = new Steward(o, ledger, tree, cfg, identity);
    const open = openEntitlements(tree);
    if (open.length) {
      o.log.warn({ overlay: o.name, tree: cfg.treeFile, entitlements: open }, 'entitlements with no buyers list on their path: every member of the overlay may claim under them (list the DIDs allowed in the tree, docs/overlays.md "Who may claim under an entitlement")');
    }
    // an entitlement the ledger charges and the tree lacks, a guarantee below what is settled (steward-tree-usage.ts)
    warnTreeAgainstLedger(tree, ledger.book, o.log, o.name, cfg.treeFile);
    await s.#wire(history);
    return s;
  }

  get log() {
    return this.o.log;
  }

  async #wire(history: KnownHistory): Promise<void> {
    const net = this.o.net;
    // Rebuild the open claims' bookkeeping from the ledger (usage itself is in the book); a gang's from its stored record,
    // a single job's receipts and chosen providers from the claims store (a claim whose final receipt came before the
    // restart is released now).
    const gangs = await this.#gangs.restore();
    for (const c of this.ledger.book.open.values()) {
      if (gangs.has(c.claim)) continue;
      const job = await this.o.records.get(c.claim, T.job);
      this.#accounts.track(c.claim, c.entitlement, job?.signer ?? '', job?.record.deadline ?? this.o.clock());
    }
    await this.#loadAdmittedEntries();
    await this.#accounts.restore();
    await this.#line.restore();
    // the stops to reclaimed claims' failovers' providers that were waiting for their turn before the restart
    this.#reclaim.resumeStops();
    await net.handle(STEWARD_PROTOCOL, (frames, ctx) => this.#serve(frames, ctx), { deadlineMs: 24 * 3600_000, maxInboundStreams: stewardInboundStreams(this.cfg) });
    await net.handle(LEDGER_PROTOCOL, (frames, ctx) => this.#serveLedger(frames, ctx));
    // This node's own receipts and selections too (`own`: its provider's receipts, its buyer's selections, a receipt
    // its buyer passes on), through the same handlers: gossip never brings a node its own messages, and the copy
    // another node gossips is a duplicate of one this node holds (QA qaWit F1: a steward that was also a provider
    // released every claim at its deadline charging 0 µJ).
    net.subscribe('receipt', (rec) => this.#accounts.onReceipt(rec as Opened<Receipt>), { own: true });
    net.subscribe('selection', async (rec) => {
      await this.#accounts.onSelection(rec as Opened<Selection>);
      // the signer of the winning offer of a claim reclaimed already is asked to stop it, and an offer not held here is
      // fetched, in the accounts' bounded background slots, never here (a stop's answer can take a while)
      void this.#reclaim.onSelection(rec as Opened<Selection>).catch((e) => this.log.warn({ err: (e as Error).message }, 'a selection for a reclaimed claim was not handled'));
    }, { own: true });
    // A provider joining (or re-advertising) can be the capacity a queued claim waits for.
    net.subscribe('advert', () => {
      this.#reclaim.noteConnected();
      void this.#line.retry();
    });
    // A provider whose `stop` got no answer connecting again: the preemption is tried again (Reclaimer.connected).
    const p2p = net.libp2p;
    if (p2p) {
      const { onDidConnect } = await import('../node/peer-id.js');
      this.#offConnect = onDidConnect(p2p, (did) => this.#reclaim.connected(did));
    }
    // §2.7: only a configured policy samples, and only it can reclaim anything.
    if (this.cfg.idle) {
      const every = this.cfg.idle.sampleMs ?? Math.max(250, Math.floor(this.cfg.idle.windowMs / 4));
      this.#idleTimer = setLongInterval(() => void this.#reclaim.idleTick().catch((e) => this.log.warn({ err: (e as Error).message }, 'idle check failed')), every).unref();
    }
    this.#republishHeads();
    this.#catchUpRounds();
    // Evidence that this steward signed two entries no single history holds: shown by status() (anyone holding it can
    // prove it, so the ledger's attestation is worth nothing to them until the operator deals with it)
    net.subscribe('pool-evidence', (rec) => this.#heardEvidence(rec as Opened<EquivocationEvidence>));
    await this.#loadEvidence();
    if (!this.cfg.witnesses) for (const w of (await this.ledger.attestation()).witnesses) this.#knownWitnesses.add(w.witness);
    await this.#contradicting.load();
    // Receipts this node heard before it started, of witnesses that cosigned more of this key's ledger than it has now
    // (restored from an older copy, truncated: the start warning, shorterThanWitnessed), are shown by status() at once,
    // as such a receipt heard now would be; before, status said nothing until a witness sent its receipt again (QA
    // ffLedger, left open).
    for (const w of history.witnesses) {
      const bytes = history.receipts?.get(w.witness);
      // (one kept already, by a run before, stays as it was: noted again it would be re-dated at each start)
      if (w.length > this.ledger.length && bytes && !this.#contradicting.has(w.witness)) await this.#contradicted(w.witness, bytes);
    }
    net.subscribe('pool-witness', async (rec) => {
      let st: Awaited<ReturnType<Ledger['addReceipt']>>;
      try {
        st = await this.ledger.addReceipt(rec.bytes);
      } catch (e) {
        if (!(e instanceof C0Error) || e.code !== LEDGER_ERR.RECEIPT) throw e;
        // not stored: a receipt covering another head than this ledger's (a witness saw a history this steward never
        // had) is worth a look; one from a key not named is only someone else's claim
        const status = (e.detail as { status?: string } | undefined)?.status;
        this.log[status === 'mismatch' ? 'warn' : 'debug']({ witness: rec.signer, status, err: e.message }, 'witness receipt not stored');
        if (status === 'mismatch') await this.#contradicted(rec.signer, rec.bytes);
        return;
      }
      if (st.stored) this.#knownWitnesses.add(rec.signer);
      await this.#resolved(rec.signer, st.length, rec.bytes);
      // a witness cosigns every head: its first receipt since start is news, the rest are not; nor is a receipt not
      // stored because the ledger already keeps the receipts of as many keys as it keeps (anyone can make keys)
      if (!this.#witnessed.has(rec.signer) && this.#witnessed.size >= 10_000) this.#witnessed.clear();
      this.#witnessed.set(rec.signer, Math.max(this.#witnessed.get(rec.signer) ?? 0, st.length));
      const first = st.stored && !this.#witnessesHeard.has(rec.signer);
      if (first) {
        if (this.#witnessesHeard.size >= 10_000) this.#witnessesHeard.clear();
        this.#witnessesHeard.add(rec.signer);
      }
      this.log[first ? 'info' : 'debug']({ witness: rec.signer, status: st.status, length: st.length, stored: st.stored }, 'witness receipt received');
    });
  }

  /**
   * The evidence about this steward the node's store holds (the node keeps every pool-evidence/1 record about the
   * steward it names, itself included: src/store/records.ts), at most MAX_CONTRADICTING records: the evidence is a
   * lasting fact about the key, and a witness gossips what it kept again only at its own start and every hour, so
   * without this a restarted steward showed a clean attestation while its witnesses held the pair (QA qaUp F2). One
   * warning at start says how much is held.
   */
  /** The seqs the evidence held shows two entries at, the lowest 16. */
  #evidenceSeqs(): number[] {
    return [...new Set([...this.#evidence.values()].map((p) => p.seq))].sort((a, b) => a - b).slice(0, 16);
  }

  async #loadEvidence(): Promise<void> {
    const held = (await this.o.records.evidenceAbout?.(this.identity.did, MAX_CONTRADICTING)) ?? [];
    for (const rec of held) this.#heardEvidence(rec, { stored: true });
    if (!this.#evidence.size) return;
    const seqs = this.#evidenceSeqs();
    this.log.warn({ overlay: this.o.name, pairs: this.#evidence.size, seqs }, 'this node holds proof that this steward signed two entries no single history holds (equivocation evidence a witness published): its ledger is not to be trusted by anyone who has it (c0mpute steward status)');
  }

  /**
   * A pool-evidence/1 record: kept for status() when it is about this steward and its pair verifies. `stored`: read
   * back from the node's store at start (dated by the record; one warning for all of them, #loadEvidence).
   */
  #heardEvidence(rec: Opened<EquivocationEvidence>, o: { stored?: boolean } = {}): void {
    const pair = evidencePairAgainst(rec.record, this.identity.did);
    if (!pair) return;
    const known = this.#evidence.get(pair.key);
    if (known) {
      if (known.witnesses.size < MAX_CONTRADICTING) known.witnesses.add(rec.signer);
      return;
    }
    this.#evidence.set(pair.key, { seq: pair.seq, form: pair.form, witnesses: new Set([rec.signer]), at: o.stored ? rec.record.observedAt : this.o.clock() });
    if (this.#evidence.size > MAX_CONTRADICTING) this.#evidence.delete(this.#evidence.keys().next().value!);
    if (o.stored) return;
    this.log.warn({ witness: rec.signer, seq: pair.seq, form: pair.form, evidence: rec.address }, 'a witness holds proof that this steward signed two entries no single history holds: its ledger is not to be trusted by anyone who has it (c0mpute steward status)');
  }

  /**
   * A valid receipt of `witness` covering `length` (`bytes`): its contradiction shown is cleared only by one that
   * covers at least the contradicting length (this ledger grew back past it, as the witness holds it) or was signed
   * after the contradicting one (a witness whose own state went back cosigns again). Any valid receipt would not do:
   * on a ledger restored from an old copy, each of that witness's old receipts to the restored length still checks
   * out, and any node that kept one can replay it (gossip has no freshness window for receipts).
   */
  async #resolved(witness: string, length: number, bytes: Uint8Array): Promise<void> {
    if (!this.#contradicting.size) return;
    let at: number | undefined;
    try {
      at = (open(bytes, WITNESS_TYPE, { trusted: true }).record as WitnessReceipt).witnessedAt;
    } catch {
      // checked by addReceipt already: not reached
    }
    await this.#contradicting.resolved(witness, length, at);
  }

  /**
   * Note a witness whose receipt (`bytes`, refused as a mismatch) contradicts this ledger, for status(): one named, or
   * (none named) one this ledger holds a valid receipt from; any other key's is counted only (#knownWitnesses).
   */
  async #contradicted(witness: string, bytes: Uint8Array): Promise<void> {
    if (!this.cfg.witnesses && !this.#knownWitnesses.has(witness)) {
      this.#othersContradicting = { receipts: (this.#othersContradicting?.receipts ?? 0) + 1, at: this.o.clock() };
      return;
    }
    await this.#contradicting.note(witness, bytes);
  }

  async #append(...args: Parameters<Ledger['append']>): Promise<{ seq: number; address: string; bytes: Uint8Array }> {
    const r = await this.ledger.append(...args);
    const ev = args[0];
    if (ev.event === 'Admitted') this.#admittedEntries.set(ev.claim, r.bytes);
    else this.#admittedEntries.delete(ev.claim);
    // Publish the new head so witnesses can cosign it.
    await this.o.net.publish('pool-head', r.bytes).catch((e) => this.log.debug({ err: (e as Error).message }, 'head published to nobody'));
    return r;
  }

  /**
   * The `Admitted` entries of the claims open at start, read from the ledger's end backwards (1024 entries a read)
   * until every open claim's is found: open claims are the recent ones, so a long ledger is not read whole.
   */
  async #loadAdmittedEntries(): Promise<void> {
    const want = new Set(this.ledger.book.open.keys());
    for (let to = this.ledger.length; want.size && to > 0; to -= 1024) {
      const from = Math.max(0, to - 1024);
      for (const b of await this.ledger.entries(from, to)) {
        // replayed and verified at open: not checked again
        const e = open(b, POOL_TYPE, { trusted: true }).record as unknown as LedgerEntry;
        if (e.event === 'Admitted' && want.delete(e.claim)) this.#admittedEntries.set(e.claim, b);
      }
    }
  }

  /** A frame to a buyer on an `admit` or `admit-gang` stream: an `admitted` answer carries the claim's entry (`admission`). */
  #withAdmission(f: CborValue, req: Record<string, unknown>): CborValue {
    const a = f as { t?: unknown; gang?: unknown };
    if (a?.t !== 'admitted') return f;
    let claim: string | undefined = typeof a.gang === 'string' ? a.gang : undefined;
    if (claim === undefined && req.job instanceof Uint8Array) claim = open(req.job, T.job).address;
    const entry = claim === undefined ? undefined : this.#admittedEntries.get(claim);
    return entry ? ({ ...(f as Record<string, CborValue>), admission: entry } as CborValue) : f;
  }

  /**
   * `admission` {job}: this steward's `Admitted` entry for the job's claim (its own, or the open gang it is bound to:
   * Gangs.claimOf knows only jobs this steward bound, and forgets them at the gang's release), for a provider whose
   * buyer sent none (a buyer before this version) or whose job is a gang member (a provider takes a gang's entry only
   * from here). STEWARD_NOT_ADMITTED when the claim is not open.
   */
  async #admission(req: Record<string, unknown>, ctx: Pick<StewardStream, 'send'>): Promise<void> {
    if (typeof req.job !== 'string') throw new C0Error('STEWARD_BAD_REQUEST', 'admission: job must be the job’s address', { field: 'job' });
    const entry = this.#admittedEntries.get(this.#gangs.claimOf(req.job) ?? req.job);
    if (!entry) throw new C0Error('STEWARD_NOT_ADMITTED', 'the job has no open admission');
    await ctx.send({ t: 'admission', entry } as never);
  }

  /**
   * Publish the current head again at min(2 s, the period) after start (the network starts after the roles) and then
   * every `headRepublishMs` while a witness has not sent a receipt covering it: the overlay's named witnesses, else
   * every witness heard since start (none heard yet: every period). One entry read and one gossip message a period.
   * A relay or witness that already holds that head drops it as a duplicate, and a witness of this version that
   * cosigned it does no more (src/roles/witness.ts); one of the previous version cosigns it again (a new receipt), so
   * the republish stops once every witness has covered the head, and a quiet overlay's steward sends nothing.
   */
  #republishHeads(): void {
    const every = this.cfg.headRepublishMs ?? 0;
    if (every <= 0) return;
    const once = () => void this.publishHead().catch((e) => this.log.debug({ err: (e as Error).message }, 'head republished to nobody'));
    const again = () => {
      if (this.headNeedsWitness()) once();
    };
    this.#headTimers.push(setLongTimeout(once, Math.min(2000, every)).unref(), setLongInterval(again, every).unref());
  }

  /**
   * Catch-up (pool/1 §6.1, §6.2): the steward hears selections and receipts on gossip only while it runs, and gossip
   * neither replays history nor promises delivery, so a receipt published while it was down (or dropped on the way)
   * would leave its claim holding its reservation and devices until the deadline, then released charging nothing. At
   * min(2 s, `catchUpMs`) after start and every `catchUpMs`, while claims are open, it asks their buyers and chosen
   * providers for the selections, then the receipts, that name the open claims' jobs (records/1 `jobs`, whatever else
   * the party holds; a party before that op is asked for its live selections and receipts instead, a records/1 sync
   * with the digest of what the steward holds); what comes goes through the same handlers as gossip. At most
   * CATCH_UP_PEERS parties a round, the next ones the round after.
   */
  #catchUpRounds(): void {
    const every = this.cfg.catchUpMs ?? 0;
    if (every <= 0 || !this.o.net.syncFrom) return;
    const round = () => void this.catchUp().catch((e) => this.log.debug({ err: (e as Error).message }, 'catch-up round failed'));
    this.#catchUpTimers.push(setLongTimeout(round, Math.min(2000, every)).unref(), setLongInterval(round, every).unref());
  }

  /** One catch-up round (#catchUpRounds); resolves when every party asked has answered or failed. */
  async catchUp(): Promise<void> {
    const syncFrom = this.o.net.syncFrom?.bind(this.o.net);
    if (!syncFrom || this.#stopped || this.#catchingUp) return;
    // failover selections of reclaimed claims whose winning offer was not found: offered a background fetch again
    this.#reclaim.retryPending();
    // each party → the jobs of the open claims it is party to (a single job's claim is its job; a gang's, its bound members)
    const parties = new Map<string, Set<string>>();
    for (const claim of this.ledger.book.open.keys()) {
      const oj = this.#accounts.get(claim);
      if (!oj) continue;
      const g = this.#gangs.get(claim);
      const jobs = g ? Object.values(g.members) : [claim];
      for (const p of [oj.buyer, ...oj.winners, ...(oj.provider ? [oj.provider] : [])]) {
        let held = parties.get(p);
        if (!held) parties.set(p, (held = new Set()));
        for (const j of jobs) held.add(j);
      }
    }
    parties.delete(this.identity.did);
    parties.delete('');
    const all = [...parties.keys()].sort();
    if (!all.length) return;
    const from = this.#catchUpFrom % all.length;
    const asked = [...all.slice(from), ...all.slice(0, from)].slice(0, CATCH_UP_PEERS);
    this.#catchUpFrom = from + asked.length;
    this.#catchingUp = true;
    try {
      // selections whose winning offer was not found when heard: looked for again (held by now, or fetched from their parties)
      await this.#accounts.retryPending();
      for (const did of asked) {
        if (this.#stopped) return;
        // selections first: a receipt is charged against the providers they name. Asked by job (records/1 `jobs`): a
        // `live` sync is answered oldest first, so on a busy overlay the record missed (the newest) is never reached.
        const jobs = [...parties.get(did)!];
        const r = await this.#askFor(did, ['selection', 'receipt'], jobs);
        this.log.debug({ peer: did, jobs: jobs.length, accepted: r.accepted, failed: r.failed }, 'catch-up: asked an open claim’s party for its selections and receipts');
      }
    } finally {
      this.#catchingUp = false;
    }
  }

  /**
   * Ask a party for the records of `kinds` naming `jobs` (records/1 `jobs`); a party before that op (or whose records
   * are not kept by job) answers NET_BAD_REQUEST and is asked for its live records of `kinds` instead. What comes goes
   * through the steward's gossip handlers.
   */
  async #askFor(did: string, kinds: TopicKind[], jobs: string[]): Promise<{ accepted: number; failed: Record<string, string> }> {
    const failed = (e: unknown) => ({ failed: { all: (e as Error).message } as Record<string, string>, accepted: 0 });
    const { syncJobs, syncFrom } = this.o.net;
    let r: { accepted: number; failed: Record<string, string> } = jobs.length && syncJobs ? await syncJobs.call(this.o.net, did, kinds, jobs).catch(failed) : { accepted: 0, failed: { all: NET_ERR.BAD_REQUEST } };
    if (syncFrom && Object.values(r.failed).includes(NET_ERR.BAD_REQUEST)) r = await syncFrom.call(this.o.net, did, kinds).catch(failed);
    return r;
  }

  /**
   * A withdraw of a single job whose receipts are held aside (a provider no selection heard here named): the buyer is
   * asked for the job's selections first, so the release charges what they name (steward-handlers.ts withdraw). At
   * most WITHDRAW_ASK_MS: the buyer waits for the answer; a selection arriving later finds the claim released.
   */
  async #selectionsOf(oj: OpenJob): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const ask = this.#askFor(oj.buyer, ['selection'], [oj.claim]).then(async (r) => {
      // what a sync accepted is handed to the subscribers through the network's queue: wait for it to be handled
      await this.o.net.drained?.();
      await this.#accounts.retryPending(oj.claim);
      this.log.debug({ claim: oj.claim, accepted: r.accepted, failed: r.failed }, 'withdraw: asked the buyer for the selections of a claim with receipts held aside');
    });
    try {
      await Promise.race([ask, new Promise<void>((ok) => (timer = setTimeout(ok, WITHDRAW_ASK_MS)))]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Whether a witness (named, else heard since start; none heard: yes) has not sent a receipt covering the current head. */
  headNeedsWitness(): boolean {
    const { length } = this.ledger.head();
    if (length === 0) return false;
    const known = this.cfg.witnesses ?? [...this.#witnessed.keys()];
    return known.length === 0 || known.some((w) => (this.#witnessed.get(w) ?? 0) < length);
  }

  /** Publish the ledger's current head entry on pool-head (nothing while the ledger is empty). */
  async publishHead(): Promise<void> {
    const { length } = this.ledger.head();
    if (this.#stopped || length === 0) return;
    const [head] = await this.ledger.entries(length - 1, length);
    if (head && !this.#stopped) await this.o.net.publish('pool-head', head);
  }

  /** The verdict a claim gets now (nothing recorded). */
  decide(claim: Claim): Verdict {
    return this.pool.decide(claim);
  }

  /**
   * steward/1: a request refused STEWARD_BAD_REQUEST is charged to its peer's abuse score (docs/network.md §Abuse;
   * review s39 F3: a flood of them was answered 500 a second, nobody blamed). Not a map with a string `op`, which no
   * buyer of any version sends, is a strike (`AbuseReports.invalid`); an op this steward does not know or fields it
   * refuses, which a buyer of another version may send, cost nothing up to REFUSED_RATE and are reported past it
   * (`refusals`). A lookup refused (LOOKUP_REFUSALS: not admitted, not the buyer, unknown), which an honest provider or
   * buyer earns now and then, is free up to LOOKUP_REFUSED_RATE and reported past it: before, a flood of `admission`
   * asks for random jobs was answered 400 a second, never blamed (review s40). An `admit` from a buyer that disagrees
   * on who selects (STEWARD_MANAGED_MISMATCH), once per job from a misconfigured buyer, counts as a refusal. Other
   * refusals (not entitled, a full queue) cost nothing.
   */
  async #serve(frames: CborValue[], ctx: StewardStream): Promise<void> {
    try {
      return await this.#route(frames, ctx);
    } catch (e) {
      if (e instanceof C0Error && e.code === 'STEWARD_BAD_REQUEST') {
        const req = frames[0] as unknown as { op?: unknown } | undefined;
        const peer = ctx.peer.toString();
        if (typeof req !== 'object' || req === null || Array.isArray(req) || req instanceof Uint8Array || typeof req.op !== 'string') this.o.abuseReports?.invalid(peer);
        else this.#refused(peer);
      } else if (e instanceof C0Error && e.code === 'STEWARD_MANAGED_MISMATCH') this.#refused(ctx.peer.toString());
      else if (e instanceof C0Error && LOOKUP_REFUSALS.has(e.code)) this.#lookupRefused(ctx.peer.toString());
      throw e;
    }
  }

  /** ledger/1: a bound that is not an entry number (LEDGER_BAD_RANGE), which no witness of any version sends, is a strike. */
  async #serveLedger(frames: CborValue[], ctx: StewardStream): Promise<void> {
    try {
      await serveLedgerRange(this.ledger, frames, ctx);
    } catch (e) {
      if (e instanceof C0Error && e.code === LEDGER_ERR.RANGE) this.o.abuseReports?.invalid(ctx.peer.toString());
      throw e;
    }
  }

  async #route(frames: CborValue[], ctx: StewardStream): Promise<void> {
    const req = frames[0] as unknown as { op?: string } & Record<string, unknown>;
    // An admitted answer carries the claim's Admitted entry, which the buyer hands its provider (#withAdmission).
    const proving: StewardStream = { peer: ctx.peer, signal: ctx.signal, send: (f) => ctx.send(this.#withAdmission(f, req)) };
    if ((req?.op === 'admit' || req?.op === 'admit-gang') && typeof req.entitlement === 'string') {
      // who may claim under it: before anything is decided, stored or queued (a malformed request is refused by the op)
      const { didFromPeerId } = await import('../node/peer-id.js');
      requireEntitled(this.tree, req.entitlement, didFromPeerId(ctx.peer.toString()));
    }
    if (req?.op === 'admit' && req.gang === undefined && (req.selects === 'steward' || req.selects === 'buyer') && (req.selects === 'steward') !== this.cfg.managed) {
      // Who selects must be agreed before a claim is admitted: a managed buyer of an unmanaged steward was refused its
      // `select` only once the claim held its reservation (QA pass, session 48). The buyer says who it expects to select
      // (`selects`, a text enum: the wire has no booleans); a buyer that does not say is let by.
      throw new C0Error(
        'STEWARD_MANAGED_MISMATCH',
        `overlay ${this.o.name}: this steward ${this.cfg.managed ? 'selects for its buyers (managed: true)' : 'leaves selection to its buyers (managed: false)'}, and the buyer's network.managed is ${String(req.selects === 'steward')}: set network.managed: ${String(this.cfg.managed)} in the buyer's config`,
        { field: 'managed' },
      );
    }
    if (req?.op === 'admit') return this.#line.admit(req as unknown as AdmitRequest, proving);
    if (req?.op === 'admit-gang') return this.#admitGang(req as unknown as AdmitGangRequest, proving);
    if (req?.op === 'admission') return this.#admission(req, ctx);
    if (req?.op === 'select') return select({ ports: this.o, ledger: this.ledger, cfg: this.cfg, accounts: this.#accounts, tree: this.tree }, req, ctx);
    if (req?.op === 'withdraw') return withdraw(this.#accounts, req, ctx, (oj) => this.#selectionsOf(oj), this.#line);
    if (req?.op === 'reclaimed') {
      const jobSigner = async (j: string) => (await this.o.records.get(j, T.job).catch(() => undefined))?.signer;
      return reclaimed({ accounts: this.#accounts, reclaim: this.#reclaim, claimOf: (j) => this.#gangs.claimOf(j) ?? j, jobSigner }, req, ctx);
    }
    throw new C0Error('STEWARD_BAD_REQUEST', 'op must be "admit", "admit-gang", "admission", "select", "withdraw" or "reclaimed"');
  }

  /**
   * `admit-gang` (src/roles/steward-gangs.ts), the ask marked in flight in the line (AdmissionLine.askInFlight) until
   * it is decided: a `withdraw` of the gang arriving while it is decided (a preemption waiting on a stop, its append on
   * its way to disk) finds nothing open and is noted, and the gang, if that decision admitted it, is released at once
   * with nothing spent (its buyer gave up; no member ran).
   */
  async #admitGang(req: AdmitGangRequest, ctx: StewardStream): Promise<void> {
    let ask: AskInFlight | undefined;
    let mine: { signer: string; address: string } | undefined;
    if (req.run instanceof Uint8Array) {
      try {
        const run = open(req.run, TRAIN_T.run);
        const { didFromPeerId } = await import('../node/peer-id.js');
        if (didFromPeerId(ctx.peer.toString()) === run.signer) mine = run;
      } catch {
        // refused by admitGang itself, with its own error
      }
    }
    // a gang's claims withdrawn unrun count in its buyer's budget as a job's do (review s42 R9 F1: 110 admit-gang and
    // withdraw rounds a second, two ledger entries each, with no limit)
    if (mine) {
      await this.#line.checkUnrunBudgetOn(mine.signer, mine.address, ctx);
      ask = this.#line.askInFlight(mine.address, mine.signer);
    }
    try {
      const answer = await this.#gangs.admitGang(req, ctx);
      // A gang denied, or not held (it does not fit now and never waits in line), ran nothing and is not stored: it
      // costs a token of its buyer's unrun budget, as a job's denied ask does (review s43 R1 F3: without it, one key
      // asked for a gang that never fits as fast as the steward decided).
      if (mine && (answer === 'denied' || answer === 'not-held')) this.#line.withdrawnUnrun(mine.signer);
    } finally {
      if (ask?.withdrawn) await this.#line.releaseWithdrawn(ask.claim);
      ask?.done();
    }
  }

  /** The overlay's physical capacity in devices (src/roles/steward-reclaim.ts). */
  capacity(): number {
    return this.#reclaim.capacity();
  }

  /** `c0mpute steward status`: each team's figures and the queued claims. */
  async status(): Promise<Record<string, unknown>> {
    const contradicting = this.#contradicting.size ? await this.#contradicting.view() : [];
    const book = this.ledger.book;
    const teams = [...this.tree.entitlements.values()]
      .sort((a, b) => (a.id < b.id ? -1 : 1))
      .map((e) => {
        const f = ledgerFigures(book, e.id);
        return {
          id: e.id,
          ...(e.parent ? { parent: e.parent } : {}),
          priority: e.priority,
          guarantee_uj: e.guarantee_uj,
          guarantee_devices: e.guarantee_devices,
          ...(e.limit_uj === undefined ? {} : { limit_uj: e.limit_uj }),
          used_uj: f.used_uj,
          spent_uj: f.spent_uj,
          reserved_uj: f.reserved_uj,
          borrowed_uj: f.borrowed_uj,
          held_devices: f.held_devices,
          open_claims: f.open_claims,
        };
      });
    // usage under entitlements the tree no longer has: still the ledger's, so still shown (the totals add up to it)
    const lacking = notInTree(this.tree, book);
    return {
      steward: this.identity.did,
      overlay: this.o.name,
      ledger: this.ledger.head(),
      teams,
      ...(lacking.length ? { notInTree: lacking } : {}),
      ...(this.cfg.idle ? { idle: { policy: this.cfg.idle, verdicts: this.#reclaim.idleVerdicts() } } : {}),
      queued: this.#line.queued(this.o.clock()),
      gangs: this.#gangs.view(),
      // receipts that contradict this ledger (docs/overlays.md "A steward whose ledger went back")
      // worked out against the ledger as it is now: `ours` is its length now, the code what the receipt is now
      ...(contradicting.length ? { contradictingWitnesses: contradicting } : {}),
      // without witnesses named: contradicting receipts from keys this ledger holds no receipt from (anyone's), counted
      ...(this.#othersContradicting ? { contradictingOthers: this.#othersContradicting } : {}),
      // equivocation evidence about this steward held in the node's store or heard since: each pair proves two histories to anyone
      ...(this.#evidence.size ? { evidence: { pairs: this.#evidence.size, witnesses: new Set([...this.#evidence.values()].flatMap((p) => [...p.witnesses])).size, seqs: this.#evidenceSeqs() } } : {}),
    };
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#idleTimer?.clear();
    this.#offConnect?.();
    this.#reclaim.stop();
    for (const t of [...this.#headTimers.splice(0), ...this.#catchUpTimers.splice(0)]) t.clear();
    this.#accounts.stop();
    this.#line.stop();
    await this.ledger.close();
  }
}
