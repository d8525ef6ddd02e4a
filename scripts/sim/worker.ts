/**
 * One worker process of `npm run sim` (docs/scale.md "The hundred-node run"):
 * runs its shard of the plan's nodes as real networks (libp2p over TCP on
 * 127.0.0.1, the full validation pipeline, the in-memory record cache serving
 * sync), plays their part of the seeded schedule (adverts, presence, jobs,
 * offers, churn, the partition) and reports what each node saw. Several nodes
 * share this process; every figure is per node.
 *
 * Protocol with the parent (IPC): ← {type:'init', opts, shard, ports} → 'ready';
 * ← {type:'go', t0} (epoch ms of schedule time 0; the warm-up dials happen now)
 * → {type:'result', result} when the schedule is over.
 */
import '../../src/polyfill.js';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';
import { Ed25519Signer, seal, T, type Advert, type Job, type Offer, type Presence } from '../../src/records/index.js';
import { createNetwork, type Network } from '../../src/net/node.js';
import { meshDegrees } from '../../src/net/libp2p-host.js';
import { onGossipRpc } from './rpc-hook.js';
import { NONDELIVERY_TOPIC_KINDS, parseTopic, TOPIC_KINDS, type TopicKind } from '../../src/net/topics.js';
import { peerIdFromDid } from '../../src/node/peer-id.js';
import { didFromPublicKey } from '../../src/records/did.js';
import { hashHex } from '../../src/records/address.js';
import { open, type Opened } from '../../src/records/envelope.js';
import { PresenceView } from '../../src/matching/presence.js';
import { byAskForJob, candidates, orderFromJob, rankAhead } from '../../src/matching/candidates.js';
import { JOB_PUSH_LIMITS, JOB_PUSH_PROTOCOL, MAX_PUSH_TARGETS, choosePushTargets, invitesJob, jobPushHandler, pushJob } from '../../src/node/job-push.js';
import { makePlan, apart, shardsOfNode, type Plan, type PlannedNode, type SimOptions } from './plan.js';

export interface Traffic {
  /** per kind (and 'control' for gossipsub's own: IHAVE/IWANT/GRAFT/PRUNE, subscriptions): messages and bytes in/out */
  [kind: string]: { inMsgs: number; inBytes: number; outMsgs: number; outBytes: number; delivered?: number };
}

export interface NodeResult {
  index: number;
  /** advert address → first arrival, schedule ms */
  arrivals: Record<string, number>;
  /** at the end (if up): provider index → highest advert seq held */
  finalView?: Record<number, number>;
  traffic: Traffic;
  /** schedule ms the node was up in total (for rates) */
  upMs: number;
}

export interface WorkerResult {
  nodes: NodeResult[];
  adverts: Array<{ address: string; provider: number; seq: number; t: number }>;
  jobs: Array<{ n: number; buyer: number; address: string; t: number }>;
  decisions: Array<{ n: number; buyer: number; t: number; offers: Array<{ provider: number; t: number; advertSeq: number }>; winner?: number; winnerSeq?: number }>;
  /** buyer view samples: schedule ms, buyer, [provider index, advert seq] of each live advert held */
  views: Array<{ t: number; buyer: number; known: Array<[number, number]> }>;
  /** records this shard's nodes published, by kind */
  published: Record<string, number>;
  /** event-loop lag of this worker, ms (p50, p99, max of a 100 ms timer's lateness): high values mean the process was starved of CPU and the figures are the machine's, not the protocol's */
  loopLagMs: [number, number, number];
  /** schedule ms when this worker had closed every connection across the cut */
  cutDoneAt?: number;
  /** connections this shard's nodes opened (by direction) and closed, with how long the closed ones lived (ms buckets), and identify exchanges */
  conns: { in: number; out: number; closed: number; lifetimes: Record<string, number>; identified: number };
  /** SIM_DIAG=1: who closed or aborted connections (error and the first stack frames) → count */
  closes: Record<string, number>;
  /** syncs this shard's nodes ran (on connect and anti-entropy) and the records they received: accepted (new) and not (duplicates, stale) */
  syncs: { calls: number; accepted: number; other: number };
  /** connected peers of this shard's up nodes, summed over samples (every 2 s), and the number of node samples */
  peerSamples: { sum: number; n: number };
  /** offers sent over /c0mpute/offer/1 by outcome: count, how many took longer than the buyer's decision window, total ms */
  offerSends: Record<string, { n: number; late: number; ms: number }>;
  /** selections and acceptances sent over /c0mpute/outcome/1, by `<kind> <outcome>`: count */
  outcomeSends: Record<string, number>;
  /** offers per job (docs/market.md §12): jobs a provider held back on (outranked), pushes a buyer sent and the offers they brought */
  rank: { outranked: number; pushes: number; pushOffers: number; pushErrors: Record<string, number>; invited: number; invitations: number; invitationOffers: number; gossipAfterInvite: number };
  cpuMs: number;
  rssMiB: number;
  peakRssMiB: number;
  errors: string[];
}

const now = () => performance.timeOrigin + performance.now();

/** Messages and bytes in and out by kind (control: the rest of each RPC), from gossipsub's RPC hook. */
function countTraffic(net: Network, traffic: Traffic): void {
  const slot = (k: string) => (traffic[k] ??= { inMsgs: 0, inBytes: 0, outMsgs: 0, outBytes: 0 });
  onGossipRpc(net, (rpc, bytes, dir) => {
    let used = 0;
    for (const m of rpc.messages ?? []) {
      const kind = (m.topic && parseTopic(m.topic)?.kind) || 'other';
      const b = (m.data?.length ?? 0) + (m.topic?.length ?? 0) + 6;
      used += b;
      const s = slot(kind);
      if (dir === 'in') {
        s.inMsgs++;
        s.inBytes += b;
      } else {
        s.outMsgs++;
        s.outBytes += b;
      }
    }
    const c = slot('control');
    if (dir === 'in') c.inBytes += Math.max(0, bytes - used);
    else c.outBytes += Math.max(0, bytes - used);
  });
}

/** SIM_DIAG: count every local close/abort of the node's connections by cause (error, caller), to find what churns them. */
function tallyCloses(net: Network, tally: Record<string, number>): void {
  const where = () =>
    (new Error().stack ?? '')
      .split('\n')
      .slice(3, 7)
      .map((x) => x.trim().replace(/^at /, '').replace(/\(.*node_modules\//, '(').replace(/:\d+\)$/, ')'))
      .join(' < ');
  const cm = (net.libp2p as unknown as { components: { connectionManager: { openConnection: (...a: unknown[]) => Promise<{ id: string }> } } }).components.connectionManager;
  const open = cm.openConnection.bind(cm);
  const before = new Set<string>();
  cm.openConnection = async (...a: unknown[]) => {
    const w = where();
    const n = net.libp2p.getConnections().length;
    const c = await open(...a);
    if (!before.has(c.id) && net.libp2p.getConnections().length > n) {
      before.add(c.id);
      const k = `open ${w}`;
      tally[k] = (tally[k] ?? 0) + 1;
    }
    return c;
  };
  net.libp2p.addEventListener('connection:open', (e) => {
    const c = e.detail as unknown as { close: (o?: unknown) => Promise<void>; abort: (err: Error) => void };
    const close = c.close.bind(c);
    const abort = c.abort.bind(c);
    c.close = (o?: unknown) => {
      const k = `close ${where()}`;
      tally[k] = (tally[k] ?? 0) + 1;
      return close(o);
    };
    c.abort = (err: Error) => {
      const k = `abort ${err?.name}: ${String(err?.message).slice(0, 60)} ${where()}`;
      tally[k] = (tally[k] ?? 0) + 1;
      abort(err);
    };
  });
}

/** A buyer's job in flight: the offers it took, whichever way they came. */
interface JobEntry {
  n: number;
  buyer: number;
  /** when it was published (sim time) */
  t0: number;
  offers: Array<{ provider: number; t: number; advertSeq: number; price: number; offer: string; did: string }>;
  /** invited, then gossiped after all */
  gossiped?: boolean;
}

interface Live {
  net?: Network;
  upSince?: number;
  upMs: number;
  seq: number;
  advert?: Uint8Array;
  arrivals: Record<string, number>;
  /** provider DID → {seq, expiresAt} */
  held: Map<string, { seq: number; expiresAt: number }>;
  traffic: Traffic;
  /** the daemon's anti-entropy timer (src/node/overlay.ts) */
  resync?: NodeJS.Timeout;
  /** providers and buyers: the market's adverts (latest by seq) and presence, for offers per job (docs/market.md §12) */
  adverts: Map<string, Opened<Advert>>;
  presence: PresenceView;
}

async function main(): Promise<void> {
  const init = await new Promise<{ opts: SimOptions; shard: number[]; ports: number[]; profDir?: string }>((resolve) => process.once('message', (m) => resolve(m as never)));
  const plan: Plan = makePlan(init.opts);
  const o = plan.opts;
  const signers = plan.nodes.map((x) => new Ed25519Signer(Buffer.from(x.seedHex, 'hex')));
  const dids = signers.map((s) => didFromPublicKey(s.publicKey));
  const providerOf = new Map(dids.map((d, i) => [d, i]));
  const peerIds = dids.map((d) => peerIdFromDid(d).toString());
  const peerIndex = new Map(peerIds.map((p, i) => [p, i]));
  const addrOf = (i: number) => `/ip4/127.0.0.1/tcp/${init.ports[i]}/p2p/${peerIds[i]}`;
  const res: WorkerResult = { closes: {}, nodes: [], adverts: [], jobs: [], decisions: [], views: [], published: {}, loopLagMs: [0, 0, 0], conns: { in: 0, out: 0, closed: 0, lifetimes: {}, identified: 0 }, syncs: { calls: 0, accepted: 0, other: 0 }, peerSamples: { sum: 0, n: 0 }, offerSends: {}, outcomeSends: {}, rank: { outranked: 0, pushes: 0, pushOffers: 0, pushErrors: {}, invited: 0, invitations: 0, invitationOffers: 0, gossipAfterInvite: 0 }, cpuMs: 0, rssMiB: 0, peakRssMiB: 0, errors: [] };
  const live = new Map<number, Live>();
  let t0 = Infinity;
  const st = () => now() - t0;
  const myJobs = new Map<string, JobEntry>();
  const count = (kind: string) => (res.published[kind] = (res.published[kind] ?? 0) + 1);
  const err = (e: unknown) => {
    if (res.errors.length < 50) res.errors.push(String((e as Error)?.message ?? e).slice(0, 200));
  };

  const start = async (node: PlannedNode): Promise<void> => {
    const l = live.get(node.index)!;
    const net = await createNetwork({
      signer: signers[node.index]!,
      listen: [`/ip4/127.0.0.1/tcp/${init.ports[node.index]}`],
      loopback: true,
      bootstrap: node.peers.map(addrOf),
      // offers go to the buyer over /c0mpute/offer/1, not on gossip; markets: the topic shards of its workloads (docs/network.md §13, §14)
      topics: TOPIC_KINDS.filter((k) => k !== 'offer'),
      // a job's outcome as built (outcomes 1): the evidence topics joined only by nodes that count second-hand evidence,
      // which no sim node does (network.outcomes auto, docs/network.md §14); outcomes 2: every node joins them
      ...(o.outcomes === 1 ? { publishOnly: ['receipt', 'acceptance', ...NONDELIVERY_TOPIC_KINDS] as TopicKind[] } : {}),
      gossip: meshDegrees(o.meshDegree),
      ...(shardsOfNode(plan, node.index) ? { shards: shardsOfNode(plan, node.index)! } : {}),
      unreachable: (p) => {
        const j = peerIndex.get(p);
        return j !== undefined && apart(plan, node.index, j, st());
      },
    });
    countTraffic(net, l.traffic);
    const syncFrom = net.syncFrom.bind(net);
    net.syncFrom = async (peer, kinds) => {
      const r = await syncFrom(peer, kinds);
      if (t0 !== Infinity) {
        res.syncs.calls++;
        res.syncs.accepted += r.accepted;
        res.syncs.other += r.ignored + r.rejected;
      }
      return r;
    };
    const cs = res.conns;
    net.libp2p.addEventListener('connection:open', (e) => void (t0 !== Infinity && cs[e.detail.direction === 'inbound' ? 'in' : 'out']++));
    if (process.env.SIM_DIAG) tallyCloses(net, res.closes);
    net.libp2p.addEventListener('peer:identify', () => void (t0 !== Infinity && cs.identified++));
    net.libp2p.addEventListener('connection:close', (e) => {
      if (t0 === Infinity) return;
      cs.closed++;
      const life = Date.now() - e.detail.timeline.open;
      const b = life < 1_000 ? '<1s' : life < 10_000 ? '<10s' : life < 60_000 ? '<60s' : '>=60s';
      cs.lifetimes[b] = (cs.lifetimes[b] ?? 0) + 1;
    });
    const slot = (k: string) => (l.traffic[k] ??= { inMsgs: 0, inBytes: 0, outMsgs: 0, outBytes: 0 });
    // records accepted (first copies), for the model's copies per delivered record
    for (const k of ['advert', 'job', 'presence', 'selection', 'receipt', 'acceptance'] as const)
      net.subscribe(k, (rec, meta) => {
        // a selection or an acceptance over /c0mpute/outcome/1 (outcomes 1) is not a gossip delivery: counted apart
        if (meta.source !== 'direct') slot(k).delivered = (slot(k).delivered ?? 0) + 1;
        else {
          const s1 = slot('outcome-direct');
          s1.inMsgs++;
          s1.inBytes += rec.bytes.length + 16;
        }
      });
    net.subscribe('advert', (rec) => {
      l.arrivals[rec.address] ??= st();
      const a = rec.record as Advert;
      const h = l.held.get(rec.signer);
      if (!h || a.seq > h.seq) l.held.set(rec.signer, { seq: a.seq, expiresAt: a.expiresAt });
      const kept = l.adverts.get(rec.signer);
      if (node.role !== 'witness' && (!kept || a.seq > kept.record.seq)) l.adverts.set(rec.signer, rec as Opened<Advert>);
    });
    if (node.role !== 'witness') net.subscribe('presence', (rec) => void l.presence.add(rec as Opened<Presence>, Date.now()));
    if (node.role === 'provider') {
      /** Whether this provider, up and advertised, serves the job's workload in one of its regions. */
      const fits = (j: Job): boolean => node.workloads.includes(j.workload) && (!j.requirements.regions || j.requirements.regions.includes(node.region)) && !!l.advert && !!l.net;
      /** The provider's offer for a job it fits (undefined: it does not fit), as the daemon's would be. */
      const offerFor = (rec: Opened<Job>): Opened<Offer> | undefined => {
        if (!fits(rec.record) || !l.advert) return undefined; // (the second test narrows l.advert for TypeScript)
        const t = Date.now();
        const offer: Offer = { job: rec.address, advert: hashHex(l.advert), price: { amount: node.price, currency: 'USD' }, durationMs: 10_000, issuedAt: t, startBy: t + 60_000, expiresAt: t + 30_000 };
        count('offer');
        return seal(T.offer, offer, signers[node.index]!) as Opened<Offer>;
      };
      // job-push/1 as the daemon's provider serves it: a pushed job is quoted whatever its rank
      await net.handle(
        JOB_PUSH_PROTOCOL,
        jobPushHandler({ clock: Date.now, skewMs: 30_000, quote: async (job) => offerFor(job), advert: (a) => (l.advert && hashHex(l.advert) === a ? (open(l.advert, T.advert) as Opened<Advert>) : undefined) }),
        JOB_PUSH_LIMITS,
      );
      net.subscribe('job', (rec) => {
        if (!fits(rec.record as Job)) return;
        // offers per job (docs/market.md §12): hold back when offerRank live providers in view ask less
        if (o.offerRank > 0) {
          const t = Date.now();
          const ahead = rankAhead({ job: rec as Opened<Job>, live: l.presence.live(t), self: dids[node.index]!, cost: node.price, limit: o.offerRank, now: t });
          if (ahead >= o.offerRank) {
            res.rank.outranked++;
            return;
          }
        }
        const env = offerFor(rec as Opened<Job>);
        const { advert, net: net1 } = l;
        if (!env || !advert || !net1) return;
        const s = slot('offer-direct');
        s.outMsgs++;
        s.outBytes += env.bytes.length + advert.length + 16;
        const sentAt = Date.now();
        const buyerPeer = peerIdFromDid(rec.signer);
        // where the provider stood with the buyer: connected, its addresses in the peer store, or neither (a DHT look-up)
        const route = net1.libp2p.getConnections(buyerPeer).length ? 'connected' : net1.libp2p.peerStore.get(buyerPeer).then((p) => (p.addresses.length ? 'known' : 'unknown'), () => 'unknown');
        void Promise.all([net1.sendOffer([rec.signer], env.bytes, [advert]), route]).then(([r, how]) => {
          const ms = Date.now() - sentAt;
          for (const x of Object.values(r.outcomes)) {
            const o1 = (res.offerSends[`${x} (${how})`] ??= { n: 0, late: 0, ms: 0 });
            o1.n++;
            o1.ms += ms;
            if (ms > o.collectMs) o1.late++;
          }
        }, err);
      });
    }
    if (node.role === 'buyer') {
      net.subscribe('offer', (rec, meta) => {
        const mine = myJobs.get((rec.record as Offer).job);
        if (meta.source === 'direct') {
          const s = slot('offer-direct');
          s.inMsgs++;
          s.inBytes += rec.bytes.length + meta.attachments.reduce((n, a) => n + a.bytes.length, 0) + 16;
        }
        if (!mine) return;
        const provider = providerOf.get(rec.signer) ?? -1;
        const adv = meta.attachments[0]?.record as Advert | undefined;
        mine.offers.push({ provider, t: st(), advertSeq: adv?.seq ?? -1, price: Number((rec.record as Offer).price.amount), offer: rec.address, did: rec.signer });
      });
    }
    await net.start();
    l.net = net;
    // The daemon's anti-entropy (network.resyncMs): sync live adverts from one random peer this often.
    if (o.resyncMs > 0) {
      clearInterval(l.resync);
      l.resync = setInterval(() => {
        const ps = net.peers();
        if (l.net !== net || !ps.length) return;
        void net.syncFrom(ps[Math.floor(Math.random() * ps.length)]!.peerId, ['advert']).catch(() => undefined);
      }, o.resyncMs);
      l.resync.unref();
    }
    l.upSince = st();
    for (const p of node.peers) void net.dial(addrOf(p)).catch(() => undefined);
  };

  const stop = async (i: number): Promise<void> => {
    const l = live.get(i)!;
    const net = l.net;
    l.net = undefined;
    clearInterval(l.resync);
    if (l.upSince !== undefined) l.upMs += st() - l.upSince;
    l.upSince = undefined;
    await net?.stop().catch(err);
  };

  // As the daemon's provider does (src/roles/provider/provider.ts publishAdvert): an advert that reached no peer
  // (a rejoin before the mesh formed) is signed and published afresh, backing off from 250 ms to 15 s.
  const publishAdvert = (node: PlannedNode, retryMs = 250): void => {
    const l = live.get(node.index)!;
    if (!l.net) return;
    const net0 = l.net;
    const t = Date.now();
    l.seq = Math.max(l.seq + 1, t);
    const rec: Advert = {
      seq: l.seq,
      issuedAt: t,
      expiresAt: t + o.advertLifetimeMs,
      workloads: node.workloads,
      tier: 'standard',
      region: node.region,
      hardware: { gpus: [{ model: 'rtx-4090', vramMiB: 24_576, count: 1, features: ['cuda12'] }], cpuCores: 16, memoryMiB: 65_536 },
      prices: node.workloads.map((w) => ({ workload: w, unit: 'job', price: { amount: node.price, currency: 'USD' } })),
      boxKey: new Uint8Array(32).fill(node.index % 251),
    };
    const env = seal(T.advert, rec, signers[node.index]!);
    l.advert = env.bytes;
    res.adverts.push({ address: env.address, provider: node.index, seq: l.seq, t: st() });
    l.arrivals[env.address] = st();
    l.held.set(dids[node.index]!, { seq: l.seq, expiresAt: rec.expiresAt });
    count('advert');
    void l.net.publish('advert', env.bytes).then((r) => {
      if (r.recipients === 0 && l.net === net0 && st() < o.durationMs) setTimeout(() => l.net === net0 && publishAdvert(node, Math.min(retryMs * 2, 15_000)), retryMs);
    }, err);
  };

  const publishPresence = (node: PlannedNode): void => {
    const l = live.get(node.index)!;
    if (!l.net) return;
    const rec: Presence = { workloads: node.workloads, freeSlots: 1, issuedAt: Date.now(), windowMs: o.presenceWindowMs };
    count('presence');
    void l.net.publish('presence', seal(T.presence, rec, signers[node.index]!).bytes).catch(err);
  };

  // --- set up this shard's nodes
  for (const i of init.shard) {
    const adverts = new Map<string, Opened<Advert>>();
    const presence = new PresenceView((did, t) => {
      const a = adverts.get(did);
      return a && a.record.expiresAt > t ? a : undefined;
    });
    live.set(i, { upMs: 0, seq: 0, arrivals: {}, held: new Map(), traffic: {}, adverts, presence });
    await start(plan.nodes[i]!);
  }
  process.send!({ type: 'ready' });
  const go = await new Promise<{ t0: number }>((resolve) => process.once('message', (m) => resolve(m as never)));
  t0 = go.t0;
  // --prof DIR: a CPU profile of this worker over the schedule (setup excluded), summarised by `node dist/scripts/sim/prof.js DIR`
  const session = init.profDir ? new Session() : undefined;
  if (session) {
    session.connect();
    await session.post('Profiler.enable');
    await session.post('Profiler.start');
  }
  const cpu0 = process.cpuUsage();
  for (const i of init.shard) {
    const l = live.get(i)!;
    l.upSince = st();
    for (const p of plan.nodes[i]!.peers) void l.net!.dial(addrOf(p)).catch(() => undefined);
  }

  const chains = new Map<number, Promise<void>>();
  const chain = (i: number, f: () => Promise<void>): Promise<void> => {
    const p = (chains.get(i) ?? Promise.resolve()).then(f).catch(err);
    chains.set(i, p);
    return p;
  };

  // --- the schedule, as one sorted queue of this shard's events
  type Ev = { t: number; run: () => void | Promise<void> };
  const evs: Ev[] = [];
  const mine = new Set(init.shard);
  for (const i of init.shard) {
    const node = plan.nodes[i]!;
    if (node.role === 'provider') {
      const phase = (i * 977) % 5_000;
      for (let t = phase; t < o.durationMs; t += o.advertLifetimeMs / 2) evs.push({ t, run: () => publishAdvert(node) });
      for (let t = phase + 500; t < o.durationMs; t += o.presenceEveryMs) evs.push({ t, run: () => publishPresence(node) });
    }
    if (node.role === 'buyer') for (let t = 2_000; t < o.durationMs; t += 2_000) evs.push({ t, run: () => sampleView(node) });
    for (let t = 2_000; t < o.durationMs; t += 2_000)
      evs.push({
        t,
        run: () => {
          const net = live.get(i)!.net;
          if (!net) return;
          res.peerSamples.sum += net.libp2p.getConnections().length;
          res.peerSamples.n++;
        },
      });
  }
  for (const c of plan.churn) {
    if (!mine.has(c.node)) continue;
    const node = plan.nodes[c.node]!;
    // leaving and rejoining run beside the schedule (a slow stop must not hold up other nodes' events), in order per node
    evs.push({ t: c.atMs, run: () => void chain(c.node, () => stop(c.node)) });
    evs.push({
      t: c.atMs + o.downMs,
      run: () =>
        void chain(c.node, async () => {
          await start(node);
          if (node.role === 'provider') setTimeout(() => publishAdvert(node), 1_000);
        }),
    });
  }
  for (const j of plan.jobs) {
    if (!mine.has(j.buyer)) continue;
    evs.push({ t: j.atMs, run: () => publishJob(j) });
  }
  if (plan.partition) {
    // cut: close the connections across the halves (new ones are refused by the gater until the heal)
    const p = plan.partition;
    evs.push({
      t: p.atMs,
      run: async () => {
        const closing: Array<Promise<void>> = [];
        for (const i of init.shard) {
          const net = live.get(i)!.net;
          if (!net) continue;
          for (const c of net.libp2p.getConnections()) {
            const j = peerIndex.get(c.remotePeer.toString());
            if (j !== undefined && plan.nodes[j]!.side !== plan.nodes[i]!.side) closing.push(c.close().catch(() => c.abort(new Error('partition'))));
          }
        }
        await Promise.all(closing);
        res.cutDoneAt = st();
      },
    });
  }
  evs.sort((a, b) => a.t - b.t);

  function sampleView(node: PlannedNode): void {
    const l = live.get(node.index)!;
    if (!l.net) return;
    const tNow = Date.now();
    const known: Array<[number, number]> = [];
    for (const [did, h] of l.held) if (h.expiresAt > tNow) known.push([providerOf.get(did)!, h.seq]);
    res.views.push({ t: st(), buyer: node.index, known });
  }

  function publishJob(j: Plan['jobs'][number]): void {
    const l = live.get(j.buyer)!;
    if (!l.net) return;
    const t = Date.now();
    const input = randomBytes(16);
    const job: Job = {
      workload: j.workload,
      requirements: j.region ? { regions: [j.region] } : {},
      maxPrice: { amount: '1', currency: 'USD' },
      announcedAt: t,
      deadline: t + 120_000,
      timeoutMs: 60_000,
      input: { hash: hashHex(input), size: input.length },
      inputSealed: 'no',
      nonce: new Uint8Array(randomBytes(8)),
    };
    const env = seal(T.job, job, signers[j.buyer]!);
    const entry: JobEntry = { n: j.n, buyer: j.buyer, t0: st(), offers: [] };
    myJobs.set(env.address, entry);
    res.jobs.push({ n: j.n, buyer: j.buyer, address: env.address, t: st() });
    count('job');
    // jobs by invitation (src/node/buyer-wiring.ts #invite): a market larger than inviteAbove in the buyer's view
    const invited = invite(j.buyer, env as Opened<Job>, entry);
    if (!invited) void l.net.publish('job', env.bytes).catch(err);
    if (o.offersWanted > 0) setTimeout(() => void pushShort(j.buyer, env as Opened<Job>, entry, invited).catch(err), o.collectMs / 2).unref();
    setTimeout(() => {
      if (!live.get(j.buyer)!.net) return; // the buyer left: no decision
      const offers = [...entry.offers];
      const best = offers.filter((x) => x.provider >= 0).sort((a, b) => a.price - b.price || a.provider - b.provider)[0];
      res.decisions.push({ n: j.n, buyer: j.buyer, t: st(), offers: offers.map(({ provider, t: ot, advertSeq }) => ({ provider, t: ot, advertSeq })), ...(best ? { winner: best.provider, winnerSeq: best.advertSeq } : {}) });
      if (best && o.outcomes) publishOutcome(j, env as Opened<Job>, offers, best);
    }, o.collectMs);
  }

  /**
   * A decided job's outcome, as the daemon's buyer publishes it (src/roles/buyer.ts): the selection naming each
   * provider's offer (on the job's market: the buyer gives its workload), then, once the work would be done (2 s), the
   * winner's receipt and the buyer's acceptance. The buyer publishes the receipt as the daemon's does (signed by the
   * winner's key, which every worker holds); the winner's own copy of it, the same message, is not sent here.
   */
  function publishOutcome(j: Plan['jobs'][number], job: Opened<Job>, offers: JobEntry['offers'], best: JobEntry['offers'][number]): void {
    const net = live.get(j.buyer)!.net;
    if (!net) return;
    const byDid = new Map<string, string>();
    for (const x of offers) if (!byDid.has(x.did)) byDid.set(x.did, x.offer);
    if (best.provider < 0) return;
    const t = Date.now();
    const considered = [...byDid].sort((a, b) => (a[0] < b[0] ? -1 : 1)).map(([provider, offer]) => ({ provider, offer }));
    const sel = seal(T.selection, { job: job.address, buyer: dids[j.buyer]!, policy: 'cheapest', winner: best.offer, considered, decidedAt: t }, signers[j.buyer]!);
    count('selection');
    // as built (outcomes 1): to the providers it names, directly; outcomes 2 (the twelfth round): on the job's market
    if (o.outcomes === 1) sendOutcome(j.buyer, net, 'selection', considered.map((c) => c.provider), sel.bytes);
    else void net.publish('selection', sel.bytes, [], { workload: j.workload }).catch(err);
    setTimeout(() => {
      const n1 = live.get(j.buyer)!.net;
      if (!n1 || n1 !== net) return; // the buyer left
      const done = Date.now();
      const receipt = seal(T.receipt, { job: job.address, offer: best.offer, buyer: dids[j.buyer]!, provider: best.did, workload: j.workload, status: 'completed', startedAt: t, completedAt: done, inputHash: job.record.input.hash, outputHash: hashHex(randomBytes(8)), outputSize: 8, price: { amount: String(best.price), currency: 'USD' }, energy: { uj: 1_000_000, grade: 'Estimator' } }, signers[best.provider]!);
      const acceptance = seal(T.acceptance, { receipt: receipt.address, verdict: 'accepted', signedAt: done }, signers[j.buyer]!);
      count('receipt');
      count('acceptance');
      // as built, the acceptance also goes to the winner directly; both go on the market's topics, where (outcomes 1)
      // only nodes that joined them hear them: none in the sim
      if (o.outcomes === 1) sendOutcome(j.buyer, n1, 'acceptance', [best.did], acceptance.bytes);
      void n1
        .publish('receipt', receipt.bytes)
        .then(() => n1.publish('acceptance', acceptance.bytes, [], { workload: j.workload }))
        .catch(err);
    }, 2_000).unref();
  }

  /** A selection or an acceptance over /c0mpute/outcome/1 (src/node/buyer-wiring.ts #direct), counted as `outcome-direct`. */
  function sendOutcome(buyer: number, net: Network, kind: 'selection' | 'acceptance', to: string[], bytes: Uint8Array): void {
    const traffic = live.get(buyer)!.traffic;
    const s = (traffic['outcome-direct'] ??= { inMsgs: 0, inBytes: 0, outMsgs: 0, outBytes: 0 });
    const n = to.filter((d) => d !== net.did).length;
    s.outMsgs += n;
    s.outBytes += n * (bytes.length + 16);
    void net.sendOutcome(kind, to, bytes).then((r) => {
      for (const x of Object.values(r.outcomes)) res.outcomeSends[`${kind} ${x}`] = (res.outcomeSends[`${kind} ${x}`] ?? 0) + 1;
    }, err);
  }

  /**
   * The daemon's buyer halfway through its window (src/node/buyer-wiring.ts #pushJob, docs/market.md §12): short of
   * offersWanted offers, push the job to twice the shortfall, the cheapest live candidates first, connected ones first.
   */
  async function pushShort(buyer: number, job: Opened<Job>, entry: JobEntry, invited?: ReadonlySet<string>): Promise<void> {
    const l = live.get(buyer)!;
    const net = l.net;
    if (!net) return;
    const quoted = new Set(entry.offers.map((x) => x.provider));
    const missing = o.offersWanted - quoted.size;
    if (missing <= 0) return;
    // invited and still short: the whole market hears it now, as the daemon's buyer does
    if (invited) gossipAfterInvite(net, job, entry);
    const targets = chooseTargets(l, net, job, missing, (d) => quoted.has(providerOf.get(d) ?? -1) || !!invited?.has(d));
    res.rank.pushes += targets.length;
    await pushTo(buyer, net, job, entry, targets, o.collectMs / 2, () => res.rank.pushOffers++);
  }

  function gossipAfterInvite(net: Network, job: Opened<Job>, entry: JobEntry): void {
    if (entry.gossiped) return;
    entry.gossiped = true;
    res.rank.gossipAfterInvite++;
    void net.publish('job', job.bytes).catch(err);
  }

  /** Live candidates of the buyer's view by price (the sim's buyers keep no reputation view), chosen as the daemon's push chooses. */
  function chooseTargets(l: Live, net: Network, job: Opened<Job>, missing: number, skip: (did: string) => boolean, cands = jobCandidates(l, job)): string[] {
    const ranked = byAskForJob(cands, job.address)
      .map((c) => c.provider)
      .filter((d) => !skip(d));
    return choosePushTargets({ want: Math.min(MAX_PUSH_TARGETS, 2 * missing), maxDials: missing, byRecord: [], byPrice: ranked, connected: new Set(net.peers().map((p) => p.did ?? '')), silentConnected: [] });
  }

  function jobCandidates(l: Live, job: Opened<Job>): ReturnType<typeof candidates>['candidates'] {
    const t = Date.now();
    return candidates({ order: orderFromJob(job), live: l.presence.live(t), now: t }).candidates;
  }

  /** job-push/1 to each target at once; each offer that comes back is the buyer's. */
  async function pushTo(buyer: number, net: Network, job: Opened<Job>, entry: JobEntry, targets: readonly string[], deadlineMs: number, onOffer: () => void): Promise<void> {
    await Promise.all(
      targets.map(async (did) => {
        const r = await pushJob(net, did, job, deadlineMs, Date.now, 30_000).catch((e: Error) => {
          const k = `${(e as { code?: string }).code ?? 'ERROR'}: ${e.message.replace(/ to 12D3\w+/, '').slice(0, 90)}`;
          res.rank.pushErrors[k] = (res.rank.pushErrors[k] ?? 0) + 1;
        });
        if (!r || 'redirect' in r || live.get(buyer)!.net !== net) return; // the sim has no pools
        onOffer();
        entry.offers.push({ provider: providerOf.get(did) ?? -1, t: st(), advertSeq: r.advert.record.seq, price: Number(r.offer.record.price.amount), offer: r.offer.address, did });
      }),
    );
  }

  /**
   * The daemon's buyer's invitations (src/node/buyer-wiring.ts #invite, docs/market.md §13): with more than inviteAbove
   * candidates in view, send the job to twice offersWanted of them directly instead of gossiping it. The invited, or
   * undefined when the job goes on gossip.
   */
  function invite(buyer: number, job: Opened<Job>, entry: JobEntry): ReadonlySet<string> | undefined {
    const l = live.get(buyer)!;
    const net = l.net;
    if (!net) return undefined;
    // the daemon's rule (no steward and no open orders in the sim)
    const rule = { steward: false, openOrder: false, offersWanted: o.offersWanted, inviteAbove: o.inviteAbove, connected: net.peers().length };
    if (!invitesJob({ ...rule, candidates: Infinity })) return undefined;
    const cands = jobCandidates(l, job);
    if (!invitesJob({ ...rule, candidates: cands.length })) return undefined;
    const targets = chooseTargets(l, net, job, o.offersWanted, () => false, cands);
    if (!targets.length) return undefined;
    res.rank.invited++;
    res.rank.invitations += targets.length;
    // the daemon's deadline for an invitation (half the window plus 2 s); every one answered and still short: gossip now
    void pushTo(buyer, net, job, entry, targets, o.collectMs / 2 + 2000, () => res.rank.invitationOffers++)
      .then(() => {
        if (live.get(buyer)!.net === net && new Set(entry.offers.map((x) => x.provider)).size < o.offersWanted && st() - entry.t0 < o.collectMs) gossipAfterInvite(net, job, entry);
      })
      .catch(err);
    return new Set(targets);
  }

  let peak = 0;
  const lags: number[] = [];
  let lastTick = now();
  const rssTimer = setInterval(() => {
    const t = now();
    lags.push(Math.max(0, t - lastTick - 100));
    lastTick = t;
    if (lags.length % 10 === 0) peak = Math.max(peak, process.memoryUsage().rss);
  }, 100);
  let k = 0;
  while (st() < o.durationMs) {
    while (k < evs.length && evs[k]!.t <= st()) {
      try {
        await evs[k]!.run();
      } catch (e) {
        err(e);
      }
      k++;
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  await Promise.all(chains.values());
  const cpu = process.cpuUsage(cpu0);
  res.cpuMs = (cpu.user + cpu.system) / 1000;
  if (session) {
    const { profile } = await session.post('Profiler.stop');
    writeFileSync(join(init.profDir!, `sim-worker-${init.shard[0] ?? 0}-${process.pid}.cpuprofile`), JSON.stringify(profile));
    session.disconnect();
  }
  const sorted = [...lags].sort((a, b) => a - b);
  res.loopLagMs = [sorted[sorted.length >> 1] ?? 0, sorted[Math.floor(sorted.length * 0.99)] ?? 0, sorted[sorted.length - 1] ?? 0];
  res.rssMiB = process.memoryUsage().rss / 2 ** 20;
  clearInterval(rssTimer);
  res.peakRssMiB = Math.max(peak, process.memoryUsage().rss) / 2 ** 20;
  // allow the last decisions to land
  await new Promise((r) => setTimeout(r, o.collectMs + 200));
  const tEnd = Date.now();
  for (const i of init.shard) {
    const l = live.get(i)!;
    if (l.upSince !== undefined) l.upMs += st() - l.upSince;
    const nr: NodeResult = { index: i, arrivals: l.arrivals, traffic: l.traffic, upMs: l.upMs };
    if (l.net) {
      nr.finalView = {};
      for (const [did, h] of l.held) if (h.expiresAt > tEnd) nr.finalView[providerOf.get(did)!] = h.seq;
    }
    res.nodes.push(nr);
  }
  // a large message is sent asynchronously: exit only once it is out
  await new Promise<void>((resolve) => process.send!({ type: 'result', result: res }, undefined, {}, () => resolve()));
  await Promise.allSettled([...live.values()].map((l) => l.net?.stop()));
  process.exit(0);
}

export type { TopicKind };
await main();
