/**
 * `/c0mpute/job-push/1`: a buyer sends its job directly to providers that did
 * not quote (issue #10, "Also noticed"; docs/network.md §12; docs/market.md
 * §12). Gossip can lose a job under load (a full delivery queue, a mesh still
 * forming), anti-entropy runs only every `resyncMs`, longer than a short job's
 * offer window, and providers outranked on price hold back on a gossiped job.
 * So halfway through its window a buyer short of offers pushes the job to
 * providers that fit it and have not quoted (choosePushTargets); the provider
 * quotes as it would on gossip (same checks, same budget), whatever its rank,
 * and answers with its offer and the advert it cites, or with nothing. In a
 * market with more than `buyer.inviteAbove` candidates the buyer sends its job
 * this way from the start, to some of them, instead of on gossip (invitations,
 * docs/market.md §13); the provider cannot tell the two apart and need not.
 *
 *   request:  one frame, the job envelope (bytes)
 *   response: {offer: bytes, advert: bytes} | {none: "<reason>", coordinator?: "<did>"}
 *
 * A pool member that is not its pool's elected coordinator does not quote
 * (docs/pools.md); it answers with the coordinator's DID, and the buyer asks
 * that member once more if its live advert is of the same pool.
 *
 * Nothing unverified enters: the provider opens the job with the full checks
 * (shape, signature, freshness); the buyer opens the offer and advert, and
 * keeps them only if they are the pushed provider's and cite this job.
 *
 * The push is not a way around the gossip flood limits: a peer may push only
 * jobs it signed itself (JOB_PUSH_NOT_OWN_JOB: no relaying others' jobs), at
 * most PUSH_RATE per peer (JOB_PUSH_RATE_LIMITED), and what it is quoted stays
 * within the provider's quoting budget like any other job. Every push takes a
 * token first, a malformed one too. What a push costs its sender (docs/network.md
 * §Abuse), as on offer/1: a frame that is not bytes (JOB_PUSH_BAD_REQUEST) or not
 * a valid envelope (bad CBOR, a bad signature: no node sends one) is a strike
 * (`AbuseReports.invalid`); a record of another type, or a job another key
 * signed, is free up to REFUSED_RATE and reported past it. A push refused for
 * the rate is free up to PUSH_EXCESS_RATE more (a buyer does not pace its pushes
 * per provider, and an honest busy one can pass PUSH_RATE) and reported past
 * that: before, junk bytes and a flood far past the rate were never charged (one
 * key had 18,856 pushes answered in 25 s, review s40). A stale job costs nothing.
 */
import { C0Error } from '../errors.js';
import type { CborValue } from '../records/cbor.js';
import { ENV_ERR, open, type Opened } from '../records/envelope.js';
import { checkFresh } from '../records/freshness.js';
import { T, type Advert, type Job, type Offer } from '../records/kinds.js';
import type { ProtocolHandler } from '../net/protocols.js';
import type { Network } from '../net/node.js';
import type { Logger } from '../util/log.js';
import { monotonicClock } from '../util/clock.js';
import { KeyedBuckets, type BucketSpec } from '../net/rate-limit.js';
import { refusals, type AbuseReports } from '../net/peer-abuse.js';
import { didFromPeerId } from './peer-id.js';

export const JOB_PUSH_PROTOCOL = '/c0mpute/job-push/1';
/** Limits of the protocol: one job envelope in, an offer and an advert out. */
export const JOB_PUSH_LIMITS = { maxFrameBytes: 64 * 1024, deadlineMs: 10_000, maxRequestFrames: 1, maxResponseFrames: 1, maxInboundStreams: 16 };
/** Pushes accepted per peer: a buyer pushes each of its jobs once, halfway through its window. */
export const PUSH_RATE: BucketSpec = { ratePerSec: 2, burst: 16 };
/**
 * Pushes refused for PUSH_RATE that are still free, per peer: a buyer does not pace its pushes per provider (invites,
 * halfway pushes and rescues), and an honest busy one in a large market can pass 2 a second to one cheap provider;
 * none sends ten times that for long. Each refused push past this is reported (`AbuseReports.report`).
 */
export const PUSH_EXCESS_RATE: BucketSpec = { ratePerSec: 20, burst: 100 };
/** Providers one job is pushed to at most. */
export const MAX_PUSH_TARGETS = 16;

export interface PushServerDeps {
  /** Wall clock: the pushed job's freshness. */
  clock: () => number;
  /** Monotonic clock: the per-peer push buckets (default performance.now). */
  monoClock?: () => number;
  skewMs: number;
  /** Quote on the job as on gossip; the offer made (now or before), if any. */
  quote(job: Opened<Job>): Promise<Opened<Offer> | undefined>;
  /** The advert an offer cites (the provider's own). */
  advert(address: string): Opened<Advert> | undefined;
  /** Who quotes for this provider when it does not: a pool member's elected coordinator (not itself), if any. */
  redirect?(job: Opened<Job>): string | undefined;
  /**
   * The network's abuse score (net/peer-abuse.ts): a push no node sends is a strike (`invalid`); refusals an honest
   * node may earn now and then are reported past their free rate (`report`).
   */
  abuse?: Pick<AbuseReports, 'invalid' | 'report'>;
}

/** Envelope refusals of a well-formed record of another type: what a newer peer may send, not proof of abuse. */
const OTHER_TYPE: ReadonlySet<string> = new Set([ENV_ERR.WRONG_TYPE, ENV_ERR.UNKNOWN_TYPE]);

/** The provider's side. */
export function jobPushHandler(d: PushServerDeps, rate: BucketSpec = PUSH_RATE, excess: BucketSpec = PUSH_EXCESS_RATE): ProtocolHandler {
  const mono = d.monoClock ?? monotonicClock;
  const perPeer = new KeyedBuckets(rate, mono);
  const overRate = refusals(d.abuse?.report, mono, excess);
  const refused = refusals(d.abuse?.report, mono);
  return async (frames, ctx) => {
    const peer = ctx.peer.toString();
    // the rate first: a malformed push costs a token like any other (it was not even limited before)
    if (!perPeer.take(peer)) {
      overRate(peer);
      throw new C0Error('JOB_PUSH_RATE_LIMITED', `more than ${rate.ratePerSec} pushed jobs per second (burst ${rate.burst}) from this peer`);
    }
    const bytes = frames[0];
    if (!(bytes instanceof Uint8Array)) {
      d.abuse?.invalid(peer);
      throw new C0Error('JOB_PUSH_BAD_REQUEST', 'job-push/1 takes one frame: the job envelope');
    }
    let job: Opened<Job>;
    try {
      job = open(bytes, T.job);
    } catch (e) {
      if (e instanceof C0Error && OTHER_TYPE.has(e.code)) refused(peer);
      else d.abuse?.invalid(peer);
      throw e;
    }
    let pusher: string | undefined;
    try {
      pusher = didFromPeerId(ctx.peer);
    } catch {
      pusher = undefined;
    }
    if (job.signer !== pusher) {
      refused(peer);
      throw new C0Error('JOB_PUSH_NOT_OWN_JOB', 'a peer may push only the jobs it signed');
    }
    // a stale or early job costs nothing: an honest buyer's clock may be off
    checkFresh(T.job, job.record, d.clock(), d.skewMs);
    const offer = await d.quote(job);
    const advert = offer ? d.advert(offer.record.advert) : undefined;
    if (offer && advert) return void (await ctx.send({ offer: offer.bytes, advert: advert.bytes } as CborValue));
    const coordinator = d.redirect?.(job);
    await ctx.send((coordinator ? { none: 'not the pool coordinator', coordinator } : { none: 'no offer' }) as CborValue);
  };
}

/** What a pushed provider answered: its offer and advert (checked), or the DID of who quotes for it (a pool's coordinator). */
export type PushAnswer = { offer: Opened<Offer>; advert: Opened<Advert> } | { redirect: string };

/** Send `job` to `did`; resolves to its offer and advert when it quoted (checked), a redirect, else undefined. */
export async function pushJob(net: Network, did: string, job: Opened<Job>, deadlineMs: number, now: () => number, skewMs: number): Promise<PushAnswer | undefined> {
  const frames = await net.request(did, JOB_PUSH_PROTOCOL, [job.bytes], { limits: { ...JOB_PUSH_LIMITS, deadlineMs } });
  const f = frames[0] as { offer?: unknown; advert?: unknown; coordinator?: unknown } | undefined;
  if (typeof f?.coordinator === 'string' && f.coordinator !== did) return { redirect: f.coordinator };
  if (!(f?.offer instanceof Uint8Array) || !(f.advert instanceof Uint8Array)) return undefined;
  const offer = open(f.offer, T.offer);
  const advert = open(f.advert, T.advert);
  if (offer.signer !== did || advert.signer !== did || offer.record.job !== job.address || offer.record.advert !== advert.address) {
    throw new C0Error('JOB_PUSH_BAD_ANSWER', 'the pushed provider answered with an offer that is not its own for this job');
  }
  checkFresh(T.offer, offer.record, now(), skewMs);
  return { offer, advert };
}

/** What decides whether a job goes by invitation (invitesJob). */
export interface InviteCase {
  /** the overlay has a steward (it selects among every offer) */
  steward: boolean;
  /** buyer.offersWanted */
  offersWanted: number;
  /** buyer.inviteAbove */
  inviteAbove: number;
  /** the job is an open order (every node computes leases from the orders it heard) */
  openOrder: boolean;
  /** peers connected now */
  connected: number;
  /** live candidates for the job in this node's view, not this node */
  candidates: number;
}

/**
 * Whether a buyer sends a job by invitation rather than on gossip (docs/market.md
 * §13): a market of more than `inviteAbove` candidates, not an open order, not on
 * an overlay with a steward, `offersWanted` and `inviteAbove` above 0, and some
 * peer connected (with none, gossip fails at once and so does the job, as it
 * always has, rather than after dials and half a window).
 */
export function invitesJob(c: InviteCase): boolean {
  return !c.steward && !c.openOrder && c.offersWanted > 0 && c.inviteAbove > 0 && c.connected > 0 && c.candidates > c.inviteAbove;
}

/** Whom a buyer pushes its job to (choosePushTargets). */
export interface PushChoice {
  /** pushes wanted: twice the offers missing, at most MAX_PUSH_TARGETS */
  want: number;
  /** of them, at most this many to providers not connected (each a dial) */
  maxDials: number;
  /** live candidates that have not quoted, with a better record than an unknown provider in this node's reputation view, best first */
  byRecord: readonly string[];
  /** live candidates that have not quoted, cheapest first (equal asks by tieKey) */
  byPrice: readonly string[];
  /** DIDs connected now */
  connected: ReadonlySet<string>;
  /** connected providers whose advert fits and that have not quoted, whatever their presence says (DID order) */
  silentConnected: readonly string[];
}

/**
 * Whom a buyer pushes its job to, halfway through the window, when it holds
 * fewer offers than it wants (docs/market.md §12). Half the pushes go first to
 * the candidates with a record (connected or not), so cheap adverts from keys
 * without one cannot take the whole push; the rest alternate between a record
 * and a price, connected ones first, then other connected providers whose
 * advert fits (whatever their presence says), then those that need a dial.
 * At most `maxDials` of all of them need a dial.
 */
export function choosePushTargets(c: PushChoice): string[] {
  if (c.want <= 0) return [];
  const out = new Set<string>();
  let dials = 0;
  const take = (d: string): void => {
    if (out.size >= c.want || out.has(d)) return;
    if (!c.connected.has(d)) {
      if (dials >= c.maxDials) return;
      dials++;
    }
    out.add(d);
  };
  const connectedFirst = (xs: Iterable<string>): string[] => {
    const all = [...xs];
    return [...all.filter((d) => c.connected.has(d)), ...all.filter((d) => !c.connected.has(d))];
  };
  const recordShare = Math.ceil(c.want / 2);
  for (const d of connectedFirst(c.byRecord)) {
    if (out.size >= recordShare) break;
    take(d);
  }
  const merged = new Set<string>();
  for (let i = 0; i < Math.max(c.byRecord.length, c.byPrice.length); i++) for (const d of [c.byRecord[i], c.byPrice[i]]) if (d !== undefined) merged.add(d);
  for (const d of merged) if (c.connected.has(d)) take(d);
  for (const d of c.silentConnected) take(d);
  for (const d of merged) if (!c.connected.has(d)) take(d);
  return [...out];
}

export interface PushPlan {
  net: Network;
  job: Opened<Job>;
  /** providers to push to (fitting, silent: choosePushTargets) */
  targets: string[];
  deadlineMs: number;
  clock: () => number;
  skewMs: number;
  log: Logger;
  /** Store an offer that came back (with its advert) and wake the buyer's wait. */
  onOffer(offer: Opened<Offer>, advert: Opened<Advert>): Promise<void>;
  /** Count each push by how it ended (`c0mpute_buyer_job_pushes_total{outcome}`). */
  count?(outcome: 'offer' | 'none' | 'failed' | 'redirected'): void;
  /** Whether to follow `from`'s redirect to `to` (both live adverts of the same pool); without it, redirects are not followed. */
  redirectOk?(from: string, to: string): boolean;
  /** Those already sent the job (the targets are added): a redirect to one of them is not followed, and each redirect's destination is added. */
  asked?: Set<string>;
}

/**
 * Push a job to each target at once (halfway through the window, or as invitations); resolves to how many answered
 * with an offer. A redirect (a pool member naming its coordinator) is followed once per DID, never from a redirect.
 */
export async function pushToSilent(p: PushPlan): Promise<number> {
  const asked = p.asked ?? new Set<string>();
  for (const d of p.targets) asked.add(d);
  const one = async (did: string, follow: boolean): Promise<number> => {
    try {
      const r = await pushJob(p.net, did, p.job, p.deadlineMs, p.clock, p.skewMs);
      if (r && 'redirect' in r) {
        p.count?.('redirected');
        if (!follow || asked.has(r.redirect) || !p.redirectOk?.(did, r.redirect)) return 0;
        asked.add(r.redirect);
        return one(r.redirect, false);
      }
      if (!r) {
        p.count?.('none');
        return 0;
      }
      await p.onOffer(r.offer, r.advert);
      p.count?.('offer');
      return 1;
    } catch (e) {
      p.count?.('failed');
      p.log.debug({ provider: did, job: p.job.address, err: (e as Error).message }, 'job push failed');
      return 0;
    }
  };
  const got = await Promise.all(p.targets.map((did) => one(did, true)));
  const n = got.reduce<number>((s, x) => s + x, 0);
  p.log.info({ job: p.job.address, pushed: p.targets.length, offers: n }, 'job sent directly to providers (job-push/1)');
  return n;
}
