/**
 * Shared helpers for the trust-core tests: byte helpers, a code assertion,
 * fixed signers, and one valid record of every kind (fresh objects on each call,
 * so a test can break one field without touching the others).
 */
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import { Ed25519Signer } from '../../../src/records/ed25519.js';
import { didFromPublicKey } from '../../../src/records/did.js';
import type { Acceptance, Advert, Delegation, Job, Offer, Presence, Receipt, Selection } from '../../../src/records/kinds.js';

export const hex = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');
export const unhex = (s: string): Uint8Array => new Uint8Array(Buffer.from(s.replace(/\s+/g, ''), 'hex'));
export const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);

export function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/** The error `fn` throws must be a C0Error with exactly this code. */
export function assertCode(fn: () => unknown, code: string, what = ''): C0Error {
  let thrown: unknown;
  try {
    fn();
  } catch (e) {
    thrown = e;
  }
  assert.ok(thrown !== undefined, `${what}: expected ${code}, but nothing was thrown`);
  assert.ok(thrown instanceof C0Error, `${what}: expected C0Error ${code}, got ${String(thrown)}`);
  assert.equal(thrown.code, code, `${what}: expected ${code}, got ${thrown.code} (${thrown.message})`);
  return thrown;
}

/** A signer from a seed of 32 copies of `n` (deterministic across runs). */
export function signerFrom(n: number): Ed25519Signer {
  return new Ed25519Signer(new Uint8Array(32).fill(n));
}

export const provider = signerFrom(1);
export const buyer = signerFrom(2);
export const gateway = signerFrom(3);
export const PROVIDER = didFromPublicKey(provider.publicKey);
export const BUYER = didFromPublicKey(buyer.publicKey);
export const GATEWAY = didFromPublicKey(gateway.publicKey);

export const NOW = 1_800_000_000_000;
/** A content address made of one repeated hex digit. */
export const addr = (c: string): string => 'sha256:' + c.repeat(64);

export const records = {
  advert: (): Advert => ({
    seq: 7,
    issuedAt: NOW,
    expiresAt: NOW + 3_600_000,
    workloads: ['infer.llm', 'train.lora'],
    tier: 'standard',
    region: 'eu-west',
    hardware: { gpus: [{ model: 'RTX 4090', vramMiB: 24_576, features: ['cuda12', 'fp8'], count: 2 }], cpuCores: 16, memoryMiB: 65_536 },
    prices: [{ workload: 'infer.llm', unit: 'mtoken', price: { amount: '0.042', currency: 'USD' } }],
    boxKey: new Uint8Array(32).fill(9),
  }),
  job: (): Job => ({
    workload: 'infer.llm',
    requirements: { gpu: { count: 1, vramMiB: 16_000, features: ['cuda12'] }, cpuCores: 4, memoryMiB: 8192, regions: ['eu-west'], tier: 'standard' },
    maxPrice: { amount: '0.10', currency: 'USD' },
    announcedAt: NOW,
    deadline: NOW + 600_000,
    timeoutMs: 300_000,
    input: { hash: addr('a'), size: 1024 },
    inputSealed: 'no',
  }),
  offer: (): Offer => ({
    job: addr('1'),
    advert: addr('2'),
    price: { amount: '0.042', currency: 'USD' },
    durationMs: 60_000,
    issuedAt: NOW,
    startBy: NOW + 120_000,
    expiresAt: NOW + 60_000,
  }),
  selection: (): Selection => ({
    job: addr('1'),
    buyer: BUYER,
    policy: 'cheapest',
    winner: addr('3'),
    considered: [{ provider: PROVIDER, offer: addr('3') }],
    decidedAt: NOW,
  }),
  receipt: (): Receipt => ({
    job: addr('1'),
    offer: addr('3'),
    buyer: BUYER,
    provider: PROVIDER,
    workload: 'infer.llm',
    status: 'completed',
    startedAt: NOW,
    completedAt: NOW + 1000,
    inputHash: addr('a'),
    outputHash: addr('b'),
    outputSize: 2048,
    price: { amount: '0.042', currency: 'USD' },
    energy: { uj: 5_000_000, grade: 'Estimator' },
  }),
  acceptance: (): Acceptance => ({ receipt: addr('4'), verdict: 'accepted', signedAt: NOW }),
  presence: (): Presence => ({ workloads: ['infer.llm'], freeSlots: 2, issuedAt: NOW, windowMs: 60_000 }),
  delegation: (): Delegation => ({ gateway: GATEWAY, scope: { workloads: ['infer.llm'], maxPrice: { amount: '1', currency: 'USD' } }, issuedAt: NOW, expiresAt: NOW + 86_400_000 }),
};

/** Who signs each kind in the fixtures (a receipt must be signed by its provider). */
export const signerOf = {
  advert: provider,
  job: buyer,
  offer: provider,
  selection: buyer,
  receipt: provider,
  acceptance: buyer,
  presence: provider,
  delegation: buyer,
} as const;
