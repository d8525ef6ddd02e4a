/** Record fixtures for the market and reputation tests: real signed records, a fixed clock. */
import { Ed25519Signer, didFromPublicKey, seal, T, type Advert, type Job, type Offer, type Receipt, type Acceptance, type Delegation, type Opened } from '../../../src/records/index.js';

export const NOW = 1_800_000_000_000;
export const GiB = 1024;

export interface Party {
  signer: Ed25519Signer;
  did: string;
}

/** A party from a fixed seed (deterministic DIDs across runs). */
export function party(n: number): Party {
  const seed = new Uint8Array(32).fill(0);
  seed[0] = n & 0xff;
  seed[1] = (n >> 8) & 0xff;
  seed[31] = 0x5a;
  const signer = new Ed25519Signer(seed);
  return { signer, did: didFromPublicKey(signer.publicKey) };
}

const cache = new Map<number, Party>();
export function P(n: number): Party {
  let p = cache.get(n);
  if (!p) cache.set(n, (p = party(n)));
  return p;
}

/** Parties sorted by DID. */
export function byDid(ps: Party[]): Party[] {
  return [...ps].sort((a, b) => (a.did < b.did ? -1 : a.did > b.did ? 1 : 0));
}

export type AdvertOver = Partial<Omit<Advert, 'hardware'>> & { hardware?: Partial<Advert['hardware']> };

export function advert(p: Party, over: AdvertOver = {}): Opened<Advert> {
  const { hardware, ...rest } = over;
  const a: Advert = {
    seq: 1,
    issuedAt: NOW - 60_000,
    expiresAt: NOW + 3_600_000,
    workloads: ['infer.llm'],
    tier: 'standard',
    region: 'eu-west',
    hardware: { gpus: [{ model: 'A100', vramMiB: 80 * GiB, features: ['cuda12', 'fp8'], count: 2 }], cpuCores: 32, memoryMiB: 256 * GiB, ...hardware },
    ...rest,
  };
  if (over.region === undefined && 'region' in over) delete a.region;
  if (hardware && 'gpus' in hardware && hardware.gpus === undefined) delete a.hardware.gpus;
  return seal(T.advert, a, p.signer);
}

export type JobOver = Partial<Job>;

export function job(buyer: Party, over: JobOver = {}): Opened<Job> {
  const j: Job = {
    workload: 'infer.llm',
    requirements: {},
    maxPrice: { amount: '1', currency: 'USD' },
    announcedAt: NOW - 1_000,
    deadline: NOW + 3_600_000,
    timeoutMs: 600_000,
    input: { hash: 'sha256:' + '11'.repeat(32), size: 1024 },
    inputSealed: 'no',
    ...over,
  };
  return seal(T.job, j, buyer.signer);
}

export function offer(p: Party, j: Opened<Job> | string, a: Opened<Advert> | string, over: Partial<Offer> & { amount?: string; currency?: string } = {}): Opened<Offer> {
  const { amount, currency, ...rest } = over;
  const o: Offer = {
    job: typeof j === 'string' ? j : j.address,
    advert: typeof a === 'string' ? a : a.address,
    price: { amount: amount ?? '0.5', currency: currency ?? 'USD' },
    durationMs: 60_000,
    issuedAt: NOW - 500,
    startBy: NOW + 120_000,
    expiresAt: NOW + 60_000,
    ...rest,
  };
  return seal(T.offer, o, p.signer);
}

export function receipt(provider: Party, buyer: Party, o: Opened<Offer>, over: Partial<Receipt> = {}): Opened<Receipt> {
  const status = over.status ?? 'completed';
  const r: Receipt = {
    job: o.record.job,
    offer: o.address,
    buyer: buyer.did,
    provider: provider.did,
    workload: 'infer.llm',
    status,
    startedAt: NOW,
    completedAt: NOW + 30_000,
    inputHash: 'sha256:' + '11'.repeat(32),
    ...(status === 'completed' ? { outputHash: 'sha256:' + '22'.repeat(32) } : { failure: { code: 'OOM', message: 'out of memory' } }),
    price: o.record.price,
    energy: { uj: 1000, grade: 'Estimator' },
    ...over,
  };
  return seal(T.receipt, r, provider.signer);
}

export function acceptance(buyer: Party, r: Opened<Receipt>, verdict: 'accepted' | 'disputed', over: Partial<Acceptance> = {}): Opened<Acceptance> {
  const a: Acceptance = { receipt: r.address, verdict, ...(verdict === 'disputed' ? { reason: 'output hash does not match' } : {}), signedAt: NOW + 40_000, ...over };
  return seal(T.acceptance, a, buyer.signer);
}

export function delegation(buyer: Party, gateway: Party, over: Partial<Delegation> = {}): Opened<Delegation> {
  const d: Delegation = { gateway: gateway.did, scope: { workloads: ['infer.llm'], maxPrice: { amount: '1', currency: 'USD' } }, issuedAt: NOW - 10_000, expiresAt: NOW + 86_400_000, ...over };
  return seal(T.delegation, d, buyer.signer);
}

/** Fisher–Yates with a seeded generator (deterministic shuffles in tests). */
export function shuffle<X>(xs: X[], seed: number): X[] {
  const a = [...xs];
  let s = seed >>> 0 || 1;
  for (let i = a.length - 1; i > 0; i--) {
    s = (s * 1103515245 + 12345) >>> 0;
    const j = s % (i + 1);
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a;
}
