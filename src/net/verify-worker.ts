/**
 * Worker thread of the signature pool (verify-pool.ts; DESIGN §2 "one
 * verification rule", §3.4 validation; docs/network.md §Signature threads):
 * answers each batch with one message. sodium-native loads in this thread
 * (records/ed25519.ts), and the key-check cache (records/did.ts) is this
 * thread's own.
 */
import { parentPort } from 'node:worker_threads';
import { verifyBatch, type VerifyBatch } from './verify-pool.js';

parentPort?.on('message', (req: VerifyBatch) => {
  parentPort!.postMessage(verifyBatch(req));
});
