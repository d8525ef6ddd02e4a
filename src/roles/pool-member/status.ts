/**
 * The operator's per-member figures of a pool (docs/pools.md "Operating a
 * pool"; `c0mpute pool-provider status`): dispatches, outcomes and earnings per
 * member, tallied from a member's dispatch trail (dispatch records and the
 * settlements kept with them). Each job counts once, however many coordinators
 * dispatched it (docs/pools.md "Settlement"). Every closed entry is checked on
 * read by the rule a `closed` message is checked by (src/pools/outcome.ts
 * `verifyOutcome`, the split included): one that does not check out — kept by a
 * build before those checks, or junk — counts as dispatched only. A job's
 * figure is pure (the rosters this member holds come in as a lookup);
 * TrailFigures keeps them and their sums up to date as the trail is written, so
 * a status reads nothing (docs/pools.md "Dispatch trail").
 */
import { Decimal } from 'decimal.js';
import { open, type Opened } from '../../records/envelope.js';
import { T, type PoolRoster, type PoolSettlement } from '../../records/kinds.js';
import type { DispatchTrail, TrailChange, TrailEntry } from '../../pools/trail.js';
import type { Logger } from '../../util/log.js';
import { verifyOutcome } from '../../pools/outcome.js';
import { C0Error } from '../../errors.js';

export interface MemberFigures {
  dispatched: number;
  completed: number;
  failed: number;
  /** Earnings per currency (exact decimal strings). */
  earned: Record<string, string>;
}

/** What the figures check each kept outcome against: this member's pool and the rosters it holds. */
export interface TallyContext {
  pool: string;
  roster(address: string): Opened<PoolRoster> | undefined;
}

function tryOpen<X>(f: () => X): X | undefined {
  try {
    return f();
  } catch {
    return undefined;
  }
}

interface Outcome {
  /** `disputed`: more than one coordinator completed the job (at most one can have: the member runs a job once), so no settlement of it counts. */
  state: 'completed' | 'failed' | 'disputed';
  member: string | undefined;
  /** The coordinator whose own outcome it is (undefined: a lost dispatch's). */
  coordinator?: string;
  failure?: string;
  settlement?: PoolSettlement;
}

/** A job's one outcome from its entries that check out: a completed one (with its settlement), else a failed one. */
export function outcomeOf(list: TrailEntry[], c: TallyContext): Outcome | undefined {
  const read = (e: TrailEntry): Outcome | undefined => {
    if (e.state === 'dispatched' || !e.receipt) return undefined;
    const o = tryOpen(() => verifyOutcome(e, e.receipt, e.settlement, { pool: c.pool, entries: list, roster: (a) => c.roster(a), trusted: true, unsettled: true }));
    if (!o || o.state !== e.state) return undefined;
    const member = tryOpen(() => open(e.dispatch, T.poolDispatch, { trusted: true }).record.member);
    if (o.state === 'failed') return { state: 'failed', member, failure: o.receipt.record.failure?.code ?? 'unknown' };
    // Closed with its coordinator's receipt alone (heard outside the pool): completed, its split not counted until its settlement comes.
    return { state: 'completed', member, coordinator: o.coordinator, ...(o.settlement ? { settlement: o.settlement.record } : {}) };
  };
  const outcomes = list.map(read).filter((o): o is Outcome => o !== undefined);
  const completed = outcomes.filter((o) => o.state === 'completed');
  // Completed by two coordinators: a member runs a job at most once (its run log), so one of them did not do the work
  // (a member that recorded and "completed" a dispatch of its own for a job another won). Which one the buyer took is
  // not in the trail, and the order entries are kept in (by DID) must not decide: neither settlement counts.
  if (new Set(completed.map((o) => o.coordinator)).size > 1) {
    const members = new Set(completed.map((o) => o.member));
    return { state: 'disputed', member: members.size === 1 ? completed[0]!.member : undefined };
  }
  return completed[0] ?? outcomes[0];
}

/**
 * What one job adds to the figures: the member its dispatch credits (undefined: none, e.g. a disputed job two members
 * ran), its outcome, how it failed, the parts of its settlement that count, and its entries still open.
 */
export interface JobFigure {
  member?: string;
  state?: Outcome['state'];
  failure?: string;
  settlement?: { currency: string; parts: ReadonlyArray<{ member: string; amount: string }> };
  open: number;
  /** The rosters its outcome was checked against that the trail does not keep (DispatchTrail.hasRoster), and the lookup's view then. */
  outside?: { rosters: string[]; view: string };
}

/** One job's figure from all its entries (in key order). */
export function jobFigure(list: TrailEntry[], c: TallyContext): JobFigure {
  const o = outcomeOf(list, c);
  const member = o ? o.member : tryOpen(() => open(list[0]!.dispatch, T.poolDispatch, { trusted: true }).record.member);
  const s = o?.settlement;
  return {
    ...(member !== undefined ? { member } : {}),
    ...(o ? { state: o.state } : {}),
    ...(o?.state === 'failed' ? { failure: o.failure ?? 'unknown' } : {}),
    ...(s ? { settlement: { currency: s.price.currency, parts: s.parts.map((p) => ({ member: p.member, amount: p.amount })) } } : {}),
    open: list.filter((e) => e.state === 'dispatched').length,
  };
}

/** What `pool-provider status` shows of the trail kept: per member, how the failed jobs failed, the disputed ones, the open entries. */
export interface PoolFigures {
  /** A member's figures (zeros for one with none). */
  member(did: string): MemberFigures;
  /** Every member with figures in the trail kept, on the roster in use or not (one that left or was removed). */
  members(): string[];
  failures: Record<string, number>;
  disputed: number;
  pending: number;
}

/** Exact sums (amounts have at most 30 places): the figures add and take away, so no sum may round. */
const D = Decimal.clone({ precision: 200 });

interface Tally {
  dispatched: number;
  completed: number;
  failed: number;
  /** Per currency: the sum and how many parts make it (a currency is shown while a part counts, even a part of 0). */
  earned: Map<string, { sum: Decimal; n: number }>;
}

/** Job figures computed at most between yields to the event loop (a build over the whole trail, a catch-up after writes)... */
export const FIGURES_CHUNK = 32;
/** ...and for at most about this long, ms (a job's figure checks a receipt's pool proof: two signatures). */
export const FIGURES_SLICE_MS = 10;
/** How long after the member starts its figures are first built (in the background: the start is busy enough). */
export const FIGURES_WARM_MS = 5_000;

/** The lookup of rosters the figures check outcomes against, and what it depends on besides the trail's own rosters. */
export interface FiguresContext extends TallyContext {
  /** Changes whenever `roster` may find a roster the trail does not keep differently (this member's rosters in use, newest, left). */
  view(): string;
}

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Counts the jobs computed since the last turn of the event loop; `next` takes one after FIGURES_CHUNK of them or FIGURES_SLICE_MS. */
class Slice {
  #n = 0;
  #t = performance.now();
  constructor(private chunk: number) {}
  async next(): Promise<void> {
    if (++this.#n < this.chunk && performance.now() - this.#t < FIGURES_SLICE_MS) return;
    await turn();
    this.#n = 0;
    this.#t = performance.now();
  }
}

/**
 * The operator's figures of a dispatch trail, kept up to date instead of read whole at each `status` (docs/pools.md
 * "Dispatch trail"): one figure per job, the sums of them, and the jobs each write touched (DispatchTrail.watch)
 * computed again from their entries alone. Built once by reading the trail a job at a time, yielding to the event
 * loop every FIGURES_CHUNK jobs or FIGURES_SLICE_MS (FIGURES_WARM_MS after the member starts, or at the first `read`
 * if that comes sooner); a catch-up after writes yields the same way. A job whose outcome
 * was checked against a roster the trail does not keep is computed again when that roster is recorded or the view
 * changes, so the figures are always those a full computation over the trail would give.
 */
/** Failure codes `status` names one by one: the most frequent; the rest are summed as `other` (a code is any string a coordinator's receipt carries). */
export const FAILURE_CODES_SHOWN = 32;

/** The failures by code, in code-point order: the FAILURE_CODES_SHOWN most frequent (ties in code order), the rest summed into `other`. */
export function groupFailures(by: ReadonlyMap<string, number>): Record<string, number> {
  const byCode = ([a]: [string, number], [b]: [string, number]) => (a < b ? -1 : a > b ? 1 : 0);
  const all = [...by].sort((x, y) => y[1] - x[1] || byCode(x, y));
  const shown = new Map(all.slice(0, FAILURE_CODES_SHOWN));
  const rest = all.slice(FAILURE_CODES_SHOWN).reduce((n, [, k]) => n + k, 0);
  if (rest) shown.set('other', (shown.get('other') ?? 0) + rest);
  return Object.fromEntries([...shown].sort(byCode));
}

export class TrailFigures {
  #jobs = new Map<string, JobFigure>();
  #per = new Map<string, Tally>();
  #failures = new Map<string, number>();
  #disputed = 0;
  #pending = 0;
  /** Jobs whose figure depends on a roster the trail does not keep, by that roster's address. */
  #outside = new Map<string, Set<string>>();
  /** Jobs written since their figure was computed. */
  #dirty = new Set<string>();
  /** Writes are noted from the start of a build on. */
  #tracking = false;
  #built: Promise<void> | undefined;
  #ready = false;
  #draining: Promise<void> | undefined;
  #kicked = false;
  #warm: ReturnType<typeof setTimeout> | undefined;
  /** Bumped by `stop`: a build of an older generation gives up at its next yield. */
  #gen = 0;
  /** Job figures computed (tests: what a call cost). */
  computed = 0;

  constructor(
    private trail: DispatchTrail,
    private c: FiguresContext,
    private log?: Logger,
    private chunk = FIGURES_CHUNK,
  ) {
    trail.watch((ch) => this.#changed(ch));
  }

  /** Build the figures in the background `ms` from now (a member's start). */
  warmIn(ms = FIGURES_WARM_MS): void {
    if (this.#warm) clearTimeout(this.#warm);
    this.#warm = setTimeout(() => {
      this.#warm = undefined;
      this.#build().catch((e: unknown) => this.log?.debug({ err: (e as Error).message }, 'pool: building the status figures failed; built again when asked'));
    }, ms);
    this.#warm.unref();
  }

  /** Stop a warm-up not begun and a build under way (the next `read` builds again). */
  stop(): void {
    if (this.#warm) clearTimeout(this.#warm);
    this.#warm = undefined;
    if (!this.#ready) this.#gen++;
  }

  /** The figures over the trail as it is now. */
  async read(): Promise<PoolFigures> {
    await this.#build();
    const view = this.c.view();
    for (const jobs of this.#outside.values()) for (const j of jobs) if (this.#jobs.get(j)?.outside?.view !== view) this.#dirty.add(j);
    await this.#caughtUp();
    const failures = groupFailures(this.#failures);
    return {
      member: (did) => {
        const t = this.#per.get(did);
        if (!t) return { dispatched: 0, completed: 0, failed: 0, earned: {} };
        const earned = [...t.earned].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([cur, e]) => [cur, e.sum.isZero() ? '0' : e.sum.toFixed()]);
        return { dispatched: t.dispatched, completed: t.completed, failed: t.failed, earned: Object.fromEntries(earned) };
      },
      members: () => [...this.#per.keys()].sort(),
      failures,
      disputed: this.#disputed,
      pending: this.#pending,
    };
  }

  #changed(ch: TrailChange): void {
    if (!this.#tracking) return;
    for (const j of ch.jobs) this.#dirty.add(j);
    if (ch.roster !== undefined) for (const j of this.#outside.get(ch.roster) ?? []) this.#dirty.add(j);
    if (this.#ready) this.#kick();
  }

  /** Catch up with the writes soon, in the background, so a `read` after many finds few. */
  #kick(): void {
    if (this.#kicked) return;
    this.#kicked = true;
    setImmediate(() => {
      this.#kicked = false;
      if (this.#draining || !this.#dirty.size) return;
      this.#drain().catch((e: unknown) => this.log?.debug({ err: (e as Error).message }, 'pool: updating the status figures failed; done again when asked'));
    });
  }

  #build(): Promise<void> {
    this.#built ??= this.#buildAll().catch((e: unknown) => {
      this.#built = undefined;
      this.#ready = this.#tracking = false;
      throw e;
    });
    return this.#built;
  }

  async #buildAll(): Promise<void> {
    const gen = this.#gen;
    // After a build that failed: nothing of it, nor of a catch-up it began, stays in the sums.
    await this.#draining?.catch(() => undefined);
    this.#jobs.clear();
    this.#per.clear();
    this.#failures.clear();
    this.#outside.clear();
    this.#dirty.clear();
    this.#disputed = this.#pending = 0;
    // From here on every write is noted; a job written after the iterator read it is computed again below.
    this.#tracking = true;
    const slice = new Slice(this.chunk);
    for await (const { job, entries } of this.trail.byJob()) {
      this.#set(job, this.#compute(entries));
      await slice.next();
      if (gen !== this.#gen) throw new C0Error('POOL_STOPPED', 'the pool member stopped while its status figures were being built');
    }
    this.#ready = true;
    await this.#caughtUp();
  }

  /** Wait until no job written is left to compute, one a drain under way holds included. */
  async #caughtUp(): Promise<void> {
    do await this.#drain();
    while (this.#dirty.size);
  }

  /** Compute the jobs written since, a job at a time, yielding as the build does. */
  #drain(): Promise<void> {
    this.#draining ??= (async () => {
      const slice = new Slice(this.chunk);
      for (;;) {
        const job = this.#dirty.values().next();
        if (job.done) return;
        this.#dirty.delete(job.value);
        let entries: TrailEntry[];
        try {
          entries = (await this.trail.entries(job.value)).map((e) => e.entry);
        } catch (e) {
          this.#dirty.add(job.value);
          throw e;
        }
        this.#set(job.value, entries.length ? this.#compute(entries) : undefined);
        await slice.next();
      }
    })().finally(() => (this.#draining = undefined));
    return this.#draining;
  }

  #compute(entries: TrailEntry[]): JobFigure {
    const outside = new Set<string>();
    const view = this.c.view();
    const f = jobFigure(entries, {
      pool: this.c.pool,
      roster: (a) => {
        if (!this.trail.hasRoster(a)) outside.add(a);
        return this.c.roster(a);
      },
    });
    this.computed++;
    // Held for every job kept: the few DIDs, currencies and codes once each, not a copy per job.
    const kept: JobFigure = { open: f.open };
    if (f.member !== undefined) kept.member = this.#intern(f.member);
    if (f.state !== undefined) kept.state = f.state;
    if (f.failure !== undefined) kept.failure = this.#intern(f.failure);
    if (f.settlement) kept.settlement = { currency: this.#intern(f.settlement.currency), parts: f.settlement.parts.map((p) => ({ member: this.#intern(p.member), amount: p.amount })) };
    if (outside.size) kept.outside = { rosters: [...outside], view };
    return kept;
  }

  #interned = new Map<string, string>();
  #intern(x: string): string {
    const y = this.#interned.get(x);
    if (y !== undefined) return y;
    // bounded by the DIDs, currencies and failure codes of the trail kept: start over past a size no pool reaches
    if (this.#interned.size >= 4096) this.#interned.clear();
    this.#interned.set(x, x);
    return x;
  }

  #set(job: string, f: JobFigure | undefined): void {
    const old = this.#jobs.get(job);
    if (old) {
      this.#add(old, -1);
      for (const a of old.outside?.rosters ?? []) {
        const s = this.#outside.get(a);
        s?.delete(job);
        if (s?.size === 0) this.#outside.delete(a);
      }
    }
    if (!f) {
      this.#jobs.delete(job);
      return;
    }
    this.#jobs.set(job, f);
    this.#add(f, 1);
    for (const a of f.outside?.rosters ?? []) {
      const s = this.#outside.get(a);
      if (s) s.add(job);
      else this.#outside.set(a, new Set([job]));
    }
  }

  #tally(did: string): Tally {
    let t = this.#per.get(did);
    if (!t) this.#per.set(did, (t = { dispatched: 0, completed: 0, failed: 0, earned: new Map() }));
    return t;
  }

  /** Add a job's figure to the sums (`by` 1), or take it away (−1). */
  #add(f: JobFigure, by: 1 | -1): void {
    const touched = new Set<string>();
    if (f.member !== undefined) {
      const t = this.#tally(f.member);
      t.dispatched += by;
      if (f.state === 'completed') t.completed += by;
      if (f.state === 'failed') t.failed += by;
      touched.add(f.member);
    }
    if (f.state === 'failed') {
      const k = f.failure ?? 'unknown';
      const n = (this.#failures.get(k) ?? 0) + by;
      if (n) this.#failures.set(k, n);
      else this.#failures.delete(k);
    }
    if (f.state === 'disputed') this.#disputed += by;
    this.#pending += by * f.open;
    const s = f.settlement;
    for (const part of s?.parts ?? []) {
      const t = this.#tally(part.member);
      const e = t.earned.get(s!.currency) ?? { sum: new D(0), n: 0 };
      e.sum = by === 1 ? e.sum.add(part.amount) : e.sum.sub(part.amount);
      e.n += by;
      if (e.n) t.earned.set(s!.currency, e);
      else t.earned.delete(s!.currency);
      touched.add(part.member);
    }
    for (const m of touched) {
      const t = this.#per.get(m)!;
      if (!t.dispatched && !t.earned.size) this.#per.delete(m);
    }
  }
}
