/**
 * bench net (1b): propagation across the same 20-node mesh as (1), but each node in a process of its own, as nodes
 * are deployed (docs/scale.md §1 "Eighth round"). In (1) the twenty nodes share one event loop, so every node's
 * validation of a record waits behind the other nineteen's and a cascade's latency is the sum of the whole network's
 * work; here each node has its own loop, and the processes share the machine's cores as separate daemons do.
 *
 * Everything else is (1)'s: the nodes are built as startMesh builds them (createNetwork, the same options), joined in
 * the same ring with chords, warmed up with the same round of both kinds, then measured in the same two rounds
 * (interleaved: an advert, 15 ms, a raw message of the same size on the two raw topics, 15 ms; then each kind alone,
 * 30 ms apart). A validated advert counts at its delivery to the node's subscriber, a raw message at its first arrival
 * on either raw topic. Times are CLOCK_MONOTONIC (process.hrtime), which every process on the machine shares: the
 * publisher notes the time just before it publishes, each node the time of its delivery.
 *
 * Also per node and round: the CPU each process used (process.cpuUsage), so the report can say what a record's
 * validation costs a node in this shape.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { writeFileSync, mkdirSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';
import { loadavg } from 'node:os';
import '../../src/polyfill.js';
import { Ed25519Signer } from '../../src/records/index.js';
import { createNetwork, type Network } from '../../src/net/node.js';
import { NO_FLOOD_LIMITS } from '../../src/net/flood-limits.js';
import { makeAdvert } from './advert-fixture.js';

/** The raw baseline's topics, as in net.ts (not imported from it: a child would load the whole bench). */
const RAW_TOPICS = ['/c0mpute/bench/raw', '/c0mpute/bench/raw/b'];
const DEGREE = 4;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const nowMs = (): number => Number(process.hrtime.bigint()) / 1e6;
const sha256hex = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

type Kind = 'advert' | 'raw';
type ToChild =
  | { t: 'dial'; addrs: string[] }
  | { t: 'ready?' }
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
  const net: Network = await createNetwork({ signer: Ed25519Signer.generate(), listen: ['/ip4/127.0.0.1/tcp/0'], loopback: true, topics: ['advert'], syncOnConnect: [], gossip: { heartbeatInterval: 300 }, floodLimits: NO_FLOOD_LIMITS });
  await net.start();
  const ps = net.libp2p.services.pubsub;
  for (const t of RAW_TOPICS) ps.subscribe(t);
  const signer = Ed25519Signer.generate();
  // the advert topics' validators timed in CPU (process.cpuUsage, µs; as bench copies times them): the pipeline and
  // the accept that follows, an upper bound (microtasks queued before it may run inside its awaits)
  const validator = { us: 0, n: 0 };
  for (const [topic, fn] of [...ps.topicValidators]) {
    if (!topic.includes('/advert/')) continue;
    ps.topicValidators.set(topic, async (peer, msg) => {
      const c0 = process.cpuUsage();
      try {
        return await fn(peer, msg);
      } finally {
        const c = process.cpuUsage(c0);
        validator.us += c.user + c.system;
        validator.n++;
      }
    });
  }
  /** A raw message has an advert's size. */
  const size = makeAdvert(signer).length;
  // deliveries since the last collect: record key → time
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
  let session: Session | undefined;
  let roundName = '';
  let dialled: string[] = [];
  const send = (m: FromChild) => process.send!(m);
  process.on('disconnect', () => process.exit(0));
  send({ t: 'up', addr: net.addrs()[0]! });
  process.on('message', (m: ToChild) => {
    void (async () => {
      if (m.t === 'dial') {
        dialled = m.addrs;
        for (const a of m.addrs) await net.dial(a).catch(() => undefined);
      } else if (m.t === 'ready?') {
        const have = new Set(net.libp2p.getConnections().map((c) => c.remotePeer.toString()));
        for (const a of dialled) if (!have.has(a.slice(a.lastIndexOf('/') + 1))) void net.dial(a).catch(() => undefined);
        send({ t: 'ready', advertPeers: net.topicPeers('advert').length, rawPeers: ps.getSubscribers(RAW_TOPICS[0]!).length });
      } else if (m.t === 'seal') {
        // signed before the round, so signing is not in the measured path; each newer than the warm-up's
        sealed = Array.from({ length: m.count }, () => makeAdvert(signer));
        send({ t: 'sealed' });
      } else if (m.t === 'pub') {
        if (m.kind === 'advert') {
          const a = m.warm ? makeAdvert(signer) : sealed.shift();
          if (!a) throw new Error('bench net (1b): a node ran out of sealed adverts');
          const key = 'sha256:' + sha256hex(a);
          const at = nowMs();
          await net.publish('advert', a);
          send({ t: 'published', id: m.id, key, at });
        } else {
          const r = randomBytes(size);
          const key = sha256hex(r);
          const at = nowMs();
          for (const t of RAW_TOPICS) await ps.publish(t, r);
          send({ t: 'published', id: m.id, key, at });
        }
      } else if (m.t === 'round') {
        got = new Map();
        validator.us = 0;
        validator.n = 0;
        roundName = m.name;
        if (prof) {
          session = new Session();
          session.connect();
          await session.post('Profiler.enable');
          await session.post('Profiler.setSamplingInterval', { interval: 200 });
          await session.post('Profiler.start');
        }
        cpu0 = process.cpuUsage();
        send({ t: 'round' });
      } else if (m.t === 'collect') {
        const c = process.cpuUsage(cpu0);
        if (m.last && session) {
          const { profile } = await session.post('Profiler.stop');
          writeFileSync(join(prof!, `${roundName}-${process.pid}.cpuprofile`), JSON.stringify(profile));
          session.disconnect();
          session = undefined;
        }
        send({ t: 'collected', got: [...got], cpuMs: (c.user + c.system) / 1000, validatorUs: validator.us, validated: validator.n });
      } else if (m.t === 'exit') {
        await net.stop();
        process.exit(0);
      }
    })();
  });
}

// ---------- the mesh (parent) ----------

/** Send `msg` and wait for the child's answer of kind `want` (and `id`, if given); a child that exits first is an error, not a hang. */
function ask<T extends FromChild['t']>(c: ChildProcess, msg: ToChild | undefined, want: T, id?: number): Promise<Extract<FromChild, { t: T }>> {
  return new Promise((resolve, reject) => {
    const done = () => {
      c.off('message', on);
      c.off('exit', onExit);
    };
    const on = (m: FromChild) => {
      if (m.t !== want || (id !== undefined && 'id' in m && m.id !== id)) return;
      done();
      resolve(m as Extract<FromChild, { t: T }>);
    };
    const onExit = (code: number | null, signal: string | null) => {
      done();
      reject(new Error(`bench net (1b): a node exited (${code ?? signal}) while the bench waited for '${want}'`));
    };
    c.on('message', on);
    c.on('exit', onExit);
    if (msg) c.send(msg);
  });
}

export interface Round {
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

export interface ProcsResult {
  interleaved: Round;
  /** each kind alone: the adverts' round, then the raw messages' */
  validated: Round;
  raw: Round;
}

/** Runs the mesh: `nodes` processes, `messages` of each kind per round, `warmUp` of each kind before. */
export async function propagationProcs(nodes: number, messages: number, warmUp: number, prof?: string, gapMs = 30): Promise<ProcsResult> {
  if (prof) mkdirSync(prof, { recursive: true });
  const kids: ChildProcess[] = [];
  try {
    const addrs: string[] = [];
    for (let i = 0; i < nodes; i++) {
      const c = fork(fileURLToPath(import.meta.url), ['--net-procs-child', ...(prof ? [`--prof=${prof}`] : [])], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      kids.push(c);
      addrs.push((await ask(c, undefined, 'up')).addr);
    }
    // the ring with chords of startMesh (same generator, same seed)
    let rnd = 12345;
    const next = () => (rnd = (rnd * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const dials: string[][] = addrs.map(() => []);
    for (let i = 0; i < nodes; i++) {
      dials[i]!.push(addrs[(i + 1) % nodes]!);
      for (let k = 0; k < DEGREE / 2 - 1; k++) {
        const j = Math.floor(next() * nodes);
        if (j !== i) dials[i]!.push(addrs[j]!);
      }
    }
    kids.forEach((c, i) => c.send({ t: 'dial', addrs: dials[i]! } satisfies ToChild));
    const deadline = Date.now() + 20_000;
    for (;;) {
      const st = await Promise.all(kids.map((c) => ask(c, { t: 'ready?' }, 'ready')));
      if (st.every((s) => s.advertPeers >= 2 && s.rawPeers >= 2)) break;
      if (Date.now() > deadline) throw new Error(`bench net (1b): the mesh did not form (${st.map((s) => `${s.advertPeers}/${s.rawPeers}`).join(' ')})`);
      await sleep(250);
    }
    await sleep(1_500);
    let ids = 0;
    const pub = (i: number, kind: Kind, warm = false) => {
      const id = ids++;
      return ask(kids[i % nodes]!, { t: 'pub', id, kind, warm }, 'published', id);
    };
    // the warm-up round (net.ts warmUp): the validation path's code optimised before anything is measured
    for (let i = 0; i < warmUp; i++) {
      await pub(i, 'advert', true);
      await sleep(5);
      await pub(i, 'raw', true);
      await sleep(5);
    }
    await sleep(500);
    await Promise.all(kids.map((c) => ask(c, { t: 'seal', count: 2 * Math.ceil(messages / nodes) + 2 }, 'sealed')));

    /** One measured round: `schedule` publishes; then wait until every node holds every message (or 10 s). */
    const round = async (name: string, schedule: (note: (kind: Kind, p: Promise<{ key: string; at: number }>) => void) => Promise<void>): Promise<Round> => {
      await Promise.all(kids.map((c) => ask(c, { t: 'round', name }, 'round')));
      const sent: Array<{ kind: Kind; p: Promise<{ key: string; at: number }> }> = [];
      await schedule((kind, p) => sent.push({ kind, p }));
      const published = await Promise.all(sent.map(async (s) => ({ kind: s.kind, ...(await s.p) })));
      const end = Date.now() + 10_000;
      let cols: Array<{ got: Map<string, number> }> = [];
      for (;;) {
        cols = (await Promise.all(kids.map((c) => ask(c, { t: 'collect' }, 'collected')))).map((m) => ({ got: new Map(m.got) }));
        const count = (kind: Kind) => published.filter((p) => p.kind === kind).reduce((a, p) => a + cols.filter((c) => c.got.has(p.key)).length, 0);
        const haveV = count('advert');
        const haveR = count('raw');
        const wantV = published.filter((p) => p.kind === 'advert').length * (nodes - 1);
        const wantR = published.filter((p) => p.kind === 'raw').length * (nodes - 1);
        if ((haveV >= wantV && haveR >= wantR) || Date.now() > end) break;
        await sleep(100);
      }
      // the round's CPU (and profile, with --prof) end here, once everything has arrived
      const last = await Promise.all(kids.map((c) => ask(c, { t: 'collect', last: true }, 'collected')));
      const lat = (kind: Kind) => published.filter((p) => p.kind === kind).flatMap((p) => cols.map((c) => c.got.get(p.key)).filter((t): t is number => t !== undefined).map((t) => t - p.at));
      const want = (kind: Kind) => published.filter((p) => p.kind === kind).length * (nodes - 1);
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
    await Promise.all(
      kids.map(
        (c) =>
          new Promise<void>((resolve) => {
            if (c.exitCode !== null || c.signalCode !== null) return resolve();
            const t = setTimeout(() => c.kill('SIGKILL'), 5_000);
            c.once('exit', () => {
              clearTimeout(t);
              resolve();
            });
            try {
              c.send({ t: 'exit' } satisfies ToChild);
            } catch {
              c.kill('SIGKILL');
            }
          }),
      ),
    );
  }
}

if (process.argv.includes('--net-procs-child')) await child(process.argv.find((a) => a.startsWith('--prof='))?.slice(7));
else if (process.argv[1] === fileURLToPath(import.meta.url)) {
  // node dist/scripts/bench/net-procs.js [--messages=60] [--gap=30] [--nodes=20] [--prof=DIR]
  const { percentile } = await import('./lib.js');
  const opt = (name: string, def: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? def;
  const nodes = Number(opt('nodes', '20'));
  const messages = Number(opt('messages', '60'));
  const gap = Number(opt('gap', '30'));
  const r = await propagationProcs(nodes, messages, 200, opt('prof', '') || undefined, gap);
  const p50 = (xs: number[]) => percentile(xs, 50);
  const line = (name: string, v: number[], raw: number[], missing: [number, number]) =>
    `${name}: p50 validated ${p50(v).toFixed(2)} ms, raw ${p50(raw).toFixed(2)} ms, ratio ${(p50(v) / p50(raw)).toFixed(2)}; p99 ${percentile(v, 99).toFixed(2)} / ${percentile(raw, 99).toFixed(2)} ms; missing ${missing.join('/')}`;
  console.log(`propagation, ${nodes} nodes one process each (as bench net (1) builds and joins them), ${messages} messages of each kind, ${gap} ms apart per kind; load average ${loadavg().map((x) => x.toFixed(1)).join(' ')}`);
  console.log(line('interleaved', r.interleaved.validated, r.interleaved.raw, r.interleaved.missing));
  console.log(line('each kind alone', r.validated.validated, r.raw.raw, [r.validated.missing[0], r.raw.missing[1]]));
  const perMsg = (x: Round) => (x.cpuMs * 1000) / messages;
  console.log(`CPU per node and message, each kind alone: validated ${perMsg(r.validated).toFixed(0)} µs, raw ${perMsg(r.raw).toFixed(0)} µs (+${(100 * (r.validated.cpuMs / r.raw.cpuMs - 1)).toFixed(0)} %); the advert validator's CPU per record ${r.validated.validatorUs.toFixed(0)} µs`);
  process.exit(0);
}
