/**
 * What a record costs a node that is not busy (docs/scale.md §3 "Eighth round"): the validation pipeline, the shape
 * check alone (`open`, trusted) and one libsodium verify, each timed once after a pause, against the same with no
 * pause. A node of a large market takes a record every 50–100 ms, so its validation runs in code and data the rest of
 * the machine has pushed out of the caches since the last record; a tight loop never sees that.
 *
 *   node dist/scripts/bench/cold.js [records per series, default 60]
 *
 * Prints the median per series: back to back (no pause: a tight loop); 20 ms asleep; 20 ms asleep with 32 MB
 * touched; `open` right after a 20 ms spin (no sleep, nothing touched) against the `open` just after it, which is warm;
 * and the same for a JSON parse and walk, code that is not ours.
 */
import '../../src/polyfill.js';
import { Registry } from 'prom-client';
import { Ed25519Signer, T } from '../../src/records/index.js';
import { open } from '../../src/records/envelope.js';
import { RecordPipeline } from '../../src/net/gossip-validation.js';
import { createNetMetrics } from '../../src/net/metrics.js';
import { NO_FLOOD_LIMITS } from '../../src/net/flood-limits.js';
import { silentLogger } from '../../src/util/log.js';
import { sodium } from '../../src/util/sodium.js';
import { makeAdvert } from './advert-fixture.js';
import { median } from './lib.js';

if (!sodium) throw new Error('cold.js: sodium-native is not loaded here, and its verify is one of the columns');
const na = sodium;

const N = Number(process.argv[2] ?? 60);
const p = new RecordPipeline({ metrics: createNetMetrics(new Registry()), log: silentLogger(), floodLimits: NO_FLOOD_LIMITS });
const signers = Array.from({ length: 20 }, () => Ed25519Signer.generate());
const adverts = (n: number) => Array.from({ length: n }, (_, i) => makeAdvert(signers[i % signers.length]!));
// warm: every path optimised, every signer's key checked
for (const r of adverts(3000)) await p.validate('advert', r, 'x', 'gossip');
for (const r of adverts(3000)) open(r, T.advert, { trusted: true });
const junk = new Float64Array(4e6);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const us = () => performance.now() * 1000;
const spin = (ms: number) => {
  const end = performance.now() + ms;
  while (performance.now() < end);
};
const key = signers[0]!.publicKey;
const msg = new Uint8Array(400);
const sig = signers[0]!.sign(msg);

async function series(label: string, pauseMs: number, touch: boolean): Promise<void> {
  const a = adverts(N);
  const b = adverts(N);
  const out = { validate: [] as number[], open: [] as number[], verify: [] as number[] };
  const pause = async () => {
    if (pauseMs) await sleep(pauseMs);
    if (touch) for (let j = 0; j < junk.length; j += 8) junk[j]! += 1;
  };
  for (let i = 0; i < N; i++) {
    await pause();
    let t = us();
    await p.validate('advert', a[i]!, 'x', 'gossip');
    out.validate.push(us() - t);
    await pause();
    t = us();
    open(b[i]!, T.advert, { trusted: true });
    out.open.push(us() - t);
    await pause();
    t = us();
    na.crypto_sign_verify_detached(sig, msg, key);
    out.verify.push(us() - t);
  }
  console.log(`${label}: validate ${median(out.validate).toFixed(0)} µs, open (trusted) ${median(out.open).toFixed(0)} µs, libsodium verify ${median(out.verify).toFixed(0)} µs`);
}

await series('back to back', 0, false);
await series('20 ms asleep', 20, false);
await series('20 ms asleep, 32 MB touched', 20, true);
const recs = adverts(2 * N);
const first: number[] = [];
const next: number[] = [];
for (let i = 0; i < N; i++) {
  spin(20);
  let t = us();
  open(recs[2 * i]!, T.advert, { trusted: true });
  first.push(us() - t);
  t = us();
  open(recs[2 * i + 1]!, T.advert, { trusted: true });
  next.push(us() - t);
}
console.log(`open after a 20 ms spin ${median(first).toFixed(0)} µs, the open right after it ${median(next).toFixed(0)} µs`);

// the same with code that is not ours: a 2 kB JSON parse and walk
const json = JSON.stringify(Array.from({ length: 20 }, (_, k) => ({ a: 1, b: [1, 2, 3, { c: 'x'.repeat(50) }], d: { e: 'f', g: [{ h: 1 }, { i: 2 }] }, k })));
const walk = (): number => (JSON.parse(json) as Array<{ b: unknown[]; d: object }>).reduce((n, x) => n + x.b.length + Object.keys(x.d).length, 0);
for (let i = 0; i < 20_000; i++) walk();
const jFirst: number[] = [];
const jNext: number[] = [];
for (let i = 0; i < N; i++) {
  spin(20);
  let t = us();
  walk();
  jFirst.push(us() - t);
  t = us();
  walk();
  jNext.push(us() - t);
}
console.log(`a 2 kB JSON parse and walk after a 20 ms spin ${median(jFirst).toFixed(0)} µs, the one right after it ${median(jNext).toFixed(0)} µs`);
