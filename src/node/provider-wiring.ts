/**
 * The provider role on an overlay (docs/node.md, docs/market.md; pool/1 §5 for
 * preemption): hardware and meter, the pool membership when the config has a
 * `pool` section, the Provider itself (quoting, running, its advert and
 * receipts), its presence publisher, and the direct protocols it serves
 * (exec/1, job-push/1, and the steward's preempt/1). Split out of overlay.ts:
 * it sets the overlay's `provider`, `poolMember` and `presencePublisher`.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Counter } from 'prom-client';
import { C0Error } from '../errors.js';
import { T, type Advert, type Job, type Offer, type Receipt } from '../records/kinds.js';
import { open, type Opened } from '../records/envelope.js';
import { boxKeyFromIdentitySeed } from '../crypto/sealed-box.js';
import { Provider, type ProviderDeps } from '../roles/provider/provider.js';
import { ProcessRegistry } from '../roles/provider/orphans.js';
import { recoverCrashedWork } from '../roles/provider/crash-recovery.js';
import { detectHardware, mergeHardware } from '../roles/provider/hardware.js';
import { createMeter } from '../roles/provider/meters.js';
import { PREEMPT_PROTOCOL, STEWARD_PROTOCOL } from '../roles/steward.js';
import { didFromPeerId, peerIdFromDid } from './peer-id.js';
import { EXEC_PROTOCOL, SEALED_OVERHEAD_BYTES } from '../roles/exec-protocol.js';
import { JOB_PUSH_LIMITS, JOB_PUSH_PROTOCOL, jobPushHandler } from './job-push.js';
import { QuoteBudget } from '../roles/provider/quote-budget.js';
import { liveInMarket, providerPresence } from './presence-wiring.js';
import { onStoreEvent, storeProblem, type Sub } from '../store/db.js';
import { roleSectionProblem } from './config.js';
import { startPoolMember } from '../roles/pool-member/wiring.js';
import { DispatchTrail, RunLog } from '../pools/trail.js';
import { createExecutor, type Executor, type ExecutorOptions } from '../roles/provider/executors.js';
import { offerToBuyer } from './offer-wiring.js';
import { PeerLog } from '../util/peer-log.js';
import { askFor, orderFromJob, rankAhead } from '../matching/candidates.js';
import type { LiveProvider } from '../matching/types.js';
import type { OverlayNode } from './overlay.js';
import { ProviderRuns } from '../store/provider-runs.js';
import { ReceiptDelivery, type ReceiptDeliveryDeps } from '../roles/provider/receipt-delivery.js';
import { OUTCOME_PROTOCOL } from '../net/offer-route.js';
import type { IdentifyResult } from '@libp2p/interface';
import { reconcileRunDirs, TrainRunDirs, type EndedLookup } from '../roles/trainer/run-dirs.js';
import { startHistoryPruning } from './history-prune.js';

/** What the provider wiring needs from the overlay beyond its public fields. */
export interface ProviderWiringHooks {
  /** Register a stop (run in reverse order of registration, before the network's). */
  onStop(stop: () => Promise<void>): void;
  /** Quote on a job heard (the overlay's: it also keeps the jobs quoted on); `invited`: its buyer pushed it here. */
  quote(job: Opened<Job>, opts?: { invited?: boolean }): Promise<Opened<Offer> | undefined>;
  /** Count a provider job by outcome (c0mpute_jobs_total). */
  countJob(outcome: string): void;
}

/**
 * A job took or freed a slot here (Provider's onSlotsChanged): the presence says so, and the claimer looks again at
 * once — a claim won is released when its exec starts, and with one buyer held to half the slots in claims not yet
 * started its next order waits for exactly that (before, for the claimer's next 500 ms tick: one buyer's batch of
 * short lines on a 2-slot provider ran about half as fast).
 */
export function slotsChanged(o: Pick<OverlayNode, 'presencePublisher' | 'orders'>): void {
  o.presencePublisher?.changed();
  o.orders?.claimer?.changed();
}

/**
 * The pool member's executor of each workload, built once here as the provider builds its own (Provider #executors):
 * the start check (an exec command must be an executable file) runs at start, not at every call, so a program that
 * goes away after start fails its runs EXEC_SPAWN_FAILED with the executor's warning, and the coordinator's quoting
 * (mayQuote asks for its own executor) goes on instead of throwing CONFIG_INVALID.
 */
export function poolExecutors(workloads: Record<string, { executor: Parameters<typeof createExecutor>[0] }>, log: NonNullable<ExecutorOptions['log']>): (workload: string) => Executor | undefined {
  const built = new Map(Object.entries(workloads).map(([w, c]) => [w, createExecutor(c.executor, { log })]));
  return (w) => built.get(w);
}

export async function setupProvider(o: OverlayNode, h: ProviderWiringHooks): Promise<void> {
  const { config, identity } = o.d;
  const pc = config.provider;
  const missing = roleSectionProblem('provider', config);
  if (missing || !pc) throw missing;
  const detected = await detectHardware({ nvidiaSmi: pc.detectGpus ? 'nvidia-smi' : false });
  const hardware = mergeHardware(detected, pc.hardware);
  const meter = createMeter({ type: pc.meter.type, estimatorWatts: pc.meter.estimatorWatts, ...(pc.meter.powercapRoot ? { powercapRoot: pc.meter.powercapRoot } : {}) });
  const seed = identity.signer.exportSeed();
  const box = boxKeyFromIdentitySeed(seed);
  seed.fill(0);
  const state = o.sub('provider');
  const { runs, processes, deliveryDeps, keepReceipt } = await openProviderState(o, h);
  await trainRunsHistory(o, runs, h);
  const quoteBudget = new QuoteBudget<Opened<Offer>>({ ...pc.quoteBudget, windowMs: pc.offerLifetimeMs, registry: o.registry, clock: o.clock });
  for (const r of o.market.evidence.receipts.values()) if (r.signer === o.did) quoteBudget.markKnownBuyer(r.record.buyer);
  // An offer its buyer (or the steward) did not take (offer-wiring.ts): a warning on a private overlay, where every
  // member should reach every other (docs/network.md §15); on the open network a buyer behind NAT is ordinary, and its
  // job push (§12) still asks this node halfway through the window: info there.
  const missedOffers = new PeerLog({ log: o.log.child({ role: 'provider', overlay: o.name }), level: o.d.network.swarmKeyFile ? 'warn' : 'info' });
  h.onStop(async () => missedOffers.stop());
  if (config.pool) {
    o.poolMember = await startPoolMember({
      config: config.pool, did: o.did, signer: identity.signer, clock: o.clock, log: o.log.child({ role: 'pool', overlay: o.name }), sub: (n) => o.sub(n), registry: o.registry,
      executor: poolExecutors(pc.workloads, o.log.child({ role: 'pool', overlay: o.name })), maxOutputBytes: pc.maxOutputBytes, net: o.net as never,
      workloads: Object.keys(pc.workloads).sort(),
      // the receipt the provider role stored (onReceipt below: the run entry, then the evidence store)
      ownReceipt: async (job) => {
        const at = await runs.receiptOf(job);
        const bytes = at === undefined ? undefined : await o.market.getBytes(at);
        return bytes ? open(bytes, T.receipt) : undefined;
      },
      // the receipts this node heard for a job (gossip on the job's market, or delivered to it as buyer)
      heardReceipts: (job) => o.market.evidence.receiptsOf(job),
      // kept, sent to the job's buyer directly (a default buyer joins no outcome topic) and gossiped
      publishReceipt: poolReceiptPublisher({ addEvidence: (r) => o.market.addEvidence(r), publish: (r) => o.net.publish('receipt', r.bytes), ...(deliveryDeps.deliver ? { deliver: deliveryDeps.deliver } : {}) }),
      slots: { take: (job) => o.provider?.takeSlot(job), give: (job) => o.provider?.giveSlot(job) },
      onRosterChanged: () => void o.provider?.publishAdvert().catch((e) => o.log.warn({ err: (e as Error).message }, 'pool: advert after a roster change failed')),
      ...(o.d.failpoint ? { failpoint: o.d.failpoint } : {}),
      keepDays: config.history.keepDays,
      clockSkewMs: o.d.network.clockSkewMs,
    });
    h.onStop(async () => o.poolMember?.stop());
  }
  o.provider = new Provider({
    ...deliveryDeps,
    ...(o.poolMember ? { pool: o.poolMember.hooks() } : {}),
    quoteBudget,
    signer: identity.signer,
    did: o.did,
    config: pc,
    // in a large market the advert lives longer (src/matching/advert-rate.ts)
    liveInMarket: liveInMarket(o, Object.keys(pc.workloads)),
    // Running exec process groups, ended on the next start after a crash (docs/node.md).
    processes,
    execHost: { signer: identity.signer, did: o.did, net: o.net, dir: join(o.d.dataDir, 'train'), abuse: o.abuseReports },
    hardware,
    meter,
    box,
    clock: o.clock,
    log: o.log.child({ role: 'provider', overlay: o.name }),
    eligibility: (job, advert, now) => o.market.providerEligibility(job, advert, now),
    // What ends a job's quoting here (docs/market.md "Jobs already decided"), the cheap reads first: a receipt this
    // node signed or the buyer's acceptance of one (reputation evidence, in memory), a receipt kept for a run here, a
    // selection by the buyer (or the overlay's steward) kept, and last the job itself kept: it was quoted on before
    // (a restart forgot the quote; anti-entropy brings the job again; records.ts putQuoted).
    held: async (job) => {
      const ev = o.market.evidence;
      for (const r of ev.receiptsOf(job.address)) {
        if (r.signer === o.did) return 'receipt';
        if (ev.acceptancesOf(r.address).some((a) => a.signer === job.signer)) return 'acceptance';
      }
      if (await runs.has(job.address)) return 'receipt';
      if ((await o.records.selectionsOf(job.address)).some((s) => s.signer === job.signer || (o.selectionAuthority?.(s.signer, job.signer) ?? false))) return 'selection';
      // a steward keeps every job asked for admission before it is published: held there, a job says nothing of a quote
      return !o.steward && (await o.records.has(job.address)) ? 'quoted' : undefined;
    },
    // Offers per job (docs/market.md "How many offers a job draws"). Not on an overlay with a steward, which selects
    // among every offer (pool/1), nor for a pool member, whose pool decides what it quotes.
    ...(o.d.network.steward || o.poolMember ? {} : { rankAhead: providersAhead(o) }),
    publish: async (kind, env, withAdvert, buyer) => {
      if (kind === 'advert') await o.market.putAdvert(env as Opened<Advert>);
      if (kind === 'offer') await o.market.addOffer(env as Opened<Offer>, o.clock());
      // An offer goes to its buyer (and the overlay's steward) only, not on gossip (src/net/offer-route.ts).
      if (kind === 'offer') return offerToBuyer(o.net, env, withAdvert, buyer, o.d.network.steward, o.log, missedOffers);
      try {
        return (await o.net.publish(kind, env.bytes, withAdvert ? [withAdvert.bytes] : [])).recipients;
      } catch (e) {
        // No peers yet is not an error for a provider: it retries, and the advert is served on sync.
        o.log.debug({ kind, err: (e as Error).message }, 'publish reached no peer');
        return 0;
      }
    },
    state: {
      loadSeq: async () => {
        const v = await state.get('seq');
        return v ? Number(Buffer.from(v).toString()) : 0;
      },
      saveSeq: async (seq) => {
        await state.batch([{ type: 'put', key: 'seq', value: new TextEncoder().encode(String(seq)) }], { sync: true } as never);
      },
      hasReceiptFor: (job) => runs.has(job),
      saveBar: (job, code, until) => runs.bar(job, code, until),
      barOf: (job) => runs.barOf(job),
      noteRun: (n, until) => runs.note(n, until),
      dropNote: (job) => runs.dropNote(job),
      notes: () => runs.notes(),
    },
    onReceipt: keepReceiptHere(o, keepReceipt),
    onOutcome: (status) => h.countJob(status),
    // an invalid exec request costs its sender abuse points, as invalid records sent directly do (docs/network.md §10)
    strike: o.abuseReports.invalid,
    ...(o.selectionAuthority ? { selectionAuthority: o.selectionAuthority } : {}),
    // pool/1: on an overlay with a steward, only admitted work runs here (src/roles/provider/admission-proof.ts). The
    // buyer's proof admits only a single job's own claim; a gang member job's (and a job whose buyer, one before this
    // version, sends none) comes from the steward, asked for this job (bounded: the exec's request phase).
    ...(o.d.network.steward ? { steward: { did: o.d.network.steward, admissionOf: stewardAdmission(o, o.d.network.steward, pc.execRequestMs) } } : {}),
    onSlotsChanged: () => slotsChanged(o),
    storeProblem: () => storeProblem(o.d.db),
  });
  h.onStop(() => o.provider!.stop());
  o.presencePublisher = providerPresence(o, pc, identity.signer);
  // while the store takes no writes the presence says no slot is free (nothing is quoted or run meanwhile), and says
  // so at once; again when it is reopened
  for (const ev of ['poisoned', 'recovered'] as const) {
    const off = onStoreEvent(o.d.db, ev, () => o.presencePublisher?.changed());
    h.onStop(async () => off());
  }
  h.onStop(async () => o.presencePublisher?.stop());
  // exec/1 streams its input and output in chunks; the stream starts with the request phase's deadline
  // and may hold one sealed input plus a frame (docs/network.md "Direct streams: limits and framing").
  await o.net.handleStream(
    EXEC_PROTOCOL,
    (ctx) => o.provider!.handleExec({ next: ctx.next, send: (f) => ctx.send(f as never), signal: ctx.signal, reserve: ctx.reserve, setDeadline: ctx.setDeadline, callerEnded: ctx.callerEnded, peer: ctx.peer.toString() }),
    { deadlineMs: pc.execRequestMs, maxStreamBytes: pc.maxInputBytes + SEALED_OVERHEAD_BYTES + 1024 * 1024 },
  );
  await o.net.handle(
    JOB_PUSH_PROTOCOL,
    jobPushHandler({
      clock: o.clock,
      skewMs: o.d.network.clockSkewMs,
      quote: (job) => h.quote(job, { invited: true }),
      advert: (a) => o.market.adverts.get(a),
      // a pool member that is not its pool's elected coordinator does not quote: it names the one that does
      redirect: () => {
        const c = o.poolMember?.elected().coordinator;
        return c && c !== o.did ? c : undefined;
      },
      abuse: o.abuseReports,
    }),
    JOB_PUSH_LIMITS,
  );
  // Only this overlay's steward may stop work it admitted (pool/1 §5); the connection's key says who asks.
  const stewardDid = o.d.network.steward;
  if (stewardDid) {
    const stewardPeer = peerIdFromDid(stewardDid).toString();
    await o.net.handle(
      PREEMPT_PROTOCOL,
      async (frames, ctx) => {
        const req = frames[0] as { op?: unknown; job?: unknown; reason?: unknown; deadline?: unknown };
        if (typeof req?.job !== 'string') throw new C0Error('PREEMPT_BAD_REQUEST', 'job address required');
        if (req.op === 'usage') {
          // The steward's idle check (pool/1 §2.7): energy so far, with its grade.
          const u = o.provider!.usage(req.job);
          await ctx.send((u ?? { running: 'no' }) as never);
          return;
        }
        const receipt = await o.provider!.preempt(req.job, req.reason === 'idle' ? 'idle' : 'priority', typeof req.deadline === 'number' ? req.deadline : undefined);
        // Not running here: the job is barred (its exec is refused EXEC_PREEMPTED), so the steward may release its claim.
        // A steward before `barred` reads only `receipt` and releases nothing, as it did on `stopped: 'no'`.
        await ctx.send((receipt ? { stopped: 'yes', receipt: receipt.bytes } : { stopped: 'no', barred: 'yes' }) as never);
      },
      undefined,
      // any other key is refused before its request is read
      { admit: (peer) => (peer.toString() === stewardPeer ? undefined : new C0Error('PREEMPT_UNAUTHORISED', 'only the overlay’s steward may preempt work')) },
    );
  }
}

/** Where this overlay's running `exec` process groups are recorded (orphans.ts; docs/node.md "Orphaned work after a crash"). */
function processRegistry(o: OverlayNode): ProcessRegistry {
  return new ProcessRegistry(join(o.d.dataDir, 'exec-groups', encodeURIComponent(o.name)));
}

/**
 * The provider's stored state on this overlay, opened (the provider role's, and what a node without it still owes:
 * `providerLeftovers`): the runs store (dropped with the job history: `o.providerRuns`), the exec group records, and
 * the receipt delivery kept in the runs store, sending a waiting receipt again each time its buyer connects, until
 * the node stops.
 */
async function openProviderState(o: OverlayNode, h: Pick<ProviderWiringHooks, 'onStop'>): Promise<{ runs: ProviderRuns; processes: ProcessRegistry; deliveryDeps: Pick<ProviderDeps, 'deliver' | 'acknowledged' | 'resumeDelivery'>; keepReceipt(r: Opened<Receipt>, until: number): Promise<void> }> {
  const runs = await ProviderRuns.open(o.d.db, o.sub('provider-runs'), o.clock());
  o.providerRuns = runs;
  // Receipts the exec stream could not deliver go to their buyer directly, and again when it connects (receipt-delivery.ts).
  const { delivery, deps: deliveryDeps, keepReceipt } = await receiptDeliveryOn(runs, {
    send: async (buyer, r) => {
      const sent = await o.net.sendOutcome('receipt', [buyer], r.bytes);
      const code = sent.codes?.[buyer];
      return { outcome: sent.outcomes[buyer] ?? 'unreachable', ...(code !== undefined ? { code } : {}) };
    },
    clock: o.clock,
    log: o.log.child({ role: 'provider', overlay: o.name }),
    self: o.did,
  });
  const onIdentify = (evt: CustomEvent<IdentifyResult>): void => {
    if (!delivery.size || !evt.detail.protocols.includes(OUTCOME_PROTOCOL)) return;
    try {
      delivery.onConnected(didFromPeerId(evt.detail.peerId));
    } catch {
      // not an Ed25519 peer: no buyer
    }
  };
  o.net.libp2p.addEventListener('peer:identify', onIdentify);
  h.onStop(async () => {
    o.net.libp2p.removeEventListener('peer:identify', onIdentify);
    delivery.stop();
  });
  return { runs, processes: processRegistry(o), deliveryDeps, keepReceipt };
}

/**
 * Keep a receipt this node signed as a provider (Provider's `onReceipt`, and the crash recovery's `keep`): the job it
 * ran, the receipt with its wait for the buyer, and the evidence.
 */
function keepReceiptHere(o: OverlayNode, keepReceipt: (r: Opened<Receipt>, until: number) => Promise<void>): ProviderDeps['onReceipt'] {
  return async (r, offer, job) => {
    // The job it ran leaves the bounded set of jobs quoted on (records.ts putQuoted): it is this node's history now.
    // First, so a stop cut short in between cannot leave it there: once the receipt is recorded below, no restart
    // comes back here (hasReceiptFor), and a later flood would evict the job of a receipt this node signed. Only
    // history: delivery needs neither write (exec carries the job), so a failure is logged and the receipt goes.
    // It does not wait behind the quoted jobs pending: a promotion waits for one group commit at most (#putJobs).
    await o.records.put(job).catch((e: unknown) => o.log.warn({ job: job.address, err: (e as Error).message }, 'could not keep the job that ran'));
    // kept while the job could still be asked to run (until its deadline), then as long as the history; synced
    // before the buyer gets the receipt (nothing acknowledged is lost: a restart must not run the job again)
    await keepReceipt(r, Math.max(job.record.deadline, r.record.completedAt));
    await o.market.addEvidence(r, offer);
  };
}

/**
 * The run directories the provider's training member jobs leave under `<data dir>/train` (src/roles/trainer/run-dirs.ts;
 * docs/training.md "A provider's run directories"), at its start, before its crash recovery runs:
 *
 * - each run a crash or kill left (status.json still `training`) is ended now, with what its job's receipt says: the
 *   receipt kept for the job of a run note left (the job's input hash is the run directory's), else
 *   EXEC_PROVIDER_CRASHED, which the crash recovery that follows signs for that note; else a failed receipt this
 *   provider signed for that input (an earlier start's); else TRAIN_INTERRUPTED;
 * - the finished runs are dropped with the job history, history.keepDays past their end (a pass of their own, as
 *   history-prune.ts runs the stores': 2 s after start, then every 10 minutes; counted in
 *   c0mpute_history_pruned_total). Before, they stayed for good (about 88 KiB and 16 files for a 10-step run).
 */
export async function trainRunsHistory(o: OverlayNode, runs: ProviderRuns, h: Pick<ProviderWiringHooks, 'onStop'>): Promise<void> {
  const root = join(o.d.dataDir, 'train');
  const log = o.log.child({ role: 'provider', overlay: o.name });
  if (existsSync(root)) {
    const ended = await interruptedRunEnds(runs, (at) => o.market.getBytes(at), () => o.market.evidence.receiptsAbout(o.did));
    reconcileRunDirs(root, { now: o.clock(), log, ended });
  }
  const keepDays = o.d.config.history.keepDays;
  if (keepDays <= 0) return;
  const p = startHistoryPruning({
    stores: [new TrainRunDirs(root, o.clock)],
    keepDays,
    clock: o.clock,
    log,
    onPruned: (n) => (o.registry.getSingleMetric('c0mpute_history_pruned_total') as Counter | undefined)?.inc(n),
  });
  h.onStop(() => p.stop());
}

/** The words of the EXEC_PROVIDER_CRASHED receipt the crash recovery signs for a run note (crash-recovery.ts failCrashedRuns). */
const CRASHED_RUN_MESSAGE = 'the provider stopped while the work ran; it ended with the process';

/**
 * How the job of a training run a crash left ended, by the job's input hash (the run directory's mark), at the
 * provider's start before its crash recovery: for a run note left, the receipt kept for its job, else
 * EXEC_PROVIDER_CRASHED with the words the crash recovery signs it with (crash-recovery.ts failCrashedRuns); else a
 * failed receipt this provider signed for that input (`signed`: an earlier start's); else undefined.
 */
export async function interruptedRunEnds(
  runs: Pick<ProviderRuns, 'notes' | 'receiptOf'>,
  receiptBytes: (address: string) => Promise<Uint8Array | undefined>,
  signed: () => Iterable<Opened<Receipt>>,
): Promise<EndedLookup> {
  const byInput = new Map<string, { code: string; message: string; job: string }>();
  for (const n of await runs.notes().catch(() => [])) {
    try {
      const job = open(n.jobEnvelope, T.job, { trusted: true });
      const at = await runs.receiptOf(n.job);
      const bytes = at === undefined ? undefined : await receiptBytes(at);
      const kept = bytes ? open(bytes, T.receipt, { trusted: true }).record : undefined;
      // none kept: the crash recovery that follows signs it
      const failure = kept ? kept.failure : { code: 'EXEC_PROVIDER_CRASHED', message: CRASHED_RUN_MESSAGE };
      if (failure) byInput.set(job.record.input.hash, { code: failure.code, message: failure.message, job: n.job });
    } catch {
      // a note that does not open: the crash recovery drops it, and its run is TRAIN_INTERRUPTED
    }
  }
  let held: Map<string, Opened<Receipt>> | undefined;
  return (hash) => {
    const noted = byInput.get(hash);
    if (noted) return noted;
    held ??= new Map([...signed()].flatMap((r) => (r.record.failure ? [[r.record.inputHash, r] as const] : [])));
    const r = held.get(hash);
    return r?.record.failure ? { code: r.record.failure.code, message: r.record.failure.message, job: r.record.job } : undefined;
  };
}

/** Where a receipt a pool member signs outside an exec stream goes (poolReceiptPublisher). */
export interface PoolReceiptPaths {
  /** Keep it in the evidence store. */
  addEvidence(r: Opened<Receipt>): Promise<unknown>;
  /** Gossip it (no peers is not an error). */
  publish(r: Opened<Receipt>): Promise<unknown>;
  /** Send it to the job's buyer directly, now and when it connects, kept across a restart (the provider's receipt delivery); not awaited. */
  deliver?(r: Opened<Receipt>): void;
}

/**
 * The pool member's `publishReceipt` (src/roles/pool-member/member.ts): what is done with a receipt this member signed
 * outside an exec stream, the POOL_COORDINATOR_LOST receipt closing a silent coordinator's dispatch: kept as evidence,
 * sent to the job's buyer directly (receipt-delivery.ts: at once, again each time it connects, kept on disk until it
 * answers or lapses), and gossiped. The buyer takes it as its own evidence although another member than the one it
 * selected signed it (src/node/late-receipts.ts: the receipt's chain proves that member of the selected pool). Before,
 * it was only gossiped: a buyer with the default `network.outcomes: auto` joins no receipt topic, so it never held the
 * job's outcome (docs/pools.md "A coordinator that crashes").
 */
export function poolReceiptPublisher(d: PoolReceiptPaths): (r: Opened<Receipt>) => Promise<void> {
  return async (r) => {
    await d.addEvidence(r);
    d.deliver?.(r);
    await d.publish(r).catch(() => undefined);
  };
}

/** Whether a sublevel holds any entry besides `except` (its own markers). */
async function holdsAny(db: Sub, except: readonly string[]): Promise<boolean> {
  for await (const key of db.keys({ limit: except.length + 1 })) if (!except.includes(key)) return true;
  return false;
}

/**
 * What a node owes for provider work of an earlier run on an overlay where the provider role is no longer configured
 * (docs/node.md "Changing roles"): when the provider's store holds anything (run notes, receipts waiting for their
 * buyer, run history) or exec group records are left, the same recovery as the role's start (crash-recovery.ts: the
 * groups are ended, EXEC_PROVIDER_CRASHED signed for each run a crash left, receipts kept untried are sent and
 * gossiped), the receipt delivery kept running (each waiting receipt sent when its buyer connects, until it is
 * answered or lapses), and the store pruned with the job history (`o.providerRuns`). Nothing of the market side:
 * no advert, presence, quote, claim or exec. Undefined when nothing is stored; else `recover` runs once the network
 * is up.
 */
export async function providerLeftovers(o: OverlayNode, h: Pick<ProviderWiringHooks, 'onStop' | 'countJob'>): Promise<{ recover(): Promise<void> } | undefined> {
  const groups = processRegistry(o).list().length;
  const stored = await holdsAny(o.sub('provider-runs'), ['~indexed']);
  if (!groups && !stored) return undefined;
  const { runs, processes, deliveryDeps, keepReceipt } = await openProviderState(o, h);
  const log = o.log.child({ role: 'provider', overlay: o.name });
  const [notes, waiting] = await Promise.all([runs.notes(), runs.waitingReceipts()]);
  if (groups || notes.length || waiting.length) {
    log.warn({ execGroups: groups, runNotes: notes.length, waitingReceipts: waiting.length }, 'the provider role is not configured on this overlay, but an earlier run left provider work here: it is recovered (crashed work ended and its failed receipts signed, waiting receipts delivered); nothing is advertised, quoted or run');
  }
  return {
    recover: () =>
      recoverCrashedWork({
        signer: o.d.identity.signer,
        did: o.did,
        clock: o.clock,
        log,
        state: { hasReceiptFor: (job) => runs.has(job), notes: () => runs.notes(), dropNote: (job) => runs.dropNote(job) },
        processes,
        keep: keepReceiptHere(o, keepReceipt),
        publish: (r) => o.net.publish('receipt', r.bytes),
        ...(deliveryDeps.deliver ? { deliver: deliveryDeps.deliver } : {}),
        ...(deliveryDeps.resumeDelivery ? { resumeDelivery: deliveryDeps.resumeDelivery } : {}),
        onOutcome: (status) => h.countJob(status),
      }),
  };
}

/**
 * A pool member's job history (its dispatch trail and run log: src/pools/trail.ts, the sublevels startPoolMember
 * opens) on an overlay where the node runs no pool member now (no `pool` section, or no provider role): still
 * dropped with the job history (docs/node.md "Changing roles"), so what is left of an earlier membership does not
 * stay for good. Nothing is recovered here: closing a dispatch needs the pool (its roster, its members), and the
 * other members close a silent coordinator's dispatches from their copies (docs/pools.md). Empty when neither holds
 * anything.
 */
export async function poolHistoryLeftovers(o: OverlayNode): Promise<Array<DispatchTrail | RunLog>> {
  const [trail, runLog] = [o.sub('pool-trail'), o.sub('pool-runs')];
  const out: Array<DispatchTrail | RunLog> = [];
  if (await holdsAny(trail, ['~indexed'])) out.push(await DispatchTrail.open(trail, o.clock, o.log.child({ role: 'pool', overlay: o.name })));
  if (await holdsAny(runLog, ['~indexed'])) out.push(await RunLog.open(runLog));
  return out;
}

/**
 * The provider's receipt delivery kept in its runs store (docs/node.md "A receipt the buyer did not get on the
 * stream"): the waits kept before a restart restored; `keepReceipt` records a receipt signed here (ProviderRuns.record)
 * with its wait for the buyer in the same synced batch, marked untried, so a provider killed before its buyer
 * acknowledged the receipt on the stream sends it at the next start (ReceiptDelivery.resume, from Provider.start: sent
 * and gossiped once the network is up); `deps` are the Provider's hooks into it.
 */
export async function receiptDeliveryOn(runs: ProviderRuns, d: Omit<ReceiptDeliveryDeps, 'keep'>): Promise<{ delivery: ReceiptDelivery; deps: Pick<ProviderDeps, 'deliver' | 'acknowledged' | 'resumeDelivery'>; keepReceipt(r: Opened<Receipt>, until: number): Promise<void> }> {
  const delivery = new ReceiptDelivery({
    ...d,
    // kept on disk, so a provider restarted before its buyer returns still sends them
    keep: {
      save: (r, until, untried) => runs.awaitDelivery({ address: r.address, bytes: r.bytes, until, ...(untried ? { untried } : {}) }),
      drop: (address) => runs.delivered(address),
    },
  });
  for (const w of await runs.waitingReceipts()) {
    try {
      delivery.restore(open(w.bytes, T.receipt), w.until, w.untried === true);
    } catch {
      await runs.delivered(w.address);
    }
  }
  return {
    delivery,
    deps: { deliver: (r) => void delivery.deliver(r), acknowledged: (r) => delivery.acknowledged(r), resumeDelivery: () => delivery.resume() },
    // its wait for the buyer goes in the receipt's own batch (no write of its own); the buyer's acknowledgement drops
    // it with an unsynced delete
    keepReceipt: (r, until) => runs.record(r.record.job, r.address, until, delivery.entry(r)),
  };
}

/** Ask the steward for its `Admitted` entry of a job's claim (`/c0mpute/steward/1` op `admission`); undefined when it has none. */
function stewardAdmission(o: OverlayNode, steward: string, requestMs: number): (job: Opened<Job>) => Promise<Uint8Array | undefined> {
  return async (job) => {
    const frames = await o.net.request(steward, STEWARD_PROTOCOL, [{ op: 'admission', job: job.address } as never], { limits: { deadlineMs: Math.max(1000, Math.min(10_000, requestMs / 2)) } });
    const f = frames[0] as { entry?: unknown } | undefined;
    return f?.entry instanceof Uint8Array ? f.entry : undefined;
  };
}

/**
 * How many live providers in this node's view rank before it for a job on
 * price (`rankAhead`: asking less, or as much and first by tieKey), up to
 * `limit`; 0 when its own advert has no ask to compare. The live list is
 * rebuilt at most once a second: a market's jobs arrive many a second, and
 * building it (every held presence, pruned and sorted) costs more than the
 * walk.
 */
function providersAhead(o: OverlayNode): (job: Opened<Job>, advert: Opened<Advert>, limit: number, now: number) => number {
  let live: { at: number; list: LiveProvider[] } | undefined;
  return (job, advert, limit, now) => {
    const mine = askFor(advert.record, orderFromJob(job));
    if (!mine.ok) return 0;
    if (!live || now - live.at >= 1000 || now < live.at) live = { at: now, list: o.liveProviders(now) };
    return rankAhead({ job, live: live.list, held: o.heldByProvider(), self: advert.signer, cost: mine.cost.amount, limit, now, skewMs: o.d.network.clockSkewMs });
  };
}
