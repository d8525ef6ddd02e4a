/**
 * Records: raw node:crypto Ed25519 verify with a cached key (the ceiling here),
 * full open() of a typical offer, sealing, canonical encode and decode.
 * Target: open() of an offer at ≥ 0.85 of the raw verify rate.
 * Also the cost of a key seen for the first time (issue #10, advert floods from
 * fresh keys), as a ratio to one verify: the strict key check (libsodium, or pure JS without it), a
 * garbage signature under a fresh key before (strict check, then verify) and
 * after (the precheck alone refuses it).
 * And a records/1 `live` request naming shards over 16 384 cached adverts: the
 * answer time after (the cache filters on the shards it keeps beside each
 * record) against before (every record re-opened, trusted, to find its shards).
 */
import { createPublicKey, sign as nodeSign, verify as nodeVerify, generateKeyPairSync } from 'node:crypto';
import { Ed25519Signer, decodeCanonical, encodeCanonical, open, seal, T, type Offer } from '../../src/records/index.js';
import { checkPublicKey, cryptoBackend, verifyStrict } from '../../src/records/ed25519.js';
import { precheckSignature } from '../../src/records/envelope.js';
import { MemoryRecordCache } from '../../src/net/record-cache.js';
import { recordShards } from '../../src/net/topics.js';
import { fmt, measure, median, table, timeOnce, type BenchResult } from './lib.js';
import type { Advert } from '../../src/records/kinds.js';

export async function run(): Promise<BenchResult> {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const pub = createPublicKey({ key: publicKey.export({ format: 'der', type: 'spki' }), format: 'der', type: 'spki' });
  const msg = new Uint8Array(300).fill(7);
  const sig = nodeSign(null, msg, privateKey);
  const rawPub = new Uint8Array(publicKey.export({ format: 'der', type: 'spki' }).subarray(12));

  const signer = Ed25519Signer.generate();
  const now = 1_800_000_000_000;
  const offer: Offer = {
    job: 'sha256:' + 'ab'.repeat(32),
    advert: 'sha256:' + 'cd'.repeat(32),
    price: { amount: '0.042', currency: 'USD' },
    durationMs: 60_000,
    issuedAt: now,
    startBy: now + 60_000,
    expiresAt: now + 30_000,
  };
  const env = seal(T.offer, offer, signer);
  const core = { ...offer, job: new Uint8Array(32).fill(0xab), advert: new Uint8Array(32).fill(0xcd) };
  const coreBytes = encodeCanonical(core);

  const rates = [];
  // Interleave the ceiling and open() so machine noise hits both alike.
  const raw1 = measure('raw verify (node:crypto, cached key)', () => nodeVerify(null, msg, pub, sig));
  const open1 = measure('open() offer', () => open(env.bytes, T.offer));
  const raw2 = measure('raw verify (node:crypto, cached key)', () => nodeVerify(null, msg, pub, sig));
  const open2 = measure('open() offer', () => open(env.bytes, T.offer));
  const raw = Math.max(raw1.opsPerSec, raw2.opsPerSec);
  const opened = Math.max(open1.opsPerSec, open2.opsPerSec);
  rates.push({ name: raw1.name, opsPerSec: raw }, { name: open1.name, opsPerSec: opened });
  rates.push(measure('seal() offer', () => seal(T.offer, offer, signer)));
  rates.push(measure('canonical encode (offer core)', () => encodeCanonical(core), { batch: 500 }));
  rates.push(measure('canonical decode (offer core, with re-check)', () => decodeCanonical(coreBytes), { batch: 500 }));
  rates.push(measure('canonical decode (scan only, no re-encode)', () => decodeCanonical(coreBytes, { recheck: false }), { batch: 500 }));

  // A key seen for the first time. checkPublicKey is not cached itself (did.ts caches per DID), so one key serves.
  const fresh = Ed25519Signer.generate();
  const garbage = Uint8Array.from(seal(T.offer, offer, fresh).bytes);
  garbage[garbage.length - 1]! ^= 1;
  const freshSig = garbage.subarray(garbage.length - 64);
  const keyCheck = measure(`new key: strict key check (checkPublicKey, ${cryptoBackend === 'libsodium' ? 'libsodium' : '@noble/curves'})`, () => checkPublicKey(fresh.publicKey), { batch: 5 });
  const before = measure('new key, bad signature, before: strict check then verify', () => {
    checkPublicKey(fresh.publicKey);
    verifyStrict(freshSig, msg, fresh.publicKey);
  }, { batch: 5 });
  const after = measure(`new key, bad signature, after: ${cryptoBackend} precheck only`, () => {
    try {
      precheckSignature(garbage);
    } catch {
      /* refused, as expected */
    }
  }, { batch: 20 });
  rates.push(keyCheck, before, after);
  const newKey = [
    `new key, strict check: ${(raw / keyCheck.opsPerSec).toFixed(1)} verifies' worth`,
    `garbage under a new key: before ${(raw / before.opsPerSec).toFixed(1)}, after ${(raw / after.opsPerSec).toFixed(1)} verifies' worth`,
  ].join('\n');

  const report = table(rates.map((r) => ({ what: r.name, 'ops/s': fmt(r.opsPerSec), 'µs/op': (1e6 / r.opsPerSec).toFixed(1) }))) + `\nenvelope size: ${env.bytes.length} bytes\n${newKey}\n${await shardFilteredLive(signer, now)}`;
  // The node verifies with libsodium when the addon loads (ed25519.ts); its raw rate beside the yardstick, not a target
  const rawSodium = cryptoBackend === 'libsodium' ? measure('raw verify (libsodium, the node\'s backend)', () => verifyStrict(sig, msg, rawPub, 'libsodium')).opsPerSec : undefined;
  const ratio = opened / raw;
  const sodiumLine = rawSodium === undefined ? '' : `\nraw libsodium verify ${fmt(rawSodium)}/s: open() is ${(opened / rawSodium).toFixed(2)} of it (the target's yardstick is node:crypto's raw verify, as when it was set)`;
  return { report: report + sodiumLine, targets: [{ name: 'open() offer / raw verify', ratio, target: 0.85, met: ratio >= 0.85 }] };
}

/** records/1 `live` with shards over 16 384 cached adverts: before (re-open each to find its shards) and after (shards kept at add). */
async function shardFilteredLive(signer: Ed25519Signer, now: number): Promise<string> {
  const N = 16_384;
  const cache = new MemoryRecordCache({ maxPerKind: N });
  // 64 real advert envelopes (distinct workloads), each held under many addresses and signers: the filter never checks signatures
  const sealed = Array.from({ length: 64 }, (_, i) => {
    const rec: Advert = { seq: 1, issuedAt: now, expiresAt: now + 3_600_000, workloads: [`bench.a${i}`, `bench.b${i}`], tier: 'standard', region: 'eu-west', hardware: { gpus: [], cpuCores: 16, memoryMiB: 65_536 }, prices: [] };
    return open(seal(T.advert, rec, signer).bytes, T.advert);
  });
  for (let i = 0; i < N; i++) cache.add('advert', { ...sealed[i % 64]!, address: `sha256:${i.toString(16).padStart(64, '0')}`, signer: `did:key:z${i}` });
  const only = new Set(['03', '0a']);
  const before = (): number => {
    let n = 0;
    for (const b of cache.live('advert', now, N)) if (recordShards('advert', open(b, T.advert, { trusted: true }).record).some((s) => only.has(s)) && ++n >= 1024) break;
    return n;
  };
  const after = (): number => cache.live('advert', now, 1024, only).length;
  const tb: number[] = [];
  const ta: number[] = [];
  for (let r = 0; r < 5; r++) {
    tb.push(await timeOnce(before));
    ta.push(await timeOnce(after));
  }
  const b = median(tb);
  const a = median(ta);
  return `live with shards over ${N} cached adverts (answer ${after()} records): before ${b.toFixed(1)} ms (re-open each), after ${a.toFixed(2)} ms (kept shards): ${(b / a).toFixed(0)}x faster`;
}
