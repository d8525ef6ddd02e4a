/**
 * The steward role: an organisation's scheduler on a private overlay (pool/1).
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
 *   a claim whose buyer is away holds the line for at most `reaskGraceMs`.
 *   Asking again for a job already admitted answers `admitted` again (the
 *   first answer may have been lost). Deny → the buyer is told why; nothing
 *   is recorded.
 * - Release: when a job's work ends, `Released` charges the actual energy in
 *   place of the reservation (§6.2): the sum of every receipt the job's
 *   providers signed (a failed attempt spent energy too), at the worst grade
 *   among them (a grade never improves). A completed receipt closes the claim;
 *   failures alone close it at the deadline (the buyer may still fail over).
 * - Preemption: an admission within its entitlement's guarantees that needs
 *   devices the overlay's providers are using for lower-priority claims
 *   reclaims them in the §5.2 order; their providers are asked to stop over
 *   `/c0mpute/preempt/1` (answering once the work has stopped), and the stopped
 *   work ends with a signed `failed` receipt (EXEC_PREEMPTED) that releases it.
 * - Idle reclamation (§2.7), only with a configured policy: the steward
 *   samples running claims' energy from their providers and reclaims those
 *   measured idle over the policy's window (EXEC_IDLE_RECLAIMED).
 * - `managed` overlays: the steward signs selections on the buyer's behalf.
 * - After each append the new head entry is published on the overlay's
 *   pool-head topic; witness receipts heard on pool-witness are kept.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { C0Error } from '../errors.js';
import { open, type Opened } from '../records/envelope.js';
import { T, type Job, type PolicyName, type Receipt, type Selection } from '../records/kinds.js';
import type { Energy } from '../records/kinds.js';
import { PoolState, admittedEvent, checkClaim, type Claim, type Verdict } from '../pool/admission.js';
import { treeFromYaml } from '../pool/yaml.js';
import { worseGrade } from '../pool/grades.js';
import { deriveEstimate } from '../pool/estimate.js';
import { chooseVictims, type PreemptInputs } from './steward-preempt.js';
import { idleVerdict, reclamationOrder, type IdleObservation, type IdleVerdict } from '../pool/idle.js';
import type { Tree } from '../pool/tree.js';
import { Ledger } from '../ledger/store.js';
import { ClaimQueueStore, type QueuedClaimRecord } from './steward-queue.js';
import type { CborValue } from '../records/cbor.js';
import type { OverlayNode } from '../node/overlay.js';
import type { Identity } from '../node/identity.js';

export const STEWARD_PROTOCOL = '/c0mpute/steward/1';
export const LEDGER_PROTOCOL = '/c0mpute/ledger/1';
export const PREEMPT_PROTOCOL = '/c0mpute/preempt/1';
export const MAX_LEDGER_RANGE = 1024;
const GRACE_MS = 5_000;
/** How long a queued claim whose buyer is away (after a steward restart) keeps its place before it is dropped. */
export const REASK_GRACE_MS = 30_000;

export interface StewardConfig {
  /** The entitlement tree (YAML file path). */
  treeFile: string;
  /** Sign selections on buyers' behalf (a managed decision). */
  managed: boolean;
  /** Evidence needed to derive an estimate from history (§2.6; default 3, 0 counts as 1). */
  requiredEvidence: number;
  /** Reclaim devices from lower-priority claims for a claim queued on held devices. */
  preempt: boolean;
  /** Idle reclamation policy (pool/1 §2.7); absent: nothing is reclaimed for idleness. */
  idle?: { windowMs: number; idleBelowMicrowatts: number; sampleMs?: number };
  /** How long a restored queued claim waits for its buyer to ask again (default REASK_GRACE_MS). */
  reaskGraceMs?: number;
}

interface UsageSample {
  uj: number;
  grade: Energy['grade'];
  elapsedMs: number;
}

interface OpenJob {
  claim: string;
  buyer: string;
  deadline: number;
  receipts: Map<string, Opened<Receipt>>;
  winners: Set<string>;
  provider?: string;
  entitlement: string;
  timer?: NodeJS.Timeout;
}

type Decided = { v: Verdict; victims: string[] };
/** What ends a wait in line: a decision, or no answer at all on this stream (the steward stops; the buyer asked again on another stream). */
type Wake = Decided | { gone: 'stopping' | 'superseded' };

interface Waiting {
  /** arrival number (the place in line; the queue store's key) */
  n: number;
  claim: Claim;
  job: Opened<Job>;
  since: number;
  verdict: Verdict & { verdict: 'Queue' };
  /** The buyer's open stream; absent while the buyer is away (restored after a restart, or its stream failed). */
  wake?: (d: Wake) => void;
  expire?: NodeJS.Timeout;
  grace?: NodeJS.Timeout;
}

export interface AdmitRequest {
  op: 'admit';
  job: Uint8Array;
  entitlement: string;
  class?: string;
  estimate?: Energy;
}

function claimFor(job: Opened<Job>, req: Pick<AdmitRequest, 'entitlement' | 'class'>, estimate: Energy): Claim {
  return {
    id: job.address,
    entitlement: req.entitlement,
    ...(req.class ? { class: req.class } : {}),
    gang_size: 1,
    // A job occupies its GPUs; a CPU-only job occupies one machine slot.
    devices_per_member: job.record.requirements.gpu?.count ?? 1,
    estimate,
  };
}

export class Steward {
  readonly tree: Tree;
  readonly pool: PoolState;
  #open = new Map<string, OpenJob>();
  #queue: Waiting[] = [];
  /** Queued claims taken out of line and not yet appended (or denied): nothing else is decided meanwhile. */
  #inflight = 0;
  /** Claims being admitted (preempting, appending): a re-ask waits for them. */
  #admitting = new Map<string, Promise<void>>();
  readonly #queueStore: ClaimQueueStore;
  #stopped = false;
  #samples = new Map<string, UsageSample[]>();
  /** The latest usage figures of each running claim's attempt (for §5.2). */
  #live = new Map<string, { uj: number; units?: number }>();
  #idleVerdicts = new Map<string, IdleVerdict>();
  #idleTimer: NodeJS.Timeout | undefined;

  private constructor(
    private o: OverlayNode,
    readonly ledger: Ledger,
    tree: Tree,
    private cfg: StewardConfig,
    private identity: Identity,
  ) {
    this.tree = tree;
    this.pool = new PoolState(tree, ledger.book);
    ledger.attach(this.pool);
    this.#queueStore = new ClaimQueueStore(o.sub('steward-queue'), o.log.child({ role: 'steward', overlay: o.name }));
  }

  static async start(o: OverlayNode, dataDir: string, cfg: StewardConfig, identity: Identity): Promise<Steward> {
    let text: string;
    try {
      text = readFileSync(cfg.treeFile, 'utf8');
    } catch (e) {
      throw new C0Error('STEWARD_TREE_UNREADABLE', `cannot read the entitlement tree ${cfg.treeFile}: ${(e as Error).message}`, { field: 'steward.treeFile' });
    }
    const tree = treeFromYaml(text, cfg.treeFile);
    const dir = join(dataDir, 'steward', o.name, 'ledger');
    mkdirSync(dir, { recursive: true });
    const ledger = await Ledger.open(dir, { signer: identity.signer, now: o.clock, logger: o.log.child({ role: 'steward', overlay: o.name }) });
    const s = new Steward(o, ledger, tree, cfg, identity);
    await s.#wire();
    return s;
  }

  get log() {
    return this.o.log;
  }

  async #wire(): Promise<void> {
    const net = this.o.net;
    // Rebuild the open claims' bookkeeping from the ledger (usage itself is in the book).
    for (const c of this.ledger.book.open.values()) {
      const job = await this.o.records.get(c.claim, T.job);
      this.#track(c.claim, c.entitlement, job?.signer ?? '', job?.record.deadline ?? this.o.clock());
    }
    await this.#restoreQueue();
    await net.handle(STEWARD_PROTOCOL, (frames, ctx) => this.#serve(frames, ctx), { deadlineMs: 24 * 3600_000 });
    await net.handle(LEDGER_PROTOCOL, async (frames, ctx) => {
      const req = frames[0] as { from?: unknown; to?: unknown };
      const len = this.ledger.head().length;
      const from = typeof req?.from === 'number' && req.from >= 0 ? req.from : 0;
      const to = Math.min(typeof req?.to === 'number' ? req.to : len, len, from + MAX_LEDGER_RANGE);
      if (from > len) throw new C0Error('LEDGER_RANGE_INVALID', `from ${from} is beyond the ledger's length ${len}`);
      for (const e of await this.ledger.entries(from, to)) await ctx.send(e);
    });
    net.subscribe('receipt', (rec) => this.#onReceipt(rec as Opened<Receipt>));
    net.subscribe('selection', (rec) => this.#onSelection(rec as Opened<Selection>));
    // A provider joining (or re-advertising) can be the capacity a queued claim waits for.
    net.subscribe('advert', () => void this.#retryQueue());
    // §2.7: only a configured policy samples, and only it can reclaim anything.
    if (this.cfg.idle) {
      const every = this.cfg.idle.sampleMs ?? Math.max(250, Math.floor(this.cfg.idle.windowMs / 4));
      this.#idleTimer = setInterval(() => void this.#idleTick().catch((e) => this.log.warn({ err: (e as Error).message }, 'idle check failed')), every);
      this.#idleTimer.unref();
    }
    net.subscribe('pool-witness', async (rec) => {
      const st = await this.ledger.addReceipt(rec.bytes);
      this.log.info({ witness: rec.signer, status: st.status }, 'witness receipt received');
    });
  }

  #track(claim: string, entitlement: string, buyer: string, deadline: number): OpenJob {
    const oj: OpenJob = { claim, buyer, deadline, entitlement, receipts: new Map(), winners: new Set() };
    this.#open.set(claim, oj);
    this.#armDeadline(oj);
    return oj;
  }

  #armDeadline(oj: OpenJob): void {
    if (oj.timer) clearTimeout(oj.timer);
    const wait = Math.max(0, oj.deadline + GRACE_MS - this.o.clock());
    oj.timer = setTimeout(() => void this.#closeAtDeadline(oj), wait);
    oj.timer.unref();
  }

  async #closeAtDeadline(oj: OpenJob): Promise<void> {
    if (this.#stopped || !this.#open.has(oj.claim)) return;
    // Failures alone (or nothing at all): the work is over; charge what was spent.
    await this.#release(oj, 'deadline');
  }

  async #append(ev: Parameters<Ledger['append']>[0]): Promise<{ seq: number; address: string; bytes: Uint8Array }> {
    const r = await this.ledger.append(ev);
    // Publish the new head so witnesses can cosign it.
    await this.o.net.publish('pool-head', r.bytes).catch((e) => this.log.debug({ err: (e as Error).message }, 'head published to nobody'));
    return r;
  }

  /** The verdict a claim gets now (nothing recorded). */
  decide(claim: Claim): Verdict {
    return this.pool.decide(claim);
  }

  async #serve(frames: CborValue[], ctx: { peer: { toString(): string }; signal: AbortSignal; send(f: CborValue): Promise<void> }): Promise<void> {
    const req = frames[0] as unknown as { op?: string } & Record<string, unknown>;
    if (req?.op === 'admit') return this.#admit(req as unknown as AdmitRequest, ctx);
    if (req?.op === 'select') return this.#select(req, ctx);
    if (req?.op === 'withdraw') return this.#withdraw(req, ctx);
    throw new C0Error('STEWARD_BAD_REQUEST', 'op must be "admit", "select" or "withdraw"');
  }

  /**
   * The buyer is done with an admitted job that will not complete (nobody
   * quoted, every attempt failed or refused): release it now with what its
   * receipts show, rather than holding the reservation and devices until the
   * deadline. Only the job's buyer may withdraw.
   */
  async #withdraw(req: Record<string, unknown>, ctx: { peer: { toString(): string }; send(f: CborValue): Promise<void> }): Promise<void> {
    const oj = this.#open.get(String(req.job));
    if (!oj) {
      await ctx.send({ t: 'withdrawn', released: 'no' } as never);
      return;
    }
    const { didFromPeerId } = await import('../node/peer-id.js');
    if (didFromPeerId(ctx.peer.toString()) !== oj.buyer) throw new C0Error('STEWARD_NOT_BUYER', 'only the job’s buyer may withdraw it');
    await this.#release(oj, 'withdrawn');
    await ctx.send({ t: 'withdrawn', released: 'yes' } as never);
  }

  async #admit(req: AdmitRequest, ctx: { peer: { toString(): string }; signal: AbortSignal; send(f: CborValue): Promise<void> }): Promise<void> {
    if (!(req.job instanceof Uint8Array)) throw new C0Error('STEWARD_BAD_REQUEST', 'admit: job must be an envelope', { field: 'job' });
    if (typeof req.entitlement !== 'string') throw new C0Error('STEWARD_BAD_REQUEST', 'admit: entitlement is required', { field: 'entitlement' });
    const job = open(req.job, T.job);
    const { didFromPeerId } = await import('../node/peer-id.js');
    if (didFromPeerId(ctx.peer.toString()) !== job.signer) throw new C0Error('STEWARD_NOT_BUYER', 'only the job’s buyer may ask to admit it');
    // An admission of this job under way (taken out of line, being appended): answer once it is done.
    await this.#admitting.get(job.address);
    const admitted = this.ledger.book.open.get(job.address);
    if (admitted) {
      // Asked again (the first answer was lost with its stream): the same answer, nothing recorded.
      await ctx.send({ t: 'admitted', reserved: admitted.reserved, devices: admitted.devices, borrowed_uj: admitted.borrowed_uj } as never);
      return;
    }
    if (this.ledger.book.released.has(job.address)) throw new C0Error('STEWARD_ALREADY_RELEASED', 'this job was admitted and has been released already');
    let w = this.#queue.find((x) => x.claim.id === job.address);
    if (w) {
      // The buyer asks again for a queued claim (its stream failed, or the steward restarted): it keeps its place.
      if (w.claim.entitlement !== req.entitlement) throw new C0Error('STEWARD_CLAIM_MISMATCH', `this job is queued under entitlement ${w.claim.entitlement}`, { field: 'entitlement' });
      w.wake?.({ gone: 'superseded' });
      w.wake = undefined;
      this.log.info({ claim: w.claim.id, place: this.#queue.indexOf(w) + 1 }, 'queued claim asked again; it keeps its place');
    } else {
      let estimate = req.estimate;
      if (!estimate) {
        // §2.6: derive from history when the buyer names a class and gives no figure.
        if (!req.class) throw new C0Error('STEWARD_NO_ESTIMATE', 'admit: give an energy estimate, or a class with enough measured history', { field: 'estimate' });
        const d = deriveEstimate(req.class, this.ledger.book.observations, { required: this.cfg.requiredEvidence });
        if (!d.ok) throw new C0Error('STEWARD_NO_ESTIMATE', `no estimate for class ${req.class}: ${d.evidence} of ${d.seen} observations are evidence, ${d.required} needed`, { field: 'estimate', detail: d });
        estimate = d.estimate;
      }
      const claim = checkClaim(claimFor(job, req, estimate));
      await this.o.records.put(job);
      const d = this.#decideNow(claim);
      if (d.v.verdict !== 'Queue') return this.#answer(claim, job, d, ctx);
      w = { n: this.#queueStore.next(), claim, job, since: this.o.clock(), verdict: d.v as Waiting['verdict'] };
      // In line at once (a second ask for the same job finds it); durable before acknowledged: on disk before the buyer hears "queued".
      this.#enqueue(w);
      try {
        await this.#queueStore.put(this.#record(w));
      } catch (e) {
        this.#dequeue(w);
        throw e;
      }
      this.log.info({ claim: claim.id, entitlement: claim.entitlement, reason: d.v.reason, place: this.#queue.length }, 'claim queued');
    }
    const waiting = w;
    const got = new Promise<Wake>((resolve) => {
      if (waiting.grace) clearTimeout(waiting.grace);
      waiting.grace = undefined;
      waiting.wake = resolve;
    });
    try {
      await ctx.send({ t: 'queued', reason: waiting.verdict.reason, reasons: waiting.verdict.reasons, place: this.#queue.indexOf(waiting) + 1 } as never);
    } catch (e) {
      // The buyer is already gone: its claim stays in line, waiting for it to ask again.
      if (this.#queue.includes(waiting)) this.#away(waiting);
      throw e;
    }
    // Capacity may have freed while the buyer was away.
    void this.#retryQueue();
    const outcome = await got;
    if ('gone' in outcome) return;
    if (outcome.v.verdict === 'Queue') {
      await ctx.send({ t: 'expired', reason: outcome.v.reason } as never).catch(() => {});
      return;
    }
    try {
      await this.#answer(waiting.claim, waiting.job, outcome, ctx, waiting.n);
    } finally {
      this.#inflight--;
      void this.#retryQueue();
    }
  }

  /** Admit (appending durably, preempting first when needed) or deny a decided claim, and tell the buyer. */
  async #answer(claim: Claim, job: Opened<Job>, decided: Decided, ctx: { send(f: CborValue): Promise<void> }, queued?: number): Promise<void> {
    let { v, victims } = decided;
    if (v.verdict === 'Deny') {
      this.log.info({ claim: claim.id, entitlement: claim.entitlement, reason: v.reason }, 'claim denied');
      if (queued !== undefined) await this.#queueStore.remove(queued);
      await ctx.send({ t: 'denied', reason: v.reason, reasons: v.reasons } as never);
      return;
    }
    if (v.verdict !== 'Admit') throw new C0Error('STEWARD_INTERNAL', `unexpected verdict ${v.verdict}`);
    // Set before the first await: a re-ask for this job waits for the append, then gets the same answer.
    let done!: () => void;
    this.#admitting.set(claim.id, new Promise<void>((resolve) => (done = resolve)));
    let admit: Verdict & { verdict: 'Admit' };
    let r: { seq: number; address: string };
    try {
      if (victims.length) {
        // §5.2 ranks by what each running claim has spent and completed: ask its provider now, then choose again.
        await this.#sampleRunning();
        const again = this.#decideNow(claim);
        if (again.v.verdict === 'Admit') ({ v, victims } = again);
        if (victims.length) await this.#preempt(victims, claim.id);
      }
      admit = v as Verdict & { verdict: 'Admit' };
      r = await this.#append(admittedEvent(claim, admit));
      // After the append: a crash in between leaves a stored entry that the restore drops (its claim is open).
      if (queued !== undefined) await this.#queueStore.remove(queued);
      this.#track(claim.id, claim.entitlement, job.signer, job.record.deadline);
    } finally {
      this.#admitting.delete(claim.id);
      done();
    }
    this.log.info({ claim: claim.id, entitlement: claim.entitlement, reserved: admit.reserved, borrowed: admit.borrowed_uj, seq: r.seq }, 'claim admitted');
    await ctx.send({ t: 'admitted', reserved: admit.reserved, devices: admit.devices, borrowed_uj: admit.borrowed_uj, seq: r.seq, entry: r.address } as never);
  }

  #record(w: Waiting): QueuedClaimRecord {
    return { n: w.n, job: w.job, entitlement: w.claim.entitlement, ...(w.claim.class ? { class: w.claim.class } : {}), estimate: w.claim.estimate, since: w.since, reason: w.verdict.reason, reasons: w.verdict.reasons };
  }

  /** Put a claim in line (arrival order) and arm its expiry at the job's deadline. */
  #enqueue(w: Waiting): void {
    this.#queue.push(w);
    this.#queue.sort((a, b) => a.n - b.n);
    w.expire = setTimeout(() => void this.#expire(w), Math.max(0, w.job.record.deadline - this.o.clock()));
    w.expire.unref();
  }

  #dequeue(w: Waiting): void {
    this.#queue = this.#queue.filter((x) => x !== w);
    if (w.expire) clearTimeout(w.expire);
    if (w.grace) clearTimeout(w.grace);
  }

  /** The buyer is away: the claim keeps its place for the re-ask grace, then is dropped. */
  #away(w: Waiting): void {
    w.wake = undefined;
    if (w.grace) clearTimeout(w.grace);
    w.grace = setTimeout(() => {
      if (this.#stopped || !this.#queue.includes(w) || w.wake) return;
      this.#dequeue(w);
      this.log.warn({ claim: w.claim.id, graceMs: this.#reaskGrace }, 'the buyer of a queued claim did not ask again; claim dropped from the queue');
      void this.#queueStore.remove(w.n).then(() => this.#retryQueue(), (e) => this.log.warn({ err: (e as Error).message }, 'cannot drop a queued claim'));
    }, this.#reaskGrace);
    w.grace.unref();
  }

  get #reaskGrace(): number {
    return this.cfg.reaskGraceMs ?? REASK_GRACE_MS;
  }

  async #expire(w: Waiting): Promise<void> {
    if (this.#stopped || !this.#queue.includes(w)) return;
    this.#dequeue(w);
    await this.#queueStore.remove(w.n).catch((e) => this.log.warn({ err: (e as Error).message }, 'cannot drop an expired queued claim'));
    this.log.info({ claim: w.claim.id }, 'queued claim expired at its deadline');
    w.wake?.({ v: w.verdict, victims: [] });
    void this.#retryQueue();
  }

  /** The queue as it was before a restart, in arrival order, each claim waiting for its buyer to ask again. */
  async #restoreQueue(): Promise<void> {
    const now = this.o.clock();
    for (const q of await this.#queueStore.load()) {
      const id = q.job.address;
      if (this.ledger.book.open.has(id) || this.ledger.book.released.has(id) || q.job.record.deadline <= now) {
        await this.#queueStore.remove(q.n);
        continue;
      }
      const claim = checkClaim(claimFor(q.job, q, q.estimate));
      const verdict = { verdict: 'Queue', claim: id, entitlement: claim.entitlement, reason: q.reason, reasons: q.reasons, estimate: claim.estimate, devices: claim.gang_size * claim.devices_per_member } as Waiting['verdict'];
      const w: Waiting = { n: q.n, claim, job: q.job, since: q.since, verdict };
      this.#enqueue(w);
      this.#away(w);
    }
    if (this.#queue.length) this.log.info({ queued: this.#queue.map((w) => w.claim.id) }, 'queued claims restored; waiting for their buyers to ask again');
  }

  /**
   * Decide queued claims again, in arrival order, after capacity freed. One
   * claim leaves the line at a time (the next pass runs once it is appended),
   * so two claims are never admitted against the same free device. A claim
   * that would be admitted while its buyer is away holds the line until the
   * buyer asks again or the re-ask grace ends.
   */
  async #retryQueue(): Promise<void> {
    if (this.#inflight > 0 || this.#stopped) return;
    for (const w of [...this.#queue]) {
      const d = this.#decideNow(w.claim);
      if (d.v.verdict === 'Queue') continue;
      if (!w.wake) break;
      this.#dequeue(w);
      this.#inflight++;
      w.wake(d);
      return;
    }
  }

  /**
   * The overlay's physical capacity in devices: for each provider with a live
   * advert, its GPU count, or one machine slot for a provider without GPUs.
   * (pool/1 guarantees are promises; this is what there is to keep them with.)
   */
  capacity(): number {
    const now = this.o.clock();
    let n = 0;
    for (const a of this.o.market.adverts.latest.values()) {
      if (a.record.expiresAt <= now || a.signer === this.identity.did) continue;
      const gpus = (a.record.hardware.gpus ?? []).reduce((s, g) => s + g.count, 0);
      n += Math.max(1, gpus);
    }
    return n;
  }

  /**
   * The verdict a claim gets now, physical capacity included: an admission
   * within the entitlement's guarantees that needs devices held by other
   * work may reclaim them from claims of lower-priority entitlements, in the
   * §5.2 order over their real figures (receipts so far plus the running
   * attempt's sampled energy and completed units: a defined cost, most
   * expensive first, then undefined, lowest priority first, ties by claim
   * id; src/roles/steward-preempt.ts); without enough such devices it is
   * queued, DEVICES_HELD.
   */
  #decideNow(claim: Claim): { v: Verdict; victims: string[] } {
    const v = this.decide(claim);
    if (v.verdict !== 'Admit') return { v, victims: [] };
    const capacity = this.capacity();
    const open = [...this.ledger.book.open.values()];
    const held = open.reduce((s, c) => s + c.devices, 0);
    const over = held + v.devices - capacity;
    if (capacity === 0 || over <= 0) return { v, victims: [] };
    if (this.cfg.preempt) {
      const victims = chooseVictims(this.#preemptInputs(claim), over);
      if (victims.length) return { v, victims };
    }
    const queued: Verdict = { verdict: 'Queue', claim: v.claim, entitlement: v.entitlement, reason: 'DEVICES_HELD', reasons: ['DEVICES_HELD'], estimate: claim.estimate, devices: v.devices };
    return { v: queued, victims: [] };
  }

  /** What §5.2 ranks the running claims by: their real spent energy and completed units (src/roles/steward-preempt.ts). */
  #preemptInputs(claim: Claim): PreemptInputs {
    return {
      open: [...this.ledger.book.open.values()],
      priority: (e) => this.tree.entitlements.get(e)?.priority,
      claimantPriority: this.tree.entitlements.get(claim.entitlement)!.priority,
      hasProvider: (c) => this.#providerOf(c) !== undefined,
      figures: (c) => {
        const receiptsUj = [...(this.#open.get(c)?.receipts.values() ?? [])].reduce((sum, r) => sum + r.record.energy.uj, 0);
        const live = this.#live.get(c);
        return { receiptsUj, ...(live ? { liveUj: live.uj, ...(live.units === undefined ? {} : { units: live.units }) } : {}) };
      },
    };
  }

  /** Ask each running claim's provider what its attempt has spent and completed so far (before choosing victims). */
  async #sampleRunning(): Promise<void> {
    await Promise.all(
      [...this.ledger.book.open.values()].map(async (c) => {
        const provider = this.#providerOf(c.claim);
        if (!provider) return;
        try {
          const frames = await this.o.net.request(provider, PREEMPT_PROTOCOL, [{ op: 'usage', job: c.claim } as never], { limits: { deadlineMs: 10_000 } });
          this.#noteUsage(c.claim, frames[0]);
        } catch {
          /* no figure: the claim keeps the ones it had */
        }
      }),
    );
  }

  #noteUsage(claim: string, f: unknown): void {
    const u = f as { uj?: unknown; units?: unknown } | undefined;
    if (typeof u?.uj !== 'number' || !Number.isSafeInteger(u.uj) || u.uj < 0) return;
    this.#live.set(claim, { uj: u.uj, ...(typeof u.units === 'number' && Number.isSafeInteger(u.units) && u.units >= 0 ? { units: u.units } : {}) });
  }

  #providerOf(claim: string): string | undefined {
    const oj = this.#open.get(claim);
    return oj?.provider ?? [...(oj?.winners ?? [])][0];
  }

  /** Ask the victims' providers to stop; resolves when each has stopped (or failed to answer). */
  async #preempt(victims: string[], forClaim: string): Promise<void> {
    for (const key of victims) {
      const provider = this.#providerOf(key);
      if (!provider) continue;
      this.log.warn({ victim: key, for: forClaim, provider }, 'preempting a lower-priority claim');
      try {
        const frames = await this.o.net.request(provider, PREEMPT_PROTOCOL, [{ op: 'stop', job: key } as never], { limits: { deadlineMs: 30_000 } });
        // The stopped work's signed receipt comes back with the answer: release the victim before admitting.
        const r = (frames[0] as { receipt?: Uint8Array } | undefined)?.receipt;
        if (r instanceof Uint8Array) await this.#onReceipt(open(r, T.receipt));
      } catch (e) {
        this.log.warn({ victim: key, err: (e as Error).message }, 'preemption request failed');
      }
    }
  }

  /**
   * Idle reclamation (pool/1 §2.7): sample each open claim's energy from its
   * provider, judge the energy over at least the policy's window (nothing
   * held, then the window, then the grade, then the rate: src/pool/idle.ts),
   * and reclaim the claims found idle, least energy per time first. A claim
   * with no verdict (too short a window, an Estimator figure) is not a
   * candidate.
   */
  async #idleTick(): Promise<void> {
    const policy = this.cfg.idle;
    if (!policy || this.#stopped) return;
    const observations: IdleObservation[] = [];
    for (const c of this.ledger.book.open.values()) {
      const provider = this.#providerOf(c.claim);
      if (!provider) continue;
      let frames;
      try {
        frames = await this.o.net.request(provider, PREEMPT_PROTOCOL, [{ op: 'usage', job: c.claim } as never], { limits: { deadlineMs: 10_000 } });
      } catch {
        continue;
      }
      this.#noteUsage(c.claim, frames[0]);
      const u = frames[0] as { uj?: number; grade?: Energy['grade']; elapsedMs?: number } | undefined;
      if (typeof u?.uj !== 'number' || typeof u.elapsedMs !== 'number' || !u.grade) continue;
      const hist = this.#samples.get(c.claim) ?? [];
      hist.push({ uj: u.uj, grade: u.grade, elapsedMs: u.elapsedMs });
      // Keep what covers the window, and one sample older.
      while (hist.length > 2 && hist[hist.length - 1]!.elapsedMs - hist[1]!.elapsedMs >= policy.windowMs) hist.shift();
      this.#samples.set(c.claim, hist);
      const last = hist[hist.length - 1]!;
      const first = hist[0]!;
      observations.push({
        key: c.claim,
        devicesHeld: c.devices,
        observedMs: last.elapsedMs - first.elapsedMs,
        energy: { uj: Math.max(0, last.uj - first.uj), grade: worseGrade(first.grade, last.grade) },
      });
    }
    const policyArgs = { windowMs: policy.windowMs, idleBelowMicrowatts: policy.idleBelowMicrowatts };
    for (const o of observations) this.#idleVerdicts.set(o.key, idleVerdict(o, policyArgs));
    for (const v of reclamationOrder(observations, policyArgs)) {
      const provider = this.#providerOf(v.key);
      if (!provider) continue;
      this.log.warn({ claim: v.key, uj: v.uj, observedMs: v.observedMs, windowMs: v.windowMs }, 'reclaiming an idle claim');
      try {
        const frames = await this.o.net.request(provider, PREEMPT_PROTOCOL, [{ op: 'stop', job: v.key, reason: 'idle' } as never], { limits: { deadlineMs: 30_000 } });
        const r = (frames[0] as { receipt?: Uint8Array } | undefined)?.receipt;
        if (r instanceof Uint8Array) await this.#onReceipt(open(r, T.receipt));
      } catch (e) {
        this.log.warn({ claim: v.key, err: (e as Error).message }, 'idle reclamation request failed');
      }
    }
  }

  async #select(req: Record<string, unknown>, ctx: { peer: { toString(): string }; send(f: CborValue): Promise<void> }): Promise<void> {
    if (!this.cfg.managed) throw new C0Error('STEWARD_NOT_MANAGED', 'this overlay is not managed: buyers select themselves');
    const address = req.job as string;
    const job = await this.o.records.get(address, T.job);
    if (!job) throw new C0Error('STEWARD_JOB_UNKNOWN', `the steward has not seen job ${String(address).slice(0, 80)}`);
    const { didFromPeerId } = await import('../node/peer-id.js');
    if (didFromPeerId(ctx.peer.toString()) !== job.signer) throw new C0Error('STEWARD_NOT_BUYER', 'only the job’s buyer may ask for its selection');
    if (!this.ledger.book.open.has(job.address)) throw new C0Error('STEWARD_NOT_ADMITTED', 'the job has no open admission');
    const policy = (req.policy as PolicyName) ?? 'balanced';
    const excluded = new Set(Array.isArray(req.excluded) ? (req.excluded as string[]) : []);
    const now = this.o.clock();
    const decision = await this.o.market.decide(job, policy, now);
    const cand = decision.ranked.find((c) => !excluded.has(c.provider));
    if (!cand) throw new C0Error('STEWARD_NO_CANDIDATE', 'no eligible offer left for this job');
    const sel = this.o.market.signSelection(job, decision, cand, now, excluded);
    this.#open.get(job.address)?.winners.add(cand.provider);
    await ctx.send({ t: 'selection', selection: sel.bytes, offer: cand.offer.bytes } as never);
  }

  #onSelection(s: Opened<Selection>): void {
    const oj = this.#open.get(s.record.job);
    if (!oj) return;
    // Only the buyer's (or our own) selection names the provider doing the work.
    if (s.signer !== oj.buyer && s.signer !== this.identity.did) return;
    const w = s.record.considered.find((c) => c.offer === s.record.winner);
    if (w) {
      oj.winners.add(w.provider);
      oj.provider = w.provider;
    }
  }

  async #onReceipt(r: Opened<Receipt>): Promise<void> {
    const oj = this.#open.get(r.record.job);
    if (!oj) return;
    if (r.record.buyer !== oj.buyer) return; // a receipt for someone else's purchase of this job: not ours
    if (oj.winners.size && !oj.winners.has(r.record.provider)) {
      this.log.warn({ claim: oj.claim, provider: r.record.provider }, 'receipt from a provider no selection named; not charged');
      return;
    }
    oj.receipts.set(r.address, r);
    const reclaimed = r.record.failure?.code === 'EXEC_PREEMPTED' || r.record.failure?.code === 'EXEC_IDLE_RECLAIMED';
    if (r.record.status === 'completed' || reclaimed) await this.#release(oj, reclaimed ? r.record.failure!.code : r.record.status);
  }

  async #release(oj: OpenJob, why: string): Promise<void> {
    if (!this.ledger.book.open.has(oj.claim)) {
      this.#open.delete(oj.claim);
      return;
    }
    const rs = [...oj.receipts.values()];
    let actual: Energy;
    if (rs.length) {
      actual = rs.slice(1).reduce<Energy>((a, r) => ({ uj: a.uj + r.record.energy.uj, grade: worseGrade(a.grade, r.record.energy.grade) }), { ...rs[0]!.record.energy });
    } else {
      // Nothing ran that anyone signed for: nothing was spent that we can show.
      actual = { uj: 0, grade: 'Estimator' };
    }
    if (oj.timer) clearTimeout(oj.timer);
    this.#open.delete(oj.claim);
    this.#samples.delete(oj.claim);
    this.#live.delete(oj.claim);
    this.#idleVerdicts.delete(oj.claim);
    const r = await this.#append({ event: 'Released', claim: oj.claim, actual });
    this.log.info({ claim: oj.claim, actual, why, seq: r.seq }, 'claim released');
    await this.#retryQueue();
  }

  /** `c0mpute steward status`: each team's figures and the queued claims. */
  status(): Record<string, unknown> {
    const book = this.ledger.book;
    const teams = [...this.tree.entitlements.values()]
      .sort((a, b) => (a.id < b.id ? -1 : 1))
      .map((e) => {
        const u = book.usage(e.id);
        const open = [...book.open.values()].filter((c) => c.entitlement === e.id);
        const reserved = open.reduce((s, c) => s + c.reserved.uj, 0);
        const borrowed = open.reduce((s, c) => s + c.borrowed_uj, 0);
        return {
          id: e.id,
          ...(e.parent ? { parent: e.parent } : {}),
          priority: e.priority,
          guarantee_uj: e.guarantee_uj,
          guarantee_devices: e.guarantee_devices,
          ...(e.limit_uj === undefined ? {} : { limit_uj: e.limit_uj }),
          used_uj: u.usedUj,
          spent_uj: u.usedUj - reserved,
          reserved_uj: reserved,
          borrowed_uj: borrowed,
          held_devices: u.heldDevices,
          open_claims: open.length,
        };
      });
    return {
      steward: this.identity.did,
      overlay: this.o.name,
      ledger: this.ledger.head(),
      teams,
      ...(this.cfg.idle ? { idle: { policy: this.cfg.idle, verdicts: [...this.#idleVerdicts.values()] } } : {}),
      queued: this.#queue.map((w) => ({ claim: w.claim.id, entitlement: w.claim.entitlement, reason: w.verdict.reason, reasons: w.verdict.reasons, waitingMs: this.o.clock() - w.since, buyer: w.wake ? 'waiting' : 'away' })),
    };
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#idleTimer) clearInterval(this.#idleTimer);
    for (const oj of this.#open.values()) if (oj.timer) clearTimeout(oj.timer);
    // The queue stays on disk; the buyers' streams end without a verdict, and they ask again.
    for (const w of this.#queue) {
      if (w.expire) clearTimeout(w.expire);
      if (w.grace) clearTimeout(w.grace);
      w.wake?.({ gone: 'stopping' });
    }
    this.#queue = [];
    await this.ledger.close();
  }
}
