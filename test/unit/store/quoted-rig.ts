/** What the quoted-jobs tests share: a job as a flood signs it, and the jobs a store holds. */
import { Ed25519Signer } from '../../../src/records/ed25519.js';
import { seal, type Opened } from '../../../src/records/envelope.js';
import { didFromPublicKey } from '../../../src/records/did.js';
import { hashHex } from '../../../src/records/address.js';
import { T, type Job } from '../../../src/records/kinds.js';
import type { RecordStore } from '../../../src/store/records.js';

export const NOW = 1_800_000_000_000;
export const DAY = 86_400_000;
export const did = (s: Ed25519Signer) => didFromPublicKey(s.publicKey);

/** A job as the flood signs it: a fresh key each, a deadline 29 days out, `params` padded to `pad` characters. */
export function job(n: number, pad = 1, signer = Ed25519Signer.generate()): Opened<Job> {
  const input = new TextEncoder().encode(`input ${n}`);
  return seal(
    T.job,
    {
      workload: 'builtin.sha256', requirements: {}, maxPrice: { amount: '0.01', currency: 'USD' }, announcedAt: NOW + n, deadline: NOW + 29 * DAY, timeoutMs: 10_000,
      input: { hash: hashHex(input), size: input.length }, inputSealed: 'no', params: String(n).padEnd(pad, ' '), nonce: Uint8Array.of(n & 255, n >> 8),
    },
    signer,
  );
}

/** Every job record held, by address. */
export const held = async (s: RecordStore) => new Set((await s.list(T.job)).map((j) => j.address));
