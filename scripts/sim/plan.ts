/**
 * `npm run sim` (issue #16, docs/scale.md "The hundred-node run"): the
 * options and the seeded plan of a run. Pure: the same options and seed give
 * the same plan in every process (roles, keys, topology, the churn and
 * partition schedule, every job), so worker processes need no coordination
 * beyond a common start time.
 */
import { createHash } from 'node:crypto';
import { INVITE_ABOVE, OFFER_RANK } from '../../src/matching/candidates.js';
import { seededRandom } from '../../src/net/faults.js';
import { shardsOf } from '../../src/net/topics.js';

export interface SimOptions {
  /** Nodes in the network (default 100). */
  nodes: number;
  /** Scheduled time after the warm-up, ms (default 300 000). */
  durationMs: number;
  /** Seed of the plan (default 1). */
  seed: number;
  /** Worker processes the nodes are spread over (default 2). */
  procs: number;
  /** Witnesses (default max(2, 5 % of the nodes)): they join every topic and relay, publishing nothing. */
  witnesses: number;
  /** Share of the other nodes that are providers (default 0.75); the rest are buyers. */
  providerShare: number;
  /** Connections each node opens at start (a ring neighbour plus random peers; also its bootstrap list). Default 4. */
  degree: number;
  /** Advert lifetime, ms (default 600 000, the daemon's advertLifetimeMs); republished at half of it. */
  advertLifetimeMs: number;
  /** Presence republish interval, ms (default 15 000: the daemon's window of 45 s / 3). */
  presenceEveryMs: number;
  /** Presence liveness window, ms (default 45 000, the daemon's). */
  presenceWindowMs: number;
  /** One job per buyer per this interval, ms (default 30 000). */
  jobEveryMs: number;
  /** A buyer decides this long after publishing a job, ms (default 3 000). */
  collectMs: number;
  /** Share of the nodes that leave and rejoin per minute (default 0.1). */
  churnPerMin: number;
  /** How long a churned node stays away, ms (default 15 000). */
  downMs: number;
  /** The partition: from this time after the warm-up, ms (default 40 % of the duration; negative: none). */
  partitionAtMs: number;
  /** How long the two halves stay apart, ms (default 60 000). */
  partitionMs: number;
  /** Time for the mesh to form before the schedule starts, ms (default 8 000). */
  warmupMs: number;
  /**
   * Markets (docs/network.md §14), 1 (default) or 0: providers join the topic shards of the workloads they
   * serve and each buyer the shard of the one workload it trades; witnesses join every shard. 0: every node joins every shard.
   */
  markets: number;
  /** The daemon's anti-entropy: each node syncs live adverts from one random peer this often, ms (default 30 000, `network.resyncMs`; 0: never). */
  resyncMs: number;
  /** gossipsub's mesh degree D (default 6, gossipsub's; the others in proportion: meshDegrees in src/net/libp2p-host.ts). */
  meshDegree: number;
  /** Offers per job (docs/market.md §12): a provider quotes a gossiped job only when fewer than this many live providers in its view ask less (default 8, the daemon's provider.offerRank; 0: every provider that fits quotes). */
  offerRank: number;
  /** Halfway through its window a buyer short of this many offers pushes the job to twice the shortfall (default 8, the daemon's buyer.offersWanted; 0: no push). */
  offersWanted: number;
  /** Jobs by invitation (docs/market.md §13): with more candidates than this in its view, a buyer sends a job to twice offersWanted of them directly, not on gossip (default 200, the daemon's buyer.inviteAbove; 0: always gossip). */
  inviteAbove: number;
  /**
   * A decided job's outcome, as the daemon sends it: the selection, then the receipt and the acceptance. 1 (default): as
   * built (docs/network.md §14): the selection to the providers it names and the acceptance to the winner directly, the
   * receipt and the acceptance on the market's topics, which no sim node joins (none counts second-hand evidence). 2: all
   * three on the market's topics, every node joined (the twelfth round). 0: jobs end at their offers (before it).
   */
  outcomes: number;
}

/** The partition's length when the run is long enough for it (simDefaults). */
export const DEFAULT_PARTITION_MS = 60_000;

/**
 * A warning when the partition does not fit in the schedule: it starts at or after the end (no partition at all), or
 * heals at or after it (no heal, so no convergence after one, to measure). Undefined when it fits or there is none.
 */
export function partitionWarning(o: Pick<SimOptions, 'durationMs' | 'partitionAtMs' | 'partitionMs'>): string | undefined {
  if (o.partitionAtMs < 0 || o.partitionMs <= 0) return undefined;
  const s = (ms: number) => `${ms / 1000} s`;
  if (o.partitionAtMs >= o.durationMs) return `the partition starts at ${s(o.partitionAtMs)}, at or after the end of the ${s(o.durationMs)} schedule: there is no partition in this run`;
  const heal = o.partitionAtMs + o.partitionMs;
  if (heal >= o.durationMs) return `the partition (from ${s(o.partitionAtMs)}, ${s(o.partitionMs)} long) heals at ${s(heal)}, at or after the end of the ${s(o.durationMs)} schedule: this run measures no heal; give a shorter --partitionMs or a longer --duration`;
  return undefined;
}

export function simDefaults(o: Partial<SimOptions> = {}): SimOptions {
  const nodes = o.nodes ?? 100;
  const durationMs = o.durationMs ?? 300_000;
  return {
    nodes,
    durationMs,
    seed: o.seed ?? 1,
    procs: o.procs ?? 2,
    witnesses: o.witnesses ?? Math.max(2, Math.round(nodes * 0.05)),
    providerShare: o.providerShare ?? 0.75,
    degree: o.degree ?? 4,
    advertLifetimeMs: o.advertLifetimeMs ?? 600_000,
    presenceEveryMs: o.presenceEveryMs ?? 15_000,
    presenceWindowMs: o.presenceWindowMs ?? 45_000,
    jobEveryMs: o.jobEveryMs ?? 30_000,
    collectMs: o.collectMs ?? 3_000,
    churnPerMin: o.churnPerMin ?? 0.1,
    downMs: o.downMs ?? 15_000,
    partitionAtMs: o.partitionAtMs ?? Math.round(durationMs * 0.4),
    // a minute, or less in a short run: by default the partition heals by 70 % of the schedule at the latest, so the
    // heal and the convergence after it are in the run (a 60 s run's minute-long partition from 24 s healed after its
    // end, and the report still spoke of a heal: QA qaDev F10)
    partitionMs: o.partitionMs ?? Math.min(DEFAULT_PARTITION_MS, Math.round(durationMs * 0.3)),
    warmupMs: o.warmupMs ?? 8_000,
    markets: o.markets ?? 1,
    resyncMs: o.resyncMs ?? 30_000,
    meshDegree: o.meshDegree ?? 6,
    offerRank: o.offerRank ?? OFFER_RANK,
    offersWanted: o.offersWanted ?? OFFER_RANK,
    inviteAbove: o.inviteAbove ?? INVITE_ABOVE,
    outcomes: o.outcomes ?? 1,
  };
}

export type Role = 'witness' | 'provider' | 'buyer';
export const WORKLOADS = ['infer.llm', 'tensor.matmul', 'builtin.sha256'] as const;
export const REGIONS = ['eu-west', 'us-east', 'ap-south'] as const;

export interface PlannedNode {
  index: number;
  role: Role;
  /** Ed25519 seed (hex), derived from the run's seed. */
  seedHex: string;
  /** Indices of the peers it dials at start (and keeps as bootstrap peers). */
  peers: number[];
  /** Providers: workloads served; buyers: the one workload they trade in (their market). And region. */
  workloads: string[];
  region: string;
  /** Providers: price per job, decimal string. */
  price: string;
  /** Which half of the partition it is in. */
  side: 0 | 1;
}

export interface ChurnEvent {
  node: number;
  /** Leaves at this time after the start of the schedule, ms; rejoins downMs later. */
  atMs: number;
}

export interface PlannedJob {
  buyer: number;
  atMs: number;
  workload: string;
  /** Absent: any region. */
  region?: string;
  n: number;
}

export interface Plan {
  opts: SimOptions;
  nodes: PlannedNode[];
  churn: ChurnEvent[];
  jobs: PlannedJob[];
  partition?: { atMs: number; untilMs: number };
}

/** The topic shards node `i` joins (undefined: every shard): docs/network.md §14. */
export function shardsOfNode(plan: Plan, i: number): string[] | undefined {
  const n = plan.nodes[i]!;
  return plan.opts.markets && n.role !== 'witness' ? shardsOf(n.workloads) : undefined;
}

/** Does node `i` hold provider `p`'s market (shares a shard with its adverts)? */
export function holdsMarket(plan: Plan, i: number, p: number): boolean {
  const mine = shardsOfNode(plan, i);
  if (!mine) return true;
  const theirs = new Set(shardsOf(plan.nodes[p]!.workloads));
  return mine.some((s) => theirs.has(s));
}

/** Is node `i` away (churned out) at time `t` of the schedule? */
export function isDown(plan: Plan, i: number, t: number): boolean {
  return plan.churn.some((c) => c.node === i && t >= c.atMs && t < c.atMs + plan.opts.downMs);
}

/** Are `a` and `b` cut off from each other at `t` (the partition)? */
export function apart(plan: Plan, a: number, b: number, t: number): boolean {
  const p = plan.partition;
  return p !== undefined && t >= p.atMs && t < p.untilMs && plan.nodes[a]!.side !== plan.nodes[b]!.side;
}

export function makePlan(opts: SimOptions): Plan {
  const rnd = seededRandom(opts.seed);
  const n = opts.nodes;
  const providers = Math.round((n - opts.witnesses) * opts.providerShare);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const order = Array.from({ length: n }, (_, i) => i);
  // halves of the partition: a seeded shuffle, split in the middle
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  const side = new Array<0 | 1>(n);
  order.forEach((node, k) => (side[node] = k < n / 2 ? 0 : 1));
  const nodes: PlannedNode[] = [];
  for (let i = 0; i < n; i++) {
    const role: Role = i < opts.witnesses ? 'witness' : i < opts.witnesses + providers ? 'provider' : 'buyer';
    const peers = new Set<number>([(i + 1) % n]);
    while (peers.size < Math.min(opts.degree, n - 1)) {
      const j = Math.floor(rnd() * n);
      if (j !== i) peers.add(j);
    }
    const w1 = pick(WORKLOADS);
    const workloads = rnd() < 0.5 ? [w1] : [...new Set([w1, pick(WORKLOADS)])].sort();
    nodes.push({
      index: i,
      role,
      seedHex: createHash('sha256').update(`c0mpute-sim:${opts.seed}:${i}`).digest('hex'),
      peers: [...peers].sort((a, b) => a - b),
      workloads: role === 'provider' ? workloads : role === 'buyer' ? [WORKLOADS[i % WORKLOADS.length]!] : [],
      region: pick(REGIONS),
      price: (0.01 + Math.floor(rnd() * 40) / 1000).toFixed(3),
      side: side[i]!,
    });
  }
  // Markets: a node's market needs peers on it (a shard's gossip mesh forms only among its subscribers). The daemon
  // has no market-aware peer discovery (docs/scale.md §4): here each node also dials the next three nodes sharing a
  // shard with it, as an operator would list bootstrap peers in its markets.
  if (opts.markets) {
    for (const a of nodes) {
      if (a.role === 'witness') continue;
      const mine = new Set(shardsOf(a.workloads));
      let added = 0;
      for (let k = 1; k < n && added < 3; k++) {
        const b = nodes[(a.index + k) % n]!;
        if (b.role === 'witness' || !shardsOf(b.workloads).some((x) => mine.has(x))) continue;
        if (!a.peers.includes(b.index)) a.peers.push(b.index);
        added++;
      }
      a.peers.sort((x, y) => x - y);
    }
  }
  // churn: churnPerMin × nodes per minute, spread evenly with seeded jitter, one absence at a time per node
  const churn: ChurnEvent[] = [];
  const count = Math.round((opts.churnPerMin * n * opts.durationMs) / 60_000);
  const lastStart = opts.durationMs - opts.downMs - 20_000;
  if (count > 0 && lastStart > 0) {
    for (let k = 0; k < count; k++) {
      const atMs = Math.round(((k + rnd() * 0.5) / count) * lastStart);
      for (let tries = 0; tries < 50; tries++) {
        const node = Math.floor(rnd() * n);
        if (!churn.some((c) => c.node === node && Math.abs(c.atMs - atMs) < opts.downMs + 5_000)) {
          churn.push({ node, atMs });
          break;
        }
      }
    }
  }
  // jobs: each buyer every jobEveryMs, phase and region seeded; none in the last 10 s
  const jobs: PlannedJob[] = [];
  let jn = 0;
  for (const b of nodes.filter((x) => x.role === 'buyer')) {
    for (let t = Math.floor(rnd() * opts.jobEveryMs); t < opts.durationMs - 10_000; t += opts.jobEveryMs) {
      const regional = rnd() < 0.5;
      const any = pick(WORKLOADS);
      jobs.push({ buyer: b.index, atMs: t, workload: opts.markets ? b.workloads[0]! : any, ...(regional ? { region: pick(REGIONS) } : {}), n: jn++ });
    }
  }
  jobs.sort((a, b) => a.atMs - b.atMs || a.n - b.n);
  const partition = opts.partitionAtMs >= 0 && opts.partitionMs > 0 ? { atMs: opts.partitionAtMs, untilMs: opts.partitionAtMs + opts.partitionMs } : undefined;
  return { opts, nodes, churn: churn.sort((a, b) => a.atMs - b.atMs), jobs, ...(partition ? { partition } : {}) };
}
