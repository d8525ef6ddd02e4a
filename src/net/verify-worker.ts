/**
 * Worker thread of the signature pool (verify-pool.ts; DESIGN §2 "one
 * verification rule", §3.4 validation; docs/network.md §Signature threads):
 * takes envelopes of each batch handed to it until none is left, writing
 * each verdict into the batch, then answers with the batch's id. sodium-native loads in this thread
 * (records/ed25519.ts), and the key-check cache (records/did.ts) is this
 * thread's own.
 */
import { parentPort } from 'node:worker_threads';
import { drainBatch, verifySafe, type SharedBatch } from './verify-pool.js';

// loaded (the record modules, libsodium): the pool hands batches to this thread from now on
parentPort?.postMessage('ready');
parentPort?.on('message', (b: SharedBatch) => {
  // verifySafe: a bug in the check (an exception that is not a coded refusal) fails that envelope, which the event
  // loop then checks again, instead of killing the thread; a crafted record cannot make the thread restart
  drainBatch(b, undefined, verifySafe);
  // every envelope is taken (by this thread, or by the event loop finishing the batch itself): settle it
  parentPort?.postMessage(b.id);
});
