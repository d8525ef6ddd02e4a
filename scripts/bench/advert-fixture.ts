/**
 * The advert the net benches publish (bench net, its flooder process): a
 * realistic provider advert, each one a higher seq than the last.
 */
import { seal, T, type Advert, type Ed25519Signer } from '../../src/records/index.js';

let seq = Date.now();
/** `workloads`: the bench advert's two, on two market shards, unless one market is wanted (bench copies). */
export function makeAdvert(signer: Ed25519Signer, workloads: string[] = ['infer.llm', 'tensor.matmul']): Uint8Array {
  const now = Date.now();
  const rec: Advert = {
    seq: ++seq,
    issuedAt: now,
    expiresAt: now + 3_600_000,
    workloads,
    tier: 'standard',
    region: 'eu-west',
    hardware: { gpus: [{ model: 'rtx-4090', vramMiB: 24_576, count: 1, features: ['cuda12'] }], cpuCores: 16, memoryMiB: 65_536 },
    prices: [{ workload: 'infer.llm', unit: 'mtok', price: { amount: '0.20', currency: 'USD' } }],
  };
  return seal(T.advert, rec, signer).bytes;
}
