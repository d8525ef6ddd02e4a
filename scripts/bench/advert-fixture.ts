/**
 * The advert the net benches publish (bench net, its flooder process): a
 * realistic provider advert, each one a higher seq than the last.
 */
import { seal, T, type Advert, type Ed25519Signer } from '../../src/records/index.js';

let seq = Date.now();
export function makeAdvert(signer: Ed25519Signer): Uint8Array {
  const now = Date.now();
  const rec: Advert = {
    seq: ++seq,
    issuedAt: now,
    expiresAt: now + 3_600_000,
    workloads: ['infer.llm', 'tensor.matmul'],
    tier: 'standard',
    region: 'eu-west',
    hardware: { gpus: [{ model: 'rtx-4090', vramMiB: 24_576, count: 1, features: ['cuda12'] }], cpuCores: 16, memoryMiB: 65_536 },
    prices: [{ workload: 'infer.llm', unit: 'mtok', price: { amount: '0.20', currency: 'USD' } }],
  };
  return seal(T.advert, rec, signer).bytes;
}
