/**
 * The market engine (spec/scheduling.md): eligibility, the offer book,
 * policies and scoring, selection, the empty-market explanation, decider
 * authority and audit. Pure except the book's optional LevelDB store.
 */
export { cmpAmount } from './amount.js';
export { GATES, REASON, AdvertIndex, advertFacts, checkEligibility, evaluate, prepareJob, quickEligible, tierSatisfies, type AdvertFacts, type Failure, type Gate, type ReasonCode, type PreparedJob, type EligibilityOptions } from './eligibility.js';
export { OfferBook, compareOffers, offerKeptUntil, MAX_STANDBY, OFFER_KEEP_CAP_MS, type AddResult, type AddStatus, type BookSlot, type SlotOf } from './book.js';
export { DIMENSIONS, WEIGHTS, TRUST_SCORE, DEFAULT_POLICY, UNKNOWN_REPUTATION, NO_REPUTATION, parsePolicy, checkPolicy, ratioScore, reputationFromMap, type Dimension, type Weights, type ReputationView } from './policy.js';
export { select, compareRanked, why, shortDid, type SelectInput, type SelectResult, type Selected, type NoneEligible, type Ranked, type Scores } from './select.js';
export { explainMarket, explainVerdicts, judgeAll, constraintOf, CONSTRAINTS, RELAXABLE, type MarketExplanation, type MarketInput, type ProviderVerdict, type Binding, type Relaxation, type Constraint } from './explain.js';
export { checkDeciderAuthority, signSelection, auditSelection, consideredOf, MAX_CONSIDERED, type Authority, type AuthorityInput, type SignSelectionInput, type AuditInput, type AuditResult, type Difference } from './selection.js';
export { RecordSet } from './recordset.js';
export { applyChange, describeChange, relaxationsOf, type JobChange, type RelaxContext } from './relax.js';
