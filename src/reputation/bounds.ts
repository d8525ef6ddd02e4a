/**
 * How much reputation evidence a node keeps (config `reputation.maxEvidence`; docs/market.md "How much evidence a
 * node keeps"). Apart from the store so that loading the config does not load LevelDB.
 */
export const DEFAULT_MAX_EVIDENCE = 100_000;
