/**
 * `npm run bench -- copies` (issue #16; docs/scale.md §3 "Sixth round"): what one gossip copy costs a node — a
 * message in or out, transport (TCP, Noise, yamux) and gossipsub — measured directly, for the model's per-copy term.
 *
 * The hundred-node run can only fit that cost: its CPU beyond the base and validation, divided by the copies, carries
 * everything else a busy node does too (connection churn, syncs, a starved loop), and the fits ranged 161–398 µs, which
 * is the whole difference between within and over the 5 % budget at 10k providers. Here nothing else happens.
 *
 * N nodes, one process each (process.cpuUsage is one node's CPU), built as the sim builds them (createNetwork), in a
 * full mesh on 127.0.0.1, all subscribed to one raw topic (no topic validator: validation is the model's other term,
 * measured below). Each node publishes fresh random messages of a record's size on it, rate/N a second, with
 * jitter. Per node and window: CPU, messages in and out (gossipsub's RPC hook, as the sim counts them) and first
 * copies. The window at rate 0 is the base; at each rate, per copy = (CPU − base) / (copies in + out).
 *
 * The same windows again with signed adverts instead of raw bytes (`advert`, docs/scale.md §3 "Eighth round"): each
 * node publishes adverts of one market, sealed before the window, through `net.publish`, so every node validates each
 * one in the real pipeline (no flood limits, as in bench net). Each node times its advert topic's validator in CPU
 * (procs.ts timeValidators: the pipeline and the accept into the node's views, whose one subscriber here is a
 * counter): the model's validation term (`--validate`), measured where its per-copy term is — one node per process,
 * 10–20 records a second — rather than back to back, where it costs a third to a fifth as much (`cold.ts` shows why).
 *
 * Options (as --name=value): --nodes (8) --rates (12,25,50,100: messages a second, network-wide) --bytes (400)
 * --kinds (raw,advert) --warmMs (5000) --windowMs (15000) --prof=DIR (a CPU profile of each node's window at each
 * rate, written to DIR; summarise with `node dist/scripts/sim/prof.js DIR`).
 */
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import '../../src/polyfill.js';
import { makeDirs } from '../../src/util/make-dirs.js';
import { Ed25519Signer } from '../../src/records/ed25519.js';
import { createNetwork, type Network } from '../../src/net/node.js';
import { NO_FLOOD_LIMITS } from '../../src/net/flood-limits.js';
import { shardOf, topicFor } from '../../src/net/topics.js';
import { makeAdvert } from './advert-fixture.js';
import { onGossipRpc } from '../sim/rpc-hook.js';
import type { GossipInternals } from '../../src/net/link-hosts.js';
import { table, type BenchResult } from './lib.js';
import { arg, ask as askChild, numArg, leaveWithParent, serveParent, startProfile, stopAll, timeValidators, type MeshMessage } from './procs.js';

const TOPIC = '/c0mpute/bench/copies';
/** The adverts' one market, and so their one topic. */
const WORKLOAD = 'infer.llm';
const ADVERT_TOPIC = topicFor('advert', undefined, shardOf(WORKLOAD));
type Kind = 'raw' | 'advert';

interface Window {
  cpuMs: number;
  ms: number;
  inMsgs: number;
  outMsgs: number;
  firsts: number;
  /** CPU µs in the advert topic's validator (procs.ts timeValidators), and its calls */
  validatorUs: number;
  validated: number;
}

type ToChild = MeshMessage | { t: 'window'; rate: number; ms: number; kind: Kind } | { t: 'exit' };
type FromChild = { t: 'up'; addr: string } | { t: 'ready'; peers: number; mesh: number } | { t: 'window'; w: Window };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ---------- one node (child process) ----------

async function child(): Promise<void> {
  leaveWithParent();
  const bytes = numArg('bytes', 400, 'copies bench');
  const nodes = numArg('nodes', 8, 'copies bench');
  const prof = arg('prof', '') || undefined;
  // no flood limits: each node's signer publishes adverts far faster than a provider may (bench net does the same)
  const net: Network = await createNetwork({ signer: Ed25519Signer.generate(), listen: ['/ip4/127.0.0.1/tcp/0'], loopback: true, topics: ['advert'], syncOnConnect: [], floodLimits: NO_FLOOD_LIMITS });
  await net.start();
  const ps = net.libp2p.services.pubsub;
  ps.subscribe(TOPIC);
  const signer = Ed25519Signer.generate();
  const count = { inMsgs: 0, outMsgs: 0, firsts: 0 };
  const validator = timeValidators(net, (t) => t === ADVERT_TOPIC);
  // messages on the bench's topics in and out, as the sim counts them (one kind runs in a window)
  onGossipRpc(net, (rpc, _bytes, dir) => {
    for (const m of rpc.messages ?? []) if (m.topic === TOPIC || m.topic === ADVERT_TOPIC) count[dir === 'in' ? 'inMsgs' : 'outMsgs']++;
  });
  ps.addEventListener('message', (e) => void (e.detail.topic === TOPIC && count.firsts++));
  net.subscribe('advert', () => void count.firsts++);
  const send = (m: FromChild) => process.send!(m);
  const up: FromChild = { t: 'up', addr: net.addrs()[0]! };
  const ready = (): FromChild => ({ t: 'ready', peers: ps.getSubscribers(TOPIC).length, mesh: (ps as unknown as GossipInternals).mesh.get(TOPIC)?.size ?? 0 });
  serveParent<ToChild>(net, up, ready, async (m) => {
    if (m.t === 'window') {
      const perNodeHz = m.rate / nodes;
      // adverts signed before the window (signing is the publisher's, not a copy's or a validation's, cost), published in seq order
      const sealed = m.kind === 'advert' ? Array.from({ length: Math.ceil(perNodeHz * (m.ms / 1000) * 1.5) + 20 }, () => makeAdvert(signer, [WORKLOAD])) : [];
      const end = Date.now() + m.ms;
      for (const k of Object.keys(count) as Array<keyof typeof count>) count[k] = 0;
      validator.us = 0;
      validator.n = 0;
      const stopProfile = prof && perNodeHz > 0 ? await startProfile(500) : undefined;
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      if (perNodeHz > 0) {
        // exponential gaps (a Poisson stream), so the nodes' publications do not fall into step
        while (Date.now() < end) {
          await sleep(Math.min(end - Date.now(), (-Math.log(1 - Math.random()) * 1000) / perNodeHz));
          if (Date.now() >= end) break;
          if (m.kind === 'advert') await net.publish('advert', sealed.shift() ?? makeAdvert(signer, [WORKLOAD])).catch(() => undefined);
          else await ps.publish(TOPIC, randomBytes(bytes)).catch(() => undefined);
        }
      } else await sleep(m.ms);
      const cpu = process.cpuUsage(cpu0);
      // the window ends here: what the profile's stop and write take is not in it
      const w: Window = { cpuMs: (cpu.user + cpu.system) / 1000, ms: performance.now() - t0, ...count, validatorUs: validator.us, validated: validator.n };
      if (stopProfile) await stopProfile(join(prof!, `copies-${m.kind}-${m.rate}-${process.pid}.cpuprofile`));
      send({ t: 'window', w });
    } else if (m.t === 'exit') {
      await net.stop();
      process.exit(0);
    }
  });
}

// ---------- the bench (parent) ----------

const ask = <T extends FromChild['t']>(c: ChildProcess, msg: ToChild | undefined, want: T) => askChild<FromChild, T>(c, msg, want, 'copies bench');

export async function run(): Promise<BenchResult> {
  const nodes = numArg('nodes', 8, 'copies bench');
  const rates = arg('rates', '12,25,50,100').split(',').map(Number);
  const bytes = numArg('bytes', 400, 'copies bench');
  const warmMs = numArg('warmMs', 5_000, 'copies bench');
  const windowMs = numArg('windowMs', 15_000, 'copies bench');
  const kinds = arg('kinds', 'raw,advert').split(',') as Kind[];
  if (!kinds.length || kinds.some((k) => k !== 'raw' && k !== 'advert')) throw new Error(`copies bench: --kinds takes raw and/or advert, got ${kinds.join(',')}`);
  const prof = arg('prof', '');
  if (prof) makeDirs(prof, { code: 'OUTPUT_UNWRITABLE', field: 'prof', what: `cannot write profiles to ${prof}` }); // not mkdirSync's recursive form: it never returns under /proc
  const kids: ChildProcess[] = [];
  try {
    const addrs: string[] = [];
    for (let i = 0; i < nodes; i++) {
      const c = fork(fileURLToPath(import.meta.url), ['--copies-child', `--bytes=${bytes}`, `--nodes=${nodes}`, ...(prof ? [`--prof=${prof}`] : [])], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      kids.push(c);
      addrs.push((await ask(c, undefined, 'up')).addr);
    }
    for (let i = 1; i < nodes; i++) kids[i]!.send({ t: 'dial', addrs: addrs.slice(0, i) } satisfies ToChild);
    const deadline = Date.now() + 20_000;
    for (;;) {
      const st = await Promise.all(kids.map((c) => ask(c, { t: 'ready?' }, 'ready')));
      if (st.every((s) => s.peers === nodes - 1 && s.mesh >= Math.min(nodes - 1, 4))) break;
      if (Date.now() > deadline) throw new Error(`copies bench: the mesh did not form (${st.map((s) => `${s.peers}/${s.mesh}`).join(' ')})`);
      await sleep(250);
    }
    const windowAll = (rate: number, ms: number, kind: Kind = 'raw') => Promise.all(kids.map((c) => ask(c, { t: 'window', rate, ms, kind }, 'window').then((m) => m.w)));
    // warm: every path's code optimised before any window counts
    for (const kind of kinds) await windowAll(Math.max(...rates), warmMs, kind);
    const sum = (ws: Window[], k: keyof Window) => ws.reduce((a, w) => a + w[k], 0);
    const base = await windowAll(0, windowMs);
    const baseUsPerSec = (sum(base, 'cpuMs') * 1000) / (sum(base, 'ms') / 1000);
    const tables: string[] = [];
    /** per copy at each rate, from the raw windows */
    const perCopy = new Map<number, number>();
    /** the advert validator's CPU per record at each rate */
    const validatorAt = new Map<number, number>();
    for (const kind of kinds) {
      const rows: Array<Record<string, string>> = [];
      for (const rate of rates) {
        const ws = await windowAll(rate, windowMs, kind);
        const secs = sum(ws, 'ms') / 1000; // node-seconds
        const usPerSec = (sum(ws, 'cpuMs') * 1000) / secs;
        const copies = (sum(ws, 'inMsgs') + sum(ws, 'outMsgs')) / secs;
        const firsts = sum(ws, 'firsts') / secs;
        const pc = (usPerSec - baseUsPerSec) / copies;
        if (kind === 'raw') perCopy.set(rate, pc);
        const validatorUs = sum(ws, 'validatorUs') / Math.max(1, sum(ws, 'validated'));
        if (kind === 'advert') validatorAt.set(rate, validatorUs);
        rows.push({
          'rate (msg/s)': String(rate),
          'CPU % per node': (usPerSec / 1e4).toFixed(3),
          'firsts/s': firsts.toFixed(1),
          'in/s': (sum(ws, 'inMsgs') / secs).toFixed(1),
          'out/s': (sum(ws, 'outMsgs') / secs).toFixed(1),
          'copies in per first': (sum(ws, 'inMsgs') / Math.max(1, sum(ws, 'firsts'))).toFixed(2),
          'per copy (µs)': pc.toFixed(1),
          'per first (µs)': ((usPerSec - baseUsPerSec) / Math.max(1e-9, firsts)).toFixed(0),
          ...(kind === 'advert' ? { 'validator CPU per record (µs)': validatorUs.toFixed(0) } : {}),
        });
      }
      tables.push(kind === 'raw' ? `raw messages of ${bytes} B (no validation):` : `signed adverts of one market, validated by every node (per copy and per first include the validation; the validator's CPU per record, timed in the node, is the model's validation term):`, table(rows));
    }
    const first = perCopy.get(rates[0]!);
    const firstValidate = validatorAt.get(rates[0]!);
    const report = [
      `gossip copies: ${nodes} nodes, one process each, full mesh on 127.0.0.1, warm-up ${warmMs} ms per kind, windows ${windowMs} ms; load average ${loadavg().map((x) => x.toFixed(1)).join(' ')}`,
      `base (no traffic): ${(baseUsPerSec / 1e4).toFixed(3)} % of a core per node`,
      ...tables,
      'per copy (in or out, transport and gossipsub, first-copy delivery included) falls as the rate rises: take the row at the copies a second the node modelled takes',
      `(a node of one market at 10k providers: about 145 in + out, 13 records × 5.6 copies × 2, between the 12 and 25 msg/s rows here)${first === undefined ? '' : `, e.g. node dist/scripts/sim/model.js run.json --per-copy ${first.toFixed(0)}${firstValidate === undefined ? '' : ` --validate ${firstValidate.toFixed(0)}`}`}`,
    ].join('\n');
    return { report, targets: [] };
  } finally {
    await stopAll(kids, { t: 'exit' } satisfies ToChild);
  }
}

if (process.argv.includes('--copies-child')) await child();
