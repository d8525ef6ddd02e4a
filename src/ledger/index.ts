/** The pool/1 ledger: sealed hash-chained entries, replay, witnessing, attestation. */
export * from './entry.js';
export * from './replay.js';
export * from './attest.js';
export * from './store.js';
export * from './witness.js';
export * from './file.js';
export * from './verify.js';
export * from './evidence.js';
