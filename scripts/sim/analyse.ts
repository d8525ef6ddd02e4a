/**
 * `npm run sim`: from the plan and what every node saw, the figures of issue
 * #16 (docs/scale.md "The hundred-node run"): advert reach 50/99/100 %, offers
 * at buyers, gossip traffic per node by kind, CPU and RSS per node, the buyers'
 * market-view agreement, the heal after the partition, lost records and jobs.
 * Pure: ground truth comes from the plan (who is up, who is cut off) and the
 * publication log.
 */
import { holdsMarket, isDown, type Plan } from './plan.js';
import type { WorkerResult } from './worker.js';

/** An advert counts as due at a node once it was published this long ago (ms). */
export const GRACE_MS = 5_000;
/** Reach is measured over nodes up and connected to the publisher for this long after publication (ms). */
export const REACH_WINDOW_MS = 30_000;

export interface SimFigures {
  nodes: number;
  durationMs: number;
  reach: { adverts: number; p50ms: Stat; p99ms: Stat; p100ms: Stat; incomplete: number };
  offers: { jobs: number; decided: number; abandoned: number; lost: number; firstOfferMs: Stat; offersPerJob: number; completeness: number; staleDecisions: number; deadWinners: number };
  /** per node and second by kind (`offer-direct`: offers over /c0mpute/offer/1, `outcome-direct`: selections and acceptances over /c0mpute/outcome/1, not gossip); deliveredPerSec: records of the kind accepted (first copies) */
  traffic: Array<{ kind: string; inMsgsPerSec: number; inBytesPerSec: number; outMsgsPerSec?: number; outBytesPerSec: number; deliveredPerSec: number }>;
  trafficByRole: Array<{ role: string; inBytesPerSec: number; outBytesPerSec: number }>;
  /** records published per second, network-wide, by kind */
  publishedPerSec: Record<string, number>;
  cpuPctPerNode: number;
  /** connections opened per node and minute (both directions counted, so each connection twice), identify exchanges per node and minute, closed connections by lifetime */
  conns: { opensPerNodeMin: number; identifiesPerNodeMin: number; lifetimes: Record<string, number>; perNode: number };
  /** syncs per node and minute, records received per sync (accepted = new to the node) */
  syncs: { perNodeMin: number; acceptedPerSync: number; otherPerSync: number };
  /** offers sent directly, by outcome: count, share slower than the decision window, mean ms */
  offerSends: Record<string, { n: number; lateShare: number; meanMs: number }>;
  /** selections and acceptances sent over /c0mpute/outcome/1, by `<kind> <outcome>` */
  outcomeSends: Record<string, number>;
  /** offers per job (docs/market.md §12): gossiped jobs providers held back on, pushes buyers sent and the offers they brought */
  rank: { offerRank: number; offersWanted: number; inviteAbove: number; outranked: number; pushes: number; pushOffers: number; pushErrors: Record<string, number>; invited: number; invitations: number; invitationOffers: number; gossipAfterInvite: number };
  /** worst worker's event-loop lag, ms [p50, p99, max]: above ~100 ms the run was starved of CPU */
  loopLagMs: [number, number, number];
  rssMiBPerNode: number;
  peakRssMiB: number;
  view: { mean: number; min: number; agreedRounds: number; rounds: number; duringPartition?: number };
  /** agreementAfterMs: from the heal until every buyer's view agreed; leaked: adverts that crossed the cut while it held (0 = the partition was real) */
  heal?: { agreementAfterMs: number | null; leaked: number; crossing: number; atMs: number; untilMs: number; healed: boolean };
  missingAtEnd: number;
  nodesMissingAtEnd: number;
  /** the first few nodes missing a latest advert at the end: node, its half, when it last rejoined (ms, if churned), providers missed */
  missingDetail: Array<{ node: number; side: number; rejoinedAt?: number; providers: number[] }>;
  errors: string[];
}

export interface Stat {
  median: number;
  p99: number;
  max: number;
}

function stat(xs: number[]): Stat {
  if (xs.length === 0) return { median: NaN, p99: NaN, max: NaN };
  const s = [...xs].sort((a, b) => a - b);
  return { median: s[s.length >> 1]!, p99: s[Math.min(s.length - 1, Math.floor(0.99 * s.length))]!, max: s[s.length - 1]! };
}

/** Up for the whole window [a, b]? */
function upThrough(plan: Plan, i: number, a: number, b: number): boolean {
  return !plan.churn.some((c) => c.node === i && c.atMs < b && c.atMs + plan.opts.downMs > a);
}

function connectedThrough(plan: Plan, i: number, j: number, a: number, b: number): boolean {
  const p = plan.partition;
  if (!p || plan.nodes[i]!.side === plan.nodes[j]!.side) return true;
  return b <= p.atMs || a >= p.untilMs;
}

export function analyse(plan: Plan, results: WorkerResult[]): SimFigures {
  const o = plan.opts;
  const nodes = results.flatMap((r) => r.nodes).sort((a, b) => a.index - b.index);
  const adverts = results.flatMap((r) => r.adverts).sort((a, b) => a.t - b.t);
  const jobs = new Map(results.flatMap((r) => r.jobs).map((j) => [j.n, j]));
  const decisions = results.flatMap((r) => r.decisions);
  const views = results.flatMap((r) => r.views);

  // --- advert reach
  const r50: number[] = [];
  const r99: number[] = [];
  const r100: number[] = [];
  let incomplete = 0;
  let reachN = 0;
  for (const a of adverts) {
    if (a.t + REACH_WINDOW_MS > o.durationMs) continue;
    const times: number[] = [];
    for (const n of nodes) {
      if (n.index === a.provider || !holdsMarket(plan, n.index, a.provider) || !upThrough(plan, n.index, a.t, a.t + REACH_WINDOW_MS) || !connectedThrough(plan, n.index, a.provider, a.t, a.t + REACH_WINDOW_MS)) continue;
      const at = n.arrivals[a.address];
      times.push(at === undefined ? Infinity : Math.max(0, at - a.t));
    }
    if (times.length === 0) continue;
    reachN++;
    times.sort((x, y) => x - y);
    const at = (f: number) => times[Math.max(0, Math.ceil(f * times.length) - 1)]!;
    r50.push(at(0.5));
    r99.push(at(0.99));
    const full = at(1);
    if (full === Infinity || full > REACH_WINDOW_MS) incomplete++;
    else r100.push(full);
  }

  // --- latest advert seq of each provider published by time t
  const byProvider = new Map<number, Array<{ t: number; seq: number }>>();
  for (const a of adverts) (byProvider.get(a.provider) ?? byProvider.set(a.provider, []).get(a.provider)!).push({ t: a.t, seq: a.seq });
  const latestSeq = (p: number, t: number): number | undefined => {
    let s: number | undefined;
    for (const x of byProvider.get(p) ?? []) if (x.t <= t) s = x.seq;
    return s;
  };
  const providers = plan.nodes.filter((x) => x.role === 'provider').map((x) => x.index);

  // --- offers at buyers
  const first: number[] = [];
  let offersTotal = 0;
  let completeSum = 0;
  let completeN = 0;
  let lost = 0;
  let stale = 0;
  let dead = 0;
  for (const d of decisions) {
    const j = plan.jobs.find((x) => x.n === d.n)!;
    const pub = jobs.get(d.n)!;
    const expected = providers.filter((p) => {
      const n = plan.nodes[p]!;
      return n.workloads.includes(j.workload) && (!j.region || n.region === j.region) && upThrough(plan, p, pub.t - GRACE_MS, d.t) && connectedThrough(plan, p, d.buyer, pub.t, d.t);
    }).length;
    const got = new Set(d.offers.map((x) => x.provider)).size;
    offersTotal += got;
    if (d.offers.length) first.push(Math.min(...d.offers.map((x) => x.t)) - pub.t);
    if (expected > 0) {
      completeSum += Math.min(1, got / expected);
      completeN++;
      if (got === 0) lost++;
    }
    if (d.winner !== undefined) {
      if (isDown(plan, d.winner, d.t)) dead++;
      const want = latestSeq(d.winner, d.t - GRACE_MS);
      if (want !== undefined && (d.winnerSeq ?? -1) < want) stale++;
    }
  }

  // --- traffic per node per second, by kind and by role
  const kinds = new Map<string, { inMsgs: number; inBytes: number; outMsgs: number; outBytes: number; delivered: number }>();
  const roles = new Map<string, { inBytes: number; outBytes: number; secs: number }>();
  let nodeSecs = 0;
  for (const n of nodes) {
    const secs = n.upMs / 1000;
    nodeSecs += secs;
    const role = plan.nodes[n.index]!.role;
    const r = roles.get(role) ?? roles.set(role, { inBytes: 0, outBytes: 0, secs: 0 }).get(role)!;
    r.secs += secs;
    for (const [k, t] of Object.entries(n.traffic)) {
      const s = kinds.get(k) ?? kinds.set(k, { inMsgs: 0, inBytes: 0, outMsgs: 0, outBytes: 0, delivered: 0 }).get(k)!;
      s.delivered += t.delivered ?? 0;
      s.inMsgs += t.inMsgs;
      s.inBytes += t.inBytes;
      s.outMsgs += t.outMsgs;
      s.outBytes += t.outBytes;
      r.inBytes += t.inBytes;
      r.outBytes += t.outBytes;
    }
  }
  const traffic = [...kinds].map(([kind, s]) => ({ kind, inMsgsPerSec: s.inMsgs / nodeSecs, inBytesPerSec: s.inBytes / nodeSecs, outMsgsPerSec: s.outMsgs / nodeSecs, outBytesPerSec: s.outBytes / nodeSecs, deliveredPerSec: s.delivered / nodeSecs })).sort((a, b) => b.inBytesPerSec - a.inBytesPerSec);
  const trafficByRole = [...roles].map(([role, r]) => ({ role, inBytesPerSec: r.inBytes / r.secs, outBytesPerSec: r.outBytes / r.secs }));

  // --- market view agreement: fraction of live providers whose latest advert (published ≥ GRACE_MS ago) a buyer holds
  const rounds = new Map<number, number[]>();
  const inPartition: number[] = [];
  const fractions: number[] = [];
  for (const v of views) {
    const held = new Map(v.known);
    let liveN = 0;
    let ok = 0;
    for (const p of providers) {
      if (isDown(plan, p, v.t) || !holdsMarket(plan, v.buyer, p)) continue;
      const want = latestSeq(p, v.t - GRACE_MS);
      if (want === undefined) continue;
      liveN++;
      if ((held.get(p) ?? -1) >= want) ok++;
    }
    if (liveN === 0) continue;
    const f = ok / liveN;
    const round = Math.round(v.t / 2_000);
    (rounds.get(round) ?? rounds.set(round, []).get(round)!).push(f);
    if (plan.partition && v.t >= plan.partition.atMs && v.t < plan.partition.untilMs) inPartition.push(f);
    else fractions.push(f);
  }
  const agreed = [...rounds.values()].filter((fs) => fs.every((f) => f === 1)).length;
  let heal: SimFigures['heal'];
  let missing = 0;
  let nodesMissing = 0;
  const missingDetail: SimFigures['missingDetail'] = [];
  for (const n of nodes) {
    if (!n.finalView) continue;
    const m: number[] = [];
    for (const p of providers) {
      if (p === n.index || !holdsMarket(plan, n.index, p)) continue;
      const want = latestSeq(p, o.durationMs - 10_000);
      if (want !== undefined && (n.finalView[p] ?? -1) < want) m.push(p);
    }
    missing += m.length;
    if (m.length) {
      nodesMissing++;
      const back = plan.churn.filter((c) => c.node === n.index).map((c) => c.atMs + o.downMs);
      if (missingDetail.length < 10) missingDetail.push({ node: n.index, side: plan.nodes[n.index]!.side, ...(back.length ? { rejoinedAt: Math.max(...back) } : {}), providers: m });
    }
  }
  if (plan.partition) {
    const healAt = plan.partition.untilMs;
    const after = [...rounds].filter(([r]) => r * 2_000 >= healAt).sort((a, b) => a[0] - b[0]);
    const firstAgreed = after.find(([, fs]) => fs.every((f) => f === 1));
    // adverts published while cut off: how many reached the other side before the heal (must be none)
    let leaked = 0;
    let crossing = 0;
    for (const a of adverts) {
      // counted from when every worker had closed its links across the cut
      const cutAt = Math.max(plan.partition.atMs, ...results.map((r) => r.cutDoneAt ?? plan.partition!.atMs));
      if (a.t < cutAt || a.t >= healAt) continue;
      for (const n of nodes) {
        if (plan.nodes[n.index]!.side === plan.nodes[a.provider]!.side || !holdsMarket(plan, n.index, a.provider)) continue;
        crossing++;
        const at = n.arrivals[a.address];
        if (at !== undefined && at < healAt - 100) leaked++;
      }
    }
    // healed: the heal came before the schedule ended (else the partition held to the end: no agreement after it to time)
    heal = { agreementAfterMs: firstAgreed ? firstAgreed[0] * 2_000 - healAt : null, leaked, crossing, atMs: plan.partition.atMs, untilMs: healAt, healed: healAt < o.durationMs };
  }
  const cpuMs = results.reduce((s, r) => s + r.cpuMs, 0);
  return {
    nodes: nodes.length,
    durationMs: o.durationMs,
    reach: { adverts: reachN, p50ms: stat(r50), p99ms: stat(r99), p100ms: stat(r100), incomplete },
    offers: { jobs: jobs.size, decided: decisions.length, abandoned: jobs.size - decisions.length, lost, firstOfferMs: stat(first), offersPerJob: decisions.length ? offersTotal / decisions.length : 0, completeness: completeN ? completeSum / completeN : NaN, staleDecisions: stale, deadWinners: dead },
    traffic,
    trafficByRole,
    publishedPerSec: Object.fromEntries(['advert', 'presence', 'job', 'offer', 'selection', 'receipt', 'acceptance'].map((k) => [k, results.reduce((s, r) => s + (r.published[k] ?? 0), 0) / (o.durationMs / 1000)])),
    loopLagMs: [0, 1, 2].map((k) => Math.max(...results.map((r) => r.loopLagMs[k]!))) as [number, number, number],
    cpuPctPerNode: (100 * cpuMs) / o.durationMs / nodes.length,
    syncs: (() => {
      const c = results.reduce((a, r) => ({ calls: a.calls + r.syncs.calls, accepted: a.accepted + r.syncs.accepted, other: a.other + r.syncs.other }), { calls: 0, accepted: 0, other: 0 });
      return { perNodeMin: c.calls / nodes.length / (o.durationMs / 60_000), acceptedPerSync: c.calls ? c.accepted / c.calls : 0, otherPerSync: c.calls ? c.other / c.calls : 0 };
    })(),
    offerSends: (() => {
      const acc: Record<string, { n: number; late: number; ms: number }> = {};
      for (const r of results) for (const [k, v] of Object.entries(r.offerSends)) {
        const a = (acc[k] ??= { n: 0, late: 0, ms: 0 });
        a.n += v.n;
        a.late += v.late;
        a.ms += v.ms;
      }
      return Object.fromEntries(Object.entries(acc).map(([k, v]) => [k, { n: v.n, lateShare: v.late / v.n, meanMs: v.ms / v.n }]));
    })(),
    outcomeSends: (() => {
      const acc: Record<string, number> = {};
      for (const r of results) for (const [k, n] of Object.entries(r.outcomeSends ?? {})) acc[k] = (acc[k] ?? 0) + n;
      return acc;
    })(),
    rank: results.reduce(
      (a, r) => {
        for (const [k, v] of Object.entries(r.rank.pushErrors)) a.pushErrors[k] = (a.pushErrors[k] ?? 0) + v;
        return {
          ...a,
          outranked: a.outranked + r.rank.outranked,
          pushes: a.pushes + r.rank.pushes,
          pushOffers: a.pushOffers + r.rank.pushOffers,
          invited: a.invited + r.rank.invited,
          invitations: a.invitations + r.rank.invitations,
          invitationOffers: a.invitationOffers + r.rank.invitationOffers,
          gossipAfterInvite: a.gossipAfterInvite + r.rank.gossipAfterInvite,
        };
      },
      { offerRank: o.offerRank, offersWanted: o.offersWanted, inviteAbove: o.inviteAbove, outranked: 0, pushes: 0, pushOffers: 0, pushErrors: {} as Record<string, number>, invited: 0, invitations: 0, invitationOffers: 0, gossipAfterInvite: 0 },
    ),
    conns: {
      perNode: results.reduce((s, r) => s + r.peerSamples.sum, 0) / Math.max(1, results.reduce((s, r) => s + r.peerSamples.n, 0)),
      opensPerNodeMin: results.reduce((s, r) => s + r.conns.in + r.conns.out, 0) / nodes.length / (o.durationMs / 60_000),
      identifiesPerNodeMin: results.reduce((s, r) => s + r.conns.identified, 0) / nodes.length / (o.durationMs / 60_000),
      lifetimes: results.reduce<Record<string, number>>((acc, r) => {
        for (const [k, v] of Object.entries(r.conns.lifetimes)) acc[k] = (acc[k] ?? 0) + v;
        return acc;
      }, {}),
    },
    rssMiBPerNode: results.reduce((s, r) => s + r.rssMiB, 0) / nodes.length,
    peakRssMiB: results.reduce((s, r) => s + r.peakRssMiB, 0),
    view: { mean: mean(fractions), min: fractions.length ? Math.min(...fractions) : NaN, agreedRounds: agreed, rounds: rounds.size, ...(inPartition.length ? { duringPartition: mean(inPartition) } : {}) },
    ...(heal ? { heal } : {}),
    missingAtEnd: missing,
    nodesMissingAtEnd: nodesMissing,
    missingDetail,
    errors: results.flatMap((r) => r.errors),
  };
}

function mean(xs: number[]): number {
  return xs.length ? xs.reduce((s, x) => s + x, 0) / xs.length : NaN;
}
