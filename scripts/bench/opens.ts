/**
 * `npm run bench -- opens` (issue #16; docs/scale.md §3 "Ninth round"): what one connection opened costs each end —
 * TCP, the Noise handshake, yamux, identify both ways, gossipsub's streams and subscriptions, the DHT's routing-table
 * check, and the records/1 sync each end runs from a newly identified peer (`syncOnConnect`, with the digest of the
 * market it holds) — measured directly, for the model's per-open term.
 *
 * The hundred-node run can only fit that cost together with the per-copy one (the fourth round's A/B pair gave 35 ms,
 * on a starved machine). It matters more than that fit let it: an offer goes to its buyer over a direct stream, and at
 * scale most buyers a provider offers to are not among its connections, so each such offer opens a connection at both
 * ends. Here nothing else happens.
 *
 * One hub (the buyer), and dialler processes (the providers), each holding several nodes of distinct identities: one
 * process each side, so process.cpuUsage is one side's CPU. Every node is built as the sim builds it (createNetwork,
 * every topic but offers, one market's shard), except for what would undo a hang-up among a dozen nodes, which a
 * deployment of thousands does not do: nobody remembers peers (`rememberMax: 0`) or looks for more (`minPeers: 0`),
 * and kad-dht's closest-peer tagger is stopped (makeNode). So every cycle is one open. A cycle: a dialler node dials
 * the hub, waits `--holdMs` (identify and both syncs finish well inside it), hangs up, and waits `--gapMs`; the
 * diallers' nodes take turns, so the hub sees a peer it is not connected to each time, as a buyer does an offering
 * provider at scale. libp2p takes at most five inbound connections a second from one address: the default pace (two
 * diallers, a cycle each 500 ms) stays under it.
 *
 * Two markets: empty, then `--market` adverts (default 625: one market of sixteen at 10k providers) that the hub
 * publishes while every node is connected, so every node holds them when the cycles run (the sync's answer is empty
 * past the digest, as in an agreeing market). Per side and market: CPU per open = (CPU − base over the window) / opens.
 *
 * It also times a handshake's X25519 (a key pair, three agreements) in @libp2p/noise's default and in the node's
 * (noise-crypto.ts: libsodium), in this process.
 *
 * Options (as --name=value): --diallers (2) --perDialler (6 nodes) --market (625) --holdMs (400) --gapMs (100)
 * --windowMs (10000) --sync (the kinds synced on connect: the daemon's default, or e.g. `advert`, or `none`)
 * --prof=DIR (a CPU profile of each side's measured windows, written to DIR; summarise with
 * `node dist/scripts/sim/prof.js DIR`).
 */
import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import '../../src/polyfill.js';
import { makeDirs } from '../../src/util/make-dirs.js';
import { Ed25519Signer } from '../../src/records/ed25519.js';
import { createNetwork, type Network } from '../../src/net/node.js';
import { NO_FLOOD_LIMITS } from '../../src/net/flood-limits.js';
import { shardOf, TOPIC_KINDS, type TopicKind } from '../../src/net/topics.js';
import { makeAdvert } from './advert-fixture.js';
import { measure, table, type BenchResult } from './lib.js';
import { defaultCrypto } from '@libp2p/noise/crypto';
import { noiseCrypto } from '../../src/net/noise-crypto.js';
import { arg, ask as askChild, leaveWithParent, numArg, startProfile, stopAll } from './procs.js';

/** The market every node is in, and the adverts' one workload. */
const WORKLOAD = 'infer.llm';

interface Window {
  cpuMs: number;
  ms: number;
  /** connections opened in the window (libp2p's connection:open, either direction) */
  opens: number;
  /** of which inbound */
  inbound: number;
  /** cycles run (a dialler) */
  cycles: number;
  /** dials that failed (a dialler), and the first failure's message */
  failed: number;
  firstError?: string;
}

type ToChild = { t: 'join'; hub: string } | { t: 'load'; n: number } | { t: 'held?' } | { t: 'leave' } | { t: 'window'; ms: number; cycle: boolean; hub: string; profile: boolean; tag: string } | { t: 'exit' };
type FromChild = { t: 'up'; addr: string } | { t: 'joined' } | { t: 'loaded' } | { t: 'held'; min: number } | { t: 'left' } | { t: 'window'; w: Window };

const num = (name: string, def: number): number => numArg(name, def, 'opens bench');

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A node as the sim builds one, in one market, remembering nobody (so a hang-up stays one). */
async function makeNode(): Promise<Network> {
  const sync = arg('sync', '');
  const net = await createNetwork({
    signer: Ed25519Signer.generate(),
    listen: ['/ip4/127.0.0.1/tcp/0'],
    loopback: true,
    topics: TOPIC_KINDS.filter((k) => k !== 'offer'),
    shards: [shardOf(WORKLOAD)],
    floodLimits: NO_FLOOD_LIMITS,
    connectivity: { rememberMax: 0, minPeers: 0 },
    // the daemon's default (advert, presence) unless --sync names others, or none
    ...(sync ? { syncOnConnect: sync === 'none' ? [] : (sync.split(',') as TopicKind[]) } : {}),
  });
  await net.start();
  // kad-dht tags its 20 closest peers keep-alive and libp2p redials those after a hang-up. At scale a provider that
  // offers to a buyer is almost never among the buyer's 20 closest of thousands; among this bench's dozen nodes it
  // always would be, and every hang-up would be undone by a redial. So the tagger is stopped here (a bench's node
  // only), through kad-dht's internals: a kad-dht that no longer has them is an error, not a silently different bench.
  const tagger = (net.libp2p.services.dht as unknown as { routingTable?: { closestPeerTagger?: { stop?(): void } } }).routingTable?.closestPeerTagger;
  if (typeof tagger?.stop !== 'function') throw new Error('opens bench: kad-dht has no routingTable.closestPeerTagger to stop (its internals changed)');
  tagger.stop();
  return net;
}

// ---------- one side (child process): the hub, or a dialler with several nodes ----------

async function child(): Promise<void> {
  leaveWithParent();
  const hub = process.argv.includes('--hub');
  const nets: Network[] = [];
  for (let i = 0; i < (hub ? 1 : num('perDialler', 6)); i++) nets.push(await makeNode());
  const held = nets.map(() => new Set<string>());
  nets.forEach((n, i) => n.subscribe('advert', (rec) => void held[i]!.add(rec.address)));
  let opens = 0;
  let inbound = 0;
  for (const n of nets)
    n.libp2p.addEventListener('connection:open', (e) => {
      opens++;
      if (e.detail.direction === 'inbound') inbound++;
    });
  let hubAddr = '';
  const hubPeer = () => hubAddr.slice(hubAddr.lastIndexOf('/') + 1);
  const send = (m: FromChild) => process.send!(m);
  send({ t: 'up', addr: nets[0]!.addrs()[0]! });
  process.on('message', (m: ToChild) => {
    void (async () => {
      if (m.t === 'join') {
        hubAddr = m.hub;
        // the hub takes a few inbound connections a second from one address (libp2p's inbound threshold): retry
        for (const n of nets) {
          for (let tries = 0; ; tries++) {
            try {
              await n.dial(hubAddr);
              break;
            } catch (e) {
              if (tries >= 20) throw e;
              await sleep(300);
            }
          }
        }
        send({ t: 'joined' });
      } else if (m.t === 'load') {
        // the hub publishes the market: adverts of distinct providers, as a market of that size holds
        for (let i = 0; i < m.n; i++) {
          await nets[0]!.publish('advert', makeAdvert(Ed25519Signer.generate(), [WORKLOAD]));
          if (i % 25 === 24) await sleep(20);
        }
        send({ t: 'loaded' });
      } else if (m.t === 'held?') {
        send({ t: 'held', min: Math.min(...held.map((h) => h.size)) });
      } else if (m.t === 'leave') {
        for (const n of nets) {
          const peer = n.libp2p.getConnections().find((c) => c.remotePeer.toString() === hubPeer())?.remotePeer;
          if (peer) await n.libp2p.hangUp(peer).catch(() => undefined);
        }
        send({ t: 'left' });
      } else if (m.t === 'window') {
        hubAddr = m.hub;
        const holdMs = num('holdMs', 400);
        const gapMs = num('gapMs', 100);
        opens = 0;
        inbound = 0;
        let cycles = 0;
        let failed = 0;
        let firstError: string | undefined;
        const prof = arg('prof', '');
        const stopProfile = prof && m.profile ? await startProfile(200) : undefined;
        const cpu0 = process.cpuUsage();
        const t0 = performance.now();
        const end = Date.now() + m.ms;
        if (m.cycle) {
          // the nodes take turns: each open is from a peer the hub is not connected to
          for (let i = 0; Date.now() < end; i++) {
            const n = nets[i % nets.length]!;
            cycles++;
            const peer = await n.dial(hubAddr).catch((e: unknown) => {
              failed++;
              firstError ??= (e as Error).message;
              return undefined;
            });
            await sleep(holdMs);
            if (peer) await n.libp2p.hangUp(peer).catch(() => undefined);
            await sleep(gapMs);
          }
        } else await sleep(m.ms);
        const cpu = process.cpuUsage(cpu0);
        const ms = performance.now() - t0;
        if (stopProfile) await stopProfile(join(prof, `opens-${hub ? 'hub' : 'dialler'}-${m.tag}-${process.pid}.cpuprofile`));
        send({ t: 'window', w: { cpuMs: (cpu.user + cpu.system) / 1000, ms, opens, inbound, cycles, failed, ...(firstError ? { firstError } : {}) } });
      } else if (m.t === 'exit') {
        for (const n of nets) await n.stop();
        process.exit(0);
      }
    })();
  });
}

// ---------- the bench (parent) ----------

const ask = <T extends FromChild['t']>(c: ChildProcess, msg: ToChild | undefined, want: T) => askChild<FromChild, T>(c, msg, want, 'opens bench');

export async function run(): Promise<BenchResult> {
  const diallers = num('diallers', 2);
  const perDialler = num('perDialler', 6);
  const market = num('market', 625);
  const windowMs = num('windowMs', 10_000);
  if (diallers < 1 || perDialler < 1) throw new Error('opens bench: --diallers and --perDialler take at least 1');
  const passOn = process.argv.filter((a) => /^--(perDialler|holdMs|gapMs|prof|sync)=/.test(a));
  const prof = arg('prof', '');
  if (prof) makeDirs(prof, { code: 'OUTPUT_UNWRITABLE', field: 'prof', what: `cannot write profiles to ${prof}` }); // not mkdirSync's recursive form: it never returns under /proc
  const kids: ChildProcess[] = [];
  const spawn = (extra: string[]) => {
    const c = fork(fileURLToPath(import.meta.url), ['--opens-child', ...extra, ...passOn], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    kids.push(c);
    return c;
  };
  try {
    const hub = spawn(['--hub']);
    const hubAddr = (await ask(hub, undefined, 'up')).addr;
    const dials = Array.from({ length: diallers }, () => spawn([]));
    for (const d of dials) await ask(d, undefined, 'up');
    const windowAll = (cycle: boolean, tag = '') => Promise.all([hub, ...dials].map((c, i) => ask(c, { t: 'window', ms: windowMs, cycle: cycle && i > 0, hub: hubAddr, profile: tag !== '', tag }, 'window').then((m) => m.w)));
    const rows: Array<Record<string, string>> = [];
    const perOpen: Record<string, { hub: number; dialler: number }> = {};
    // warm: the open path's code optimised before a window counts
    await windowAll(true);
    for (const size of [0, market]) {
      if (size > 0) {
        for (const d of dials) await ask(d, { t: 'join', hub: hubAddr }, 'joined');
        await sleep(1_500);
        await ask(hub, { t: 'load', n: size }, 'loaded');
        const deadline = Date.now() + 60_000;
        for (;;) {
          const mins = await Promise.all(dials.map((d) => ask(d, { t: 'held?' }, 'held').then((m) => m.min)));
          if (mins.every((x) => x >= size)) break;
          if (Date.now() > deadline) throw new Error(`opens bench: the market did not reach every node (${mins.join(', ')} of ${size})`);
          await sleep(500);
        }
        for (const d of dials) await ask(d, { t: 'leave' }, 'left');
        await sleep(5_000);
      }
      // the base (no opens) on either side of the measured window, as the machine's load drifts
      const before = await windowAll(false);
      const ws = await windowAll(true, `market${size}`);
      const after = await windowAll(false);
      const base = before.map((b, i) => ({ cpuMs: b.cpuMs + after[i]!.cpuMs, ms: b.ms + after[i]!.ms }));
      const firstError = ws.find((w) => w.firstError)?.firstError;
      if (firstError) console.error(`opens bench: a dial failed: ${firstError} (a failed dial's CPU is in the window; it is not an open)`);
      const side = (i0: number, i1: number) => {
        let cpu = 0;
        let opens = 0;
        for (let i = i0; i < i1; i++) {
          const baseRate = base[i]!.cpuMs / base[i]!.ms;
          cpu += ws[i]!.cpuMs - baseRate * ws[i]!.ms;
          opens += ws[i]!.opens;
        }
        const total = (k: 'inbound' | 'cycles' | 'failed') => ws.slice(i0, i1).reduce((a, w) => a + w[k], 0);
        return { perOpenMs: cpu / Math.max(1, opens), opens, inbound: total('inbound'), cycles: total('cycles'), failed: total('failed'), baseCpuPct: (100 * base.slice(i0, i1).reduce((a, w) => a + w.cpuMs, 0)) / base.slice(i0, i1).reduce((a, w) => a + w.ms, 0) };
      };
      const h = side(0, 1);
      const d = side(1, ws.length);
      perOpen[String(size)] = { hub: h.perOpenMs, dialler: d.perOpenMs };
      rows.push({
        'adverts held': String(size),
        'cycles (dials failed)': `${d.cycles} (${d.failed})`,
        'opens at the hub (inbound)': `${h.opens} (${h.inbound})`,
        'hub, CPU per open (ms)': h.perOpenMs.toFixed(2),
        'diallers, CPU per open (ms)': d.perOpenMs.toFixed(2),
        'both ends (ms)': (h.perOpenMs + d.perOpenMs).toFixed(2),
        'hub base (% of a core)': h.baseCpuPct.toFixed(2),
      });
    }
    // what a handshake's X25519 costs each end (a key pair and three agreements), @libp2p/noise's default against ours
    const x25519 = (c: typeof noiseCrypto) => {
      const peer = c.generateX25519KeyPair();
      const pair = measure('X25519 key pair', () => void c.generateX25519KeyPair(), { ms: 200, reps: 3, batch: 10 }).opsPerSec;
      const agree = measure('X25519 agreement', () => void c.generateX25519SharedKey(peer.privateKey, peer.publicKey), { ms: 200, reps: 3, batch: 10 }).opsPerSec;
      return { pairUs: 1e6 / pair, agreeUs: 1e6 / agree };
    };
    const xd = x25519(defaultCrypto);
    const xo = x25519(noiseCrypto);
    const big = perOpen[String(market)]!;
    const report = [
      `connection opens: one hub (the buyer) and ${diallers} dialler process(es) of ${perDialler} nodes each (the providers, taking turns), one market, windows ${windowMs} ms; load average ${loadavg().map((x) => x.toFixed(1)).join(' ')}`,
      table(rows),
      `X25519 in a handshake (a key pair and three agreements at each end): @libp2p/noise's default ${xd.pairUs.toFixed(0)} µs a key pair, ${xd.agreeUs.toFixed(0)} µs an agreement; the node's (noise-crypto.ts) ${xo.pairUs.toFixed(0)} and ${xo.agreeUs.toFixed(0)} µs: ${((xd.pairUs + 3 * xd.agreeUs - xo.pairUs - 3 * xo.agreeUs) / 1000).toFixed(2)} ms less per connection at each end`,
      `per open, counted at each end as the model does: ${((big.hub + big.dialler) / 2).toFixed(1)} ms with ${market} adverts held (e.g. node dist/scripts/sim/model.js run.json --per-open ${(((big.hub + big.dialler) / 2) * 1000).toFixed(0)})`,
    ].join('\n');
    return { report, targets: [] };
  } finally {
    await stopAll(kids, { t: 'exit' } satisfies ToChild);
  }
}

if (process.argv.includes('--opens-child')) await child();
