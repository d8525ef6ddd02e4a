/** Reputation derived from signed receipts, acceptances, non-delivery records and offers, from one node's point of view (never stored as a score). */
export { deriveReputation, receiptCounts, unknownFigures, ReputationTable, DISPUTE_WEIGHT, NONDELIVERY_WEIGHT, UNKNOWN_SCORE, DEFAULT_SECOND_HAND_WEIGHT, type Evidence, type Figures, type DeriveOptions, type TrustSources } from './derive.js';
export { EvidenceStore } from './store.js';
export { LiveReputation, type LiveReputationOptions } from './live.js';
export { isClaimNonDelivery, isNonDeliveryType, linkNonDelivery, nonDeliveryLinks, nonDeliveryProvider, signClaimNonDelivery, signNonDelivery, ND_ERR, type ClaimNonDeliveryInput, type NonDeliveryInput } from './nondelivery.js';
