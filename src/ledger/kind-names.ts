/** The content types of the pool/1 ledger's records (entry.ts and evidence.ts register them): light, for the CLI's help. */
export const POOL_TYPE = 'pool/1';
export const WITNESS_TYPE = 'pool-witness/1';
export const EVIDENCE_TYPE = 'pool-evidence/1';
