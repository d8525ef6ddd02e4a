/**
 * The steward's physical capacity and reclamation (pool/1 §2.7, §5): the
 * overlay's devices from its providers' live adverts, the verdict a claim gets
 * with capacity included (preempting lower-priority claims in the §5.2 order,
 * src/roles/steward-preempt.ts, or queueing DEVICES_HELD), the running
 * attempts' usage sampled over `/c0mpute/preempt/1`, the stop requests sent
 * to preempted providers, and idle reclamation under a configured policy
 * (src/pool/idle.ts). Part of src/roles/steward.ts.
 */
import { C0Error } from '../errors.js';
import { open, type Opened } from '../records/envelope.js';
import type { CborValue } from '../records/cbor.js';
import { T, type Advert, type Energy, type Selection } from '../records/kinds.js';
import { chainOf } from '../pools/chain.js';
import { admittedEvent, type Claim, type PoolState, type Verdict } from '../pool/admission.js';
import type { Tree } from '../pool/tree.js';
import { isGrade, worseGrade } from '../pool/grades.js';
import { idleVerdict, reclamationOrder, type IdleObservation, type IdleVerdict } from '../pool/idle.js';
import type { Ledger } from '../ledger/store.js';
import { chooseVictims, runningWorkloads, type PreemptInputs } from './steward-preempt.js';
import { backingOff, MAX_ASKED_PER_CLAIM, MAX_PENDING_SELECTIONS, noteFetched, type ClaimAccounts, type FetchBackoff, type ReclaimedNote, type StopMark } from './steward-accounts.js';
import { namedProvider } from './steward-winners.js';
import { MAX_DEVICES_PER_PROVIDER, PREEMPT_PROTOCOL, type StewardConfig, type StewardPorts } from './steward-ports.js';
import { monotonicClock } from '../util/clock.js';
import { setLongTimeout, type LongTimer } from '../util/timers.js';
import type { OpenClaim } from '../pool/usage.js';
import type { TopicKind } from '../net/topics.js';

/** How many (provider, reason) pairs of adverts left out of capacity or capped are remembered as logged (Reclaimer.capacity). */
const CAPACITY_NOTES_MAX = 10_000;

/**
 * A provider seen connected to the steward still counts in its capacity this long after it was last seen so (a
 * dropped connection being redialled with back-off, a steward with more members than it keeps connections to);
 * an advert's own lifetime (10 min) ends it sooner. Measured on the monotonic clock (StewardPorts.monoClock): a
 * wall clock stepped back would otherwise keep a gone provider counted, and one stepped forward drop a present one.
 */
export const CONNECTED_GRACE_MS = 10 * 60_000;

/** How many reclaimed claims the steward remembers (Reclaimer.onSelection). */
const RECLAIMED_MAX = 4096;

/**
 * How many stop requests to reclaimed claims' failovers' providers may be in flight at once over the whole steward
 * (one per buyer; Reclaimer.onSelection). Their own bound: they do not take the accounts' background fetch slots.
 */
export const MAX_RECLAIM_STOPS = 4;

/**
 * How long a failover's provider is given to answer a stop. It bars the job (or stops it) whether or not its answer
 * comes back in time (the steward does not wait on that answer: the claim was released already), so one that does
 * not answer within this is taken as unreachable and the next waiting stop goes out.
 */
export const RECLAIM_STOP_DEADLINE_MS = 5_000;

/**
 * How soon the line is decided again for a claim that a preemption left `DEVICES_HELD` because a victim's `stop` got
 * no answer (its provider was not reached: a half-open link its connection monitor aborted, a dial that failed):
 * Reclaimer.#retryStops. The wait doubles after each try, up to STOP_RETRY_MAX_MS, while such a claim waits in line.
 */
export const STOP_RETRY_FIRST_MS = 2_000;
export const STOP_RETRY_MAX_MS = 30_000;

/**
 * How long a provider whose `stop` got no answer is given to answer the `usage` question that tells whether it is
 * reached again (Reclaimer.#reached), before a try decides the line again.
 */
export const STOP_PROBE_MS = 10_000;

/** Whether a failed request was answered (the peer's error frame) rather than left with no answer at all. */
function answered(e: unknown): boolean {
  return e instanceof C0Error && e.detail?.remote === true;
}

export type Decided = { v: Verdict; victims: string[] };

/**
 * What is kept on disk of reclaimed claim entry `r` (ClaimStore `x/`): who was asked, who waits to be, and whose stop
 * is going out (asked again after a restart: it may never have got there).
 */
function noteOf(r: Reclaimed): ReclaimedNote {
  return { reason: r.reason, buyer: r.buyer, deadline: r.deadline, asked: [...r.asked], ...(r.stops?.size ? { waiting: [...r.stops.keys()] } : {}), ...(r.sending ? { sending: r.sending } : {}) };
}

/**
 * Add `provider` to a reclaimed claim's providers asked, within MAX_ASKED_PER_CLAIM: past it the oldest after the
 * first (the provider the claim was reclaimed from) goes. Answers the providers pushed out.
 */
function addAsked(asked: Set<string>, provider: string): string[] {
  asked.add(provider);
  const out: string[] = [];
  while (asked.size > MAX_ASKED_PER_CLAIM) {
    const second = [...asked][1]!;
    asked.delete(second);
    out.push(second);
  }
  return out;
}

/** Set `key` in `m` as its newest entry, the oldest dropped past MAX_PENDING_SELECTIONS. */
function newest<V>(m: Map<string, V>, key: string, value: V): void {
  m.delete(key); // re-set below: the newest is kept
  while (m.size >= MAX_PENDING_SELECTIONS) m.delete(m.keys().next().value!);
  m.set(key, value);
}

/**
 * A claim the steward asked a provider to stop, remembered from before the `stop` is sent until the claim's deadline
 * (at most RECLAIMED_MAX): a receipt coded EXEC_PREEMPTED or EXEC_IDLE_RECLAIMED releases a claim as reclaimed only
 * from a provider asked here (stopAsked; the receipt can reach the steward by gossip before the provider's answer),
 * and the claim's buyer is told it was reclaimed from the provider it names (reclaimedAs, stopAsked: the `reclaimed`
 * op). Once a provider's answer freed the devices (stopped, or barred there: `freed`), a later selection its buyer
 * signs has its provider asked to stop too (Reclaimer.onSelection), in the accounts' background slots: `stops`, the
 * providers found from offers the steward holds, and `pending`, the selections whose winning offer it does not hold,
 * to fetch (each at most MAX_PENDING_SELECTIONS, newest kept); the FetchBackoff fields are the backoff of that claim's
 * fetches. While the claim is open, each provider asked is kept on disk as well (a stop mark in the claims store,
 * written and synced before the `stop` goes out: ClaimAccounts.keepStopMark), and given back at the start
 * (restoreAsked); once the claim's `Released` is appended the marks go from disk with its other entries, the
 * providers asked staying in its reclaimed note (`x/`, rewritten before a stop to a provider asked after the release
 * goes out), and the entry here lasts, in memory, until the deadline.
 */
interface Reclaimed extends FetchBackoff {
  buyer: string;
  deadline: number;
  reason: 'priority' | 'idle';
  /**
   * The providers asked to stop it already, oldest first: at most MAX_ASKED_PER_CLAIM, the first (the provider it was
   * reclaimed from) and the newest after it (addAsked).
   */
  asked: Set<string>;
  /**
   * A provider's answer freed its devices (a stop receipt, or `barred`). Until then (and for good when the request
   * failed: the provider may have stopped all the same, its receipt still releases the claim) it was only asked.
   */
  freed: boolean;
  pending?: Map<string, Opened<Selection>>;
  /**
   * Failovers' providers found (their winning offers held, or fetched) and not asked yet, keyed and valued by DID:
   * asked one per turn of the claim in the stop line (Reclaimer.#pumpStops), newest first (at most
   * MAX_PENDING_SELECTIONS, newest kept). Kept on disk too while they wait, in the claim's reclaimed note (`waiting`:
   * #waitToStop), and given back at the start (restoreAsked).
   */
  stops?: Map<string, string>;
  /** One of `stops` is being asked now: the claim goes back in the stop line (at its end) once it is answered. */
  stopping?: boolean;
  /**
   * The provider (one of `asked`) whose stop is going out, until the request settles (answered, failed or timed out):
   * written so in the note before the stop is sent (`sending`), so a steward killed or restarted before it settles asks
   * it again at the start (restoreAsked). It counts as asked meanwhile (stopAsked): the steward did ask it.
   */
  sending?: string;
}

/**
 * The code an `Admitted` append is refused with when the decision no longer holds on the book it would land on (a
 * `Released` queued ahead of it moved the usage: appendAdmitted). Caught there and decided again; never answered.
 */
export const DECISION_STALE = 'STEWARD_DECISION_STALE';

/** How many times appendAdmitted decides again after a stale decision before it gives up (each needs a release to land in between). */
const STALE_TRIES = 8;

/** What appendAdmitted came to: the `Admitted` entry appended, or the verdict the claim got instead (nothing appended). */
export type AdmitOutcome = { admit: Verdict & { verdict: 'Admit' }; seq: number; address: string } | { v: Exclude<Verdict, { verdict: 'Admit' }> };

/** The verdict of a claim that fits the book but whose devices are held by other work (§4.5 `DEVICES_HELD`). */
function devicesHeld(claim: Claim, v: Verdict): Verdict & { verdict: 'Queue' } {
  return { verdict: 'Queue', claim: v.claim, entitlement: v.entitlement, reason: 'DEVICES_HELD', reasons: ['DEVICES_HELD'], estimate: claim.estimate, devices: v.devices };
}

/**
 * Append a claim decided `Admit` (pool/1 §4, §5.2), for a job or a gang, inside
 * the steward's admission section: when the decision names victims, ask their
 * providers what they have spent, decide again (a release meanwhile may have
 * changed the verdict: anything but `Admit` is answered as it is), preempt the
 * victims still named, then decide once more, and append the one `Admitted`
 * entry only if that last decision admits with no device still held by other
 * work (a victim stopped, or barred by a provider that was not running it,
 * is released by then: Reclaimer.preempt). Otherwise nothing is appended and
 * the verdict is returned (a preemption that freed nothing: `Queue`,
 * `DEVICES_HELD`); the caller queues or refuses it.
 *
 * A `Released` is appended outside the admission section (a receipt, a
 * withdraw, a deadline), and the book takes an entry only once its synced
 * write is done: one on its way to disk is not in the book the decision read,
 * yet is sealed ahead of the `Admitted`. So the append re-checks the decision
 * right before sealing, on the book it lands on (Reclaimer.stillAdmits, the
 * ledger's append precondition): if that book gives another verdict or other
 * figures (an overrun's release raised the usage: pool/1 §3, §4.4), nothing is
 * appended, the claim is decided again, and that verdict stands (appended if
 * it admits).
 */
export async function appendAdmitted(d: { reclaim: Reclaimer; append: Ledger['append'] }, claim: Claim, decided: Decided): Promise<AdmitOutcome> {
  let { v, victims } = decided;
  if (v.verdict !== 'Admit') return { v };
  if (victims.length) {
    await d.reclaim.sampleRunning();
    ({ v, victims } = d.reclaim.decideNow(claim));
    if (v.verdict !== 'Admit') return { v };
    if (victims.length) {
      await d.reclaim.preempt(victims, claim.id);
      // The victims' releases (their stop receipts) are in the book now, or they did not stop: decide on what is there.
      ({ v, victims } = d.reclaim.decideNow(claim));
      if (v.verdict !== 'Admit') return { v };
      if (victims.length) return { v: devicesHeld(claim, v) };
    }
  }
  for (let tries = 1; ; tries++) {
    const admit = v;
    try {
      const r = await d.append(admittedEvent(claim, admit), {
        precondition: () => {
          if (!d.reclaim.stillAdmits(claim, admit)) throw new C0Error(DECISION_STALE, 'the book changed under the decision (a release landed first): decided again');
        },
      });
      return { admit, seq: r.seq, address: r.address };
    } catch (e) {
      if (!(e instanceof C0Error) || e.code !== DECISION_STALE || tries >= STALE_TRIES) throw e;
    }
    ({ v, victims } = d.reclaim.decideNow(claim));
    if (v.verdict !== 'Admit') return { v };
    if (victims.length) return { v: devicesHeld(claim, v) };
  }
}

/** Whether `pool` (its book as it is now) still admits `claim` with the figures of the earlier verdict `admit` (Reclaimer.stillAdmits). */
export function stillAdmits(pool: Pick<PoolState, 'decide'>, claim: Claim, admit: Verdict & { verdict: 'Admit' }): boolean {
  const v = pool.decide(claim);
  return v.verdict === 'Admit' && v.borrowed_uj === admit.borrowed_uj && v.devices === admit.devices && v.reserved.uj === admit.reserved.uj && v.reserved.grade === admit.reserved.grade;
}

interface UsageSample {
  uj: number;
  grade: Energy['grade'];
  elapsedMs: number;
}

/**
 * One attempt's idle samples. Every figure of a `usage` answer is the running
 * attempt's own (its energy and elapsed time count from its start), so samples
 * are only ever compared within one attempt: `attempt` is the provider and the
 * attempt's start as it reports it (`startedAt`; a provider that does not send
 * it is told apart by its figures going backwards).
 */
interface AttemptSamples {
  attempt: string;
  samples: IdleSample[];
}

/** A usage sample as kept for the idle check, with when its answer came (`at`, this steward's monotonic clock). */
interface IdleSample extends UsageSample {
  at: number;
}

/**
 * How long one attempt ran between two of its samples: the provider's `elapsedMs` difference, at most what this
 * steward's monotonic clock saw pass between the two answers. A provider of this version times `elapsedMs` on its
 * monotonic clock; one before it counted its wall clock, which a step forward (inside the 30 s skew window) stretches,
 * reading a job drawing 20 W as 3 W over the window. The cap only ever shortens the time the energy is divided by (a
 * higher rate, or too short a window for a verdict), so it can keep work from being reclaimed, never reclaim it; it
 * does not catch a provider that under-reports its time to look busy (it could as well over-report its energy: the
 * figures are the provider's word, pool/1 §8).
 */
function between(a: IdleSample, b: IdleSample): number {
  return Math.max(0, Math.min(b.elapsedMs - a.elapsedMs, Math.floor(b.at - a.at)));
}

/** A usage answer's figures for the idle check, or undefined when any is missing or malformed. */
function idleSample(f: unknown): (UsageSample & { startedAt?: number }) | undefined {
  const u = f as { uj?: unknown; grade?: unknown; elapsedMs?: unknown; startedAt?: unknown } | undefined;
  const count = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
  if (!count(u?.uj) || !count(u.elapsedMs) || !isGrade(u.grade)) return undefined;
  return { uj: u.uj, grade: u.grade, elapsedMs: u.elapsedMs, ...(typeof u.startedAt === 'number' && Number.isSafeInteger(u.startedAt) ? { startedAt: u.startedAt } : {}) };
}

export interface ReclaimDeps {
  ports: StewardPorts;
  ledger: Ledger;
  tree: Tree;
  pool: PoolState;
  cfg: StewardConfig;
  did: string;
  accounts: ClaimAccounts;
  stopped: () => boolean;
  /**
   * The admission line (src/roles/steward-admission.ts): the claims in it whose buyer waits on its stream, and a pass
   * over it. Absent (a Reclaimer on its own), a preemption whose stop got no answer is not tried again.
   */
  line?: { waiting(): ReadonlySet<string>; retry(): void };
}

/**
 * The devices an advert stands for: its GPUs, or one machine slot without any. A pool member's advert declares the
 * pool's hardware (its largest member's: docs/pools.md "One entry in the market"), so its own, from its entry on the
 * roster the advert carries (chainOf: verified once per advert), is counted instead (review s55: each member counted
 * another machine's GPUs).
 */
function devicesOf(a: Opened<Advert>): number {
  const hw = chainOf(a)?.member.hardware ?? a.record.hardware;
  return Math.max(1, (hw.gpus ?? []).reduce((n, g) => n + g.count, 0));
}

export class Reclaimer {
  #samples = new Map<string, AttemptSamples>();
  /** The latest usage figures of each running claim's attempt (for §5.2). */
  #live = new Map<string, { uj: number; units?: number }>();
  #idleVerdicts = new Map<string, IdleVerdict>();
  /** An idle pass is running: the next tick is skipped, not started beside it. */
  #idlePass = false;
  /**
   * Claims the steward asked a provider to stop, from before the request until their deadline: only such a provider's
   * reclaimed-coded receipt releases a claim as reclaimed (stopAsked); once freed (stopped or barred at their
   * provider), a later selection's provider is stopped too.
   */
  #reclaimed = new Map<string, Reclaimed>();
  /** Where the next catch-up round starts offering background fetches to reclaimed claims (retryPending). */
  #fetchFrom = 0;
  /**
   * The reclaimed claims with failovers' providers waiting to be asked to stop, in the order of their turn (the one
   * waiting longest first): a claim sends one stop per turn and, with more waiting, goes to the back (#pumpStops).
   */
  readonly #stopLine = new Set<string>();
  /** The buyers whose claim has a stop in flight (one each, at most MAX_RECLAIM_STOPS: #pumpStops). */
  readonly #stopping = new Set<string>();
  /** Adverts already logged as left out of capacity or capped, as `<reason> <provider>`: each is logged once. */
  #capacityNotes = new Set<string>();
  /**
   * Provider DID → when it was last seen connected, on the monotonic clock (noteConnected, capacity()); bounded by
   * CAPACITY_NOTES_MAX.
   */
  readonly #seenConnected = new Map<string, number>();
  /**
   * Per reclaimed claim, the last of its writes of what is kept on disk about it (stop marks with its note, the note,
   * its drop): each waits for the one before (#inTurn) and writes what is in memory when its turn comes, so two
   * writes of a claim never land out of order (an older note over a newer one, a note over its drop).
   */
  readonly #writes = new Map<string, Promise<void>>();
  /**
   * Victims whose `stop` for a higher-priority claim got no answer, with the provider asked. It may have stopped the
   * work all the same (only its answer lost), so while the victim still runs there as far as the steward knows,
   * decideNow names it first, and the next pass asks it again rather than stopping another claim for the same
   * devices. Dropped at that provider's answer and at the victim's release (forget): at most one per open claim.
   * Rebuilt at the start from the stop marks on disk (restoreAsked): a restart does not turn such a stop into one
   * that was answered, and another victim stopped for the same devices.
   */
  readonly #unanswered = new Map<string, string>();
  /**
   * The claims a preemption was for that it could not free devices for because a victim's stop got no answer, with
   * those providers (preempt): the line is decided again on a backoff, and when one of them connects again
   * (#retryStops), while such a claim waits in line.
   */
  readonly #unreached = new Map<string, Set<string>>();
  /** The one timer of those tries (#armRetry), when it is due (monotonic), the next wait, and when the last try was. */
  #retryTimer: LongTimer | undefined;
  #retryAt = 0;
  #retryDelay = STOP_RETRY_FIRST_MS;
  #lastTry = -Infinity;
  /** A try's `usage` questions are out (#reached): a try meanwhile asks nothing more. */
  #probing = false;

  constructor(private d: ReclaimDeps) {}

  /** Run `write` (of what is kept on disk about claim `key`) once the claim's writes before it are done. */
  #inTurn(key: string, write: () => Promise<void>): Promise<void> {
    const done = (this.#writes.get(key) ?? Promise.resolve()).then(write);
    const tail = done.catch(() => {});
    this.#writes.set(key, tail);
    void tail.then(() => {
      if (this.#writes.get(key) === tail) this.#writes.delete(key);
    });
    return done;
  }

  /** The monotonic clock (durations measured here: CONNECTED_GRACE_MS, the failovers' fetches' backoff, the time between two idle samples). */
  #mono(): number {
    return (this.d.ports.monoClock ?? monotonicClock)();
  }

  /**
   * Drop what is kept about a closing claim. The accounts stop tracking it first, so a usage answer still in flight
   * (sampleRunning, idleTick) finds it gone (#tracked) and writes nothing back.
   */
  forget(claim: string): void {
    this.#unanswered.delete(claim);
    this.#samples.delete(claim);
    this.#live.delete(claim);
    this.#idleVerdicts.delete(claim);
  }

  /** How many claims anything is kept about (usage figures, samples, idle verdicts): for tests and diagnostics. */
  keptClaims(): number {
    return new Set([...this.#samples.keys(), ...this.#live.keys(), ...this.#idleVerdicts.keys()]).size;
  }

  idleVerdicts(): IdleVerdict[] {
    return [...this.#idleVerdicts.values()];
  }

  /**
   * The overlay's physical capacity in devices (docs/overlays.md "Preemption"): `steward.capacity` when the operator
   * declared it; else, for each provider the steward can vouch for, its advert's GPU count, or one machine slot for a
   * provider without GPUs, at most `steward.maxDevicesPerProvider`. The steward's own provider (a node with roles
   * [steward, provider]) is always counted: it is this machine. Another provider is vouched for while its key is allowed
   * on the overlay (on `network.allowlist` when there is one) and it is connected to the steward now, or was within
   * CONNECTED_GRACE_MS (its libp2p peer id is its key's; connections are sampled here and whenever an advert
   * arrives, noteConnected): an advert names any key its signer likes, and a member can relay adverts signed by
   * throwaway keys, so an advert alone would let one key declare 1024 GPUs and switch preemption off. Each advert
   * left out or capped is logged once. (pool/1 guarantees are promises; this is what there is to keep them with.)
   */
  capacity(): number {
    if (this.d.cfg.capacity !== undefined) return this.d.cfg.capacity;
    const now = this.d.ports.clock();
    const cap = this.d.cfg.maxDevicesPerProvider ?? MAX_DEVICES_PER_PROVIDER;
    const allowed = this.d.cfg.allowlist ? new Set(this.d.cfg.allowlist) : undefined;
    this.noteConnected();
    const mono = this.#mono();
    let n = 0;
    for (const a of this.d.ports.market.adverts.latest.values()) {
      if (a.record.expiresAt <= now) continue;
      const declared = devicesOf(a);
      // The steward's own provider (roles [steward, provider]) is its own machine: vouched for by being this node, not
      // by a connection to itself, which never exists (it was left out, so the overlay's capacity was short by it).
      // Only while this node runs the provider role: an advert of its own kept from a run that had it (restarted with
      // roles [steward] alone) stood for a machine that runs nothing for the overlay now, until the advert expired.
      if (a.signer === this.d.did && this.d.ports.roles && !this.d.ports.roles.includes('provider')) {
        this.#noteCapacity('not-running', a.signer, declared, 'this node’s own advert, from a run with the provider role, is not counted in the steward’s capacity: it runs no provider now');
        continue;
      }
      if (a.signer !== this.d.did) {
        if (allowed && !allowed.has(a.signer)) {
          this.#noteCapacity('not-allowed', a.signer, declared, 'an advert from a key not on the overlay’s allowlist is not counted in the steward’s capacity');
          continue;
        }
        const seen = this.#seenConnected.get(a.signer);
        if (seen === undefined || mono - seen > CONNECTED_GRACE_MS) {
          this.#noteCapacity('not-connected', a.signer, declared, 'an advert from a provider not connected to the steward is not counted in its capacity (until it connects)');
          continue;
        }
      }
      if (declared > cap) this.#noteCapacity('capped', a.signer, declared, `an advert declares more devices than steward.maxDevicesPerProvider (${cap}): counted as ${cap}`);
      n += Math.min(declared, cap);
    }
    return n;
  }

  /** Note who is connected to the steward now (a provider counts in capacity for CONNECTED_GRACE_MS after). */
  noteConnected(): void {
    const now = this.#mono();
    const m = this.#seenConnected;
    for (const p of this.d.ports.net.peers?.() ?? []) {
      if (!p.did) continue;
      m.delete(p.did); // re-set at the end: the map stays in the order last seen
      m.set(p.did, now);
    }
    for (const [did, at] of m) {
      if (m.size <= CAPACITY_NOTES_MAX && now - at <= CONNECTED_GRACE_MS) break;
      m.delete(did);
    }
  }

  #noteCapacity(reason: 'not-allowed' | 'not-connected' | 'not-running' | 'capped', provider: string, devices: number, msg: string): void {
    const key = `${reason} ${provider}`;
    if (this.#capacityNotes.has(key)) return;
    if (this.#capacityNotes.size >= CAPACITY_NOTES_MAX) this.#capacityNotes.clear();
    this.#capacityNotes.add(key);
    // a provider not connected yet is routine (it connects, or reconnects); a key off the allowlist, or a figure past the cap, is not
    this.d.ports.log[reason === 'not-connected' || reason === 'not-running' ? 'info' : 'warn']({ overlay: this.d.ports.name, provider, devices, reason }, msg);
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
  decideNow(claim: Claim): Decided {
    const v = this.d.pool.decide(claim);
    if (v.verdict !== 'Admit') return { v, victims: [] };
    const capacity = this.capacity();
    const open = [...this.d.ledger.book.open.values()];
    const held = open.reduce((s, c) => s + c.devices, 0);
    const over = held + v.devices - capacity;
    if (capacity === 0 || over <= 0) return { v, victims: [] };
    if (this.d.cfg.preempt) {
      const victims = this.#victims(this.#preemptInputs(claim), over);
      if (victims.length) return { v, victims };
    }
    return { v: devicesHeld(claim, v), victims: [] };
  }

  /**
   * The victims to free `over` devices: chooseVictims (§5.2 order), except that the claims whose stop got no answer
   * and that still run at the provider asked (#unanswered) come first. That stop may have landed, only its answer
   * lost: asking the same claim again stops nothing more (a provider answers a stop asked again with the same
   * receipt, or bars a job it no longer runs), where choosing another that ranks first now (its figures sampled
   * since) would stop two claims for the devices of one. What they cannot free is taken from the others, in order.
   */
  #victims(i: PreemptInputs, over: number): string[] {
    if (!this.#unanswered.size) return chooseVictims(i, over);
    const again = (c: OpenClaim) => {
      const p = this.#unanswered.get(c.claim);
      return p !== undefined && p === this.d.accounts.providerOf(c.claim);
    };
    const first = i.open.filter(again);
    if (!first.length) return chooseVictims(i, over);
    const enough = chooseVictims({ ...i, open: first }, over);
    if (enough.length) return enough;
    // every one of them still a candidate (a lower priority, a provider), and the rest from the others
    const named = runningWorkloads({ ...i, open: first }).map((r) => r.key);
    const devices = new Map(first.map((c) => [c.claim, c.devices]));
    const freed = named.reduce((s, k) => s + (devices.get(k) ?? 0), 0);
    const rest = chooseVictims({ ...i, open: i.open.filter((c) => !again(c)) }, over - freed);
    return rest.length ? [...named, ...rest] : [];
  }

  /**
   * Whether the pool (pool/1 §4, the book as it is now) still admits a claim with the figures of an earlier `Admit`
   * verdict: the same reservation, devices and borrowed part. Physical capacity is not re-checked: a release only
   * frees devices.
   */
  stillAdmits(claim: Claim, admit: Verdict & { verdict: 'Admit' }): boolean {
    return stillAdmits(this.d.pool, claim, admit);
  }

  /** What §5.2 ranks the running claims by: their real spent energy and completed units (src/roles/steward-preempt.ts). */
  #preemptInputs(claim: Claim): PreemptInputs {
    return {
      open: [...this.d.ledger.book.open.values()],
      priority: (e) => this.d.tree.entitlements.get(e)?.priority,
      claimantPriority: this.d.tree.entitlements.get(claim.entitlement)!.priority,
      hasProvider: (c) => this.d.accounts.providerOf(c) !== undefined,
      figures: (c) => {
        const receiptsUj = this.d.accounts.receiptsUj(c);
        const live = this.#live.get(c);
        return { receiptsUj, ...(live ? { liveUj: live.uj, ...(live.units === undefined ? {} : { units: live.units }) } : {}) };
      },
    };
  }

  /** Ask each running claim's provider what its attempt has spent and completed so far (before choosing victims). */
  async sampleRunning(): Promise<void> {
    await Promise.all(
      [...this.d.ledger.book.open.values()].map(async (c) => {
        const provider = this.d.accounts.providerOf(c.claim);
        if (!provider) return;
        try {
          const frames = await this.d.ports.net.request(provider, PREEMPT_PROTOCOL, [{ op: 'usage', job: c.claim } as never], { limits: { deadlineMs: 10_000 } });
          if (this.#tracked(c.claim)) this.#noteUsage(c.claim, frames[0]);
        } catch {
          /* no figure: the claim keeps the ones it had */
        }
      }),
    );
  }

  /** Whether a claim is still open in the accounts (they drop it just before forget() runs, at its release). */
  #tracked(claim: string): boolean {
    return this.d.accounts.get(claim) !== undefined;
  }

  #noteUsage(claim: string, f: unknown): void {
    const u = f as { uj?: unknown; units?: unknown } | undefined;
    if (typeof u?.uj !== 'number' || !Number.isSafeInteger(u.uj) || u.uj < 0) return;
    this.#live.set(claim, { uj: u.uj, ...(typeof u.units === 'number' && Number.isSafeInteger(u.units) && u.units >= 0 ? { units: u.units } : {}) });
  }

  /**
   * Ask the victims' providers to stop; resolves when each has stopped (or failed to answer). A stop that got no
   * answer at all (the provider not reached: #unanswered) leaves `forClaim` waiting on that provider: the line is
   * decided again for it on a backoff and when the provider connects again (#retryStops), and that pass asks the same
   * victim again (decideNow). A provider that answered, even `stopped: "no"`, is not asked again for it.
   */
  async preempt(victims: string[], forClaim: string): Promise<void> {
    const log = this.d.ports.log;
    const unreached = new Set<string>();
    for (const key of victims) {
      const provider = this.d.accounts.providerOf(key);
      if (!provider) continue;
      log.warn({ victim: key, for: forClaim, provider }, 'preempting a lower-priority claim');
      try {
        await this.#stop(key, provider, 'priority');
      } catch (e) {
        const lost = this.#unanswered.get(key) === provider;
        if (lost) unreached.add(provider);
        log.warn({ victim: key, provider, err: (e as Error).message }, lost ? 'preemption request got no answer: tried again on a backoff and when the provider connects again' : 'preemption request failed');
      }
    }
    this.#noteUnreached(forClaim, unreached);
  }

  /** Note (or, with none, forget) the providers whose stop got no answer in the last preemption for claim `claim`. */
  #noteUnreached(claim: string, providers: Set<string>): void {
    if (!providers.size) {
      if (this.#unreached.delete(claim) && !this.#unreached.size) this.#calm();
      return;
    }
    this.#unreached.set(claim, providers);
    this.#armRetry(this.#retryDelay);
  }

  /**
   * A peer connected to the steward (libp2p `peer:connect`): when it is a provider whose stop got no answer for a
   * claim still waiting, the next try comes now, or once half the current backoff step has passed since the last try
   * (at least STOP_RETRY_FIRST_MS): however often a flapping provider reconnects, the tries stay bounded by the backoff.
   */
  connected(did: string): void {
    if (this.d.stopped() || !this.#unreached.size) return;
    let named = false;
    for (const ps of this.#unreached.values()) if ((named = ps.has(did))) break;
    if (!named) return;
    const floor = Math.max(STOP_RETRY_FIRST_MS, this.#retryDelay / 2);
    this.#armRetry(Math.max(0, this.#lastTry + floor - this.#mono()));
  }

  /** Have the next try come in `ms` (the one timer: one due sooner stays). */
  #armRetry(ms: number): void {
    if (this.d.stopped() || !this.d.line) return;
    const at = this.#mono() + ms;
    if (this.#retryTimer && this.#retryAt <= at) return;
    this.#retryTimer?.clear();
    this.#retryAt = at;
    this.#retryTimer = setLongTimeout(() => void this.#retryStops().catch((e) => this.d.ports.log.warn({ err: (e as Error).message }, 'trying a preemption again failed')), ms).unref();
  }

  /** No claim waits on a stop that got no answer: the timer goes and the backoff starts afresh. */
  #calm(): void {
    this.#retryTimer?.clear();
    this.#retryTimer = undefined;
    this.#retryDelay = STOP_RETRY_FIRST_MS;
    this.#lastTry = -Infinity;
  }

  /**
   * A try (the backoff's, or a provider's reconnection's): the claims no longer waiting in line with their buyer
   * (admitted, expired, withdrawn, their buyer away: its re-ask decides the line again) are dropped; for the rest, once
   * a provider whose stop got no answer answers again (#reached), the line is decided again (AdmissionLine.retry, in
   * the admission section), and that pass asks the victims again. The next try is armed first, the wait doubled, up
   * to STOP_RETRY_MAX_MS; the pass notes again the claims whose stop still gets no answer (preempt), and forgets
   * those whose provider answered.
   */
  async #retryStops(): Promise<void> {
    this.#retryTimer = undefined;
    const line = this.d.line;
    if (this.d.stopped() || !line) return;
    const waiting = line.waiting();
    for (const c of [...this.#unreached.keys()]) if (!waiting.has(c)) this.#unreached.delete(c);
    if (!this.#unreached.size) return this.#calm();
    this.#lastTry = this.#mono();
    this.#retryDelay = Math.min(this.#retryDelay * 2, STOP_RETRY_MAX_MS);
    this.#armRetry(this.#retryDelay);
    if (await this.#reached()) line.retry();
  }

  /**
   * Whether a provider the waiting claims' stops got no answer from answers now: each is asked `usage` of its victim
   * (at most STOP_PROBE_MS, outside the admission section, its figure kept for §5.2), so a pass does not hold every
   * other admission for a stop that cannot get through yet. With none left to ask (their victims released): yes.
   */
  async #reached(): Promise<boolean> {
    if (this.#probing) return false;
    const providers = new Set<string>();
    for (const ps of this.#unreached.values()) for (const p of ps) providers.add(p);
    const asks = new Map<string, string>();
    for (const [victim, p] of this.#unanswered) if (providers.has(p) && !asks.has(p)) asks.set(p, victim);
    if (!asks.size) return true;
    this.#probing = true;
    try {
      const answers = await Promise.all(
        [...asks].map(async ([provider, victim]) => {
          try {
            const frames = await this.d.ports.net.request(provider, PREEMPT_PROTOCOL, [{ op: 'usage', job: victim } as never], { limits: { deadlineMs: STOP_PROBE_MS } });
            if (this.#tracked(victim)) this.#noteUsage(victim, frames[0]);
            return true;
          } catch (e) {
            return answered(e);
          }
        }),
      );
      return answers.includes(true);
    } finally {
      this.#probing = false;
    }
  }

  /** The steward stops: no more tries. */
  stop(): void {
    this.#retryTimer?.clear();
    this.#retryTimer = undefined;
  }

  /**
   * Ask a claim's provider to stop its work, and release the claim on the answer: the stopped work's signed receipt
   * (EXEC_PREEMPTED, EXEC_IDLE_RECLAIMED) releases it through the accounts; a provider that was not running it and
   * has barred it (`barred: 'yes'`: an exec of the job is refused with that code until its deadline) has freed the
   * devices as surely, so the claim is released now with the receipts so far. The claim is marked as asked before the
   * request goes out (the provider's receipt, gossiped, and its buyer's `reclaimed` question can reach the steward
   * before the answer does): only then does a reclaimed-coded receipt from that provider release it as reclaimed
   * (stopAsked). Once the answer freed the devices, a selection its buyer signs for it afterwards (a failover the
   * steward had not heard of) has its provider asked to stop as well (onSelection). A provider that answers neither
   * (one before `barred`: `stopped: 'no'`) releases nothing, and, asked this once, its mark goes: it did not stop. One that does not
   * answer at all keeps it (it may have stopped; its receipt then releases the claim), and is asked again by the next
   * preemption (#unanswered: the same mark, written again, not a second one): its answer then is its word on both
   * stops (`barred` means the work stopped at the first, whose receipt is asked for before the release, #receiptsOf,
   * so what it spent is charged, once: receipts are charged by address). A refusal then does not drop the mark: a
   * provider before `barred` answers a stop of a job it no longer runs `stopped: "no"`, so it may mean the first stop
   * landed; the mark stays (the stopped work's receipt, whenever it comes, is the reclaim's), noted as answered (not a
   * stop whose answer is unknown, asked again first after a restart: restoreAsked), and the job's receipts are asked
   * for, so a receipt of the first stop releases the claim now. So a refusal drops the mark only when no earlier stop
   * of the claim to that provider is on record (this stop added the mark), and an error answer keeps it, noted as
   * answered likewise. The mark is kept on disk,
   * synced, before the request goes out (and updated when the answer freed the devices), so a steward killed before
   * the claim's release still releases it as reclaimed at the start (ClaimAccounts.restore); a mark that cannot be
   * written is logged and the stop sent all the same (the claim would otherwise hold the devices the higher claim
   * was admitted on), so only a restart before the release then counts that provider's receipt as a failure.
   */
  async #stop(key: string, provider: string, reason: 'priority' | 'idle'): Promise<void> {
    const oj = this.d.accounts.get(key);
    // asked before, with no answer: it may have stopped the work then (its answer lost), so this answer is its word on both
    const askedBefore = this.#unanswered.get(key) === provider;
    const mark = oj && oj.gang === undefined ? this.#noteAsked(key, oj.buyer, oj.deadline, provider, reason) : undefined;
    // an earlier stop of the claim to this provider is on record (its answer never heard, or its mark kept): it may
    // have stopped the work, so an answer to this one that frees nothing does not take the mark away
    const earlier = askedBefore || (mark !== undefined && !mark.added);
    if (mark) await this.#keepMark(key, provider, mark.entry);
    let frames: CborValue[];
    try {
      frames = await this.d.ports.net.request(provider, PREEMPT_PROTOCOL, [{ op: 'stop', job: key, ...(reason === 'idle' ? { reason } : {}), ...(oj ? { deadline: oj.deadline } : {}) } as never], {
        limits: { deadlineMs: 30_000 },
      });
    } catch (e) {
      // no answer at all: its mark stays (it may have stopped), and a preemption asks it again (preempt)
      if (!answered(e)) {
        if (reason === 'priority') this.#unanswered.set(key, provider);
      } else {
        if (askedBefore) this.#unanswered.delete(key);
        // an error answer keeps the mark, noted as answered: after a restart it is not asked again first
        if (mark && this.#reclaimed.get(key) === mark.entry && this.d.accounts.get(key)) await this.#keepMark(key, provider, mark.entry, [], true);
      }
      throw e;
    }
    if (askedBefore) this.#unanswered.delete(key);
    const f = frames[0] as { receipt?: unknown; barred?: unknown } | undefined;
    const freed = f?.receipt instanceof Uint8Array || f?.barred === 'yes';
    if (mark && freed) {
      // kept until the deadline; one dropped meanwhile (over RECLAIMED_MAX) is noted again
      const entry = this.#reclaimed.get(key) === mark.entry ? mark.entry : this.#noteAsked(key, oj!.buyer, oj!.deadline, provider, reason).entry;
      entry.freed = true;
      // still open (not released on a gossiped receipt meanwhile, its marks gone from disk with it): kept as freed
      if (this.d.accounts.get(key)) await this.#keepMark(key, provider, entry);
    } else if (mark && !earlier && this.#reclaimed.get(key) === mark.entry) {
      // the only stop of it this provider was asked, refused: it did not stop, and the mark goes
      mark.entry.asked.delete(provider);
      if (!mark.entry.asked.size && !mark.entry.freed) this.#unremember(key);
      try {
        await this.d.accounts.dropStopMark(key, provider);
      } catch (e) {
        this.d.ports.log.warn({ claim: key, provider, err: (e as Error).message }, 'cannot drop a stop mark on disk (it goes with the claim)');
      }
    } else if (mark && this.#reclaimed.get(key) === mark.entry && this.d.accounts.get(key)) {
      // refused after an earlier stop that may have landed ("no" from a provider before `barred`: not running any more):
      // the mark stays, noted as answered
      await this.#keepMark(key, provider, mark.entry, [], true);
    }
    if (f?.receipt instanceof Uint8Array) await this.d.accounts.onReceipt(open(f.receipt, T.receipt));
    else if (f?.barred === 'yes') {
      // asked before with no answer: the work may have stopped then, its receipt lost with the answer (and its gossip
      // with the link): asked for first, so the release charges what the work spent
      if (askedBefore) await this.#receiptsOf(key, provider);
      const now = this.d.accounts.get(key);
      if (!now) return;
      this.d.ports.log.warn({ claim: key, provider, reason }, 'the reclaimed claim was not running at its provider, which now refuses it: released with its receipts so far');
      await this.d.accounts.release(now, reason === 'idle' ? 'EXEC_IDLE_RECLAIMED (not running)' : 'EXEC_PREEMPTED (not running)');
    } else if (earlier && mark && this.d.accounts.get(key)) {
      // refused after an earlier stop that may have landed: the stopped work's receipt, if there is one, releases the
      // claim as reclaimed now (its mark kept above), rather than whenever its gossip comes
      this.d.ports.log.info({ claim: key, provider, reason }, 'a provider asked to stop a claim again refuses, as one before `barred` does once the work stopped: its receipts are asked for');
      await this.#receiptsOf(key, provider);
    }
  }

  /**
   * Ask `provider` for its receipts of claim `key`'s job (records/1 `jobs`), and wait for what came to be handled (the
   * steward's receipt handler charges it, and a reclaimed-coded one from a provider asked releases the claim): #stop,
   * when a provider asked to stop it again (an earlier stop may have landed) bars it or refuses. Best effort: a
   * network without the op, or a provider that does not answer, leaves the claim as it was.
   */
  async #receiptsOf(key: string, provider: string): Promise<void> {
    const r = await this.askJobs(provider, ['receipt'], [key]);
    if ('err' in r) this.d.ports.log.debug({ claim: key, provider, err: r.err }, 'cannot ask a provider for a stopped job’s receipts');
    else this.d.ports.log.debug({ claim: key, provider, accepted: r.accepted, failed: r.failed }, 'asked a provider whose stop may have landed before for the stopped work’s receipts');
  }

  /**
   * Ask `party` for its records of `kinds` naming `jobs` (records/1 `jobs`), and wait for what came to be handled by
   * the steward's handlers (a receipt charged, a selection's winner chosen): #receiptsOf, and the accounts' last look
   * before a deadline release (ClaimAccounts, AccountsDeps.askJobs). Best effort, never throws: a network without the
   * op, or a party that does not answer, answers `err`.
   */
  async askJobs(party: string, kinds: TopicKind[], jobs: string[]): Promise<{ accepted: number; failed: Record<string, string> } | { err: string }> {
    const net = this.d.ports.net;
    if (!net.syncJobs) return { err: 'no records/1 jobs on this network' };
    try {
      const r = await net.syncJobs(party, kinds, jobs);
      await net.drained?.();
      return { accepted: r.accepted, failed: r.failed };
    } catch (e) {
      return { err: (e as Error).message };
    }
  }

  /**
   * Remember, before asking, that `provider` is asked to stop claim `key`, until the claim's deadline (at most
   * RECLAIMED_MAX, the oldest dropped first). Answers the entry, and whether this call added the provider to it.
   */
  #noteAsked(key: string, buyer: string, deadline: number, provider: string, reason: 'priority' | 'idle'): { entry: Reclaimed; added: boolean } {
    this.#dropExpired();
    const kept = this.#reclaimed.get(key);
    if (kept) {
      const added = !kept.asked.has(provider);
      addAsked(kept.asked, provider);
      return { entry: kept, added };
    }
    while (this.#reclaimed.size >= RECLAIMED_MAX) this.#unremember(this.#reclaimed.keys().next().value!);
    const entry: Reclaimed = { buyer, deadline, reason, asked: new Set([provider]), freed: false };
    this.#reclaimed.set(key, entry);
    return { entry, added: true };
  }

  /**
   * Keep on disk that `provider` was asked to stop claim `key` (with the entry's reason and whether it is freed), the
   * marks of `pushedOut` (no longer among those asked: MAX_ASKED_PER_CLAIM) dropped in the same batch; `answered`,
   * that it answered the stop without freeing the devices (the mark kept all the same: #stop).
   */
  async #keepMark(key: string, provider: string, entry: Reclaimed, pushedOut: string[] = [], answered = false): Promise<void> {
    try {
      // with the note that outlives the claim's release (written before the stop goes out, like the mark)
      await this.#inTurn(key, () => this.d.accounts.keepStopMark(key, { provider, reason: entry.reason, freed: entry.freed, ...(answered ? { answered } : {}) }, noteOf(entry), pushedOut));
    } catch (e) {
      // the stop is sent all the same (see #stop)
      this.d.ports.log.warn({ claim: key, provider, err: (e as Error).message }, 'cannot keep a stop mark on disk: a restart before the claim is released would count its reclaimed receipt as a failure');
    }
  }

  /**
   * Keep on disk that released claim `key` was reclaimed, `provider` among those asked (its reclaimed note, `x/`):
   * synced, before its stop goes out; or, `settled`, unsynced, once its stop settled (no longer `sending`).
   */
  async #keepNote(key: string, provider: string, settled?: 'settled'): Promise<void> {
    try {
      await this.#inTurn(key, async () => {
        const note = this.reclaimedNote(key);
        if (note) await this.d.accounts.keepReclaimedNote(key, note, !settled);
      });
    } catch (e) {
      // the stop is sent all the same: the provider may be running the job on the devices the reclaim freed
      if (settled) this.d.ports.log.debug({ claim: key, provider, err: (e as Error).message }, 'cannot note on disk that a stop settled: a restart asks that provider again');
      else this.d.ports.log.warn({ claim: key, provider, err: (e as Error).message }, 'cannot keep a reclaimed note on disk: after a restart the buyer would not be told this provider was asked to stop');
    }
  }

  /**
   * Keep on disk that failovers' providers wait to be asked to stop reclaimed claim `key` (its reclaimed note, with
   * `waiting`), when one did not go out at once: a steward killed or restarted before their turn still asks them
   * (restoreAsked). One that cannot be written is logged, and the stops are sent all the same.
   */
  async #keepWaiting(key: string): Promise<void> {
    try {
      await this.#inTurn(key, async () => {
        const note = this.reclaimedNote(key);
        if (note) await this.d.accounts.keepReclaimedNote(key, note);
      });
    } catch (e) {
      this.d.ports.log.warn({ claim: key, err: (e as Error).message }, 'cannot keep on disk the failovers waiting to be asked to stop: a restart before their turn would not ask them');
    }
  }

  /**
   * At the start (ClaimAccounts.restore, before any kept receipt is judged): the providers this steward had asked to
   * stop claim `key` before the restart (an open claim's stop marks, a released one's reclaimed note), and from its
   * note the failovers' providers still waiting to be asked, and the one whose stop was going out and had not settled
   * (`sending`: it stays asked, and is asked again, as the newest waiting): they wait again, in the stop line
   * (resumeStops sends them in turns). An open claim's mark of a stop for a higher priority, at the provider running
   * it, whose answer is unknown (neither freed nor answered: it got none, or the steward stopped before it came) is
   * such a stop still (#unanswered): it may have landed, so a preemption asks that victim again first, as it would
   * have without the restart. A refused or error-answered one kept as answered is not (it was not asked again first
   * before the restart either), nor an idle stop's (one got no retry). Past the claim's deadline, nothing.
   */
  restoreAsked(key: string, buyer: string, deadline: number, marks: StopMark[], again?: Pick<ReclaimedNote, 'waiting' | 'sending'>): void {
    if (!marks.length || deadline <= this.d.ports.clock()) return;
    let entry: Reclaimed | undefined;
    for (const m of marks) entry = this.#noteAsked(key, buyer, deadline, m.provider, m.reason).entry;
    const r = entry!;
    if (marks.some((m) => m.freed)) r.freed = true;
    else {
      // a freed claim is released at the start; only a claim still open has a provider (ClaimAccounts.providerOf)
      const runs = this.d.accounts.providerOf(key);
      if (runs !== undefined && marks.some((m) => m.provider === runs && m.reason === 'priority' && !m.answered)) this.#unanswered.set(key, runs);
    }
    // only a freed claim's failovers are asked (onSelection); oldest first, so the newest stays the newest
    if (!r.freed) return;
    for (const p of again?.waiting ?? []) if (!r.asked.has(p)) newest((r.stops ??= new Map()), p, p);
    if (again?.sending) {
      addAsked(r.asked, again.sending);
      newest((r.stops ??= new Map()), again.sending, again.sending);
    }
    if (r.stops?.size) this.#stopLine.add(key);
  }

  /** After the start (restoreAsked): send the stops that were waiting before the restart, in turns (#pumpStops). */
  resumeStops(): void {
    this.#dropExpired();
    this.#pumpStops();
  }

  /**
   * Whether this steward asked `provider` to stop claim `key` (before its deadline): only then is a receipt of that
   * provider's coded EXEC_PREEMPTED or EXEC_IDLE_RECLAIMED a reclaim (src/roles/steward-accounts.ts); any other is an
   * ordinary failed receipt (a provider cannot end a claim by claiming a preemption nobody asked for).
   */
  stopAsked(key: string, provider: string): boolean {
    const r = this.#reclaimed.get(key);
    return r !== undefined && r.deadline > this.d.ports.clock() && r.asked.has(provider);
  }

  /**
   * Whether this steward reclaimed claim `key` (asked a provider to stop it, before its deadline), and for what, with
   * the claim's buyer: the `reclaimed` op (src/roles/steward-handlers.ts) answers the buyer from it, and from
   * stopAsked for the provider the buyer names.
   */
  reclaimedAs(key: string): { reason: 'priority' | 'idle'; buyer: string } | undefined {
    const r = this.#reclaimed.get(key);
    return r && r.deadline > this.d.ports.clock() ? { reason: r.reason, buyer: r.buyer } : undefined;
  }

  /**
   * What is kept on disk of reclaimed claim `key` once it is released (ClaimAccounts' `x/` note, until its deadline):
   * so after a restart its buyer is still told `priority`/`idle`, and a failover's provider is still asked to stop.
   */
  reclaimedNote(key: string): ReclaimedNote | undefined {
    const r = this.#reclaimed.get(key);
    return r && r.deadline > this.d.ports.clock() ? noteOf(r) : undefined;
  }

  /** A reclaimed claim is no longer remembered: nor is it on disk once released (best effort: else dropped at the next start past its deadline). */
  #unremember(key: string): void {
    this.#reclaimed.delete(key);
    this.#stopLine.delete(key);
    // after the claim's writes under way (a note written after its drop would outlive the claim until the next start)
    void this.#inTurn(key, () => this.d.accounts.dropReclaimed(key)).catch((e) => this.d.ports.log.debug({ claim: key, err: (e as Error).message }, 'cannot drop a reclaimed note on disk (dropped at a start past its deadline)'));
  }

  /** Forget the reclaimed claims whose deadline has come (with the selections kept pending for them). */
  #dropExpired(): void {
    const now = this.d.ports.clock();
    for (const [k, r] of this.#reclaimed) if (r.deadline <= now) this.#unremember(k);
  }

  /** Whether `r` is still the remembered entry of reclaimed claim `key`, freed, before its deadline, on a steward still running. */
  #stillReclaimed(key: string, r: Reclaimed): boolean {
    return !this.d.stopped() && this.#reclaimed.get(key) === r && r.freed && r.deadline > this.d.ports.clock();
  }

  /**
   * A selection heard: if it chooses a provider for a claim reclaimed already (its buyer failed over before it heard
   * the claim was over, or the steward heard the failover's selection only after it asked the provider before),
   * ask that provider to stop (or bar) the job too, so the devices released stay free. The provider is the signer of
   * the selection's winning offer (src/roles/steward-winners.ts), never the selection's own text: a pool's offer is run
   * by the coordinator that signed it. It is resolved from what the steward holds; a winning offer it does not hold
   * is kept pending with the reclaimed claim (at most MAX_PENDING_SELECTIONS, newest kept) and fetched in the
   * accounts' background slots (BackgroundFetches, src/roles/steward-accounts.ts: one at a time per claim and per
   * buyer, MAX_BACKGROUND_RESOLVES over the whole steward, backing off after a miss; one pass over the claim's pending
   * selections per slot turn). The providers found wait with the claim (newest first, at most MAX_PENDING_SELECTIONS,
   * newest kept) and are asked in turns (#pumpStops): one stop per turn of a claim, which then goes to the back of
   * the line, one in flight per buyer, MAX_RECLAIM_STOPS over the steward, each given RECLAIM_STOP_DEADLINE_MS. What
   * waits is dropped at the claim's deadline. So a buyer whose selections each name an offer nobody holds from a DID
   * that never answers, or each a held offer of a provider that never answers a stop (its own throwaway keys' offers,
   * say), costs the steward one request at a time, not one per selection, and holds its turn for at most
   * RECLAIM_STOP_DEADLINE_MS: another buyer's failover waits at most one turn of each claim ahead of it. A selection
   * naming a provider asked already, or waiting to be, costs nothing (a winner resolves only to the provider its
   * selection names); one pushed out of those remembered as asked (MAX_ASKED_PER_CLAIM) is asked again. Each failover
   * costs one synced write of the claim's note, of bounded size (two when it waits its turn: #waitToStop).
   */
  async onSelection(s: Opened<Selection>): Promise<void> {
    const key = s.record.job;
    const r = this.#reclaimed.get(key);
    // only asked so far (the answer has not freed anything): not reclaimed yet, its failovers are not stopped
    if (!r?.freed) return;
    if (r.deadline <= this.d.ports.clock()) {
      this.#unremember(key);
      return;
    }
    if (s.signer !== r.buyer && s.signer !== this.d.did) return;
    const named = namedProvider(s);
    if (named === undefined || r.asked.has(named) || r.stops?.has(named)) return;
    const w = await this.d.accounts.winnerOf(s, false);
    if (!this.#stillReclaimed(key, r)) return;
    if ('refused' in w) {
      this.d.ports.log.debug({ claim: key, selection: s.address, code: w.refused }, 'a selection for a reclaimed claim whose winner does not check out against its offer: nobody asked to stop');
      return;
    }
    if ('unresolved' in w) {
      newest((r.pending ??= new Map()), s.address, s);
      this.#runLater(key, r);
    } else this.#waitToStop(key, r, w.provider);
  }

  /**
   * Have `provider` wait with reclaimed claim `key` to be asked to stop: the claim takes its place in the stop line,
   * and the line moves on. One whose stop goes out at once (nothing ahead of it) is written to the claim's note only
   * by that stop (#askToStop: asked, `sending`); one that waits is kept on disk as waiting (#keepWaiting). So a
   * failover costs one synced write of the note when its stop goes out at once, two when it waits its turn.
   */
  #waitToStop(key: string, r: Reclaimed, provider: string): void {
    if (r.asked.has(provider)) return;
    newest((r.stops ??= new Map()), provider, provider);
    // one already in the line keeps its place; one being served goes to the end once its stop is answered
    if (!r.stopping) this.#stopLine.add(key);
    this.#pumpStops();
    if (r.stops.has(provider)) void this.#keepWaiting(key);
  }

  /**
   * Send the stops waiting, in turns: the claims in the line (the one waiting longest first) whose buyer has no stop
   * in flight each send one (the newest provider found), while fewer than MAX_RECLAIM_STOPS are in flight; a claim
   * with more waiting goes back to the end of the line once its stop is answered or timed out, and the line moves on.
   */
  #pumpStops(): void {
    for (const key of this.#stopLine) {
      if (this.#stopping.size >= MAX_RECLAIM_STOPS || this.d.stopped()) return;
      const r = this.#reclaimed.get(key);
      if (!r?.stops?.size || !this.#stillReclaimed(key, r)) {
        this.#stopLine.delete(key);
        continue;
      }
      if (this.#stopping.has(r.buyer)) continue; // its buyer's other claim is being served: this one keeps its place
      const provider = [...r.stops.keys()].pop()!;
      r.stops.delete(provider);
      this.#stopLine.delete(key);
      this.#stopping.add(r.buyer);
      r.stopping = true;
      void this.#askToStop(key, r, provider)
        .catch((e) => this.d.ports.log.warn({ claim: key, provider, err: (e as Error).message }, 'asking a reclaimed claim’s failover to stop failed'))
        .finally(() => {
          this.#stopping.delete(r.buyer);
          r.stopping = false;
          if (r.stops?.size && this.#reclaimed.get(key) === r) this.#stopLine.add(key); // the back of the line
          this.#pumpStops();
        });
    }
  }

  /**
   * A catch-up round: move the stop line on (#pumpStops), and offer a background slot to the reclaimed claims with
   * selections waiting for a fetch, starting one further along each round. Not awaited: each runs in a shared slot
   * (BackgroundFetches), or waits for a later round.
   */
  retryPending(): void {
    this.#dropExpired();
    this.#pumpStops();
    const waiting = [...this.#reclaimed].filter(([, r]) => r.pending?.size);
    if (!waiting.length) return;
    const from = this.#fetchFrom++ % waiting.length;
    for (const [key, r] of [...waiting.slice(from), ...waiting.slice(0, from)]) this.#runLater(key, r);
  }

  /** Fetch a reclaimed claim's pending selections' winning offers in a shared background slot, unless they back off. */
  #runLater(key: string, r: Reclaimed): void {
    if (!r.pending?.size || backingOff(r, this.#mono())) return;
    // no backoff handed over: #work keeps the fetches' own (noteFetched)
    this.d.accounts.background.run(key, r.buyer, undefined, 'fetching a reclaimed claim’s failovers’ offers', () => this.#work(key, r));
  }

  /**
   * A reclaimed claim's turn in a background slot: one pass over its pending selections (#resolvePending), then the
   * slot is given back (what its buyer's selections add meanwhile waits for the next selection or catch-up round).
   * Answers true (the slot keeps no backoff of its own: the claim keeps the fetches', noteFetched).
   */
  async #work(key: string, r: Reclaimed): Promise<boolean> {
    if (!this.#stillReclaimed(key, r) || !r.pending?.size || backingOff(r, this.#mono())) return true;
    const found = await this.#resolvePending(key, r);
    noteFetched(r, found, this.#mono());
    return true;
  }

  /**
   * Resolve a reclaimed claim's pending selections, newest first, fetching their winning offers (from the selection's
   * signer, then the provider it names); each new provider found waits to be asked to stop in the claim's turns
   * (#waitToStop). Stops at the first found nowhere (its parties are likely not answering; the rest wait for a later
   * turn), and at the claim's deadline or the steward's stop. Answers whether nothing was found missing.
   */
  async #resolvePending(key: string, r: Reclaimed): Promise<boolean> {
    for (const s of [...(r.pending?.values() ?? [])].reverse()) {
      if (!this.#stillReclaimed(key, r)) return true;
      const named = namedProvider(s);
      if (named === undefined || r.asked.has(named)) {
        r.pending!.delete(s.address);
        continue;
      }
      const w = await this.d.accounts.winnerOf(s, true);
      if (!this.#stillReclaimed(key, r)) return true;
      if ('unresolved' in w) return false;
      r.pending!.delete(s.address);
      if ('provider' in w) this.#waitToStop(key, r, w.provider);
    }
    return true;
  }

  /**
   * Ask `provider` to stop (or bar) reclaimed claim `key`'s job, with the claim's deadline (once per provider; again
   * after a restart that came before its stop settled). It is noted as asked first (stopAsked: its reclaimed-coded
   * receipt, and the buyer's `reclaimed` question naming it, are the reclaim's) and as `sending`, and kept on disk so
   * before the stop goes out: a claim still open (its release failed, tried again) as this provider's stop mark with
   * the claim's note, a released one in its reclaimed note, so a restart still confirms it to the buyer, and asks it
   * again (the stop may never have reached it: it goes out within RECLAIM_STOP_DEADLINE_MS, dialling included). Once
   * the request settles it is no longer `sending`: the claim's next write of its note says so (the next stop's, when
   * more wait), or, with none waiting, a write of its own, unsynced (lost, it costs that provider one more stop).
   */
  async #askToStop(key: string, r: Reclaimed, provider: string): Promise<void> {
    if (!this.#stillReclaimed(key, r)) return;
    const pushedOut = addAsked(r.asked, provider);
    r.sending = provider;
    if (this.d.accounts.get(key)) await this.#keepMark(key, provider, r, pushedOut);
    else await this.#keepNote(key, provider);
    this.d.ports.log.warn({ claim: key, provider }, 'a selection names a provider for a claim already reclaimed: asking it to stop');
    try {
      await this.d.ports.net.request(provider, PREEMPT_PROTOCOL, [{ op: 'stop', job: key, ...(r.reason === 'idle' ? { reason: r.reason } : {}), deadline: r.deadline } as never], { limits: { deadlineMs: RECLAIM_STOP_DEADLINE_MS } });
    } catch (e) {
      this.d.ports.log.warn({ claim: key, provider, err: (e as Error).message }, 'stop request for a reclaimed claim failed');
    } finally {
      if (r.sending === provider) r.sending = undefined;
      if (!r.stops?.size && this.#reclaimed.get(key) === r && !this.d.stopped()) void this.#keepNote(key, provider, 'settled');
    }
  }

  /**
   * Idle reclamation (pool/1 §2.7): sample each open claim's energy from its
   * provider, judge the energy over at least the policy's window (nothing
   * held, then the window, then the grade, then the rate: src/pool/idle.ts),
   * and reclaim the claims found idle, least energy per time first. A claim
   * with no verdict (too short a window, an Estimator figure) is not a
   * candidate. Samples are compared within one attempt only: a new attempt
   * (a failover, a restart, another provider) starts the window afresh, so
   * it has no verdict until it has run for the window itself. The time the
   * energy is divided by is the provider's, at most what this steward saw
   * pass between the answers (between(): a provider's stepped wall clock
   * never makes working work look idle). A claim whose figures cannot be
   * judged is skipped (logged), never the whole pass.
   *
   * One pass at a time: a tick while the last pass still waits on a provider
   * (a stalled link holds each of its claims' `usage` for up to 10 s) is
   * skipped. Passes started beside it piled up one per tick, each asking the
   * stalled provider again, and at the heal their answers landed together,
   * out of order in a claim's samples, and could each send an idle `stop`.
   */
  async idleTick(): Promise<void> {
    const policy = this.d.cfg.idle;
    if (!policy || this.d.stopped() || this.#idlePass) return;
    this.#idlePass = true;
    try {
      await this.#idlePassRun(policy);
    } finally {
      this.#idlePass = false;
    }
  }

  async #idlePassRun(policy: NonNullable<ReclaimDeps['cfg']['idle']>): Promise<void> {
    const log = this.d.ports.log;
    const observations: IdleObservation[] = [];
    for (const c of this.d.ledger.book.open.values()) {
      const provider = this.d.accounts.providerOf(c.claim);
      if (!provider) continue;
      let frames;
      try {
        frames = await this.d.ports.net.request(provider, PREEMPT_PROTOCOL, [{ op: 'usage', job: c.claim } as never], { limits: { deadlineMs: 10_000 } });
      } catch {
        continue;
      }
      // released while its provider answered: forget() has run, and nothing is kept for it again
      if (!this.#tracked(c.claim)) continue;
      this.#noteUsage(c.claim, frames[0]);
      const u = idleSample(frames[0]);
      if (!u) continue;
      const hist = this.#attemptSamples(c.claim, provider, u);
      const last: IdleSample = { uj: u.uj, grade: u.grade, elapsedMs: u.elapsedMs, at: this.#mono() };
      hist.push(last);
      // Keep what covers the window, and one sample older.
      while (hist.length > 2 && between(hist[1]!, last) >= policy.windowMs) hist.shift();
      const first = hist[0]!;
      observations.push({
        key: c.claim,
        devicesHeld: c.devices,
        observedMs: between(first, last),
        energy: { uj: last.uj - first.uj, grade: worseGrade(first.grade, last.grade) },
      });
    }
    const policyArgs = { windowMs: policy.windowMs, idleBelowMicrowatts: policy.idleBelowMicrowatts };
    // a claim released while later claims' providers were asked is neither judged nor reclaimed
    const judged: IdleObservation[] = [];
    for (const o of observations) {
      if (!this.#tracked(o.key)) continue;
      try {
        this.#idleVerdicts.set(o.key, idleVerdict(o, policyArgs));
        judged.push(o);
      } catch (e) {
        // one claim's figures do not stop the others being judged
        this.#idleVerdicts.delete(o.key);
        log.warn({ claim: o.key, err: (e as Error).message }, 'idle check: figures not judged');
      }
    }
    for (const v of reclamationOrder(judged, policyArgs)) {
      const provider = this.d.accounts.providerOf(v.key);
      if (!provider) continue;
      log.warn({ claim: v.key, uj: v.uj, observedMs: v.observedMs, windowMs: v.windowMs }, 'reclaiming an idle claim');
      try {
        await this.#stop(v.key, provider, 'idle');
      } catch (e) {
        log.warn({ claim: v.key, err: (e as Error).message }, 'idle reclamation request failed');
      }
    }
  }

  /**
   * The samples of the attempt a usage answer reports, emptied when it is
   * another attempt than the one sampled before: another provider, another
   * `startedAt`, or (from a provider that does not report `startedAt`) an
   * elapsed time or energy below the last sample's.
   */
  #attemptSamples(claim: string, provider: string, u: UsageSample & { startedAt?: number }): IdleSample[] {
    const attempt = `${provider} ${u.startedAt ?? '-'}`;
    const kept = this.#samples.get(claim);
    const prev = kept?.samples[kept.samples.length - 1];
    if (kept && kept.attempt === attempt && !(prev && (u.elapsedMs < prev.elapsedMs || u.uj < prev.uj))) return kept.samples;
    if (kept) this.#idleVerdicts.delete(claim);
    const fresh: AttemptSamples = { attempt, samples: [] };
    this.#samples.set(claim, fresh);
    return fresh.samples;
  }
}
