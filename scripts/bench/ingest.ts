/**
 * Bench net (2)'s ingest alone, several times in one process: each flood (new
 * signers, then known) beside raw node:crypto verify measured just before and
 * just after it, as bench net takes it. For A/B runs of the signature threads
 * (docs/scale.md §1 "Fourteenth round"):
 *
 *   node dist/scripts/bench/ingest.js [rounds=3]
 *   BENCH_VERIFY_THREADS=0 node dist/scripts/bench/ingest.js 3   (every signature on the event loop)
 */
import '../../src/polyfill.js';
import { generateKeyPairSync, sign, verify } from 'node:crypto';
import { ingest, VERIFY_THREADS } from './net.js';
import { measure } from './lib.js';

const { privateKey, publicKey } = generateKeyPairSync('ed25519');
const msg = new Uint8Array(300);
const sig = sign(null, msg, privateKey);
const raw = (): number => measure('node:crypto verify', () => void verify(null, msg, publicKey, sig), { ms: 300, reps: 3 }).opsPerSec;
const rounds = Number(process.argv[2] ?? 3);
for (let i = 0; i < rounds; i++) {
  for (const known of [false, true]) {
    const before = raw();
    const r = await ingest({ known });
    const rawRate = (before + raw()) / 2;
    console.log(
      `${VERIFY_THREADS} thread(s), ${known ? 'known' : 'new  '} signers: ${r.rate.toFixed(0)} records/s, raw verify ${rawRate.toFixed(0)}/s, ratio ${(r.rate / rawRate).toFixed(3)}; ` +
        `${r.accepted} accepted in ${r.elapsedMs.toFixed(0)} ms, process CPU ${r.cpuMs.toFixed(0)} ms (${((1000 * r.cpuMs) / r.accepted).toFixed(0)} µs a record), event loop busy ${(100 * r.busy).toFixed(0)} %` +
        (r.pool ? `; threads verified ${r.pool.byThreads + r.pool.refusedByThreads} of ${r.pool.total}, the loop finished ${r.pool.helped} of ${r.pool.batches} handed batches (${r.pool.stalled} stalled)` : ''),
    );
  }
}
process.exit(0);
