/**
 * The buyer role on an overlay (docs/market.md, docs/node.md; pool/1 §4 for
 * admission): the Buyer and what it asks of the node — publishing, exec/1
 * streams to the chosen provider, waiting for offers (and, halfway through the
 * window, pushing the job to providers that have not quoted when too few
 * did: job-push.ts), and on an overlay with a steward, admission, withdrawal and
 * the steward's managed selection. Split out of overlay.ts; the overlay hands
 * every offer it stores to `onOffer`, which wakes the buyer waiting on its job.
 */
import { Counter } from 'prom-client';
import { C0Error } from '../errors.js';
import { T, type Acceptance, type Job, type Offer, type PolicyName, type Selection } from '../records/kinds.js';
import type { PublishOptions } from '../net/network-api.js';
import { takenOutcome } from '../net/offer-route.js';
import { open, type Opened } from '../records/envelope.js';
import { Buyer, NO_ADDRESS, RECLAIMED_ASK_MS, type Admission, type JobSpec, type OffersCollected, type ReclaimAnswer, type WindowEnd } from '../roles/buyer.js';
import { STEWARD_PROTOCOL } from '../roles/steward.js';
import { MAX_SELECT_OFFERS } from '../roles/steward-handlers.js';
import { admitJob, leftoverClaims, withdrawLeftovers } from '../roles/admission-client.js';
import { execExchange, type ExecChannel, type ExecFrame, type ExecRequest } from '../roles/exec-protocol.js';
import { JOB_PUSH_LIMITS, MAX_PUSH_TARGETS, choosePushTargets, invitesJob, pushToSilent } from './job-push.js';
import { byAskForJob, candidates, orderFromJob } from '../matching/candidates.js';
import { UNKNOWN_SCORE } from '../reputation/derive.js';
import { isNonDeliveryType } from '../reputation/nondelivery.js';
import { encodeAuditSettings } from '../market/audit-settings.js';
import { providerOf } from '../pools/chain.js';
import { peerIdFromDid } from './peer-id.js';
import type { OverlayNode } from './overlay.js';
import type { Logger } from '../util/log.js';
import { raceTimeout, setLongTimeout } from '../util/timers.js';
import { StallWatch } from '../util/stall-watch.js';
import { plural } from '../util/text.js';

/** Decided spot jobs whose selection a late offer's provider is still sent (older ones: its offer has long expired). */
const DECIDED_KEPT = 1024;
/** An acceptance not delivered is tried once more this much later (at once when the node stops). */
const OUTCOME_RETRY_MS = 5_000;
/** How long the overlay's stop waits for outcomes still being sent, an acceptance's second try included (BuyerWiring.stop). */
export const OUTCOME_DRAIN_MS = 5_000;
/** How long a run with no provider left waits for the providers it pushed its job to (#rescue): job-push/1's own bound. */
const RESCUE_PUSH_MS = JOB_PUSH_LIMITS.deadlineMs;

export class BuyerWiring {
  readonly #offerWaiters = new Map<string, Set<(o: Opened<Offer>) => void>>();
  readonly #pushes: Counter<'outcome'>;
  readonly #routes: Counter<'route'>;
  /** Jobs sent by invitation, until their window ends: whom they went to (not pushed to again halfway). */
  readonly #invited = new Map<string, Set<string>>();
  /** Invited jobs gossiped after all (at most once each), until their window ends. */
  readonly #gossiped = new Set<string>();
  /** Spot jobs decided with a direct selection (the latest DECIDED_KEPT): the selection and whom it went to, for offers that come later. */
  readonly #decided = new Map<string, { selection: Opened<Selection>; sent: Set<string>; until: number }>();
  /** Acceptances waiting for their second try, with that try (sent at once at stop). */
  readonly #retries = new Map<NodeJS.Timeout, () => void>();
  /** Outcome sends not answered yet (awaited at stop, at most OUTCOME_DRAIN_MS): what each sends, for the log. */
  readonly #inflight = new Map<Promise<void>, { kind: string; record: string }>();
  #stopped = false;
  /** Aborted at stop: the start's withdraws of claims an earlier process left (#withdrawLeftovers) end with it. */
  readonly #stopping = new AbortController();
  /** This process's own freezes during an exec attempt (a stream broken by them is not the provider's non-delivery). */
  readonly #stalls = new StallWatch();

  constructor(private readonly o: OverlayNode) {
    this.#pushes = new Counter({ name: 'c0mpute_buyer_job_pushes_total', help: 'Jobs this buyer sent directly to a provider (job-push/1): invitations and pushes halfway through the offer window, by outcome: offer, none, failed, redirected (a pool member named its coordinator)', labelNames: ['outcome'], registers: [o.registry] });
    this.#routes = new Counter({
      name: 'c0mpute_buyer_job_routes_total',
      help: 'Jobs this buyer published, by route: gossip (to the whole market), invited (directly to some candidates, buyer.inviteAbove), gossip-after-invite (still short of offers once every invitation answered, or halfway through the window)',
      labelNames: ['route'],
      registers: [o.registry],
    });
  }

  /** Jobs with a buyer waiting on their offers now (for tests and diagnostics). */
  get waitingJobs(): number {
    return this.#offerWaiters.size;
  }

  /**
   * At the overlay's stop, before its network stops: the acceptances still being sent are waited for, and an
   * acceptance's second try that was due later is made now (a one-shot `c0mpute run` stops right after its job ended:
   * its acceptance never reached the provider, whose own evidence it is). At most OUTCOME_DRAIN_MS in all, so a stop
   * never hangs on a provider that does not answer; what is still unsent then is logged. A selection still being sent
   * is not waited for: it only frees the losers' quoting budget early, which their offers' expiry does anyway, and a
   * losing quoter that never answered outcome/1 held every stop for the whole 5 s (second-round review).
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#stopping.abort();
    const due = [...this.#retries.values()];
    for (const t of this.#retries.keys()) clearTimeout(t);
    this.#retries.clear();
    for (const again of due) again();
    const acceptances = () => [...this.#inflight].filter(([, s]) => s.kind === 'acceptance');
    const drain = async () => {
      // a send that fails at once brings its retry (an acceptance): waited for too
      for (let left = acceptances(); left.length; left = acceptances()) await Promise.allSettled(left.map(([p]) => p));
    };
    if (!acceptances().length) return;
    if ((await raceTimeout(drain(), OUTCOME_DRAIN_MS, 'late' as const, { unref: true })) === 'late') {
      const unsent = acceptances().map(([, s]) => s);
      this.o.log.warn({ unsent }, `${plural(unsent.length, 'acceptance send')} still unanswered after ${OUTCOME_DRAIN_MS} ms at stop: not waited for`);
    }
  }

  /**
   * The overlay's network has started (OverlayNode.start, after the roles: peers begin to connect). On an overlay with
   * a steward, the claims of the jobs an earlier process of this node left are withdrawn from here, in the background
   * (#withdrawLeftovers).
   */
  netStarted(): void {
    if (this.o.d.network.steward) this.#withdrawLeftovers(this.o.d.network.steward);
  }

  /**
   * A buyer killed (kill -9, a crash, lost power) mid-run left its admitted claims open at the steward: no run ended
   * `interrupted` to withdraw them, and nothing resumes a run, so each held its team's reservation and devices until
   * its job's deadline (up to 90 days). Once the network has started (netStarted), those of the node's jobs that
   * were live when it opened and did not end completed are withdrawn, each with the receipts held for it, one at a
   * time (a gang's member jobs by their gang's claim, once: leftoverClaims), a steward not reached tried again with a
   * doubling wait (withdrawLeftovers); the start never waits for it,
   * and the stop ends it. Their late receipts are still taken (MarketService keeps the jobs as the node's own).
   */
  #withdrawLeftovers(steward: string): void {
    const jobs = this.o.market.earlierJobs;
    if (!jobs.length) return;
    const signal = this.#stopping.signal;
    if (signal.aborted) return;
    const claims = leftoverClaims(jobs, this.o.market.evidence, this.o.did, this.o.clock());
    if (!claims.length) return;
    const log = this.o.log.child({ role: 'buyer', overlay: this.o.name });
    log.info({ claims: claims.length, gangs: claims.filter((c) => c.gang !== undefined).length }, 'withdrawing the steward claims of jobs an earlier run of this node left');
    // a steward not connected yet is not reached by the first sweep: withdrawLeftovers tries again (2 s, doubling)
    void withdrawLeftovers({ request: (frames, opts) => this.o.net.request(steward, STEWARD_PROTOCOL, frames, opts), claims, clock: this.o.clock, log, signal }).then((r) => {
      if (!signal.aborted) log.info({ ...r }, 'withdrew the steward claims of jobs an earlier run of this node left');
    });
  }

  /** The Buyer of this overlay (set it as the overlay's `buyer`; the overlay calls netStarted once its network is up). */
  createBuyer(): Buyer {
    const { config, identity } = this.o.d;
    return new Buyer({
      signer: identity.signer,
      did: this.o.did,
      clock: this.o.clock,
      log: this.o.log.child({ role: 'buyer', overlay: this.o.name }),
      market: this.o.market,
      adverts: (did) => this.o.records.advertOf(did),
      advertAt: (address) => this.o.market.adverts.get(address),
      publish: async (kind, env) => {
        // this node's own job: its offers dropped for their dates are noted for its explanation (clock-drops.ts)
        if (kind === 'job') this.o.net.expectOffers?.(env.address);
        // a job of a large market goes to some of its candidates directly, not to the whole market (#invite)
        if (kind === 'job' && this.#invite(env as Opened<Job>)) return;
        if (kind === 'job') this.#routes.inc({ route: 'gossip' });
        // a spot job's selection goes to the providers it names, an acceptance to its receipt's signer as well (#direct)
        if (kind === 'selection' && this.#direct(env as Opened<Selection>)) return;
        if (kind === 'acceptance') this.#direct(env as Opened<Acceptance>);
        await this.o.net.publish(kind, env.bytes, [], await this.#marketOf(env)).catch((e) => {
          if (kind === 'job') throw e;
          // no market found for a selection or an acceptance is unexpected (its job or receipt is stored first); no peer is not
          if ((e as C0Error).code === 'NET_NO_SHARD') this.o.log.warn({ kind, record: env.address, err: (e as Error).message }, 'not published: no market topic');
          else this.o.log.debug({ kind, err: (e as Error).message }, 'publish found no peers');
        });
      },
      exec: (did, protocol, request, signal, heard, sent, opened) => this.#execStream(did, protocol, request, signal, heard, sent, opened),
      // dialled ahead of a selection (Buyer DIAL_AHEAD), within the dial timeout: the peer store's addresses, and a
      // routing look-up only when asked (a provider without a known address is tried after those with one)
      dial: async (did, lookUp) => {
        if (!lookUp && !(await this.#addressKnown(did))) throw new C0Error(NO_ADDRESS, `no address known for ${did}: it is looked up if no provider with one delivers`);
        await this.o.net.dial(did);
      },
      addressKnown: (did) => this.#addressKnown(did),
      // a provider connected now is reached: the buyer does not let its offer lapse waiting for another's dial
      connected: (did) => this.#connected(did),
      store: async (rec) => {
        if (rec.type === T.selection) {
          // a selection's considered offers are what it is audited against: kept with it, not only in the book
          // (which drops offers an hour past their start-by time, docs/market.md §3 "Pruning")
          const sel = rec as Opened<Selection>;
          const held = sel.record.considered.map((c) => this.o.market.book.get(c.offer)).filter((o): o is Opened<Offer> => o !== undefined);
          // one this node signed: with the settings it was decided under, which its audit needs (`market export`
          // gives them; the config may change before it is exported: docs/market.md §9)
          if (sel.signer === this.o.did) await this.o.records.putDecision(sel, encodeAuditSettings(this.o.market.auditSettings(this.o.d.network.steward ? [this.o.d.network.steward] : [])), held);
          else {
            await this.o.records.put(sel);
            if (held.length) await this.o.records.putMany(held);
          }
        } else if (rec.type === T.receipt || rec.type === T.acceptance || isNonDeliveryType(rec.type)) await this.o.market.addEvidence(rec as never);
        else await this.o.records.put(rec);
        if (rec.type === T.job && rec.signer === this.o.did) this.o.market.noteOwnJob(rec as Opened<Job>);
      },
      noteAttempt: (selection, note) => this.o.records.noteAttempt(selection.address, note),
      // an order's run broken off before a claim was taken: by the job's address (job-history.ts HistoryJob.ended)
      noteRun: (job, note) => this.o.records.noteAttempt(job.address, note),
      waitForOffers: (job, windowMs, enough, onOffer, signal) => this.#waitForOffers(job, windowMs, enough, onOffer, signal),
      rescue: (job, tried, opts) => this.#rescue(job, tried, opts?.widen),
      stalls: this.#stalls,
      collectWindowMs: config.buyer.collectWindowMs,
      enoughOffers: config.buyer.enoughOffers,
      ...(this.o.d.network.clockSkewMs === undefined ? {} : { skewMs: this.o.d.network.clockSkewMs }),
      defaultPolicy: config.buyer.policy,
      overlay: this.o.name,
      // where a spec naming an entitlement belongs, when it is sent to an overlay without a steward
      stewardedOverlays: [config.network, ...config.overlays].filter((n) => n.steward).map((n) => n.overlay),
      ...(this.o.d.network.steward
        ? {
            admission: (job, spec, onQueued, signal, onRateLimited) => this.#admission(this.o.d.network.steward!, job, spec, onQueued, signal, onRateLimited),
            withdraw: async (job) => {
              await this.o.net.request(this.o.d.network.steward!, STEWARD_PROTOCOL, [{ op: 'withdraw', job: job.address } as never], { limits: { deadlineMs: 15_000 } });
            },
            reclaimed: (job, provider) => this.#reclaimed(this.o.d.network.steward!, job, provider),
          }
        : {}),
      // Open orders skip admission and the steward's selection: not on an overlay with a steward.
      // `check`: the probe's answer before an order is posted and when it goes unclaimed (QA qaMatch F6); marks nothing.
      // `scoreOf`: this node's reputation view, which an order's floor is checked against (docs/matching.md "Whom an order takes")
      ...(this.o.d.network.steward ? {} : { orders: { inbox: (job: string) => this.o.orders!.inbox(job), check: async (job: Opened<Job>, designated?: string) => (await this.o.probeService()).check(orderFromJob(job, designated)), scoreOf: (did: string) => this.o.market.reputation().scoreOf(did) } }),
      ...(this.o.d.network.steward && this.o.d.network.managed ? { managedSelect: (job, policy, excluded, offers) => this.#managedSelect(this.o.d.network.steward!, job, policy, excluded, offers) } : {}),
    });
  }

  /**
   * Ask the overlay's steward to admit a claim (pool/1 §4); the stream stays open while it is queued. Asks again while
   * the steward may hold the claim with no verdict heard, and withdraws it on giving up (src/roles/admission-client.ts).
   */
  #admission(steward: string, job: Opened<Job>, spec: JobSpec, onQueued: (reason: string, reasons: string[]) => void, signal: AbortSignal, onRateLimited?: (waitMs: number) => void): Promise<Admission> {
    return admitJob({
      request: (frames, opts) => this.o.net.request(steward, STEWARD_PROTOCOL, frames, opts),
      asks: this.o.stewardAsks,
      job,
      spec,
      clock: this.o.clock,
      onQueued,
      ...(onRateLimited ? { onRateLimited } : {}),
      signal,
      overlay: this.o.name,
      steward,
      managed: this.o.d.network.managed,
      log: this.o.log.child({ role: 'buyer', overlay: this.o.name, job: job.address }),
    });
  }

  /**
   * Ask the overlay's steward whether it reclaimed a job's claim from `provider` (`reclaimed` naming it, within
   * RECLAIMED_ASK_MS): a provider's EXEC_PREEMPTED or EXEC_IDLE_RECLAIMED is believed only on its word. An answer
   * that is none of the four is refused STEWARD_NO_ANSWER (nothing confirmed).
   */
  async #reclaimed(steward: string, job: Opened<Job>, provider: string): Promise<ReclaimAnswer> {
    const frames = await this.o.net.request(steward, STEWARD_PROTOCOL, [{ op: 'reclaimed', job: job.address, provider } as never], { limits: { deadlineMs: RECLAIMED_ASK_MS } });
    const said = (frames[0] as { reclaimed?: unknown } | undefined)?.reclaimed;
    if (said === 'priority' || said === 'idle' || said === 'no' || said === 'closed') return said;
    throw new C0Error('STEWARD_NO_ANSWER', 'the steward sent no reclaimed answer');
  }

  async #managedSelect(steward: string, job: Opened<Job>, policy: PolicyName, excluded: ReadonlySet<string>, offers: readonly Opened<Offer>[]): Promise<{ selection: Opened<Selection>; offer: Opened<Offer> }> {
    // the offers collected here go along (at most MAX_SELECT_OFFERS): the steward's copies can be a gossip hop behind
    const carried = offers.filter((o) => !excluded.has(o.signer)).slice(0, MAX_SELECT_OFFERS).map((o) => o.bytes);
    const frames = await this.o.net.request(steward, STEWARD_PROTOCOL, [{ op: 'select', job: job.address, policy, excluded: [...excluded], offers: carried } as never], { limits: { deadlineMs: 30_000 } });
    const f = frames[0] as { selection?: Uint8Array; offer?: Uint8Array } | undefined;
    if (!f?.selection || !f.offer) throw new C0Error('STEWARD_NO_ANSWER', 'the steward sent no selection');
    const selection = open(f.selection, T.selection);
    const offer = open(f.offer, T.offer);
    if (selection.signer !== steward || selection.record.job !== job.address || selection.record.winner !== offer.address) throw new C0Error('STEWARD_BAD_SELECTION', 'the steward’s selection does not match this job and offer');
    await this.o.market.addOffer(offer, this.o.clock());
    return { selection, offer };
  }

  /** Whether this node holds an open connection to `did` now (Buyer `connected`: no dial, no peer-store read). */
  #connected(did: string): boolean {
    try {
      return this.o.net.libp2p.getConnections(peerIdFromDid(did)).some((c) => c.status === 'open');
    } catch {
      return false;
    }
  }

  /** Whether this node is connected to `did` or holds an address of it in its peer store (no routing look-up). */
  async #addressKnown(did: string): Promise<boolean> {
    const lp = this.o.net.libp2p;
    let pid;
    try {
      pid = peerIdFromDid(did);
    } catch {
      return false;
    }
    if (lp.getConnections(pid).length > 0) return true;
    try {
      return (await lp.peerStore.get(pid)).addresses.length > 0;
    } catch {
      return false;
    }
  }

  /**
   * One exec/1 exchange as an async iterable of the provider's frames (input and output chunked,
   * src/roles/exec-protocol.ts); `opened` is told once the stream is open, `sent` once the request's end frame (after
   * the input) is handed over.
   */
  async *#execStream(did: string, protocol: string, request: ExecRequest, signal: AbortSignal, heard?: (f: ExecFrame) => void, sent?: () => void, opened?: () => void): AsyncIterable<unknown> {
    // The buyer's signal bounds the exchange (the job's deadline plus a grace period, and its watch: SilenceWatch).
    const ch = await this.o.net.openStream(did, protocol, { signal, limits: { deadlineMs: 7 * 24 * 3600_000 } });
    opened?.();
    const told: ExecChannel = {
      send: (f) => ch.send(f),
      end: async () => {
        await ch.end();
        sent?.();
      },
      next: () => ch.next(),
      closeWrite: () => ch.closeWrite(),
      close: () => ch.close(),
    };
    yield* execExchange(sent ? told : ch, request, undefined, heard);
  }

  #waitForOffers(job: string, windowMs: number, enough: number, onOffer: (o: Opened<Offer>, count: number) => void, signal?: AbortSignal): Promise<OffersCollected> {
    return new Promise((resolve) => {
      let count = this.o.market.offerCount(job, this.o.clock());
      const seen = new Set<string>();
      // `enough` counts providers with an offer that passes the gates (docs/node.md "Buyer"): an offer over maxPrice,
      // in another currency or citing an advert nobody holds cannot win, and must not end the window. Without the
      // job's record (not this node's job), every offer held counts.
      const record = this.o.market.ownJob(job);
      const eligible = new Set<string>();
      // With buyer.endWhenAllQuoted, the window also ends once every provider in view that could win has quoted
      // (MarketService.allQuoted: at most ALL_QUOTED_MAX providers judged, on each offer that comes).
      const allQuoted = record && this.o.d.config.buyer.endWhenAllQuoted ? () => this.o.market.allQuoted(record, this.o.clock(), this.o.did) : undefined;
      const judge = (o: Opened<Offer>) => {
        if (record && this.o.market.offerEligible(record, o, this.o.clock())) eligible.add(o.signer);
      };
      const ended = (): WindowEnd | undefined => {
        if (enough > 0 && (record ? eligible.size : count) >= enough) return 'enough';
        return eligible.size > 0 && allQuoted?.() ? 'all-quoted' : undefined;
      };
      if (record) for (const o of this.o.market.offersFor(job, this.o.clock(), record)) judge(o);
      const finish = (why: WindowEnd) => {
        timer.clear();
        push.clear();
        signal?.removeEventListener('abort', stopped);
        this.#invited.delete(job);
        // the job's entry goes with its last waiter: one per job bought would otherwise stay until restart
        const waiters = this.#offerWaiters.get(job);
        if (waiters?.delete(waiter) && waiters.size === 0) this.#offerWaiters.delete(job);
        resolve({ offers: count, ended: why });
      };
      const stopped = () => finish('stopped');
      const waiter = (o: Opened<Offer>) => {
        if (seen.has(o.address)) return;
        seen.add(o.address);
        count = this.o.market.offerCount(job, this.o.clock());
        judge(o);
        onOffer(o, count);
        // an offer that cannot win still ends a wait for all to quote: its provider answered
        const why = ended();
        if (why) finish(why);
      };
      const timer = setLongTimeout(() => finish('window'), windowMs);
      const push = setLongTimeout(() => void this.#pushJob(job, windowMs / 2 + 2000).catch((e) => this.o.log.debug({ err: (e as Error).message }, 'job push failed')), windowMs / 2).unref();
      if (!this.#offerWaiters.has(job)) this.#offerWaiters.set(job, new Set());
      this.#offerWaiters.get(job)!.add(waiter);
      // the node is stopping: the window ends now (the run ends as interrupted)
      signal?.addEventListener('abort', stopped, { once: true });
      if (signal?.aborted) return stopped();
      const why = ended();
      if (why) finish(why);
    });
  }

  /**
   * A stored offer (gossip, or the answer to a pushed job) wakes the buyer waiting on its job. One for a spot job
   * this buyer already decided (it came after the selection was sent) gets that selection, so its provider's quoting
   * budget frees now rather than at the offer's expiry.
   */
  async onOffer(offer: Opened<Offer>, attachments: readonly Opened[]): Promise<void> {
    await this.o.market.addOffer(offer, this.o.clock(), attachments);
    for (const w of this.#offerWaiters.get(offer.record.job) ?? []) w(offer);
    const decided = this.#decided.get(offer.record.job);
    if (decided && !decided.sent.has(offer.signer)) this.#sendOutcome('selection', decided.selection, [offer.signer], decided.sent);
  }

  /**
   * Halfway through the offer window: send the job directly to providers that
   * fit it and have not quoted (job-push.ts). With `buyer.offersWanted` > 0,
   * only when fewer offers came (counting those priced at or below their own
   * advert's ask), to twice as many as are missing, at most as many dials as
   * are missing (docs/market.md §12): a provider in this node's view may be
   * gone, and its push then answers nothing. With 0, and on an overlay with a
   * steward (where providers never hold back), to every connected one.
   */
  async #pushJob(address: string, deadlineMs: number): Promise<void> {
    const job = this.o.market.ownJob(address);
    if (!job) return;
    const now = this.o.clock();
    const wanted = this.o.d.network.steward ? 0 : this.o.d.config.buyer.offersWanted;
    // enough offers already: nothing to push, and no eligibility run over the connected peers
    const missing = wanted > 0 ? wanted - this.#offersCounted(job, now, wanted) : 0;
    if (wanted > 0 && missing <= 0) return;
    const invited = this.#invited.get(address);
    // sent by invitation and still short: the whole market hears it now (a view can be stale; gossip is the fallback)
    if (invited) this.#gossipAfterInvite(job);
    const connected = this.o.net.peers().map((p) => p.did ?? '');
    const silent = this.o.market.silentProviders(job, connected, now, MAX_PUSH_TARGETS).filter((d) => !invited?.has(d));
    const targets = wanted > 0 ? this.#targets(job, now, missing, connected, silent, invited) : silent;
    if (!targets.length) return;
    await this.#send(job, targets, deadlineMs, this.o.log, invited);
  }

  /**
   * A run with no provider left to fail over to (Buyer `rescue`, docs/market.md "Jobs already decided"): the job goes
   * directly (job-push/1) to live providers that fit it and were neither tried in this run nor quoted — a provider
   * that learned the job after its selection skips it as decided, and answers only its buyer's push — chosen as a
   * push halfway through the window is (at least one offer missing: twice as many pushes, as many dials; on an
   * overlay with a steward, every connected one). Resolves once each answered, within RESCUE_PUSH_MS and the job's
   * deadline, to how many offered (their offers are in the book for the next decision) and whom it asked.
   */
  async #rescue(job: Opened<Job>, tried: ReadonlySet<string>, widen = false): Promise<{ offers: number; asked: readonly string[] }> {
    const now = this.o.clock();
    const left = job.record.deadline - now;
    if (left <= 0) return { offers: 0, asked: [] };
    const connected = this.o.net.peers().map((p) => p.did ?? '');
    const silent = this.o.market.silentProviders(job, connected, now, MAX_PUSH_TARGETS).filter((d) => !tried.has(d));
    // after an ask that brought nothing, as many as a push takes (MAX_PUSH_TARGETS): with `offersWanted` 1 an ask
    // goes to 2, and 4 silent cheap keys, connected and never quoting, filled both asks (second-round review s39)
    const missing = widen ? MAX_PUSH_TARGETS / 2 : Math.max(1, this.o.d.config.buyer.offersWanted);
    const targets = this.o.d.network.steward ? silent : this.#targets(job, now, missing, connected, silent, tried);
    const log = this.o.log.child({ job: job.address });
    if (!targets.length) {
      log.info({ tried: tried.size }, 'no provider left to fail over to, and none not tried to ask for an offer');
      return { offers: 0, asked: [] };
    }
    return { offers: await this.#send(job, targets, Math.min(RESCUE_PUSH_MS, left), log, new Set(tried)), asked: targets };
  }

  /**
   * The offers a job holds against `wanted` (`buyer.offersWanted`, docs/market.md §12): live offers at their own
   * advert's ask (MarketService.offersAtAskByRecord), those of providers with no record in this node's reputation
   * view (fresh keys: a score no better than a provider with no evidence) counting for at most half of `wanted`,
   * rounded up. Keys are cheap: without the bound, eight fresh keys quoting at a cheap ask filled the count, and the
   * push never reached a provider with a record. The bound holds only while a provider with a record that has not
   * quoted is a live candidate for the job (someone the push can reach by record): in a young network, where nobody
   * has one, every offer at its ask counts, and a job is not pushed for nothing.
   */
  #offersCounted(job: Opened<Job>, now: number, wanted: number): number {
    const { recorded, unrecorded } = this.o.market.offersAtAskByRecord(job, now);
    const bounded = recorded + Math.min(unrecorded, Math.ceil(wanted / 2));
    if (bounded >= wanted || bounded === recorded + unrecorded) return bounded;
    const rep = this.o.market.reputation();
    return this.#candidates(job, now).some((c) => rep.scoreOf(c.provider) > UNKNOWN_SCORE) ? bounded : recorded + unrecorded;
  }

  /** job-push/1 to `targets` at once (pushToSilent): offers stored, outcomes counted, a pool member's redirect followed; `asked` learns whom. */
  #send(job: Opened<Job>, targets: string[], deadlineMs: number, log: Logger, asked?: Set<string>): Promise<number> {
    return pushToSilent({
      net: this.o.net,
      job,
      targets,
      deadlineMs,
      clock: this.o.clock,
      skewMs: this.o.d.network.clockSkewMs,
      log,
      onOffer: (o, a) => this.onOffer(o, [a]),
      count: (outcome) => this.#pushes.inc({ outcome }),
      redirectOk: (from, to) => this.#redirectOk(from, to),
      ...(asked ? { asked } : {}),
    });
  }

  /** Live candidates for a job, not this node, that have not quoted and were not sent it already. */
  #candidates(job: Opened<Job>, now: number, skip?: ReadonlySet<string>): ReturnType<typeof candidates>['candidates'] {
    return candidates({ order: orderFromJob(job), live: this.o.liveProviders(now), held: this.o.heldByProvider(), now, skewMs: this.o.d.network.clockSkewMs }).candidates.filter(
      (c) => c.provider !== this.o.did && !skip?.has(c.provider) && !this.o.market.quoted(job.address, c.provider, now),
    );
  }

  /**
   * Whom to send a job `missing` offers short (choosePushTargets): twice as many, at most `missing` dials. One member
   * of a pool at most (only its coordinator quotes; the member asked names it: pushToSilent follows).
   */
  #targets(job: Opened<Job>, now: number, missing: number, connected: readonly string[], silent: readonly string[], skip?: ReadonlySet<string>, cands = this.#candidates(job, now, skip)): string[] {
    // pools already sent the job (a member invited, or the coordinator a redirect led to) take no more of it
    const pools = new Set<string>();
    for (const d of skip ?? []) {
      const pool = this.#poolOf(d);
      if (pool !== undefined) pools.add(pool);
    }
    const firstOfPool = (did: string): boolean => {
      const pool = this.#poolOf(did);
      if (pool === undefined) return true;
      if (pools.has(pool)) return false;
      pools.add(pool);
      return true;
    };
    const byPrice = byAskForJob(cands, job.address).filter((c) => firstOfPool(c.provider));
    const chosen = new Set(byPrice.map((c) => c.provider));
    silent = silent.filter((d) => chosen.has(d) || firstOfPool(d));
    const rep = this.o.market.reputation();
    const byRecord = byPrice.filter((c) => rep.scoreOf(c.provider) > UNKNOWN_SCORE).sort((a, b) => rep.scoreOf(b.provider) - rep.scoreOf(a.provider));
    return choosePushTargets({
      want: Math.min(MAX_PUSH_TARGETS, 2 * missing),
      maxDials: missing,
      byRecord: byRecord.map((c) => c.provider),
      byPrice: byPrice.map((c) => c.provider),
      connected: new Set(connected),
      silentConnected: silent,
    });
  }

  /** The pool a provider's live advert is of (its chain was verified on open), or undefined. */
  #poolOf(did: string): string | undefined {
    const a = this.o.market.adverts.latest.get(did);
    if (!a?.record.pool) return undefined;
    try {
      return providerOf(a);
    } catch {
      return undefined;
    }
  }

  /** Follow a pushed pool member's redirect only to a live advert of the same pool. */
  #redirectOk(from: string, to: string): boolean {
    const pool = this.#poolOf(from);
    const a = this.o.market.adverts.latest.get(to);
    return pool !== undefined && !!a && a.record.expiresAt > this.o.clock() && this.#poolOf(to) === pool;
  }

  /**
   * A job's outcome to the providers it concerns (docs/network.md §14 "Who hears a job's outcome"), over outcome/1,
   * not awaited (an unreachable provider loses only that copy: its quoting budget frees when the offer expires). A
   * spot job's selection goes to every provider that quoted, named in it or not, and later to any that quotes after
   * (onOffer): each releases the budget its offer held (the winner also has it in its exec request). Not on gossip:
   * true. An open order's selection (every provider of the market
   * decides leases from it) and any selection on an overlay with a steward (its accounts take it) stay on gossip:
   * false. An acceptance goes to the provider that signed its receipt, whose own evidence it is, and on gossip too
   * (false), for the nodes that count second-hand evidence.
   */
  #direct(env: Opened<Selection> | Opened<Acceptance>): boolean {
    if (env.type === T.selection) {
      const sel = (env as Opened<Selection>).record;
      const job = this.o.market.ownJob(sel.job);
      if (this.o.d.network.steward || sel.policy === 'first-claim' || !job || job.record.order) return false;
      // every provider that quoted, named or not (an offer that came late, or one not considered), and later ones (onOffer)
      const now = this.o.clock();
      const offered = this.o.market.book.candidates(sel.job, job.record.maxPrice.currency, now).map((o) => o.signer);
      // a failover's new selection goes only to those the last one did not reach (each frees its budget per job, on any)
      const sent = this.#decided.get(sel.job)?.sent ?? new Set<string>();
      this.#decided.delete(sel.job);
      this.#decided.set(sel.job, { selection: env as Opened<Selection>, sent, until: job.record.deadline });
      // past its deadline no offer for the job is taken (wantsOffer): the oldest go first, and any beyond DECIDED_KEPT
      for (const [k, v] of this.#decided) {
        if (v.until > now && this.#decided.size <= DECIDED_KEPT) break;
        this.#decided.delete(k);
      }
      this.#sendOutcome('selection', env, [...sel.considered.map((c) => c.provider), ...offered], sent);
      return true;
    }
    const receipt = this.o.market.evidence.receipts.get((env as Opened<Acceptance>).record.receipt);
    if (receipt) this.#sendOutcome('acceptance', env, [receipt.signer], new Set(), true);
    return false;
  }

  /**
   * Send a selection or an acceptance over outcome/1 (not awaited), noting each recipient in `sent`. An acceptance
   * the provider could not be reached for, or did not keep (not_kept, or ignored for now: its rate limit for this
   * node, a full queue: offer-route.ts takenOutcome), is tried once more OUTCOME_RETRY_MS later, at
   * once when the node is stopping (it is that provider's own evidence, and it is on no topic the provider joined);
   * what still did not arrive is logged. Each send is kept until answered: the stop waits for them (stop).
   */
  #sendOutcome(kind: 'selection' | 'acceptance', env: Opened, to: readonly string[], sent: Set<string>, retry = false): void {
    const fresh = [...new Set(to)].filter((d) => !sent.has(d) && d !== this.o.did);
    if (!fresh.length) return;
    for (const d of fresh) sent.add(d);
    const sending: Promise<void> = this.o.net.sendOutcome(kind, fresh, env.bytes).then(
      (r) => {
        // ignored for now (the provider's rate limit, a full queue: takenOutcome) is not kept, not held already
        const outcomes = Object.entries(r.outcomes).map(([d, o]): [string, string] => [d, takenOutcome(o, r.codes?.[d])]);
        let missed = outcomes.filter(([, o]) => o !== 'accepted' && o !== 'ignored');
        // not reached, or reached but not kept there (not_kept: its store or queue refused it): worth another copy
        const again = (o: string) => o === 'unreachable' || o === 'not_kept';
        // one not reached may quote again later (onOffer): it gets the selection then
        for (const [d, o] of missed) if (again(o)) sent.delete(d);
        if (retry) {
          const unreachable = missed.filter(([, o]) => again(o)).map(([d]) => d);
          const tryAgain = () => this.#sendOutcome(kind, env, unreachable, new Set());
          // stopping: tried again at once, while the network is up (stop waits for it)
          if (unreachable.length && this.#stopped) tryAgain();
          else if (unreachable.length) {
            const t = setTimeout(() => {
              this.#retries.delete(t);
              tryAgain();
            }, OUTCOME_RETRY_MS);
            t.unref();
            this.#retries.set(t, tryAgain);
          }
          missed = missed.filter(([, o]) => !again(o));
        }
        if (missed.length) this.o.log[kind === 'acceptance' ? 'info' : 'debug']({ kind, record: r.address, missed: Object.fromEntries(missed) }, `${kind} not delivered to every provider it concerns`);
      },
      (e) => this.o.log.warn({ kind, record: env.address, err: (e as Error).message }, `${kind} not sent`),
    );
    this.#inflight.set(sending, { kind, record: env.address });
    void sending.finally(() => this.#inflight.delete(sending));
  }

  /**
   * The market of a selection or an acceptance, which the record does not name (docs/network.md §14): the workload of
   * the job it decides (this buyer's own, stored before it is published) or of the receipt it countersigns (stored as
   * evidence before the acceptance is signed). Nothing for other kinds, which name theirs.
   */
  async #marketOf(env: Opened): Promise<PublishOptions> {
    let workload: string | undefined;
    if (env.type === T.selection) {
      const job = (env.record as Selection).job;
      workload = (this.o.market.ownJob(job) ?? (await this.o.records.get(job, T.job)))?.record.workload;
    } else if (env.type === T.acceptance) {
      // the job's market, which the buyer checked the receipt names (src/roles/buyer.ts); the receipt's if the job is gone
      const receipt = this.o.market.evidence.receipts.get((env.record as Acceptance).receipt);
      workload = (receipt && this.o.market.ownJob(receipt.record.job)?.record.workload) ?? receipt?.record.workload;
    }
    return workload === undefined ? {} : { workload };
  }

  /**
   * Jobs by invitation (docs/market.md "Jobs by invitation in a large market"): a job
   * with more than `buyer.inviteAbove` candidates in this node's view goes directly
   * (job-push/1) to twice `buyer.offersWanted` of them, chosen as a push halfway
   * through the window is (half by record, the rest by record and lowest ask, at
   * most `offersWanted` dials), and not on gossip. An invited provider quotes
   * whatever its rank. Still short once every invitation has answered, or
   * halfway through the window (#pushJob), the job goes on gossip as well
   * (#gossipAfterInvite). Never throws; true when the job was sent this way.
   */
  #invite(job: Opened<Job>): boolean {
    const { offersWanted, inviteAbove, collectWindowMs } = this.o.d.config.buyer;
    const connected = this.o.net.peers().map((p) => p.did ?? '');
    const base = { steward: !!this.o.d.network.steward, offersWanted, inviteAbove, openOrder: !!job.record.order, connected: connected.length };
    // the cheap checks first: most jobs never run the candidates
    if (!invitesJob({ ...base, candidates: Infinity })) return false;
    let targets: string[];
    try {
      const now = this.o.clock();
      const cands = this.#candidates(job, now);
      if (!invitesJob({ ...base, candidates: cands.length })) return false;
      targets = this.#targets(job, now, offersWanted, connected, [], undefined, cands);
    } catch (e) {
      // choosing whom to invite must never cost the job its announcement: gossip it
      this.o.log.warn({ job: job.address, err: (e as Error).message }, 'choosing whom to invite failed; the job goes on gossip');
      return false;
    }
    if (!targets.length) return false;
    const invited = new Set(targets);
    this.#invited.set(job.address, invited);
    // dropped when its window ends (#waitForOffers), or after it at the latest if no window ever started
    setLongTimeout(() => this.#invited.delete(job.address), collectWindowMs + 5_000).unref();
    this.#routes.inc({ route: 'invited' });
    const log = this.o.log.child({ job: job.address });
    void this.#send(job, targets, collectWindowMs / 2 + 2000, log, invited)
      .then(() => {
        // every invitation answered (or failed: a refusal comes back at once) and still short: gossip now, not halfway
        if (this.#invited.get(job.address) === invited && this.#offersCounted(job, this.o.clock(), offersWanted) < offersWanted) this.#gossipAfterInvite(job);
      })
      .catch((e) => log.debug({ err: (e as Error).message }, 'invitations failed'));
    return true;
  }

  /** An invited job still short of offers goes on gossip too, once (docs/market.md §13 "The fallback"). */
  #gossipAfterInvite(job: Opened<Job>): void {
    if (this.#gossiped.has(job.address)) return;
    this.#gossiped.add(job.address);
    setLongTimeout(() => this.#gossiped.delete(job.address), this.o.d.config.buyer.collectWindowMs + 5_000).unref();
    this.#routes.inc({ route: 'gossip-after-invite' });
    void this.o.net.publish('job', job.bytes).catch((e) => this.o.log.debug({ job: job.address, err: (e as Error).message }, 'job gossip after invitations found no peers'));
  }
}
