/**
 * How much reputation evidence a node keeps (config `reputation.maxEvidence`; docs/market.md "How much evidence a
 * node keeps"). Apart from the store so that loading the config does not load LevelDB.
 */
export const DEFAULT_MAX_EVIDENCE = 100_000;
/**
 * Envelope bytes of reputation evidence kept at most (config `reputation.maxEvidenceBytes`): 64 MiB. The count
 * alone does not bound memory: a non-delivery carries its proof (job, selection and offer, up to some 60 KiB), so
 * 100,000 of them from throwaway keys took about 5.7 GB. A plain provider's job outcome is some 1.2 kB of envelopes
 * for three records (receipt, acceptance, offer), so for those the default count binds first (about 40 MB). A pooled
 * receipt carries its roster and membership: a pooled job's three records are about 2.4 kB with 4 members, 4.4 kB with
 * 16, 7 kB with 32, and in a market of such pools this bound binds first (some 14,000 jobs kept with pools of 16;
 * docs/market.md "How much evidence a node keeps"). Charged per receipt, as each holds its own copy in memory.
 */
export const DEFAULT_MAX_EVIDENCE_BYTES = 64 * 1024 * 1024;
/** The least `reputation.maxEvidenceBytes` may be: several of the largest envelopes (MAX_ENVELOPE_BYTES, 64 KiB) over. */
export const MIN_MAX_EVIDENCE_BYTES = 4 * 1024 * 1024;
