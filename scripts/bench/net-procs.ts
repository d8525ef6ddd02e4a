/**
 * Propagation across bench net (1)'s 20-node mesh with each node in a process of its own, as nodes are deployed
 * (docs/scale.md §1 "Eighth round"). In (1) the twenty nodes share one event loop, so every node's validation of a
 * record waits behind the other nineteen's; here each node has its own loop, and the processes share the machine's
 * cores as separate daemons do.
 *
 *   node dist/scripts/bench/net-procs.js [--messages=60] [--gap=30] [--nodes=20] [--prof=DIR]
 *
 * As in (1): the nodes are built as startMesh builds them (createNetwork, the same options; signatures on each node's
 * event loop, as bench net's default is on this machine), joined in the same ring with chords (mesh-shape.ts), warmed
 * up with 200 messages of each kind, then measured in the same rounds: interleaved (an advert, gap/2, a raw message of
 * the same size on the two raw topics, gap/2), then the adverts alone and the raw messages alone, `gap` apart. A
 * validated advert counts at its delivery to the node's subscriber, a raw message at its first arrival on either raw
 * topic. Times are CLOCK_MONOTONIC (process.hrtime), which every process on the machine shares: the publisher notes the
 * time just before it publishes, each node the time of its delivery. Unlike (1), the parent does not wait for a
 * publication to finish before the next gap, and each alone round is settled before the next starts.
 *
 * Per node and round also: its CPU from the round's start until every delivery is in (all of it, the settling and the
 * bench's own messages included, divided by the messages), and its advert validators' CPU per record (procs.ts). With
 * --prof, a CPU profile of each node's rounds (DIR/<round>-<pid>.cpuprofile; `node dist/scripts/sim/prof.js DIR`).
 */
import { fork, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import '../../src/polyfill.js';
import { makeDirs } from '../../src/util/make-dirs.js';
import { Ed25519Signer } from '../../src/records/index.js';
import { createNetwork, type Network } from '../../src/net/node.js';
import { NO_FLOOD_LIMITS } from '../../src/net/flood-limits.js';
import { parseTopic } from '../../src/net/topics.js';
import { makeAdvert } from './advert-fixture.js';
import { percentile } from './lib.js';
import { RAW_TOPICS, benchMsgId, meshDials } from './mesh-shape.js';
import { arg, ask as askChild, numArg, leaveWithParent, serveParent, startProfile, stopAll, timeValidators, type MeshMessage } from './procs.js';

const WARM_UP = 200;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const nowMs = (): number => Number(process.hrtime.bigint()) / 1e6;
const sha256hex = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

type Kind = 'advert' | 'raw';
type ToChild =
  | MeshMessage
  | { t: 'seal'; count: number }
  | { t: 'pub'; id: number; kind: Kind; warm?: boolean }
  | { t: 'round'; name: string }
  | { t: 'collect'; last?: boolean }
  | { t: 'exit' };
type FromChild =
  | { t: 'up'; addr: string }
  | { t: 'ready'; advertPeers: number; rawPeers: number }
  | { t: 'sealed' }
  | { t: 'published'; id: number; key: string; at: number }
  | { t: 'round' }
  | { t: 'collected'; got: Array<[string, number]>; cpuMs: number; validatorUs: number; validated: number };

// ---------- one node (child process) ----------

async function child(prof: string | undefined): Promise<void> {
  leaveWithParent();
  const net: Network = await createNetwork({ signer: Ed25519Signer.generate(), listen: ['/ip4/127.0.0.1/tcp/0'], loopback: true, topics: ['advert'], syncOnConnect: [], gossip: { heartbeatInterval: 300, msgIdFn: benchMsgId }, floodLimits: NO_FLOOD_LIMITS, verifyThreads: 0 });
  await net.start();
  const ps = net.libp2p.services.pubsub;
  for (const t of RAW_TOPICS) ps.subscribe(t);
  const signer = Ed25519Signer.generate();
  const validator = timeValidators(net, (t) => parseTopic(t)?.kind === 'advert');
  /** A raw message has an advert's size. */
  const size = makeAdvert(signer).length;
  // deliveries this round: record key → time
  let got = new Map<string, number>();
  net.subscribe('advert', (rec) => {
    if (!got.has(rec.address)) got.set(rec.address, nowMs());
  });
  ps.addEventListener('message', (evt) => {
    if (!RAW_TOPICS.includes(evt.detail.topic)) return;
    const at = nowMs();
    const k = sha256hex(evt.detail.data);
    if (!got.has(k)) got.set(k, at);
  });
  let sealed: Uint8Array[] = [];
  let cpu0 = process.cpuUsage();
  let stopProfile: ((path: string) => Promise<void>) | undefined;
  let roundName = '';
  const send = (m: FromChild) => process.send!(m);
  const up: FromChild = { t: 'up', addr: net.addrs()[0]! };
  const ready = (): FromChild => ({ t: 'ready', advertPeers: net.topicPeers('advert').length, rawPeers: ps.getSubscribers(RAW_TOPICS[0]!).length });
  serveParent<ToChild>(net, up, ready, async (m) => {
    if (m.t === 'seal') {
      // signed before the rounds, so signing is not in the measured path; each newer than the warm-up's, used in order
      sealed = Array.from({ length: m.count }, () => makeAdvert(signer));
      send({ t: 'sealed' });
    } else if (m.t === 'pub') {
      let key: string;
      let at: number;
      if (m.kind === 'advert') {
        const a = m.warm ? makeAdvert(signer) : sealed.shift();
        if (!a) throw new Error('net-procs: a node ran out of sealed adverts');
        key = 'sha256:' + sha256hex(a);
        at = nowMs();
        await net.publish('advert', a);
      } else {
        const r = randomBytes(size);
        key = sha256hex(r);
        at = nowMs();
        for (const t of RAW_TOPICS) await ps.publish(t, r);
      }
      send({ t: 'published', id: m.id, key, at });
    } else if (m.t === 'round') {
      got = new Map();
      validator.us = 0;
      validator.n = 0;
      roundName = m.name;
      if (prof) stopProfile = await startProfile(200);
      cpu0 = process.cpuUsage();
      send({ t: 'round' });
    } else if (m.t === 'collect') {
      const c = process.cpuUsage(cpu0);
      if (m.last && stopProfile) {
        await stopProfile(join(prof!, `${roundName}-${process.pid}.cpuprofile`));
        stopProfile = undefined;
      }
      send({ t: 'collected', got: [...got], cpuMs: (c.user + c.system) / 1000, validatorUs: validator.us, validated: validator.n });
    } else if (m.t === 'exit') {
      await net.stop();
      process.exit(0);
    }
  });
}

// ---------- the mesh (parent) ----------

const ask = <T extends FromChild['t']>(c: ChildProcess, msg: ToChild | undefined, want: T, match?: (m: Extract<FromChild, { t: T }>) => boolean) => askChild<FromChild, T>(c, msg, want, 'net-procs', match);

interface Round {
  /** ms from publish to delivery, one per node and message */
  validated: number[];
  raw: number[];
  /** deliveries that never came (validated, raw) */
  missing: [number, number];
  /** CPU per node over the round, ms (the nodes' median) */
  cpuMs: number;
  /** CPU in the advert validators per record, µs (over every node) */
  validatorUs: number;
}

/** The rounds: `nodes` processes, `messages` of each kind per round, `gapMs` apart per kind. */
async function propagation(o: { nodes: number; messages: number; gapMs: number; prof?: string }): Promise<{ interleaved: Round; validated: Round; raw: Round }> {
  const { nodes, messages, gapMs, prof } = o;
  if (prof) makeDirs(prof, { code: 'OUTPUT_UNWRITABLE', field: 'prof', what: `cannot write profiles to ${prof}` }); // not mkdirSync's recursive form: it never returns under /proc
  const kids: ChildProcess[] = [];
  try {
    const addrs: string[] = [];
    for (let i = 0; i < nodes; i++) {
      const c = fork(fileURLToPath(import.meta.url), ['--net-procs-child', ...(prof ? [`--prof=${prof}`] : [])], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      kids.push(c);
      addrs.push((await ask(c, undefined, 'up')).addr);
    }
    meshDials(nodes).forEach((to, i) => kids[i]!.send({ t: 'dial', addrs: to.map((j) => addrs[j]!) } satisfies ToChild));
    const deadline = Date.now() + 20_000;
    for (;;) {
      const st = await Promise.all(kids.map((c) => ask(c, { t: 'ready?' }, 'ready')));
      if (st.every((s) => s.advertPeers >= 2 && s.rawPeers >= 2)) break;
      if (Date.now() > deadline) throw new Error(`net-procs: the mesh did not form (${st.map((s) => `${s.advertPeers}/${s.rawPeers}`).join(' ')})`);
      await sleep(250);
    }
    await sleep(1_500);
    let ids = 0;
    const pub = (i: number, kind: Kind, warm = false) => {
      const id = ids++;
      return ask(kids[i % nodes]!, { t: 'pub', id, kind, warm }, 'published', (m) => m.id === id);
    };
    // the warm-up round (net.ts warmUp): the validation path's code optimised before anything is measured
    for (let i = 0; i < WARM_UP; i++) {
      await pub(i, 'advert', true);
      await sleep(5);
      await pub(i, 'raw', true);
      await sleep(5);
    }
    await sleep(500);
    // node k publishes adverts k, k + nodes, …: at most ⌈2·messages / nodes⌉ of them over the two rounds that send adverts
    await Promise.all(kids.map((c) => ask(c, { t: 'seal', count: Math.ceil((2 * messages) / nodes) }, 'sealed')));

    /** One measured round: `schedule` publishes; then wait until every node holds every message (or 10 s). */
    const round = async (name: string, schedule: (note: (kind: Kind, p: Promise<{ key: string; at: number }>) => void) => Promise<void>): Promise<Round> => {
      await Promise.all(kids.map((c) => ask(c, { t: 'round', name }, 'round')));
      const sent: Array<Promise<{ kind: Kind; key: string; at: number }>> = [];
      const failed: unknown[] = [];
      // each publication's answer is waited for after the schedule: a node that dies meanwhile is reported, not unhandled
      await schedule((kind, p) => sent.push(p.then((x) => ({ kind, ...x })).catch((e: unknown) => (failed.push(e), { kind, key: '', at: 0 }))));
      const published = await Promise.all(sent);
      if (failed.length) throw failed[0];
      const want = (kind: Kind) => published.filter((p) => p.kind === kind).length * (nodes - 1);
      const end = Date.now() + 10_000;
      let cols: Array<Map<string, number>> = [];
      for (;;) {
        cols = (await Promise.all(kids.map((c) => ask(c, { t: 'collect' }, 'collected')))).map((m) => new Map(m.got));
        const have = (kind: Kind) => published.filter((p) => p.kind === kind).reduce((a, p) => a + cols.filter((c) => c.has(p.key)).length, 0);
        if ((have('advert') >= want('advert') && have('raw') >= want('raw')) || Date.now() > end) break;
        await sleep(100);
      }
      // the round's CPU (and profile, with --prof) end here, once everything has arrived
      const last = await Promise.all(kids.map((c) => ask(c, { t: 'collect', last: true }, 'collected')));
      const lat = (kind: Kind) => published.filter((p) => p.kind === kind).flatMap((p) => cols.map((c) => c.get(p.key)).filter((t): t is number => t !== undefined).map((t) => t - p.at));
      const validated = lat('advert');
      const raw = lat('raw');
      const cpus = last.map((c) => c.cpuMs).sort((x, y) => x - y);
      const n = last.reduce((x, c) => x + c.validated, 0);
      return { validated, raw, missing: [want('advert') - validated.length, want('raw') - raw.length], cpuMs: cpus[Math.floor(cpus.length / 2)]!, validatorUs: n ? last.reduce((x, c) => x + c.validatorUs, 0) / n : 0 };
    };

    const interleaved = await round('interleaved', async (note) => {
      for (let i = 0; i < messages; i++) {
        note('advert', pub(i, 'advert'));
        await sleep(gapMs / 2);
        note('raw', pub(i, 'raw'));
        await sleep(gapMs / 2);
      }
    });
    const validated = await round('validated', async (note) => {
      for (let i = 0; i < messages; i++) {
        note('advert', pub(messages + i, 'advert'));
        await sleep(gapMs);
      }
    });
    const raw = await round('raw', async (note) => {
      for (let i = 0; i < messages; i++) {
        note('raw', pub(i, 'raw'));
        await sleep(gapMs);
      }
    });
    return { interleaved, validated, raw };
  } finally {
    await stopAll(kids, { t: 'exit' } satisfies ToChild);
  }
}

if (process.argv.includes('--net-procs-child')) await child(arg('prof', '') || undefined);
else if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const nodes = numArg('nodes', 20, 'net-procs');
  const messages = numArg('messages', 60, 'net-procs');
  const gapMs = numArg('gap', 30, 'net-procs');
  const prof = arg('prof', '') || undefined;
  if (![nodes, messages, gapMs].every((x) => Number.isInteger(x) && x > 0) || nodes < 3) throw new Error('net-procs: --nodes (≥ 3), --messages and --gap take whole numbers above 0');
  const r = await propagation({ nodes, messages, gapMs, ...(prof ? { prof } : {}) });
  const p50 = (xs: number[]) => percentile(xs, 50);
  const line = (name: string, v: number[], raw: number[], missing: [number, number]) =>
    `${name}: p50 validated ${p50(v).toFixed(2)} ms, raw ${p50(raw).toFixed(2)} ms, ratio ${(p50(v) / p50(raw)).toFixed(2)}; p99 ${percentile(v, 99).toFixed(2)} / ${percentile(raw, 99).toFixed(2)} ms; missing ${missing.join('/')}`;
  console.log(`propagation, ${nodes} nodes one process each (bench net (1)'s nodes and mesh), ${messages} messages of each kind, ${gapMs} ms apart per kind; load average ${loadavg().map((x) => x.toFixed(1)).join(' ')}`);
  console.log(line('interleaved', r.interleaved.validated, r.interleaved.raw, r.interleaved.missing));
  console.log(line('each kind alone', r.validated.validated, r.raw.raw, [r.validated.missing[0], r.raw.missing[1]]));
  const perMsg = (x: Round) => (x.cpuMs * 1000) / messages;
  console.log(`CPU per node in each alone round, per message: validated ${perMsg(r.validated).toFixed(0)} µs, raw ${perMsg(r.raw).toFixed(0)} µs (+${(100 * (r.validated.cpuMs / r.raw.cpuMs - 1)).toFixed(0)} %); the advert validators' CPU per record ${r.validated.validatorUs.toFixed(0)} µs`);
  process.exit(0);
}
