/**
 * `/c0mpute/pool/1`, the protocol between a pool's members (docs/pools.md
 * "Dispatch recorded before the call"): one request frame, one answer; only
 * roster members may call (the connection's key says who). Requests:
 *   {op:'ping', seq, workloads?, storeFailing?} · {op:'trail', dispatch, job, offer} · {op:'run', dispatch, job, offer, input}
 *   {op:'closed', job, coordinator, receipt, settlement?} · {op:'status', job, coordinator?} · {op:'roster', roster}
 *   {op:'left', roster, membership} (the caller's own `left` record: "A member leaves a running pool")
 *   {op:'sync', after?} · {op:'fetch', keys} (anti-entropy: "Catching up on the trail"; sync.ts)
 *   {op:'result', dispatch} (the answer of the caller's `run` of that dispatch, kept: "A stream that breaks after the work"; results.ts)
 * Answers: {ok:'yes', output?, seq?, now?, roster?, workloads?, storeFailing?} | {state, receipt?, settlement?, running, runs?} | {keys, next?} | {entries} |
 * {code, message}; a member that left answers a ping {code:'POOL_MEMBER_LEFT', roster, membership} and refuses `run`
 * (POOL_MEMBER_LEFT); a member answers a ping from a member it holds as left with the same code and the caller's own
 * record, and refuses its `trail`, a `run` of a dispatch it did not keep before, and a `closed` other than of its own
 * dispatch with its own outcome (POOL_MEMBER_LEFT).
 * A ping carries the caller's roster seq; the answer carries the callee's, and
 * the callee's roster when the caller's is older ("A new roster reaches running members"), and its wall clock (`now`:
 * "Clocks and the election"; a caller before it ignores it, and an answer without it leaves the callee's clock unjudged).
 * A member whose database takes no writes now (a full disk) says `storeFailing: 'yes'` in its pings and their answers;
 * absent (as from a build before it) means its store takes writes. A coordinator dispatches nothing to it ("Member choice").
 */
import { C0Error } from '../../errors.js';
import { open, type Opened } from '../../records/envelope.js';
import { T, type Job, type Offer, type PoolDispatch, type PoolRoster } from '../../records/kinds.js';
import { openTaken } from '../../records/taken.js';

export const POOL_PROTOCOL = '/c0mpute/pool/1';

export interface PoolReply {
  ok?: 'yes';
  output?: Uint8Array;
  code?: string;
  message?: string;
  state?: string;
  receipt?: Uint8Array;
  settlement?: Uint8Array;
  /** Whether the answering member still runs the job as its coordinator (status). */
  running?: 'yes' | 'no';
  /** Whether the answering member runs the job now as the member a dispatch chose (status; absent from a build before it). */
  runs?: 'yes' | 'no';
  /** The answering member's roster seq (ping, roster). */
  seq?: number;
  /**
   * The answering member's wall clock when it answered, ms since the epoch (ping; absent from a build before it): the
   * caller estimates the callee's clock from it (src/pools/clock.ts; docs/pools.md "Clocks and the election").
   */
  now?: number;
  /** The roster in use, to a caller on an older one (ping); the roster left (POOL_MEMBER_LEFT). */
  roster?: Uint8Array;
  /** A member's own `left` record (a ping answered POOL_MEMBER_LEFT). */
  membership?: Uint8Array;
  /** The workloads the answering member runs (ping; absent from a build before it: taken to run any). */
  workloads?: string[];
  /** 'yes': the answering member's database takes no writes now (ping; absent, as from a build before it: it takes writes). */
  storeFailing?: 'yes';
  /** One page of the answering member's trail keys (sync). */
  keys?: Array<{ key: string; state: string; givesWay?: 'yes' }>;
  /** The last key of that page, when more follow (sync: the next page is asked after it). */
  next?: string;
  /** The trail entries asked for (fetch). */
  entries?: Array<{ key: string; dispatch: Uint8Array; job: Uint8Array; offer: Uint8Array; state: string; receipt?: Uint8Array; settlement?: Uint8Array }>;
}

/**
 * A dispatch-carrying request's records, checked: signed by the caller, a member of this pool, linking job ↔ offer ↔
 * dispatch (the "offer" is the record the buyer took: an auction's `c0mpute.offer/1`, or an open order's winning
 * `c0mpute.claim/1`, opened as the job calls for: src/records/taken.ts; the other type is RECORD_WRONG_TYPE), and naming as its member one on the roster it names when this member holds that roster (`rosterOf`; one
 * it does not hold is the caller's to refuse: POOL_ROSTER_STALE for `trail`). An honest coordinator picks the member
 * with selectMember over that roster's active members, so a made-up member is a forged dispatch: refused
 * POOL_DISPATCH_MISMATCH, before it is kept, counted or dialled.
 */
export function checkDispatch(f: Record<string, unknown>, from: string, pool: string, members: string[], rosterOf: (address: string) => Opened<PoolRoster> | undefined): { dispatch: Opened<PoolDispatch>; job: Opened<Job>; offer: Opened<Offer> } {
  if (!(f.dispatch instanceof Uint8Array) || !(f.job instanceof Uint8Array) || !(f.offer instanceof Uint8Array)) throw new C0Error('POOL_BAD_REQUEST', 'dispatch, job and offer envelopes required');
  const dispatch = open(f.dispatch, T.poolDispatch);
  const job = open(f.job, T.job);
  // An auction's offer, or an open order's winning claim (a job with `order`): the one the buyer took, either way.
  const offer = openTaken(f.offer, job);
  if (dispatch.signer !== from) throw new C0Error('POOL_DISPATCH_NOT_CALLERS', 'the dispatch was signed by another member');
  if (dispatch.record.pool !== pool || !members.includes(dispatch.signer)) throw new C0Error('POOL_NOT_MEMBER', 'the dispatch is not by a member of this pool');
  if (dispatch.record.job !== job.address || dispatch.record.offer !== offer.address || offer.record.job !== job.address) throw new C0Error('POOL_DISPATCH_MISMATCH', 'the dispatch, job and offer do not link');
  // A coordinator dispatches the offer it made (and the buyer chose): not another member's.
  if (offer.signer !== dispatch.signer) throw new C0Error('POOL_DISPATCH_MISMATCH', 'the offer dispatched is another member’s');
  const roster = rosterOf(dispatch.record.roster);
  if (roster && !roster.record.members.some((m) => m.did === dispatch.record.member)) throw new C0Error('POOL_DISPATCH_MISMATCH', 'the dispatch names a member that is not on its roster');
  return { dispatch, job, offer };
}
