/**
 * The buyer's side of `/c0mpute/steward/1` `admit` and `admit-gang` (pool/1
 * §4): read the steward's frames (queued → admitted | denied | expired) into
 * an Admission, and ask again by itself whenever the steward may hold the
 * claim but no verdict came back.
 *
 * Once a request may have reached the steward (its stream opened: the ask
 * failed any way but NET_DIAL_FAILED or NET_PROTOCOL_UNSUPPORTED, or ended without a verdict), the
 * steward may have queued the claim, or admitted it and answered into a
 * stream that then broke (a half-open link, a reset, its clean stop). So a
 * transport failure after that — the stream failed (NET_STREAM_FAILED, or
 * NET_DEADLINE), the steward closed it without a verdict, or the re-ask's
 * dial failed — is answered by asking again, whether or not `queued` came:
 * the steward answers a re-ask of an admitted claim `admitted` again, keeps a
 * queued one's place in line, and decides a claim it never saw afresh
 * (src/roles/steward-admission.ts). Retries back off (doubling from
 * `initialMs` to `maxMs`, with jitter) until the claim's deadline. A first
 * ask whose dial fails reached nothing: its NET_DIAL_FAILED is thrown at once (so is a NET_PROTOCOL_UNSUPPORTED:
 * connected, but no connection of the steward's key speaks steward/1),
 * as is an error the steward itself answered (detail.remote) and any other
 * failure.
 *
 * Giving up at the deadline: a claim that was queued gets `Expired`
 * (STEWARD_UNREACHABLE), as before; one never queued, the last failure (the
 * code the first ask would have thrown). Whenever the client gives up without
 * a verdict while an ask that may have reached the steward went unanswered —
 * at the deadline, on an error answered to a re-ask, or on the run's abort
 * (`signal`: the node stopping) during or after such an ask — it first sends
 * `withdraw` (best effort, within `withdrawMs`): a claim the steward admitted
 * into a dead stream is released now instead of holding its reservation and
 * devices until its deadline. The steward answers `released`: `yes` (it
 * released the open claim), `dequeued` (it took the claim out of its line),
 * `noted` (the claim was being decided: it will not be left admitted) or `no`
 * (it holds no such claim); the client only logs it. An ask it answered with an
 * error, or one never sent, leaves nothing to withdraw.
 */
import { C0Error } from '../errors.js';
import type { CborValue } from '../records/cbor.js';
import type { Opened } from '../records/envelope.js';
import type { Acceptance, Job, Receipt } from '../records/kinds.js';
import { NET_ERR, STEWARD_STREAMS, STEWARD_STREAM_HEADROOM, neverOpened } from '../net/protocols.js';
import type { Clock } from '../util/clock.js';
import type { Slots } from '../util/serial.js';
import type { Logger } from '../util/log.js';
import { unlessAborted } from '../util/signals.js';
import type { Admission, JobSpec } from './buyer.js';
import { citeOf } from './gang-cite.js';
import { denyBasisOf } from '../util/deny-text.js';

/** How long a withdraw sent on giving up may take: under Buyer's INTERRUPT_WAIT_MS, so a stopping node still sends it. */
export const GIVE_UP_WITHDRAW_MS = 2_000;

/**
 * The admission asks (`admit`, `admit-gang`) a node keeps open at its steward at once: the steward's line per buyer
 * (256). Each ask waiting in line holds its stream; the streams beyond it (STEWARD_STREAM_HEADROOM) are left for
 * withdraws, selects and `reclaimed` asks. A further ask waits on the node for one to end (OverlayNode.stewardAsks).
 */
export const STEWARD_ASKS = STEWARD_STREAMS - STEWARD_STREAM_HEADROOM;

/**
 * `send` (one admission ask) once a place among `asks` is free, waiting in the order asked until `deadline` at most:
 * past it refused STEWARD_ASKS_BUSY, nothing sent (so nothing to withdraw). Before (review s43), an ask past the
 * protocol's 288 outbound streams failed NET_DIAL_FAILED at once, and the run ended with it.
 */
export async function inAskSlot(asks: Slots | undefined, send: () => Promise<unknown>, deadline: number, clock: Clock, signal: AbortSignal): Promise<void> {
  if (!asks) {
    await send();
    return;
  }
  const wait = new AbortController();
  const follow = () => wait.abort(signal.reason);
  signal.addEventListener('abort', follow, { once: true });
  const timer = setTimeout(
    () => wait.abort(new C0Error('STEWARD_ASKS_BUSY', `this node already has ${asks.n} admission asks open at its steward (the most it keeps open at once: each waiting in the steward's line holds one), and the claim's deadline passed while it waited for one of them to end; nothing was sent`, { detail: { open: asks.n } })),
    Math.max(0, deadline - clock()),
  );
  try {
    await asks.run(send, wait.signal);
  } finally {
    clearTimeout(timer);
    signal.removeEventListener('abort', follow);
  }
}

/** The failures after which the steward may hold the claim and a re-ask is answered (see the module comment). */
const TRANSPORT = new Set(['NET_STREAM_FAILED', 'NET_DEADLINE', 'NET_DIAL_FAILED', 'NET_PROTOCOL_UNSUPPORTED', 'STEWARD_NO_ANSWER']);

export interface AdmissionClientOptions {
  /** One admit stream: send the request, hand every answer frame to onFrame, resolve when the stream ends; `signal` breaks it off. */
  ask: (onFrame: (f: unknown) => void, signal: AbortSignal) => Promise<void>;
  /** The claim's deadline: no asking after it. */
  deadline: number;
  clock: Clock;
  onQueued: (reason: string, reasons: string[]) => void;
  log?: Logger;
  sleep?: (ms: number) => Promise<void>;
  /** Backoff between re-asks (default 500 ms doubling to 5 s). */
  initialMs?: number;
  maxMs?: number;
  /** Jitter in [0, 1) (default Math.random); the wait is delay × (0.75 + jitter / 2). */
  random?: () => number;
  /** The run's abort (the node stopping): the ask in flight is broken off, nothing is asked after, and the signal's reason is thrown. */
  signal?: AbortSignal;
  /** Release the claim at the steward (`withdraw`): sent when the client gives up while an ask that may have landed went unanswered. */
  withdraw?: (signal: AbortSignal) => Promise<unknown>;
  /** How long that withdraw may take (default GIVE_UP_WITHDRAW_MS); the client never waits on it longer. */
  withdrawMs?: number;
  /** Told once, as the client first waits to ask again after STEWARD_RATE_LIMITED: how long it waits (ms). */
  onRateLimited?: (waitMs: number) => void;
}

type Frame = { t?: string; retry_in_ms?: unknown; reason?: string; reasons?: string[]; reserved?: { uj: number; grade: string }; borrowed_uj?: number; entry?: string; admission?: unknown; basis?: unknown };

function verdictOf(x: Frame): Admission | undefined {
  if (x.t === 'admitted') {
    return { verdict: 'Admit', ...(x.reserved ? { reserved: x.reserved } : {}), ...(x.borrowed_uj === undefined ? {} : { borrowed_uj: x.borrowed_uj }), ...(x.entry ? { entry: x.entry } : {}), ...(x.admission instanceof Uint8Array ? { proof: x.admission } : {}) };
  }
  if (x.t === 'denied') {
    // the figures the deny rests on (a steward before them sends none): shown beside the reason (src/util/deny-text.ts)
    const basis = denyBasisOf(x.basis);
    return { verdict: 'Deny', ...(x.reason ? { reason: x.reason } : {}), reasons: x.reasons ?? [], ...(basis ? { basis } : {}) };
  }
  if (x.t === 'expired') return { verdict: 'Expired', ...(x.reason ? { reason: x.reason } : {}) };
  return undefined;
}

const isRemote = (e: unknown): boolean => e instanceof C0Error && (e.detail as { remote?: unknown } | undefined)?.remote === true;
const isTransport = (e: unknown): e is C0Error => e instanceof C0Error && !isRemote(e) && TRANSPORT.has(e.code);

function abortError(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new C0Error('STEWARD_ASK_ABORTED', 'the admission was broken off before the steward answered');
}

/** The least wait before asking again after STEWARD_RATE_LIMITED: the steward's budget gives a token back every 2 s. */
export const RATE_LIMITED_WAIT_MS = 2_000;
/** The most of a steward's `rate-limited` retry_in_ms the client believes (its budget's debt floor is about two minutes). */
const MAX_RATE_LIMITED_WAIT_MS = 10 * 60_000;

/**
 * What the run ends with when the steward's budget of this buyer's claims withdrawn unrun keeps its job out past the
 * deadline: the code the steward answered (STEWARD_RATE_LIMITED), saying why and what to do rather than only the
 * steward's "ask again in N s" (review s43 R1 F4).
 */
function rateLimitedGiveUp(failure: C0Error, waitMs: number): C0Error {
  return new C0Error(
    'STEWARD_RATE_LIMITED',
    `the job was not admitted: the steward takes no new claim from this buyer for about ${Math.ceil(waitMs / 1000)} s more, past the job's deadline, because too many of its claims were withdrawn without running lately (its unrun budget at the steward is spent: docs/overlays.md "Claims withdrawn unrun"). Run the job again later or with a later deadline, and look at why this buyer's jobs end unrun (no offers, providers refusing or failing). The steward said: ${failure.message}`,
    { detail: { ...failure.detail, retryInMs: waitMs }, cause: failure },
  );
}

export async function requestAdmission(o: AdmissionClientOptions): Promise<Admission> {
  const sleep =
    o.sleep ??
    ((ms: number) =>
      new Promise<void>((r) => {
        const t = setTimeout(done, ms);
        function done() {
          clearTimeout(t);
          o.signal?.removeEventListener('abort', done);
          r();
        }
        o.signal?.addEventListener('abort', done, { once: true });
      }));
  const random = o.random ?? Math.random;
  const maxMs = o.maxMs ?? 5_000;
  let delay = o.initialMs ?? 500;
  let queued = false;
  let toldRateLimited = false;
  /** An ask may have reached the steward with no answer heard since: it may hold the claim (queued, or admitted into a stream that broke). */
  let unsure = false;
  const giveUp = async (why: string): Promise<void> => {
    if (!unsure || !o.withdraw) return;
    const ms = o.withdrawMs ?? GIVE_UP_WITHDRAW_MS;
    const stop = new AbortController();
    const timer = setTimeout(() => stop.abort(new C0Error('NET_DEADLINE', `no withdraw answer within ${ms} ms`)), ms);
    try {
      const said = await unlessAborted(o.withdraw(stop.signal), stop.signal);
      o.log?.info({ why, released: said ?? 'no answer' }, 'gave up on an admission the steward may have granted; asked it to withdraw the claim');
    } catch (e) {
      o.log?.warn({ why, err: (e as Error).message }, 'could not withdraw a claim the steward may have admitted; it releases it at the deadline');
    } finally {
      clearTimeout(timer);
    }
  };
  for (let attempt = 1; ; attempt++) {
    if (o.signal?.aborted) {
      await giveUp('aborted');
      throw abortError(o.signal);
    }
    let out: Admission | undefined;
    let failure: unknown;
    /** The steward's `rate-limited` frame before its refusal: when it will take a new claim from this buyer, ms. */
    let retryInMs: number | undefined;
    const inFlight = new AbortController();
    const breakOff = () => inFlight.abort(o.signal?.reason);
    o.signal?.addEventListener('abort', breakOff, { once: true });
    try {
      await o.ask((f) => {
        const x = (f ?? {}) as Frame;
        if (x.t === 'queued') {
          queued = true;
          o.onQueued(x.reason ?? '', x.reasons ?? []);
        } else if (x.t === 'rate-limited') {
          if (typeof x.retry_in_ms === 'number' && Number.isFinite(x.retry_in_ms) && x.retry_in_ms >= 0) retryInMs = Math.min(x.retry_in_ms, MAX_RATE_LIMITED_WAIT_MS);
        } else out ??= verdictOf(x);
      }, inFlight.signal);
      // ended without a verdict: the steward read the request (its clean stop ends a queued buyer's stream so, as
      // the connection's abort under a half-open link can)
      failure = out ? undefined : new C0Error('STEWARD_NO_ANSWER', 'the steward closed the admission stream without a verdict');
    } catch (e) {
      failure = e;
    } finally {
      o.signal?.removeEventListener('abort', breakOff);
    }
    if (out) return out;
    // An ask that may have reached the steward ended with no answer heard: only a dial that failed sent nothing, and
    // an error the steward answered is an answer. Broken off by the abort mid-ask, it may have been sent.
    if (o.signal?.aborted || (isTransport(failure) && !neverOpened(failure.code))) unsure = true;
    if (o.signal?.aborted) {
      await giveUp('aborted');
      throw abortError(o.signal);
    }
    // the steward's budget of this buyer's claims withdrawn unrun is spent (steward-admission.ts UNRUN_WITHDRAWS): a
    // token comes back every 2 s, so ask again while the deadline allows (second-round review s42 R8 F3: a batch after
    // an empty-market spell failed 8 of 8 at once)
    // A steward that says when (its `rate-limited` frame) is asked again then, and not at all when that is past the
    // deadline; one before the frame, after the local backoff, given up as soon as the next wait would pass it.
    if (failure instanceof C0Error && isRemote(failure) && failure.code === 'STEWARD_RATE_LIMITED') {
      const wait = Math.max(retryInMs ?? 0, Math.round(Math.max(RATE_LIMITED_WAIT_MS, delay) * (0.75 + random() / 2)));
      if (o.clock() + wait >= o.deadline) {
        await giveUp(failure.code);
        throw rateLimitedGiveUp(failure, wait);
      }
      if (!toldRateLimited) o.onRateLimited?.(wait);
      toldRateLimited = true;
      o.log?.info({ attempt, waitMs: wait }, 'the steward asks this buyer to wait (too many of its claims were withdrawn without running lately); asking again');
      await unlessAborted(sleep(wait), o.signal);
      delay = Math.min(delay * 2, maxMs);
      continue;
    }
    if (!isTransport(failure) || !unsure) {
      await giveUp(failure instanceof C0Error ? failure.code : 'error');
      throw failure;
    }
    const wait = Math.round(delay * (0.75 + random() / 2));
    if (o.clock() + wait >= o.deadline) {
      await giveUp('deadline');
      if (queued) return { verdict: 'Expired', reason: 'STEWARD_UNREACHABLE' };
      throw failure;
    }
    o.log?.warn({ attempt, waitMs: wait, queued, code: failure.code, err: failure.message }, 'no verdict from the steward, which may hold the claim; asking it again');
    await unlessAborted(sleep(wait), o.signal);
    delay = Math.min(delay * 2, maxMs);
  }
}

/** One request on `/c0mpute/steward/1` to the overlay's steward (the network's `request`, the steward bound). */
export type StewardRequest = (frames: CborValue[], opts: { onFrame?: (f: CborValue) => void; signal?: AbortSignal; limits: { deadlineMs: number } }) => Promise<CborValue[]>;

/**
 * `withdraw` a claim (a job's address, or a gang's run address) at the steward: what the client sends on giving up
 * (and, with the receipts it holds for it, for a job an earlier run of this node left). Resolves to the steward's
 * `released`.
 */
export function withdrawClaim(request: StewardRequest, claim: string, o: { receipts?: readonly Uint8Array[]; deadlineMs?: number } = {}): (signal?: AbortSignal) => Promise<unknown> {
  const receipts = o.receipts?.length ? { receipts: [...o.receipts] } : {};
  return async (signal) => {
    const frames = await request([{ op: 'withdraw', job: claim, ...receipts } as never], { ...(signal ? { signal } : {}), limits: { deadlineMs: o.deadlineMs ?? GIVE_UP_WITHDRAW_MS } });
    return (frames[0] as { released?: unknown } | undefined)?.released;
  };
}

export interface AdmitJobOptions {
  request: StewardRequest;
  /** The node's places for admission asks open at this steward at once (STEWARD_ASKS; inAskSlot). */
  asks?: Slots;
  job: Opened<Job>;
  spec: JobSpec;
  clock: Clock;
  onQueued: (reason: string, reasons: string[]) => void;
  /** Told once, as the client first waits after STEWARD_RATE_LIMITED (requestAdmission). */
  onRateLimited?: (waitMs: number) => void;
  /** The run's abort (the node stopping). */
  signal?: AbortSignal;
  log?: Logger;
  /** The overlay's name, for the error naming a missing entitlement. */
  overlay: string;
  /** The steward's DID, for the error when it cannot be reached at all. */
  steward?: string;
  /** This buyer's `network.managed`: a steward that decides otherwise refuses the claim before admitting it. */
  managed?: boolean;
  /** Overrides for tests: the backoff and its sleep. */
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
}

/** Ask the overlay's steward to admit a job's claim (pool/1 §4); the stream stays open while it is queued. */
export async function admitJob(o: AdmitJobOptions): Promise<Admission> {
  const { job, spec } = o;
  if (!spec.entitlement) throw new C0Error('JOB_NEEDS_ENTITLEMENT', `overlay ${o.overlay} has a steward: name the entitlement the job runs under (entitlement:)`, { field: 'entitlement' });
  const request = [{ op: 'admit', job: job.bytes, entitlement: spec.entitlement, ...(spec.class ? { class: spec.class } : {}), ...(spec.energy ? { estimate: spec.energy } : {}), ...(spec.gang ? { gang: spec.gang } : {}), ...(o.managed !== undefined && !spec.gang ? { selects: o.managed ? 'steward' : 'buyer' } : {}) } as never];
  return unreachableSteward(o, requestAdmission({
    ask: (onFrame, signal) => inAskSlot(o.asks, () => o.request(request, { limits: { deadlineMs: Math.max(1000, job.record.deadline - o.clock() + 5000) }, onFrame, signal }), job.record.deadline, o.clock, signal),
    deadline: job.record.deadline,
    clock: o.clock,
    onQueued: o.onQueued,
    ...(o.onRateLimited ? { onRateLimited: o.onRateLimited } : {}),
    withdraw: withdrawClaim(o.request, job.address),
    ...(o.signal ? { signal: o.signal } : {}),
    ...(o.log ? { log: o.log } : {}),
    ...(o.sleep ? { sleep: o.sleep } : {}),
    ...(o.random ? { random: o.random } : {}),
  }));
}

/**
 * An admission that ended on a dial that failed (the first ask's, or the last re-ask's at the deadline, after its
 * withdraw): STEWARD_UNREACHABLE naming the steward and the overlay, as `ledger fetch` names them
 * (LEDGER_STEWARD_UNREACHABLE). It was libp2p's own words, "NET_DIAL_FAILED:
 * cannot open /c0mpute/steward/1 to 12D3KooW…: … ECONNREFUSED", or "no valid addresses for peer" with a PeerId only
 * (QA pass on a private overlay, session 48). The dial's error is kept as the cause. A peer reached that does not
 * speak steward/1 (NET_PROTOCOL_UNSUPPORTED: the DID network.steward names runs no steward here) is said so.
 */
async function unreachableSteward(o: Pick<AdmitJobOptions, 'overlay' | 'steward'>, asked: Promise<Admission>): Promise<Admission> {
  try {
    return await asked;
  } catch (e) {
    if (!(e instanceof C0Error) || !neverOpened(e.code)) throw e;
    const who = o.steward ? `the steward ${o.steward}` : 'the steward';
    // reached, but it serves no /c0mpute/steward/1: its node runs without the steward role (docs/node.md "Changing roles")
    const why = e.code === NET_ERR.PROTOCOL ? 'its node answers but does not run the steward role: is the role on in its config? network.steward names it' : 'is it running, and reachable at the addresses this node knows? network.steward names it';
    throw new C0Error('STEWARD_UNREACHABLE', `cannot reach ${who} of overlay ${o.overlay} (${why}): ${e.message}`, {
      cause: e,
      detail: { overlay: o.overlay, ...(o.steward ? { steward: o.steward } : {}) },
    });
  }
}

/** How long one `withdraw` of the start's sweep may take (the steward asks the buyer back for a claim's selections: WITHDRAW_ASK_MS, 5 s). */
export const LEFTOVER_WITHDRAW_MS = 15_000;
/**
 * Sweeps of the start's withdraws before a steward still not reached is warned of (each later one after a doubling
 * wait, 2 s up to 60 s: about a minute). The sweeps go on after it, a minute apart, while any claim's deadline is ahead.
 */
export const LEFTOVER_TRIES = 6;
/** The receipts handed over with one claim's withdraw at most (the steward's own bound is 256). */
export const LEFTOVER_RECEIPTS = 16;
/**
 * The receipts handed over with a gang claim's withdraw at most: one for each member of the largest run (a run lists
 * at most 64 members), so every member's receipt fits (the steward's own bound is 256).
 */
export const GANG_LEFTOVER_RECEIPTS = 64;
/**
 * How long past its member jobs' latest deadline a gang claim the start found is still withdrawn. The buyer does not
 * keep the gang's own deadline (the steward's): it is at least every member job's (the steward refuses a member job
 * whose deadline is past its gang's, STEWARD_GANG_DEADLINE), and `c0mpute train buy` gives the gang 60 s more than
 * the member jobs it buys. A withdraw after the steward released the claim at its deadline is answered `no`.
 */
export const GANG_DEADLINE_SLACK_MS = 60_000;

/** A claim an earlier process of this node left (its job's run died with it): what the start withdraws. */
export interface LeftoverClaim {
  claim: string;
  deadline: number;
  /** Receipts this node holds for the job (their bytes): handed over so the release charges them even if gossip missed one. */
  receipts?: readonly Uint8Array[];
  /** A gang's claim (the run's address its member jobs cite): how many of its member jobs this node held. */
  gang?: number;
}

/** What the start reads of the evidence held for a job (the node's EvidenceStore). */
export interface HeldOutcomes {
  receiptsOf(job: string): ReadonlyArray<Opened<Receipt>>;
  acceptancesOf(receipt: string): ReadonlyArray<Opened<Acceptance>>;
}

/**
 * The claims to withdraw at start (withdrawLeftovers): of this node's jobs an earlier process left (`jobs`: live when
 * the node opened), each whose deadline is after `now` and that did not end completed — a completed receipt for it
 * that this node (`self`) accepted means its run ended and the steward released its claim on that receipt. Each
 * carries the receipts held for the job naming `self` as the buyer.
 *
 * A gang's member job (its signed params cite the gang claim, src/roles/gang-cite.ts) has no claim of its own: the
 * steward binds it to the gang's, and answers a withdraw of the member job's address `no`. Its gang's claim is
 * withdrawn instead, once for all the member jobs held, unless every one of them ended completed and accepted (the
 * steward released the gang on their receipts), with the receipts held for every member: the steward sums them into
 * the gang's one release. They are ordered one member at a time (each member's first, then each member's second…),
 * a member's receipts signed by a provider its job allows first (the steward charges a member job only the receipt
 * of the run member at its index, whom `train buy` names as the job's allowlist), so the first GANG_LEFTOVER_RECEIPTS
 * cover every member. Its deadline is the latest member job's + GANG_DEADLINE_SLACK_MS (the gang's own, at the
 * steward, is not kept by the buyer).
 */
export function leftoverClaims(jobs: ReadonlyArray<Opened<Job>>, held: HeldOutcomes, self: string, now: number): LeftoverClaim[] {
  const out: LeftoverClaim[] = [];
  const gangs = new Map<string, { at: number; deadline: number; ended: boolean; members: Array<readonly Uint8Array[]> }>();
  for (const j of jobs) {
    if (j.signer !== self || j.record.deadline <= now) continue;
    const receipts = held.receiptsOf(j.address).filter((r) => r.record.buyer === self);
    const ended = receipts.some((r) => r.record.status === 'completed' && held.acceptancesOf(r.address).some((a) => a.signer === self && a.record.verdict === 'accepted'));
    const cite = citeOf(j.record.params);
    if (cite) {
      // the gang's place in the list is its first member job's
      let g = gangs.get(cite.claim);
      if (!g) {
        g = { at: out.length, deadline: 0, ended: true, members: [] };
        gangs.set(cite.claim, g);
        out.push({ claim: cite.claim, deadline: 0 });
      }
      g.deadline = Math.max(g.deadline, j.record.deadline);
      g.ended &&= ended;
      const allowed = new Set(j.record.requirements.allowlist ?? []);
      g.members.push([...receipts.filter((r) => allowed.has(r.signer)), ...receipts.filter((r) => !allowed.has(r.signer))].map((r) => r.bytes));
      continue;
    }
    if (ended) continue;
    out.push({ claim: j.address, deadline: j.record.deadline, ...(receipts.length ? { receipts: receipts.map((r) => r.bytes) } : {}) });
  }
  for (const [claim, g] of gangs) {
    const receipts: Uint8Array[] = [];
    for (let k = 0; g.members.some((m) => m.length > k); k++) for (const m of g.members) if (k < m.length) receipts.push(m[k]!);
    out[g.at] = { claim, deadline: g.deadline + GANG_DEADLINE_SLACK_MS, ...(receipts.length ? { receipts } : {}), gang: g.members.length };
  }
  // a gang whose every member job held ended completed and accepted: released on their receipts
  const done = new Set([...gangs].filter(([, g]) => g.ended).map(([claim]) => claim));
  return out.filter((c) => c.gang === undefined || !done.has(c.claim));
}

export interface LeftoverWithdrawOptions {
  request: StewardRequest;
  claims: readonly LeftoverClaim[];
  clock: Clock;
  log?: Logger;
  /** The node stopping: nothing more is sent. */
  signal?: AbortSignal;
  sleep?: (ms: number) => Promise<void>;
  /** Sweeps before a steward not reached is warned of (default LEFTOVER_TRIES); the first wait between them (default 2 s, doubling up to `maxMs`, default 60 s). */
  tries?: number;
  initialMs?: number;
  maxMs?: number;
}

/** What the start's withdraws did: the steward's answers by `released`, those it refused (its error code), and those never answered. */
export interface LeftoverWithdrawn {
  released: Record<string, number>;
  refused: number;
  unanswered: number;
}

/**
 * At a buyer's start on an overlay with a steward: withdraw the claims of this node's live jobs that an earlier
 * process ran and this one never resumes (it was killed, or lost power, mid-run: no `interrupted` run withdrew them),
 * so their reservation and devices are released now rather than at the jobs' deadlines (docs/overlays.md
 * "Admission"). One claim at a time (a gang's once for its member jobs: leftoverClaims), each with the receipts held
 * for it (at most LEFTOVER_RECEIPTS, a gang's GANG_LEFTOVER_RECEIPTS). The steward answers `yes` (released with
 * what its receipts show), `dequeued`, `noted` or `no` (released already, or never admitted): all final, as is an
 * error it answered (detail.remote: a steward that does not know the op, or a claim not this node's). A transport
 * failure (the steward down or not reached yet) ends the sweep: the claims left are tried again after a wait
 * doubling from `initialMs` up to `maxMs`, for as long as one of their deadlines is ahead (warned once after `tries`
 * sweeps): a steward that comes up after its buyers, as after a power cut, still gets them. Before (second-round
 * review s42 R1 F1) six sweeps, about 64 s, then every claim was held to its deadline, up to 90 days. A claim whose
 * deadline passed meanwhile is left to the steward's own deadline release. Never throws; the node's stop (`signal`)
 * ends it.
 */
export async function withdrawLeftovers(o: LeftoverWithdrawOptions): Promise<LeftoverWithdrawn> {
  const out: LeftoverWithdrawn = { released: {}, refused: 0, unanswered: 0 };
  const sleep = o.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref()));
  const tries = o.tries ?? LEFTOVER_TRIES;
  const maxMs = o.maxMs ?? 60_000;
  let wait = o.initialMs ?? 2_000;
  let left = [...o.claims];
  const answered = () => Object.values(out.released).reduce((a, b) => a + b, 0) + out.refused;
  for (let sweep = 1; left.length; sweep++) {
    if (sweep > 1) {
      await unlessAborted(sleep(wait), o.signal).catch(() => {});
      wait = Math.min(wait * 2, maxMs);
    }
    const next: LeftoverClaim[] = [];
    // those that failed in transport this sweep: at the back of the next, so two that fail every time cannot end each
    // sweep before the others are sent (second-round review s42 R8 F4: two such claims side by side, 0 of 300 released)
    const failed: LeftoverClaim[] = [];
    // transport failures in a row: one is that claim's (the steward reached, its withdraw timed out: the claim goes to
    // the next sweep and the rest are sent); two in a row, the steward is not reached and the rest would fail alike
    // (second-round review s42 R6 F3: one claim failing every time kept every claim behind it unsent to its deadline)
    let failedInARow = 0;
    for (let i = 0; i < left.length; i++) {
      const c = left[i]!;
      if (o.signal?.aborted) return { ...out, unanswered: o.claims.length - answered() };
      if (c.deadline <= o.clock()) continue;
      try {
        const receipts = (c.receipts ?? []).slice(0, c.gang === undefined ? LEFTOVER_RECEIPTS : GANG_LEFTOVER_RECEIPTS);
        const said = String((await withdrawClaim(o.request, c.claim, { receipts, deadlineMs: LEFTOVER_WITHDRAW_MS })(o.signal)) ?? 'no answer');
        failedInARow = 0;
        out.released[said] = (out.released[said] ?? 0) + 1;
        o.log?.[said === 'yes' || said === 'dequeued' || said === 'noted' ? 'info' : 'debug']({ claim: c.claim, ...(c.gang === undefined ? {} : { gang: c.gang }), released: said }, c.gang === undefined ? 'withdrew the claim of a job an earlier run of this node left' : 'withdrew the gang claim of member jobs an earlier run of this node left');
      } catch (e) {
        if (!isTransport(e)) {
          failedInARow = 0;
          out.refused++;
          o.log?.warn({ claim: c.claim, ...(c.gang === undefined ? {} : { gang: c.gang }), code: (e as C0Error).code, err: (e as Error).message }, 'the steward refused the withdraw of a claim an earlier run of this node left; it releases the claim at the deadline');
          continue;
        }
        failed.push(c);
        if (++failedInARow < 2 && i + 1 < left.length) continue;
        // not reached (down, or not connected yet): the rest go to the next sweep, before those that failed
        next.push(...left.slice(i + 1));
        o.log?.[sweep === tries ? 'warn' : 'debug']({ claims: next.length + failed.length, sweep, code: e.code, err: e.message }, sweep === tries ? 'could not reach the steward to withdraw claims an earlier run left; trying again every minute until their deadlines (the steward releases them then)' : 'could not reach the steward to withdraw claims an earlier run left; trying again');
        break;
      }
    }
    left = [...next, ...failed].filter((c) => c.deadline > o.clock());
  }
  // never answered: their deadlines passed while the steward was not reached (it released them then)
  out.unanswered = o.claims.length - answered();
  return out;
}
