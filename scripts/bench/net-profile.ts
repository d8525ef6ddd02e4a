/**
 * The profile behind docs/scale.md §1 ("Third round"): bench net (1)'s
 * 20-node mesh in this process, one kind of traffic at a time (signed adverts
 * through validation, or raw bytes of the same size), with the V8 sampling
 * profiler on around the measured window only. Prints the p50 and the top of
 * the profile: self time by function and by package, share of busy samples,
 * and the inclusive share of the validation path.
 *
 *   node dist/scripts/bench/net-profile.js validated|raw [out.cpuprofile]
 *   BENCH_VERIFY_THREADS=0 …   (signatures on the event loop, as before the pool)
 */
import '../../src/polyfill.js';
import { Session } from 'node:inspector/promises';
import { writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { Ed25519Signer } from '../../src/records/index.js';
import type { Network } from '../../src/net/node.js';
import { listenForDeliveries, startMesh, VERIFY_THREADS, warmUp } from './net.js';
import { RAW_TOPICS } from './mesh-shape.js';
import { makeAdvert } from './advert-fixture.js';
import { percentile } from './lib.js';

const mode = process.argv[2] === 'raw' ? 'raw' : 'validated';
const out = process.argv[3];
const NODES = 20;
const MESSAGES = 60;
const RAW = RAW_TOPICS;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// the mesh of bench net (1), built by the same function
const nets: Network[] = await startMesh(NODES);

const sentAt = new Map<string, number>();
const lat: number[] = [];
// one kind of traffic at a time here, so both deliveries go to one list
listenForDeliveries(nets, sentAt, (ms) => lat.push(ms), (ms) => lat.push(ms));
const signers = nets.map(() => Ed25519Signer.generate());
// as propagation does: both paths' code optimised before the window (the adverts sealed after, so newer)
await warmUp(nets, signers);
const adverts = Array.from({ length: MESSAGES }, (_, i) => makeAdvert(signers[i % NODES]!));
const session = new Session();
session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.setSamplingInterval', { interval: 200 });
await session.post('Profiler.start');
for (let i = 0; i < MESSAGES; i++) {
  const src = nets[i % NODES]!;
  if (mode === 'validated') {
    const a = adverts[i]!;
    sentAt.set('sha256:' + createHash('sha256').update(a).digest('hex'), performance.now());
    await src.publish('advert', a);
  } else {
    const r = new Uint8Array(adverts[0]!.length);
    for (let k = 0; k < r.length; k++) r[k] = (Math.random() * 256) | 0;
    sentAt.set(createHash('sha256').update(r).digest('hex'), performance.now());
    for (const t of RAW) await src.libp2p.services.pubsub.publish(t, r);
  }
  await sleep(15);
}
const want = MESSAGES * (NODES - 1);
const end = Date.now() + 10_000;
while (Date.now() < end && lat.length < want) await sleep(50);
const { profile } = (await session.post('Profiler.stop')) as { profile: Profile };
if (out) writeFileSync(out, JSON.stringify(profile));
await Promise.allSettled(nets.map((x) => x.stop()));
console.log(`${mode}: p50 ${percentile(lat, 50).toFixed(2)} ms, p99 ${percentile(lat, 99).toFixed(2)} ms, ${lat.length}/${want} deliveries, signature threads ${VERIFY_THREADS}`);
console.log(top(profile, 20));
process.exit(0);

interface Profile {
  nodes: Array<{ id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }>;
  samples: number[];
}

/** Self time by function and by package (share of non-idle samples), and the inclusive share of a few functions. */
function top(p: Profile, n: number): string {
  const byId = new Map(p.nodes.map((x) => [x.id, x]));
  const parent = new Map<number, number>();
  for (const x of p.nodes) for (const c of x.children ?? []) parent.set(c, x.id);
  const where = (url: string): string => url.match(/node_modules\/((@[^/]+\/)?[^/]+)/)?.[1] ?? url.match(/\/dist\/(.*)$/)?.[1] ?? (url || '(native)');
  const incl = ['validate', '#verifyAll', 'verifyOne', 'open', 'decodeMessage', 'handleReceivedMessage'];
  const self = new Map<string, number>();
  const pkg = new Map<string, number>();
  const inc = new Map<string, number>();
  let busy = 0;
  for (const id of p.samples) {
    const cf = byId.get(id)!.callFrame;
    if (cf.functionName === '(idle)') continue;
    busy++;
    const w = where(cf.url);
    const k = `${cf.functionName || '(anonymous)'}  ${w}${cf.url ? `:${cf.lineNumber + 1}` : ''}`;
    self.set(k, (self.get(k) ?? 0) + 1);
    const pk = w.startsWith('src/') || w.startsWith('scripts/') ? w.split('/').slice(0, 2).join('/') : w;
    pkg.set(pk, (pkg.get(pk) ?? 0) + 1);
    const seen = new Set<string>();
    for (let x: number | undefined = id; x !== undefined; x = parent.get(x)) {
      const f = byId.get(x)!.callFrame.functionName;
      if (incl.includes(f) && !seen.has(f)) {
        seen.add(f);
        inc.set(f, (inc.get(f) ?? 0) + 1);
      }
    }
  }
  const pct = (c: number) => ((100 * c) / busy).toFixed(1).padStart(5) + ' %';
  const rows = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]).slice(0, n).map(([k, c]) => `${pct(c)}  ${k}`);
  return [
    `main thread busy ${(busy * 0.2).toFixed(0)} ms in the window (200 µs samples); shares of the busy samples:`,
    '-- self time by function',
    ...rows(self),
    '-- self time by package (ours: by directory)',
    ...rows(pkg),
    '-- inclusive',
    ...incl.map((f) => `${pct(inc.get(f) ?? 0)}  ${f}`),
  ].join('\n');
}
