/**
 * Anti-entropy between a pool's members (docs/pools.md "Catching up on the trail"). A dispatch (`op: trail`) goes to
 * the members live when it is made, and its outcome (`op: closed`) to the members then; catch-up asks only about a
 * member's own open entries. So a member that was down, cut off, or restored from an older backup would miss the
 * entries of that time for good: its figures stay short, and a restored member has lost the closed dispatches that
 * say which jobs it already ran and which work it already dispatched. Here it pulls what it lacks from the others:
 *
 * - it lists a live member's trail keys page by page (`op: sync {after?}` → `{keys: [{key, state, givesWay?}],
 *   next?}`, SYNC_PAGE_KEYS a page, in key order),
 * - fetches the entries it lacks, holds open while that member holds them closed, or holds closed with an outcome
 *   that gives way to the one that member holds (`op: fetch {keys}` → `{entries}`, at most SYNC_FETCH_KEYS keys and
 *   SYNC_FETCH_BYTES an answer),
 * - and keeps each only when it checks out as the `trail` and `closed` frames are checked (serve.ts): the dispatch
 *   signed by a member of a roster of the pool this member holds, linking job, offer and member (checkDispatch), its
 *   outcome by verifyOutcome and entitled as a `closed` is. Anything else is skipped and counted.
 *
 * A member pulls from the members it hears again after a silence (at its start every member it hears; after a
 * partition, a one-way cut or a pause of either side, the ones back), judged on each way on its own: the answers to its
 * own pings, and the frames the others send it. It pulls from every live member each SYNC_PERIOD_MS too; a step takes a
 * few pages per member within a time bound, and the next goes on from where it stopped. Every call is bounded by
 * livenessMs. Entries outside `history.keepDays` are not kept (they would be pruned).
 *
 * The entries that come back include this member's own dispatches (a coordinator restored from a backup refuses won
 * work it dispatched and closed before: POOL_ALREADY_DISPATCHED) and the closed dispatches that chose it: a member
 * refuses to run a job whose dispatch to it closed completed, or its own closed (`ranHere`, POOL_ALREADY_RUN), since a
 * restore rewinds its run log too.
 */
import { C0Error } from '../../errors.js';
import { open, type Opened } from '../../records/envelope.js';
import { T, type PoolDispatch, type PoolRoster, type Receipt } from '../../records/kinds.js';
import { DispatchTrail, type TrailEntry } from '../../pools/trail.js';
import { givesWay, verifyOutcome } from '../../pools/outcome.js';
import { monotonicClock } from '../../util/clock.js';
import { checkDispatch, type PoolReply } from './protocol.js';
import { TRAIL_HORIZON_MS, trailKeep, type PoolMemberDeps } from './member.js';

/** Trail keys one `op: sync` answer lists. */
export const SYNC_PAGE_KEYS = 512;
/** Keys one `op: fetch` may ask for. */
export const SYNC_FETCH_KEYS = 32;
/** An `op: fetch` answer stops adding entries past this many bytes (at least one entry comes back; a frame is 4 MiB). */
export const SYNC_FETCH_BYTES = 1024 * 1024;
/** Pages per member one step after the start takes (the start's takes as many as its time allows). */
export const SYNC_STEP_PAGES = 4;
/** How long one step runs (rounds are started only within it), in livenessMs: after the start, and at each tick. */
export const SYNC_STEP_LIVENESS = 2;
/** How long the step at the start runs, in livenessMs (the member quotes, and runs dispatched work, only after it). */
export const SYNC_START_LIVENESS = 10;
/** Every live member is asked again this often (monotonic ms): what a member missed without being seen gone. */
export const SYNC_PERIOD_MS = 15 * 60_000;
/**
 * A member that becomes live again is pulled from only if its last pull began at least this many livenessMs ago: one
 * whose liveness flaps (a loaded machine, a slow link) does not have its whole trail listed at every flap.
 */
export const SYNC_RELIST_LIVENESS = 10;
/**
 * Pages one member may list to this one per SYNC_PERIOD_MS: a member that keeps listing keys is not pulled from for the
 * rest of the period, and the next period goes on from where it stopped (a long honest trail comes over in periods).
 */
export const SYNC_PERIOD_PAGES = 64;
/**
 * Bytes of `op: fetch` answers one member may hand this one per SYNC_PERIOD_MS (the entries' envelopes, summed): past
 * them it is not pulled from for the rest of the period, the next going on after the last entry handled. An honest
 * period's SYNC_PERIOD_PAGES pages of entries of a few KiB each weigh well within it.
 */
export const SYNC_PERIOD_BYTES = 256 * SYNC_FETCH_BYTES;
/**
 * Entries one member may hand this one per SYNC_PERIOD_MS that are skipped without being held against it (CANNOT_CHECK,
 * view refusals): past them it is not pulled from for the rest of the period, the next going on after the last entry
 * handled, so an entry skipped is not fetched and counted again (more than a page's worth: an honest trail of entries
 * this member cannot hold moves on by at least as much a period).
 */
export const SYNC_PERIOD_SKIPS = 2 * SYNC_PAGE_KEYS;
/**
 * Why a fetched entry may be skipped without its member being at fault: a roster this member does not hold (one that
 * joined later never held the older ones), or this member's own bound on another coordinator's open entries. Refusals
 * that follow from this member's view of the roster are skipped too (`viewRefusal`): only the others, which prove the
 * member handed back something forged or not asked for, stop the pull from it.
 */
const CANNOT_CHECK = new Set(['POOL_ROSTER_STALE', 'POOL_TRAIL_FULL']);
/** Refusals thrown by #keep that depend on this member's view of the roster (skipped, not held against the peer). */
const VIEW_REFUSALS = new WeakSet<Error>();
function viewRefusal(code: string, message: string): never {
  const e = new C0Error(code, message);
  VIEW_REFUSALS.add(e);
  throw e;
}

/**
 * Whether the signer of a POOL_COORDINATOR_LOST `receipt` may fail `dispatch` as lost: never its coordinator; a
 * member of the roster in use (`inUse`), or of the roster the receipt's pool proof carries (checked when the receipt
 * opened: the signer is on it) when this member holds that roster (`rosterOf`: in use, newest heard, left, or one its
 * trail keeps) and it is not older than the one the dispatch names. So a member that has since left, or one on a newer
 * roster this member heard, is judged alike live (`closed`, serve.ts) and catching up (here), whatever roster each
 * member uses; the dispatch's roster not held here, only `inUse` counts.
 */
export function mayFailLost(receipt: Opened<Receipt>, dispatch: Opened<PoolDispatch>, inUse: readonly string[], rosterOf: (address: string) => Opened<PoolRoster> | undefined): boolean {
  const by = receipt.signer;
  if (by === dispatch.signer) return false;
  if (inUse.includes(by)) return true;
  const under = rosterOf(dispatch.record.roster);
  const proof = receipt.record.pool;
  if (!under || !proof) return false;
  try {
    const held = rosterOf(open(proof.roster, T.poolRoster, { trusted: true }).address);
    return held !== undefined && held.signer === under.signer && held.record.seq >= under.record.seq && held.record.members.some((m) => m.did === by);
  } catch {
    return false;
  }
}
/** The longest trail key a peer may name (`sha256:<64 hex>|<DID>`). */
const MAX_KEY = 512;

const STATES = new Set(['dispatched', 'completed', 'failed']);

/** What the anti-entropy reads from the member it belongs to. */
export interface SyncView {
  readonly pool: string;
  /** The roster in use. */
  roster(): Opened<PoolRoster>;
  /** A roster of the pool this member holds, by address (in use, newest heard, left, or one its trail keeps). */
  rosterOf(address: string): Opened<PoolRoster> | undefined;
  live(): string[];
  /**
   * Whether `did` is on a roster of the pool this member holds (in use, newest heard, left; or sent its `left` record):
   * a dispatch naming a roster not held, or one that does not list its signer, is skipped only when its signer is one.
   * Absent: on the roster in use.
   */
  isMember?(did: string): boolean;
}

export interface SyncResult {
  /** Entries kept that this member lacked. */
  kept: number;
  /** Entries closed (or their outcome replaced) by one that checked out. */
  closed: number;
  /** Entries fetched that did not check out, or that this member cannot check (a roster it does not hold). */
  refused: number;
}

function badRequest(message: string): never {
  throw new C0Error('POOL_BAD_REQUEST', message);
}

function isKey(k: unknown): k is string {
  return typeof k === 'string' && k.length <= MAX_KEY && k.indexOf('|') > 0;
}

const jobOfKey = (key: string): string => key.slice(0, key.indexOf('|'));

/** `op: sync`: one page of this member's trail keys after `after`, each with its state (and `givesWay` for a closed outcome that gives way to its coordinator's own). */
export async function listTrail(trail: DispatchTrail, after: unknown): Promise<PoolReply> {
  if (after !== undefined && !isKey(after)) badRequest('sync: `after` is a trail key');
  const page = await trail.page(after, SYNC_PAGE_KEYS + 1);
  const list = page.slice(0, SYNC_PAGE_KEYS);
  return {
    keys: list.map(({ key, entry }) => ({ key, state: entry.state, ...(entry.state !== 'dispatched' && givesWay(entry) ? { givesWay: 'yes' as const } : {}) })),
    ...(page.length > SYNC_PAGE_KEYS ? { next: list[list.length - 1]!.key } : {}),
  };
}

/** `op: fetch`: the entries of the keys asked, in their order (absent ones skipped), until SYNC_FETCH_BYTES. */
export async function fetchTrail(trail: DispatchTrail, keys: unknown): Promise<PoolReply> {
  if (!Array.isArray(keys) || keys.length > SYNC_FETCH_KEYS || !keys.every(isKey)) badRequest(`fetch: \`keys\` is a list of at most ${SYNC_FETCH_KEYS} trail keys`);
  const entries: NonNullable<PoolReply['entries']> = [];
  let bytes = 0;
  for (const key of keys) {
    const e = (await trail.entries(jobOfKey(key))).find((x) => x.key === key)?.entry;
    if (!e) continue;
    const size = e.dispatch.length + e.job.length + e.offer.length + (e.receipt?.length ?? 0) + (e.settlement?.length ?? 0);
    if (entries.length && bytes + size > SYNC_FETCH_BYTES) break;
    bytes += size;
    entries.push({ key, dispatch: e.dispatch, job: e.job, offer: e.offer, state: e.state, ...(e.receipt ? { receipt: e.receipt } : {}), ...(e.settlement ? { settlement: e.settlement } : {}) });
  }
  return { entries };
}

/**
 * Whether this member's trail says it ran `job` (`me`): its part in the job is over, whatever its run log says (a
 * restore rewinds the run log; the closed entries come back from the others). The pool never dispatches a job again
 * once a dispatch of it closed (the buyer fails over to another provider), so `run` of such a job is refused
 * POOL_ALREADY_RUN. What counts is a closed dispatch that chose this member and is either its own (it coordinated the
 * job and ran it itself) or closed `completed` (its coordinator delivered an output this member made). Another
 * coordinator's dispatch closed `failed` does not: any member can sign a dispatch of a job to this member and fail it
 * with its own receipt without ever calling it (`op: trail` then `op: closed`, or handed back by `op: fetch`), and
 * that would veto the elected coordinator's dispatch (docs/pools.md "Catching up on the trail"). A restored member
 * may so run again a job that failed on it before.
 */
export async function ranHere(trail: DispatchTrail, job: string, me: string): Promise<boolean> {
  return (await trail.entries(job)).some((e) => {
    if (e.entry.state === 'dispatched') return false;
    try {
      const d = open(e.entry.dispatch, T.poolDispatch, { trusted: true });
      return d.record.member === me && (d.signer === me || e.entry.state === 'completed');
    } catch {
      return false;
    }
  });
}

/** A listed key as a peer answered it. */
interface Listed {
  key: string;
  state: TrailEntry['state'];
  givesWay: boolean;
}

export class TrailSync {
  /** Members to pull from: DID → the last key listed (undefined: from the start). */
  #due = new Map<string, string | undefined>();
  /** When every live member was last made due (monotonic). */
  #lastAll: number | undefined;
  /** When each member was last made due (monotonic): SYNC_RELIST_LIVENESS. */
  #lastDue = new Map<string, number>();
  /** When each member was last heard (monotonic), each way: answering this member's ping (`out`), calling it (`in`). */
  #heard = { out: new Map<string, number>(), in: new Map<string, number>() };
  /** Members heard again, either way, after a silence of more than 3 × livenessMs since the last round of pings. */
  #back = new Set<string>();
  /** Pages each member listed this period (SYNC_PERIOD_PAGES), a page listed again included. */
  #pages = new Map<string, number>();
  /** Bytes of fetch answers (SYNC_PERIOD_BYTES) and entries skipped (SYNC_PERIOD_SKIPS) each member handed this period. */
  #spent = new Map<string, { bytes: number; skips: number }>();
  /** Members not pulled from for the rest of the period: pages used up, a page that is not one, an entry that does not check out. */
  #stopped = new Set<string>();
  /** Where the next period goes on listing a member stopped: after its pages, bytes or skips ran out, or after a junk entry. */
  #resume = new Map<string, string>();
  #busy: Promise<SyncResult> | undefined;
  /** The step at the start (undefined until it begins): `run` waits for it. */
  #started: Promise<unknown> | undefined;

  constructor(
    private d: PoolMemberDeps,
    private v: SyncView,
  ) {}

  get #mono(): () => number {
    return this.d.monoClock ?? monotonicClock;
  }

  /** The step at the start, once it began (settled when it ends); undefined before. */
  get started(): Promise<unknown> | undefined {
    return this.#started;
  }

  /**
   * Note that `member` was heard now: it answered this member's ping on the roster in use (`out`), or called this member
   * (`in`). Heard after more than 3 × livenessMs of silence that way (or for the first time), it is back (`seen`).
   *
   * Each way on its own, and not the liveness both ways feed (`PoolMember.live`): after a pause of this member, the
   * others' pings queued meanwhile are served before its own round, and a member that can still call this one but not
   * be called by it (or the other way round: the dispatches it sent here failed) never stops being live.
   */
  heard(member: string, way: 'out' | 'in'): void {
    const now = this.#mono();
    const last = this.#heard[way].get(member);
    if (last === undefined || now - last > 3 * this.d.options.livenessMs) this.#back.add(member);
    this.#heard[way].set(member, now);
  }

  /**
   * Note who is live after a round of pings (`live`): a member back since the last round (`heard`: at this member's
   * start, every one it hears; after a partition, a one-way cut, or a pause of either, the ones back) is pulled from,
   * unless it was within SYNC_RELIST_LIVENESS × livenessMs; every SYNC_PERIOD_MS, every live one.
   */
  seen(live: readonly string[]): void {
    const now = this.#mono();
    const all = this.#lastAll === undefined || now - this.#lastAll >= SYNC_PERIOD_MS;
    if (all) {
      this.#lastAll = now;
      this.#pages.clear();
      this.#spent.clear();
      this.#stopped.clear();
    }
    const gap = SYNC_RELIST_LIVENESS * this.d.options.livenessMs;
    for (const m of live) {
      if (m === this.d.did || this.#due.has(m) || this.#stopped.has(m)) continue;
      if (all || (this.#back.has(m) && now - (this.#lastDue.get(m) ?? -Infinity) >= gap)) {
        this.#due.set(m, this.#resume.get(m));
        this.#resume.delete(m);
        this.#lastDue.set(m, now);
      }
    }
    this.#back.clear();
  }

  /** The members still to pull from (tests, status). */
  get due(): string[] {
    return [...this.#due.keys()];
  }

  /** The step at the start: as many pages as SYNC_START_LIVENESS × livenessMs allows. */
  start(): Promise<SyncResult> {
    const p = this.step(Infinity, SYNC_START_LIVENESS * this.d.options.livenessMs);
    this.#started = p.catch(() => undefined);
    return p;
  }

  /** One step: up to `pages` pages per due member, rounds started within `ms`; one at a time (a step under way is joined). */
  step(pages = SYNC_STEP_PAGES, ms = SYNC_STEP_LIVENESS * this.d.options.livenessMs): Promise<SyncResult> {
    if (this.#busy) return this.#busy;
    if (!this.#due.size) return Promise.resolve({ kept: 0, closed: 0, refused: 0 });
    const p = this.#step(pages, ms).finally(() => {
      this.#busy = undefined;
    });
    this.#busy = p;
    return p;
  }

  async #step(pages: number, ms: number): Promise<SyncResult> {
    // On the member's monotonic clock (a fake one in tests).
    const stopAt = this.#mono() + ms;
    const res: SyncResult = { kept: 0, closed: 0, refused: 0 };
    // Why entries were refused, by code: one line for the step, not one an entry.
    const codes: Record<string, number> = {};
    // Whether a member was stopped for an entry that does not check out (at most once a member a period): a warn line.
    let junk = false;
    const live = new Set(this.v.live());
    for (const [peer, cursor] of [...this.#due]) {
      // One no longer live is pulled from again when it is back.
      if (!live.has(peer) || peer === this.d.did) {
        this.#due.delete(peer);
        continue;
      }
      let after = cursor;
      for (let n = 0; n < pages && this.#mono() < stopAt; n++) {
        const r = await this.d.call(peer, { op: 'sync', ...(after !== undefined ? { after } : {}) }, this.d.options.livenessMs).catch(() => undefined);
        // Silent: asked again at the next step, from the same key.
        if (r === undefined) break;
        const list = r.code === undefined ? this.#listed(r, after) : undefined;
        if (!list) {
          // A build before this answers POOL_BAD_REQUEST (unknown op); a page that is not one is not followed.
          if (r.code !== undefined) this.d.log.debug({ peer, code: r.code }, 'pool: a member does not list its trail (a build before anti-entropy?); not pulled from this period');
          else this.d.log.warn({ peer }, 'pool: a member answered a page of its trail keys that is not one (out of order, or too long); not pulled from this period');
          this.#stop(peer);
          break;
        }
        // Every listing counts, a page listed again too (its pull cut short by the step's time or a silence).
        const listed = (this.#pages.get(peer) ?? 0) + 1;
        this.#pages.set(peer, listed);
        // The last key of the page handled (kept, skipped, refused, or found gone): where a stopped pull goes on.
        const handled: { key?: string } = {};
        const pulled = await this.#pull(peer, list, res, codes, stopAt, handled);
        // The next period goes on after the entry that stopped this one: an honest member handing back the old entries
        // of one that left before this member joined (not on any roster it holds: junk here) does not hold every later
        // entry back for good; a hostile one is held to the period's bounds at each go.
        if (pulled === 'stop') {
          junk = true;
          this.#stop(peer, handled.key ?? after);
          break;
        }
        if (pulled === 'spent') {
          const spent = this.#spent.get(peer);
          this.d.log.info({ peer, ...spent }, 'pool: a member handed back as many trail bytes, or entries this member cannot hold, as one period takes; the next period goes on after the last entry handled');
          // After the last entry handled, not from the page's start: skipped entries are not fetched and counted again.
          this.#stop(peer, handled.key ?? after);
          break;
        }
        // Not all of the page (the peer went silent, or the step's time ran out): asked again from the same key.
        const again = pulled === 'again';
        const next = again ? after : list.next;
        if (!again && next === undefined) {
          this.#due.delete(peer);
          break;
        }
        // Before the page is asked again: a member whose pages keep being cut short is held to the period's pages too.
        if (listed >= SYNC_PERIOD_PAGES) {
          this.d.log.info({ peer, pages: listed }, `pool: a member listed ${SYNC_PERIOD_PAGES} pages of trail keys this period; the next period goes on from there`);
          this.#stop(peer, next);
          break;
        }
        this.#due.set(peer, next);
        if (again) break;
        after = next;
      }
    }
    // A warn line only for a member stopped for junk (once a member a period); entries only skipped are said at debug.
    if (res.kept || res.closed || res.refused) this.d.log[junk ? 'warn' : res.kept || res.closed ? 'info' : 'debug']({ ...res, ...(res.refused ? { codes } : {}) }, 'pool: caught up on trail entries this member missed');
    return res;
  }

  /** Not pulled from for the rest of the period; the next goes on listing after `resume` (undefined: from the start). */
  #stop(peer: string, resume?: string): void {
    this.#due.delete(peer);
    this.#stopped.add(peer);
    if (resume !== undefined) this.#resume.set(peer, resume);
  }

  /** What `peer` has handed this period (SYNC_PERIOD_BYTES, SYNC_PERIOD_SKIPS). */
  #spentBy(peer: string): { bytes: number; skips: number } {
    let s = this.#spent.get(peer);
    if (!s) this.#spent.set(peer, (s = { bytes: 0, skips: 0 }));
    return s;
  }

  /** A page as a peer answered it, checked: keys in order after `after`, `next` its last key. Undefined when it is not one. */
  #listed(r: PoolReply, after: string | undefined): { keys: Listed[]; next: string | undefined } | undefined {
    if (!Array.isArray(r.keys) || r.keys.length > SYNC_PAGE_KEYS) return undefined;
    const keys: Listed[] = [];
    let prev = after;
    for (const x of r.keys as unknown[]) {
      const k = x as Record<string, unknown> | undefined;
      if (!k || !isKey(k.key) || typeof k.state !== 'string' || !STATES.has(k.state) || (prev !== undefined && k.key <= prev)) return undefined;
      keys.push({ key: k.key, state: k.state as TrailEntry['state'], givesWay: k.givesWay === 'yes' });
      prev = k.key;
    }
    if (r.next !== undefined && (r.next !== prev || !keys.length)) return undefined;
    return { keys, next: r.next };
  }

  /**
   * Fetch and keep the listed entries this member lacks (counted into `res`, refusals by code into `codes`): 'again'
   * when the peer went silent or the step's time ran out (`stopAt`, checked before each fetch): the page is asked again,
   * its entries kept skipped; 'stop' when the peer handed back an entry that does not check out (or one not asked): it
   * is not pulled from for the rest of the period; 'spent' when it handed back SYNC_PERIOD_BYTES or SYNC_PERIOD_SKIPS
   * this period: it is not pulled from for the rest of the period. `handled.key` is set to the last key of the page
   * handled (kept, held already, skipped, refused, or asked and not handed back): the next period goes on after it.
   */
  async #pull(peer: string, list: { keys: Listed[] }, res: SyncResult, codes: Record<string, number>, stopAt: number, handled: { key?: string }): Promise<'done' | 'again' | 'stop' | 'spent'> {
    const spent = this.#spentBy(peer);
    const local = new Map<string, TrailEntry>();
    for (const job of new Set(list.keys.map((k) => jobOfKey(k.key)))) for (const e of await this.d.trail.entries(job)) local.set(e.key, e.entry);
    let want = list.keys.filter((k) => {
      const mine = local.get(k.key);
      if (!mine) return true;
      // This member's own dispatch it holds is its own recovery's to close (and settle: coordinator.ts).
      if (k.state === 'dispatched' || k.key.slice(k.key.indexOf('|') + 1) === this.d.did) return false;
      // Open here and closed there; or closed here with an outcome that gives way (a lost close, a completion without
      // its settlement) and there with one that does not (its coordinator's own, settled).
      return mine.state === 'dispatched' || (!k.givesWay && givesWay(mine));
    });
    const refuse = (key: string | undefined, code: string, message: string, view = false): 'skip' | 'stop' | 'spent' => {
      res.refused++;
      codes[code] = (codes[code] ?? 0) + 1;
      if (view || CANNOT_CHECK.has(code)) {
        this.d.log.debug({ peer, key, err: code, message }, 'pool: a trail entry a member handed back cannot be checked or held here; skipped');
        return ++spent.skips >= SYNC_PERIOD_SKIPS ? 'spent' : 'skip';
      }
      this.d.log.warn({ peer, key, err: code, message }, 'pool: a trail entry a member handed back does not check out; not kept, and that member is not pulled from this period');
      return 'stop';
    };
    while (want.length) {
      if (this.#mono() >= stopAt) return 'again';
      const ask = want.slice(0, SYNC_FETCH_KEYS);
      const r = await this.d.call(peer, { op: 'fetch', keys: ask.map((k) => k.key) }, this.d.options.livenessMs).catch(() => undefined);
      if (r === undefined) return 'again';
      const got = Array.isArray(r.entries) ? (r.entries as unknown[]) : [];
      let last = -1;
      let bytes = 0;
      // Whether an entry of the answer checked out (kept, or already held): only then may it have been cut.
      let checked = false;
      let out: 'stop' | 'spent' | undefined;
      for (const x of got.slice(0, ask.length)) {
        const f = x as Record<string, unknown> | undefined;
        const i = ask.findIndex((k) => k.key === f?.key);
        // Only keys asked, in the order asked.
        if (i <= last) {
          refuse(undefined, 'POOL_BAD_REQUEST', 'an entry not asked for, or out of the order asked');
          out = 'stop';
          break;
        }
        last = i;
        handled.key = ask[i]!.key;
        for (const b of [f!.dispatch, f!.job, f!.offer, f!.receipt, f!.settlement]) if (b instanceof Uint8Array) bytes += b.length;
        try {
          const done = await this.#keep(ask[i]!.key, local.get(ask[i]!.key), f!);
          checked = true;
          if (done === 'kept') res.kept++;
          else if (done === 'closed') res.closed++;
        } catch (e) {
          const r = refuse(ask[i]!.key, e instanceof C0Error ? e.code : 'POOL_INTERNAL', (e as Error).message, e instanceof Error && VIEW_REFUSALS.has(e));
          if (r !== 'skip') {
            out = r;
            break;
          }
        }
      }
      // Every answer counts against the period's bytes, whatever came of its entries.
      spent.bytes += bytes;
      if (out) return out;
      // The keys asked and not handed back are not there (pruned meanwhile), or not given: on past the whole batch. Only
      // an answer the byte bound cut (SYNC_FETCH_BYTES: its entries weigh at least half of it) has the rest asked again,
      // and only when one of its entries checked out (one of skipped entries alone is not taken as cut).
      const cut = last >= 0 && checked && bytes >= SYNC_FETCH_BYTES / 2;
      if (!cut) handled.key = ask[ask.length - 1]!.key;
      if (spent.bytes >= SYNC_PERIOD_BYTES) return 'spent';
      want = want.slice(cut ? last + 1 : ask.length);
    }
    return 'done';
  }

  #isMember(did: string): boolean {
    return this.v.isMember ? this.v.isMember(did) : this.v.roster().record.members.some((m) => m.did === did);
  }

  /** Keep one fetched entry when it checks out; what it changed here. Throws the check's code. */
  async #keep(key: string, local: TrailEntry | undefined, f: Record<string, unknown>): Promise<'kept' | 'closed' | 'none'> {
    if (!(f.dispatch instanceof Uint8Array)) badRequest('an entry carries its dispatch, job and offer envelopes');
    if (typeof f.state !== 'string' || !STATES.has(f.state)) badRequest('an entry’s state is dispatched, completed or failed');
    // Under a roster of the pool this member holds: the one a `trail` frame names (a settlement is split by it).
    const claimed = open(f.dispatch, T.poolDispatch, { trusted: true });
    const roster = this.v.rosterOf(claimed.record.roster);
    if (!roster) {
      // Skipped only when signed, of this pool, by a member of a roster this member holds: anything else is junk (a
      // throwaway key naming a made-up roster), and stops the pull.
      const signed = open(f.dispatch, T.poolDispatch);
      if (signed.record.pool !== this.v.pool || !this.#isMember(signed.signer)) throw new C0Error('POOL_NOT_MEMBER', 'the dispatch names a roster this member does not hold, and is not by a member of a roster of this pool it holds');
      throw new C0Error('POOL_ROSTER_STALE', 'the dispatch names a roster this member does not hold');
    }
    let checked: ReturnType<typeof checkDispatch>;
    try {
      checked = checkDispatch(f, claimed.signer, this.v.pool, roster.record.members.map((m) => m.did), (a) => this.v.rosterOf(a));
    } catch (e) {
      // A coordinator not on the roster its dispatch names: a member that held it kept it under its own roster in use
      // (`trail`), so the one that handed it back is not at fault; but only one of this pool, by a member of a roster
      // this member holds (checkDispatch checked the signature before its POOL_NOT_MEMBER).
      if (e instanceof C0Error && e.code === 'POOL_NOT_MEMBER' && claimed.record.pool === this.v.pool && this.#isMember(claimed.signer)) viewRefusal(e.code, e.message);
      throw e;
    }
    const { dispatch, job, offer } = checked;
    const by = dispatch.signer;
    if (DispatchTrail.key(job.address, by) !== key) throw new C0Error('POOL_DISPATCH_MISMATCH', 'the entry is not the one asked for');
    const now = this.d.clock();
    // Past its history window it would be pruned at once (and recovery leaves such entries alone).
    if (this.d.keepDays && now - job.record.deadline > this.d.keepDays * 24 * 3600_000) return 'none';
    // Dated as the member that kept it would: its own dispatch by its job's deadline, another's at most a horizon ahead.
    const until = by === this.d.did ? job.record.deadline : Math.min(job.record.deadline, now + TRAIL_HORIZON_MS);
    const e = { dispatch: dispatch.bytes, job: job.bytes, offer: offer.bytes };
    // Its own dispatch it holds is closed by its own recovery, which settles it (a restart) or takes the others' outcome.
    if (local && by === this.d.did) return 'none';
    if (f.state === 'dispatched') {
      if (local) return 'none';
      // Open entries of another coordinator within its pool.maxOpenDispatches here, as `op: trail` (POOL_TRAIL_FULL).
      await this.d.trail.record(job.address, by, e, until, by === this.d.did ? undefined : this.d.options.maxOpenDispatches, roster, by === this.d.did ? undefined : trailKeep(this.d.options, false));
      return 'kept';
    }
    // Closed: its outcome checked as a `closed` frame's is (serve.ts), against the job's entries held here.
    const target: TrailEntry = { ...e, state: 'dispatched' };
    const held = (await this.d.trail.entries(job.address)).filter((x) => x.key !== key).map((x) => x.entry);
    const o = verifyOutcome(target, f.receipt, f.settlement, { pool: this.v.pool, entries: [...held, target], roster: (a) => this.v.rosterOf(a), unsettled: true });
    if (o.state !== f.state) throw new C0Error('POOL_OUTCOME_MISMATCH', 'the entry’s state is not its receipt’s');
    if (!o.lost && o.coordinator !== by) throw new C0Error('POOL_CLOSE_NOT_ENTITLED', 'a dispatch closes only with its coordinator’s own outcome');
    // Whom this member takes as a member (its roster in use, the rosters it holds) is its own view: a member that
    // took the receipt under another roster is not at fault.
    if (o.lost && !mayFailLost(o.receipt, dispatch, this.v.roster().record.members.map((m) => m.did), (a) => this.v.rosterOf(a))) {
      viewRefusal('POOL_CLOSE_NOT_ENTITLED', 'a POOL_COORDINATOR_LOST receipt is taken from a member of the roster in use, or of a roster not older than the dispatch’s (its pool proof)');
    }
    // An entry open here is closed as lost only by catch-up and recovery (coordinator.ts), which first ask its
    // coordinator (one cut off from this member for a moment may have completed the job).
    if (local && o.lost) return 'none';
    // Within what another coordinator may keep here (nothing of its dropped for an old entry: a catch-up fetching the
    // entries it dropped would drop others, every period; POOL_TRAIL_FULL, skipped).
    if (!local) await this.d.trail.record(job.address, by, e, until, undefined, roster, by === this.d.did ? undefined : trailKeep(this.d.options, false));
    const changed = await this.d.trail.close(job.address, by, o.state, o.receipt.bytes, o.settlement?.bytes, o.lost ? undefined : givesWay);
    return !local ? 'kept' : changed ? 'closed' : 'none';
  }
}
