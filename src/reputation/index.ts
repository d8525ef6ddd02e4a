/** Reputation derived from signed receipts, acceptances and offers (never stored as a score). */
export { deriveReputation, receiptCounts, unknownFigures, ReputationTable, DISPUTE_WEIGHT, UNKNOWN_SCORE, type Evidence, type Figures, type DeriveOptions } from './derive.js';
export { EvidenceStore } from './store.js';
