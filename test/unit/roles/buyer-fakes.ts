/**
 * A Buyer over fakes, for the buyer unit tests that drive one run (buyer-receipt-times, -refusal-code,
 * -progress-flood, -exec-preempted, -pooled-nondelivery, -interrupted, -failover-lapsed): `providers` ranked in that
 * order, each with one offer (on its own advert unless `offerFor` says otherwise), collected at once; a selection
 * signed as the daemon signs it; `exec` is the exchange with whichever provider is selected. What the buyer
 * publishes and stores is recorded.
 */
import { C0Error } from '../../../src/errors.js';
import { Buyer, type BuyerDeps, type BuyerEvent, type Decision, type JobSpec, type RankedCandidate } from '../../../src/roles/buyer.js';
import { seal, T, type Job, type Offer, type Opened, type PolicyName, type Selection } from '../../../src/records/index.js';
import { NOW, advert, offer, type Party } from '../market/fixtures.js';

export interface BuyerFakes {
  providers: Party[];
  /** The exchange with the selected provider (its frames, then its end: a return or a throw). */
  exec: (did: string, signal: AbortSignal) => AsyncIterable<unknown>;
  /** The policy the spec asks for and the selection names (default 'trusted'). */
  policy?: PolicyName;
  clock?: () => number;
  /** The provider's offer for the job (default: on its own advert). */
  offerFor?: (p: Party, job: Opened<Job>) => Opened<Offer>;
  /** Which of the candidates the market ranks at `at` (default: those not excluded, tried already). */
  rank?: (all: RankedCandidate[], at: number, excluded: ReadonlySet<string> | undefined) => RankedCandidate[];
  /** Further BuyerDeps, or ones replaced (adverts, advertAt, admission, withdraw, waitForOffers, stalls, skewMs, …). */
  deps?: Record<string, unknown>;
}

export function buyerOnFakes(me: Party, o: BuyerFakes) {
  const noop = () => {};
  const log = { info: noop, warn: noop, debug: noop, error: noop, child: () => log };
  const policy = o.policy ?? 'trusted';
  const published: Array<{ kind: string; rec: Opened }> = [];
  const stored: Opened[] = [];
  const execs: string[] = [];
  const cands = new Map<string, RankedCandidate>();
  const cand = (job: Opened<Job>, p: Party) => {
    if (!cands.has(p.did)) cands.set(p.did, { provider: p.did, offer: o.offerFor?.(p, job) ?? offer(p, job, advert(p)), total: 1, scores: {} });
    return cands.get(p.did)!;
  };
  const deps = {
    signer: me.signer,
    did: me.did,
    clock: o.clock ?? (() => NOW),
    log,
    collectWindowMs: 10,
    enoughOffers: 1,
    defaultPolicy: policy,
    adverts: () => undefined,
    publish: async (kind: string, rec: Opened) => void published.push({ kind, rec }),
    store: async (rec: Opened) => void stored.push(rec),
    waitForOffers: async () => ({ offers: o.providers.length, ended: 'window' as const }),
    market: {
      decide: async (job: Opened<Job>, _p: unknown, at: number, excluded?: ReadonlySet<string>) => {
        const all = o.providers.map((p) => cand(job, p));
        return { ranked: o.rank ? o.rank(all, at, excluded) : all.filter((c) => !excluded?.has(c.provider)), result: {}, market: {} } as unknown as Decision;
      },
      offerCount: () => o.providers.length,
      signSelection: (job: Opened<Job>, _d: Decision, w: RankedCandidate, now: number) =>
        seal(T.selection, { job: job.address, buyer: me.did, policy, winner: w.offer.address, considered: [{ provider: w.provider, offer: w.offer.address }], decidedAt: now }, me.signer) as Opened<Selection>,
    },
    exec: (did: string, _p: string, _r: unknown, signal: AbortSignal) => {
      execs.push(did);
      return o.exec(did, signal);
    },
    ...o.deps,
  } as unknown as BuyerDeps;
  return {
    buyer: new Buyer(deps),
    published,
    stored,
    execs,
    /** The candidate (offer) the buyer was given for `p`, once it decided. */
    candidate: (p: Party) => cands.get(p.did),
    nondeliveries: () => published.filter((p) => p.kind.startsWith('nondelivery')),
  };
}

/** A job spec for the fakes: infer.llm, at most 1 USD, 60 s, a 4-byte input. */
export function fakeSpec(extra: Record<string, unknown> = {}): JobSpec {
  return { workload: 'infer.llm', maxPrice: { amount: '1', currency: 'USD' }, deadlineMs: 60_000, input: new Uint8Array(4), policy: 'trusted', ...extra } as unknown as JobSpec;
}

/** An exec stream that fails at once with `code` (a stream to a provider that is gone). */
export function failingStream(code: string, message: string): AsyncIterable<unknown> {
  return { [Symbol.asyncIterator]: () => ({ next: () => Promise.reject(new C0Error(code, message)) }) };
}

/** Wait for `signal`, then throw as a stream aborted by it does. */
export function abortedBy(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) return reject(signal.reason);
    signal.addEventListener('abort', () => reject(signal.reason instanceof Error ? signal.reason : new Error('aborted')), { once: true });
  });
}

/** The exec hooks a misbehaving winner is handed: the buyer's `sent` (input handed off) and `opened` (stream open). */
export type WinnerHooks = { sent?: () => void; opened?: () => void };

/**
 * A run against `a` (the winner: it quotes next to nothing, as the Sybil did, and misbehaves as `winner` says) and `b`
 * (the runner-up, reached: its stream fails, which is all these tests need), with a 50 ms overrun grace (the rule is
 * the same as with the default) and a deadline far away: without the buyer's rules the attempt would wait for it.
 */
export async function runAgainstWinner(me: Party, a: Party, b: Party, winner: (signal: AbortSignal, h: WinnerHooks) => AsyncGenerator<unknown>, deps: Record<string, unknown> = {}) {
  const execs: string[] = [];
  const f = buyerOnFakes(me, {
    providers: [a, b],
    offerFor: (p, job) => offer(p, job, advert(p), { durationMs: p === a ? 1 : 1000 }),
    exec: () => {
      throw new Error('replaced below');
    },
    deps: {
      overrunGraceMs: 50,
      exec: (did: string, _p: string, _req: unknown, signal: AbortSignal, _heard: unknown, sent?: () => void, opened?: () => void) => {
        execs.push(did);
        if (did === a.did) return winner(signal, { ...(sent ? { sent } : {}), ...(opened ? { opened } : {}) });
        return failingStream('NET_STREAM_FAILED', 'runner-up reached');
      },
      ...deps,
    },
  });
  const events: BuyerEvent[] = [];
  const result = await f.buyer.run(fakeSpec({ deadlineMs: 600_000 }), (e) => events.push(e));
  return { f, execs, events, result };
}
