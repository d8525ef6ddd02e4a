/**
 * The record kinds of DESIGN §3.3: each a content type, a typed shape, a schema
 * (validated on seal and on open) and the kind's own rules. Pure: no clock reads;
 * freshness takes `now` (see freshness()).
 */
import { C0Error } from '../errors.js';
import { AMOUNT_RE, amountsSumTo, type Money } from './money.js';
import type { Schema } from './schema.js';
import { TRAIN_RULES, TRAIN_SCHEMAS } from '../training/record-kinds.js';

export const TIERS = ['community', 'standard', 'verified', 'private', 'enterprise'] as const;
export type Tier = (typeof TIERS)[number];
export const GRADES = ['HwShunt', 'ModelBased', 'Estimator'] as const;
export type Grade = (typeof GRADES)[number];
export const POLICIES = ['cheapest', 'fastest', 'balanced', 'trusted', 'private'] as const;
export type PolicyName = (typeof POLICIES)[number];
/** The policy of a selection that took an open order's first valid claim (docs/matching.md "How "first" is audited"). */
export const FIRST_CLAIM_POLICY = 'first-claim';
/** What a selection's `policy` may say: an auction policy, or `first-claim`. */
export const SELECTION_POLICIES = [...POLICIES, FIRST_CLAIM_POLICY] as const;
export type SelectionPolicy = (typeof SELECTION_POLICIES)[number];
/** Codes a claim refusal may carry (the CLAIM_REFUSAL codes of src/matching/claims.ts). */
export const CLAIM_REFUSAL_CODES = [
  'CLAIM_INVALID',
  'CLAIM_WRONG_JOB',
  'CLAIM_BY_BUYER',
  'CLAIM_DUPLICATE',
  'CLAIM_ADVERT_UNKNOWN',
  'CLAIM_ADVERT_NOT_CLAIMANTS',
  'CLAIM_INELIGIBLE',
  'CLAIM_CURRENCY_MISMATCH',
  'CLAIM_PRICE_OVER_BID',
  'CLAIM_NOT_DESIGNATED',
  'CLAIM_AFTER_DEADLINE',
  'CLAIM_BEFORE_JOB',
  'CLAIM_FROM_FUTURE',
  'CLAIM_REPUTATION_TOO_LOW',
  'ORDER_TAKEN',
  'ORDER_CLOSED',
] as const;

export const WORKLOAD_RE = /^[a-z][a-z0-9-]{0,31}(\.[a-z][a-z0-9-]{0,31}){1,7}$/;
export const REGION_RE = /^[a-z]{2,16}(-[a-z0-9]{1,16}){0,3}$/;
export const FEATURE_RE = /^[a-z0-9][a-z0-9._+-]{0,31}$/;
export const UNIT_RE = /^[a-z][a-z0-9-]{0,23}$/;
const MODEL_RE = /^[\x20-\x7e]{1,64}$/;

export const MAX_ADVERT_LIFETIME_MS = 24 * 3600_000;
export const MAX_OFFER_LIFETIME_MS = 24 * 3600_000;
export const MAX_DELEGATION_LIFETIME_MS = 366 * 24 * 3600_000;
export const MAX_PRESENCE_WINDOW_MS = 10 * 60_000;
/** The most free slots a presence may say (its `freeSlots`); `provider.slots` is held to it, so every presence can be signed. */
export const MAX_PRESENCE_FREE_SLOTS = 1 << 16;
/**
 * How far past the receiving node's now (plus the clock-skew window) a job's or open order's `deadline` may lie
 * (JOB_DEADLINE_TOO_FAR, src/records/freshness.ts). A freshness check, not a rule of the record: a job stored with a
 * later deadline (by an earlier build) still opens. 90 days: past a training run's weeks, and an order so long open
 * would outlive the adverts, reputation and prices it was matched on.
 */
export const MAX_JOB_DEADLINE_AHEAD_MS = 90 * 24 * 3600_000;
export const MAX_LIST = 256;

// ---------------------------------------------------------------------------
// Typed shapes
// ---------------------------------------------------------------------------

export interface Gpu {
  model: string;
  vramMiB: number;
  features?: string[];
  count: number;
}
export interface Hardware {
  gpus?: Gpu[];
  cpuCores: number;
  memoryMiB: number;
}
export interface PriceEntry {
  workload: string;
  unit: string;
  price: Money;
}
export interface Advert {
  seq: number;
  issuedAt: number;
  expiresAt: number;
  workloads: string[];
  tier: Tier;
  region?: string;
  hardware: Hardware;
  prices?: PriceEntry[];
  boxKey?: Uint8Array;
  /** Present when a pool member signs on its pool's behalf (docs/pools.md). */
  pool?: PoolProof;
}

export interface Requirements {
  gpu?: { count: number; vramMiB: number; features?: string[] };
  cpuCores?: number;
  memoryMiB?: number;
  regions?: string[];
  tier?: Tier;
  allowlist?: string[];
}
export interface Job {
  workload: string;
  requirements: Requirements;
  maxPrice: Money;
  announcedAt: number;
  deadline: number;
  timeoutMs: number;
  input: { hash: string; size: number };
  inputSealed: 'yes' | 'no';
  params?: string;
  nonce?: Uint8Array;
  /** Present: an open order (claims, no offers; docs/matching.md "Open orders, claims and leases"); the bid is maxPrice. */
  order?: { designated?: string };
}

export interface Offer {
  job: string;
  advert: string;
  price: Money;
  durationMs: number;
  issuedAt: number;
  startBy: number;
  expiresAt: number;
}

export interface Selection {
  job: string;
  buyer: string;
  policy: SelectionPolicy;
  winner: string;
  considered: Array<{ provider: string; offer: string }>;
  decidedAt: number;
  delegation?: string;
  /** Policy `first-claim` only: the claims that opened up to and including the winner, in the buyer's arrival order. */
  arrivals?: Array<{ seq: number; receivedAt: number; provider: string; claim: string }>;
}

export interface Energy {
  uj: number;
  grade: Grade;
}
export interface Receipt {
  job: string;
  offer: string;
  buyer: string;
  provider: string;
  workload: string;
  status: 'completed' | 'failed';
  startedAt: number;
  completedAt: number;
  inputHash: string;
  outputHash?: string;
  outputSize?: number;
  price: Money;
  energy: Energy;
  failure?: { code: string; message: string };
  /** Present when a pool member signs on its pool's behalf: then `provider` is the pool's DID (docs/pools.md). */
  pool?: PoolProof;
}

export interface Acceptance {
  receipt: string;
  verdict: 'accepted' | 'disputed';
  reason?: string;
  signedAt: number;
}

/** Why a selected provider did not deliver (c0mpute.nondelivery/1, /2 and /3). */
export const NONDELIVERY_REASONS = ['timeout', 'unreachable', 'refused', 'no-receipt', 'bad-receipt'] as const;
export type NonDeliveryReason = (typeof NONDELIVERY_REASONS)[number];
/**
 * Size bounds of the records a non-delivery carries as its proof. Job, selection and offer together stay under the
 * envelope bound; a /2's pooled advert (a roster of at most 24 KiB and a membership inside it) fits beside them in the
 * common case, and signNonDelivery signs a /1 instead when the whole would not (src/reputation/nondelivery.ts).
 */
export const NONDELIVERY_PROOF_MAX = { job: 16 * 1024, selection: 40 * 1024, offer: 4 * 1024, advert: 32 * 1024, claim: 4 * 1024 } as const;

/**
 * A buyer's signed statement that the provider it selected did not deliver
 * (no receipt). It carries the records that link it — the buyer's job, the
 * selection naming the offer and the provider, the provider's offer — so any
 * node can check the link from the record alone (src/reputation/nondelivery.ts).
 */
export interface NonDelivery {
  job: string;
  selection: string;
  offer: string;
  provider: string;
  reason: NonDeliveryReason;
  detail?: string;
  signedAt: number;
  /**
   * `advert`: only in a `c0mpute.nondelivery/2`, and required there: the pooled advert the offer cites, so the record
   * alone says the offer stood for a pool and the non-delivery counts against the pool (docs/pools.md "Reputation").
   * A /1 has no such field (a previous-version node refuses a /1 carrying it: RECORD_UNKNOWN_FIELD).
   */
  proof: { job: Uint8Array; selection: Uint8Array; offer: Uint8Array; advert?: Uint8Array };
}

/**
 * `c0mpute.nondelivery/3`: an open order's non-delivery (docs/matching.md "Open orders, claims and leases"). The
 * buyer's first-claim selection named `claim` (signed by `provider`) and the claimant delivered no receipt. It proves
 * by the claim where /1 proves by an offer (an order has none): its proof is the buyer's job (an order), its
 * first-claim selection and the winning claim, and, when the claim cites a pooled advert, that advert (the record
 * then counts against the pool, as a /2 does).
 */
export interface ClaimNonDelivery {
  job: string;
  selection: string;
  claim: string;
  provider: string;
  reason: NonDeliveryReason;
  detail?: string;
  signedAt: number;
  proof: { job: Uint8Array; selection: Uint8Array; claim: Uint8Array; advert?: Uint8Array };
}

/** A non-delivery of any version: /1 and /2 (by an offer), /3 (by a claim). What every version carries is read alike. */
export type AnyNonDelivery = NonDelivery | ClaimNonDelivery;

export interface Presence {
  workloads: string[];
  freeSlots: number;
  issuedAt: number;
  windowMs: number;
}

/**
 * A provider's claim on an open order (docs/matching.md "Open orders, claims and
 * leases"): it takes the job at the order's price, citing the advert the buyer
 * judges it against. The buyer's node takes the first valid claim it receives
 * (src/matching/claims.ts) and signs a selection naming it.
 */
export interface Claim {
  job: string;
  advert: string;
  price: Money;
  issuedAt: number;
}

/**
 * The buyer's signed answer to a claim it did not take (docs/matching.md
 * "Open orders, claims and leases"): the claimant holds it as proof of what
 * the buyer decided; `ORDER_TAKEN` cites the winning claim.
 */
export interface ClaimRefusal {
  job: string;
  claim: string;
  provider: string;
  code: (typeof CLAIM_REFUSAL_CODES)[number];
  winner?: string;
  signedAt: number;
}

// ---- Pooled providers (docs/pools.md) ----

/** The chain a pool member carries in a record it signs for its pool: the pool's roster and its own countersignature. */
export interface PoolProof {
  roster: Uint8Array;
  membership: Uint8Array;
}
export interface PoolMember {
  did: string;
  hardware: Hardware;
  weight: number;
}
/** The pool's roster, signed by the pool's key (which signs nothing else). */
export interface PoolRoster {
  seq: number;
  issuedAt: number;
  expiresAt: number;
  epochMs: number;
  members: PoolMember[];
}
/** A member's countersignature of its place on one roster (or its leaving). */
export interface PoolMembership {
  pool: string;
  roster: string;
  seq: number;
  status: 'member' | 'left';
  signedAt: number;
}
/** The coordinator's record that it sent `job` to `member`: durable and published before the input goes out. */
export interface PoolDispatch {
  pool: string;
  roster: string;
  job: string;
  offer: string;
  member: string;
  coordinator: string;
  epoch: number;
  issuedAt: number;
}
/** How a completed job's price divides across the members (parts sum exactly to the price). */
export interface PoolSettlement {
  pool: string;
  roster: string;
  job: string;
  receipt: string;
  price: Money;
  parts: Array<{ member: string; weight: number; amount: string }>;
  signedAt: number;
}

export const MAX_POOL_MEMBERS = 64;
export const MAX_POOL_WEIGHT = 1_000_000;
export const MAX_ROSTER_LIFETIME_MS = 90 * 24 * 3600_000;
export const POOL_PROOF_MAX = { roster: 24 * 1024, membership: 1024 } as const;

/**
 * Verifies a pool proof carried by a record signed by `signer`; returns the pool's DID.
 * Installed by src/pools/chain.ts (which opens envelopes, so cannot be imported here);
 * until then a record carrying a proof is refused (fail closed).
 */
let poolProofCheck: ((proof: PoolProof, signer: string) => string) | undefined;
export function setPoolProofCheck(fn: (proof: PoolProof, signer: string) => string): void {
  poolProofCheck = fn;
}
function checkPoolProof(proof: PoolProof, signer: string): string {
  if (!poolProofCheck) throw new C0Error('POOL_CHAIN_UNAVAILABLE', 'pool: this build cannot verify pool proofs', { field: 'pool' });
  return poolProofCheck(proof, signer);
}

export interface Delegation {
  gateway: string;
  scope: { workloads?: string[]; maxPrice?: Money };
  issuedAt: number;
  expiresAt: number;
}

// ---------------------------------------------------------------------------
// Schemas
// ---------------------------------------------------------------------------

const workload = { t: 'text', re: WORKLOAD_RE, maxLen: 255, doc: 'workload namespace, e.g. `infer.llm`' } as const;
const workloads = (doc: string, min = 1) => ({ t: 'array', of: workload, min, max: 64, order: 'sorted-unique', doc }) as const;
const features = { t: 'array', of: { t: 'text', re: FEATURE_RE, maxLen: 32, doc: 'feature' }, max: 32, order: 'sorted-unique', optional: true, doc: 'GPU features, e.g. `cuda12`, `fp8`' } as const;
const dids = (doc: string) => ({ t: 'array', of: { t: 'did', doc: 'DID' }, min: 1, max: MAX_LIST, order: 'sorted-unique', optional: true, doc }) as const;

const poolProof = {
  t: 'object',
  optional: true,
  doc: 'present when a pool member signs for its pool: the pool’s roster envelope and the signer’s membership envelope (docs/pools.md)',
  fields: {
    roster: { t: 'bytes', maxLen: POOL_PROOF_MAX.roster, doc: 'the roster envelope (c0mpute.pool-roster/1, signed by the pool)' },
    membership: { t: 'bytes', maxLen: POOL_PROOF_MAX.membership, doc: 'the signer’s membership envelope (c0mpute.pool-membership/1) of that roster' },
  },
} as const;

/** `c0mpute.nondelivery/1`'s fields. */
const NONDELIVERY1_SCHEMA = {
  job: { t: 'addr', doc: 'the job the buyer announced' },
  selection: { t: 'addr', doc: 'the selection that named the provider' },
  offer: { t: 'addr', doc: 'the provider’s winning offer' },
  provider: { t: 'did', doc: 'the provider that did not deliver (signer of the offer)' },
  reason: { t: 'enum', values: NONDELIVERY_REASONS, doc: 'what happened: no answer in time, could not be reached, refused the selected work, answered without a receipt, or a receipt that does not link' },
  detail: { t: 'text', maxLen: 256, optional: true, doc: 'for people (e.g. the error code seen)' },
  signedAt: { t: 'time', doc: 'when the buyer signed' },
  proof: {
    t: 'object',
    doc: 'the linking records, as envelopes (each verified with its own signature)',
    fields: {
      job: { t: 'bytes', maxLen: NONDELIVERY_PROOF_MAX.job, doc: 'the job envelope (signed by this record’s signer)' },
      selection: { t: 'bytes', maxLen: NONDELIVERY_PROOF_MAX.selection, doc: 'the selection envelope (for this job, on this signer’s behalf, winner = offer)' },
      offer: { t: 'bytes', maxLen: NONDELIVERY_PROOF_MAX.offer, doc: 'the offer envelope (signed by provider, for this job)' },
    },
  },
} satisfies Schema;

/**
 * `c0mpute.nondelivery/2`: /1's fields, and in the proof the pooled advert the offer cites (required: a buyer signs a
 * /2 only for a pooled offer, a /1 otherwise; docs/pools.md "Reputation"). A new version, not a new field of /1
 * (docs/protocol.md §3): a node of the previous version never takes one (its own topic kind, `nondelivery2`).
 */
const NONDELIVERY2_SCHEMA = {
  ...NONDELIVERY1_SCHEMA,
  proof: {
    ...NONDELIVERY1_SCHEMA.proof,
    fields: {
      ...NONDELIVERY1_SCHEMA.proof.fields,
      advert: { t: 'bytes', maxLen: NONDELIVERY_PROOF_MAX.advert, doc: 'the pooled advert the offer cites (signed by provider, with its pool chain): the non-delivery counts against that pool' },
    },
  },
} satisfies Schema;

/**
 * `c0mpute.nondelivery/3`: an open order's non-delivery, proved by the winning claim instead of an offer (docs/matching.md
 * "Open orders, claims and leases"). A new version, not new fields of /1 (docs/protocol.md §3): it travels on its own
 * topic kind, `nondelivery3`, which previous-version nodes do not join.
 */
const NONDELIVERY3_SCHEMA = {
  job: { t: 'addr', doc: 'the open order (a job with `order`) the buyer posted' },
  selection: { t: 'addr', doc: 'the buyer’s `first-claim` selection that took the claim' },
  claim: { t: 'addr', doc: 'the winning claim (the selection’s `winner`)' },
  provider: { t: 'did', doc: 'the claimant that did not deliver (signer of the claim)' },
  reason: NONDELIVERY1_SCHEMA.reason,
  detail: NONDELIVERY1_SCHEMA.detail,
  signedAt: NONDELIVERY1_SCHEMA.signedAt,
  proof: {
    t: 'object',
    doc: 'the linking records, as envelopes (each verified with its own signature)',
    fields: {
      job: { t: 'bytes', maxLen: NONDELIVERY_PROOF_MAX.job, doc: 'the job envelope (an open order, signed by this record’s signer)' },
      selection: { t: 'bytes', maxLen: NONDELIVERY_PROOF_MAX.selection, doc: 'the `first-claim` selection envelope (for this job, signed by this record’s signer, winner = claim)' },
      claim: { t: 'bytes', maxLen: NONDELIVERY_PROOF_MAX.claim, doc: 'the claim envelope (signed by provider, for this job)' },
      advert: { t: 'bytes', maxLen: NONDELIVERY_PROOF_MAX.advert, optional: true, doc: 'when the claim cites a pooled advert: that advert (signed by provider, with its pool chain): the non-delivery then counts against that pool' },
    },
  },
} satisfies Schema;

/** The longest a job's `params` may be, in characters (a job file names it when over: src/node/jobfile.ts). */
export const JOB_PARAMS_MAX = 4096;

export const SCHEMAS: Record<string, Schema> = {
  'c0mpute.advert/1': {
    seq: { t: 'uint', doc: 'sequence number; a higher seq replaces the provider’s advert, an equal one does not' },
    issuedAt: { t: 'time', doc: 'when the advert was signed' },
    expiresAt: { t: 'time', doc: `when it stops being valid; at most ${MAX_ADVERT_LIFETIME_MS / 3600_000} h after issuedAt` },
    workloads: workloads('workload namespaces offered'),
    tier: { t: 'enum', values: TIERS, doc: 'claimed trust tier' },
    region: { t: 'text', re: REGION_RE, maxLen: 64, optional: true, doc: 'region, e.g. `eu-west`; absent = undisclosed (never matches a region constraint)' },
    hardware: {
      t: 'object',
      doc: 'hardware on offer',
      fields: {
        gpus: {
          t: 'array',
          max: 32,
          optional: true,
          doc: 'GPU entries (one per model/VRAM/feature set)',
          of: {
            t: 'object',
            doc: 'GPU entry',
            fields: {
              model: { t: 'text', re: MODEL_RE, maxLen: 64, doc: 'model name' },
              vramMiB: { t: 'uint', min: 1, doc: 'VRAM per card', unit: 'MiB' },
              features,
              count: { t: 'uint', min: 1, max: 1024, doc: 'number of such cards' },
            },
          },
        },
        cpuCores: { t: 'uint', min: 1, max: 1 << 16, doc: 'CPU cores' },
        memoryMiB: { t: 'uint', min: 1, doc: 'memory', unit: 'MiB' },
      },
    },
    prices: {
      t: 'array',
      max: 64,
      optional: true,
      doc: 'indicative prices',
      of: {
        t: 'object',
        doc: 'price entry',
        fields: {
          workload,
          unit: { t: 'text', re: UNIT_RE, maxLen: 24, doc: 'pricing unit, e.g. `job`, `second`, `mtoken`' },
          price: { t: 'money', doc: 'price per unit' },
        },
      },
    },
    boxKey: { t: 'bytes', len: 32, optional: true, doc: 'X25519 public key for sealed inputs' },
    pool: poolProof,
  },
  'c0mpute.job/1': {
    workload: { ...workload, doc: 'the workload namespace wanted' },
    requirements: {
      t: 'object',
      doc: 'eligibility requirements (all hard gates)',
      fields: {
        gpu: {
          t: 'object',
          optional: true,
          doc: 'GPU requirement',
          fields: {
            count: { t: 'uint', min: 1, max: 1024, doc: 'cards needed, each meeting vramMiB and features' },
            vramMiB: { t: 'uint', doc: 'VRAM per card (never summed across cards)', unit: 'MiB' },
            features,
          },
        },
        cpuCores: { t: 'uint', min: 1, optional: true, doc: 'CPU cores' },
        memoryMiB: { t: 'uint', min: 1, optional: true, doc: 'memory', unit: 'MiB' },
        regions: { t: 'array', of: { t: 'text', re: REGION_RE, maxLen: 64, doc: 'region' }, min: 1, max: 64, order: 'sorted-unique', optional: true, doc: 'acceptable regions' },
        tier: { t: 'enum', values: TIERS, optional: true, doc: 'trust tier wanted (`private`/`enterprise` exactly, others at or above)' },
        allowlist: dids('only these providers (DID order)'),
      },
    },
    maxPrice: { t: 'money', doc: 'the most the buyer pays for the whole job' },
    announcedAt: { t: 'time', doc: 'when the job was announced' },
    deadline: { t: 'time', doc: 'the work must finish by then' },
    timeoutMs: { t: 'uint', min: 1, doc: 'longest the execution may run', unit: 'ms' },
    input: {
      t: 'object',
      doc: 'the input the buyer will send',
      fields: {
        hash: { t: 'addr', doc: 'SHA-256 of the input bytes (as sent, before sealing)' },
        size: { t: 'uint', doc: 'input size', unit: 'bytes' },
      },
    },
    inputSealed: { t: 'enum', values: ['yes', 'no'], doc: 'whether the input is sealed to the winner’s box key' },
    params: { t: 'text', maxLen: JOB_PARAMS_MAX, optional: true, doc: 'workload parameters (opaque to the market)' },
    nonce: { t: 'bytes', maxLen: 32, optional: true, doc: 'makes otherwise identical jobs distinct' },
    order: {
      t: 'object',
      optional: true,
      doc: 'present: an open order — providers claim it (`c0mpute.claim/1`) at maxPrice, no offer window; absent: an auction',
      fields: { designated: { t: 'did', optional: true, doc: 'the one provider that may claim it; absent = an open bid' } },
    },
  },
  'c0mpute.offer/1': {
    job: { t: 'addr', doc: 'the job this offer answers' },
    advert: { t: 'addr', doc: 'the advert it was made against' },
    price: { t: 'money', doc: 'price for the whole job' },
    durationMs: { t: 'uint', min: 1, doc: 'quoted duration', unit: 'ms' },
    issuedAt: { t: 'time', doc: 'when the offer was signed' },
    startBy: { t: 'time', doc: 'the provider starts the work by then' },
    expiresAt: { t: 'time', doc: 'the offer can be taken until then; ≤ startBy' },
  },
  'c0mpute.selection/1': {
    job: { t: 'addr', doc: 'the job decided' },
    buyer: { t: 'did', doc: 'the buyer on whose behalf the decision is made' },
    policy: { t: 'enum', values: SELECTION_POLICIES, doc: 'the scoring policy, or `first-claim` (an open order’s first valid claim; `winner` and `considered[].offer` are then claims)' },
    winner: { t: 'addr', doc: 'the winning offer' },
    considered: {
      t: 'array',
      min: 1,
      max: 4096,
      order: 'did-order-unique',
      doc: 'every offer considered, one per provider, in DID order',
      of: { t: 'object', doc: 'considered offer', fields: { provider: { t: 'did', doc: 'provider' }, offer: { t: 'addr', doc: 'its offer' } } },
    },
    decidedAt: { t: 'time', doc: 'when the decision was made' },
    delegation: { t: 'addr', optional: true, doc: 'the delegation a gateway decided under' },
    arrivals: {
      t: 'array',
      min: 1,
      max: 4096,
      optional: true,
      doc: 'policy `first-claim` only: every claim that opened, up to and including the winner, in the buyer’s arrival order, but those refused `CLAIM_ADVERT_UNKNOWN` or `CLAIM_REPUTATION_TOO_LOW` (docs/matching.md “How “first” is audited”)',
      of: {
        t: 'object',
        doc: 'arrival',
        fields: {
          seq: { t: 'uint', doc: 'the buyer’s arrival sequence number (strictly increasing)' },
          receivedAt: { t: 'time', doc: 'when the buyer’s node received it' },
          provider: { t: 'did', doc: 'the claimant' },
          claim: { t: 'addr', doc: 'its claim' },
        },
      },
    },
  },
  'c0mpute.receipt/1': {
    job: { t: 'addr', doc: 'the job' },
    offer: { t: 'addr', doc: 'the offer that won' },
    buyer: { t: 'did', doc: 'the buyer' },
    provider: { t: 'did', doc: 'the provider (must be the signer)' },
    workload: { ...workload, doc: 'the workload run' },
    status: { t: 'enum', values: ['completed', 'failed'], doc: 'the outcome' },
    startedAt: { t: 'time', doc: 'when the work started' },
    completedAt: { t: 'time', doc: 'when it ended (≥ startedAt)' },
    inputHash: { t: 'addr', doc: 'SHA-256 of the input received' },
    outputHash: { t: 'addr', optional: true, doc: 'SHA-256 of the output (required when completed)' },
    outputSize: { t: 'uint', optional: true, doc: 'output size', unit: 'bytes' },
    price: { t: 'money', doc: 'the price charged (equals the offer’s)' },
    energy: {
      t: 'object',
      doc: 'energy spent, with its grade',
      fields: { uj: { t: 'uint', doc: 'energy', unit: 'µJ' }, grade: { t: 'enum', values: GRADES, doc: 'provenance of the figure' } },
    },
    failure: {
      t: 'object',
      optional: true,
      doc: 'why the work failed (only with status failed)',
      fields: { code: { t: 'text', re: /^[A-Z][A-Z0-9_]{0,63}$/, maxLen: 64, doc: 'stable code' }, message: { t: 'text', maxLen: 1024, doc: 'for people' } },
    },
    pool: poolProof,
  },
  'c0mpute.acceptance/1': {
    receipt: { t: 'addr', doc: 'the receipt countersigned' },
    verdict: { t: 'enum', values: ['accepted', 'disputed'], doc: 'the buyer’s verdict' },
    reason: { t: 'text', maxLen: 1024, optional: true, doc: 'why (required for a dispute)' },
    signedAt: { t: 'time', doc: 'when the buyer signed' },
  },
  'c0mpute.presence/1': {
    workloads: workloads('workloads served now', 0),
    freeSlots: { t: 'uint', max: MAX_PRESENCE_FREE_SLOTS, doc: 'jobs it can take now' },
    issuedAt: { t: 'time', doc: 'when signed' },
    windowMs: { t: 'uint', min: 1, max: MAX_PRESENCE_WINDOW_MS, doc: 'live for this long after issuedAt', unit: 'ms' },
  },
  'c0mpute.claim/1': {
    job: { t: 'addr', doc: 'the open order (job) claimed' },
    advert: { t: 'addr', doc: 'the claimant’s advert the buyer judges eligibility against (signed by the claimant)' },
    price: { t: 'money', doc: 'price for the whole job: the order’s bid (open bid) or the designated price; at most the job’s maxPrice' },
    issuedAt: { t: 'time', doc: 'when the claim was signed (before the job’s deadline)' },
  },
  'c0mpute.claim-refusal/1': {
    job: { t: 'addr', doc: 'the open order' },
    claim: { t: 'addr', doc: 'the claim refused' },
    provider: { t: 'did', doc: 'the claimant' },
    code: { t: 'enum', values: CLAIM_REFUSAL_CODES, doc: 'why (stable code)' },
    winner: { t: 'addr', optional: true, doc: 'the winning claim (with `ORDER_TAKEN`)' },
    signedAt: { t: 'time', doc: 'when the buyer signed' },
  },
  'c0mpute.delegation/1': {
    gateway: { t: 'did', doc: 'the gateway allowed to select for the buyer' },
    scope: {
      t: 'object',
      doc: 'what the gateway may decide',
      fields: {
        workloads: { ...workloads('workloads it may decide'), optional: true },
        maxPrice: { t: 'money', optional: true, doc: 'price ceiling of a winner it may pick' },
      },
    },
    issuedAt: { t: 'time', doc: 'when signed' },
    expiresAt: { t: 'time', doc: 'when the delegation ends' },
  },
  'c0mpute.nondelivery/1': NONDELIVERY1_SCHEMA,
  'c0mpute.nondelivery/2': NONDELIVERY2_SCHEMA,
  'c0mpute.nondelivery/3': NONDELIVERY3_SCHEMA,
  ...TRAIN_SCHEMAS,
};

// ---------------------------------------------------------------------------
// Each kind's own rules (beyond field shapes)
// ---------------------------------------------------------------------------

/** The rules of a non-delivery, /1, /2 and /3 alike (its link is checked in src/reputation/nondelivery.ts). */
function nonDeliveryRules(n: AnyNonDelivery, signer: string): void {
  rule(n.provider !== signer, 'NONDELIVERY_SELF', 'provider', 'a buyer does not report itself');
  if (n.detail !== undefined) rule(n.detail.trim().length > 0, 'NONDELIVERY_DETAIL_EMPTY', 'detail', 'omit an empty detail');
}

function rule(cond: boolean, code: string, field: string, msg: string): void {
  if (!cond) throw new C0Error(code, `${field}: ${msg}`, { field });
}

export const RULES: Record<string, (rec: never, signer: string) => void> = {
  'c0mpute.advert/1': (a: Advert, signer: string) => {
    if (a.pool) checkPoolProof(a.pool, signer);
    rule(a.expiresAt > a.issuedAt, 'ADVERT_LIFETIME_INVALID', 'expiresAt', 'must be after issuedAt');
    rule(a.expiresAt - a.issuedAt <= MAX_ADVERT_LIFETIME_MS, 'ADVERT_LIFETIME_TOO_LONG', 'expiresAt', `lifetime over ${MAX_ADVERT_LIFETIME_MS / 3600_000} h`);
    if (a.prices) {
      for (const [i, p] of a.prices.entries()) rule(a.workloads.includes(p.workload), 'ADVERT_PRICE_UNKNOWN_WORKLOAD', `prices[${i}].workload`, 'prices a workload the advert does not offer');
    }
  },
  'c0mpute.job/1': (j: Job) => {
    rule(j.deadline > j.announcedAt, 'JOB_DEADLINE_INVALID', 'deadline', 'must be after announcedAt');
    const t = j.requirements.tier;
    if (t === 'private') rule(!!j.requirements.allowlist, 'JOB_PRIVATE_NEEDS_ALLOWLIST', 'requirements.allowlist', 'a job asking tier private must carry an allowlist');
  },
  'c0mpute.offer/1': (o: Offer) => {
    rule(o.expiresAt <= o.startBy, 'OFFER_EXPIRES_AFTER_START', 'expiresAt', 'must be ≤ startBy');
    rule(o.expiresAt > o.issuedAt, 'OFFER_LIFETIME_INVALID', 'expiresAt', 'must be after issuedAt');
    rule(o.expiresAt - o.issuedAt <= MAX_OFFER_LIFETIME_MS, 'OFFER_LIFETIME_TOO_LONG', 'expiresAt', `lifetime over ${MAX_OFFER_LIFETIME_MS / 3600_000} h`);
  },
  'c0mpute.selection/1': (s: Selection) => {
    rule(s.considered.some((c) => c.offer === s.winner), 'SELECTION_WINNER_NOT_CONSIDERED', 'winner', 'the winning offer is not among the considered offers');
    rule((s.policy === FIRST_CLAIM_POLICY) === (s.arrivals !== undefined), 'SELECTION_ARRIVALS_INVALID', 'arrivals', 'present exactly when the policy is first-claim');
    if (s.arrivals) {
      const a = s.arrivals;
      for (let i = 1; i < a.length; i++) rule(a[i]!.seq > a[i - 1]!.seq, 'SELECTION_ARRIVALS_INVALID', `arrivals[${i}].seq`, 'arrivals are in increasing arrival order');
      rule(a[a.length - 1]!.claim === s.winner, 'SELECTION_ARRIVALS_INVALID', 'arrivals', 'the last arrival is the winner');
      for (const [i, c] of s.considered.entries()) rule(a.some((x) => x.claim === c.offer && x.provider === c.provider), 'SELECTION_ARRIVALS_INVALID', `considered[${i}]`, 'every considered claim is among the arrivals');
    }
    const seen = new Set<string>();
    for (const [i, c] of s.considered.entries()) {
      rule(!seen.has(c.offer), 'SELECTION_DUPLICATE_OFFER', `considered[${i}].offer`, 'offer listed twice');
      seen.add(c.offer);
    }
  },
  'c0mpute.receipt/1': (r: Receipt, signer: string) => {
    if (r.pool) rule(r.provider === checkPoolProof(r.pool, signer), 'RECEIPT_POOL_NOT_PROVIDER', 'provider', 'a pooled receipt must name the pool its signer’s proof is for');
    else rule(r.provider === signer, 'RECEIPT_SIGNER_NOT_PROVIDER', 'provider', 'a receipt must be signed by the provider it names');
    rule(r.buyer !== r.provider, 'RECEIPT_BUYER_IS_PROVIDER', 'buyer', 'buyer and provider must differ');
    rule(r.completedAt >= r.startedAt, 'RECEIPT_TIMES_INVALID', 'completedAt', 'must be ≥ startedAt');
    if (r.status === 'completed') {
      rule(r.outputHash !== undefined, 'RECEIPT_OUTPUT_HASH_MISSING', 'outputHash', 'a completed receipt must give the output hash');
      rule(r.failure === undefined, 'RECEIPT_FAILURE_ON_SUCCESS', 'failure', 'only a failed receipt carries a failure');
    } else {
      rule(r.failure !== undefined, 'RECEIPT_FAILURE_MISSING', 'failure', 'a failed receipt must say why');
    }
  },
  'c0mpute.acceptance/1': (a: Acceptance) => {
    if (a.verdict === 'disputed') rule(a.reason !== undefined && a.reason.trim().length > 0, 'ACCEPTANCE_REASON_MISSING', 'reason', 'a dispute must state a reason');
  },
  'c0mpute.presence/1': () => {},
  'c0mpute.claim/1': () => {},
  'c0mpute.claim-refusal/1': (r: ClaimRefusal, signer: string) => {
    rule(r.provider !== signer, 'CLAIM_REFUSAL_SELF', 'provider', 'the buyer does not refuse itself');
    rule((r.code === 'ORDER_TAKEN') === (r.winner !== undefined), 'CLAIM_REFUSAL_WINNER', 'winner', 'present exactly with ORDER_TAKEN');
  },
  'c0mpute.delegation/1': (d: Delegation, signer: string) => {
    rule(d.gateway !== signer, 'DELEGATION_TO_SELF', 'gateway', 'a buyer does not delegate to itself');
    rule(d.expiresAt > d.issuedAt, 'DELEGATION_LIFETIME_INVALID', 'expiresAt', 'must be after issuedAt');
    rule(d.expiresAt - d.issuedAt <= MAX_DELEGATION_LIFETIME_MS, 'DELEGATION_LIFETIME_TOO_LONG', 'expiresAt', 'lifetime over a year');
  },
  'c0mpute.nondelivery/1': nonDeliveryRules,
  'c0mpute.nondelivery/2': nonDeliveryRules,
  'c0mpute.nondelivery/3': nonDeliveryRules,
  ...TRAIN_RULES,
};

// Pooled providers (docs/pools.md): their kinds, kept in one block.
Object.assign(SCHEMAS, {
  'c0mpute.pool-roster/1': {
    seq: { t: 'uint', doc: 'sequence number; a higher seq replaces the pool’s roster, an equal or lower one is stale' },
    issuedAt: { t: 'time', doc: 'when the pool’s key signed it' },
    expiresAt: { t: 'time', doc: `when it stops being valid; at most ${MAX_ROSTER_LIFETIME_MS / (24 * 3600_000)} days after issuedAt` },
    epochMs: { t: 'uint', min: 1000, max: 24 * 3600_000, doc: 'length of a coordinator epoch', unit: 'ms' },
    members: {
      t: 'array',
      min: 1,
      max: MAX_POOL_MEMBERS,
      order: 'did-order-unique',
      doc: 'the members, in DID order',
      of: {
        t: 'object',
        doc: 'member',
        fields: {
          did: { t: 'did', doc: 'the member’s DID' },
          hardware: { ...SCHEMAS['c0mpute.advert/1']!.hardware!, doc: 'the member’s hardware' } as Schema[string],
          weight: { t: 'uint', min: 1, max: MAX_POOL_WEIGHT, doc: 'pay weight' },
        },
      },
    },
  },
  'c0mpute.pool-membership/1': {
    pool: { t: 'did', doc: 'the pool (the roster’s signer)' },
    roster: { t: 'addr', doc: 'the roster countersigned' },
    seq: { t: 'uint', doc: 'that roster’s seq' },
    status: { t: 'enum', values: ['member', 'left'], doc: '`member`: the signer agrees to its place; `left`: it has left (its records for this roster and older are refused)' },
    signedAt: { t: 'time', doc: 'when the member signed' },
  },
  'c0mpute.pool-dispatch/1': {
    pool: { t: 'did', doc: 'the pool' },
    roster: { t: 'addr', doc: 'the roster the member was chosen from' },
    job: { t: 'addr', doc: 'the job' },
    offer: { t: 'addr', doc: 'the pool’s winning offer' },
    member: { t: 'did', doc: 'the member chosen (active[u64(keccak256(job)[24..32]) mod n])' },
    coordinator: { t: 'did', doc: 'the elected coordinator (must be the signer)' },
    epoch: { t: 'uint', doc: 'the epoch it was elected for (floor(time / epochMs))' },
    issuedAt: { t: 'time', doc: 'when it was signed (before the input was sent)' },
  },
  'c0mpute.pool-settlement/1': {
    pool: { t: 'did', doc: 'the pool' },
    roster: { t: 'addr', doc: 'the roster whose weights divide the price' },
    job: { t: 'addr', doc: 'the job' },
    receipt: { t: 'addr', doc: 'the completed receipt settled' },
    price: { t: 'money', doc: 'the price (the receipt’s)' },
    parts: {
      t: 'array',
      min: 1,
      max: MAX_POOL_MEMBERS,
      order: 'did-order-unique',
      doc: 'each member’s part, in DID order',
      of: {
        t: 'object',
        doc: 'part',
        fields: {
          member: { t: 'did', doc: 'member' },
          weight: { t: 'uint', min: 1, max: MAX_POOL_WEIGHT, doc: 'its roster weight' },
          amount: { t: 'text', re: AMOUNT_RE, maxLen: 64, doc: 'its part of the price, in the price’s currency' },
        },
      },
    },
    signedAt: { t: 'time', doc: 'when the coordinator signed' },
  },
} satisfies Record<string, Schema>);
Object.assign(RULES, {
  'c0mpute.pool-roster/1': (r: PoolRoster, signer: string) => {
    rule(r.expiresAt > r.issuedAt, 'POOL_ROSTER_LIFETIME_INVALID', 'expiresAt', 'must be after issuedAt');
    rule(r.expiresAt - r.issuedAt <= MAX_ROSTER_LIFETIME_MS, 'POOL_ROSTER_LIFETIME_TOO_LONG', 'expiresAt', 'lifetime over 90 days');
    rule(!r.members.some((m) => m.did === signer), 'POOL_ROSTER_SELF_MEMBER', 'members', 'the pool’s key is not a member (it signs rosters only)');
  },
  'c0mpute.pool-membership/1': (m: PoolMembership, signer: string) => {
    rule(m.pool !== signer, 'POOL_MEMBERSHIP_SELF', 'pool', 'the pool’s key does not countersign');
  },
  'c0mpute.pool-dispatch/1': (d: PoolDispatch, signer: string) => {
    rule(d.coordinator === signer, 'POOL_DISPATCH_SIGNER_NOT_COORDINATOR', 'coordinator', 'a dispatch is signed by the coordinator it names');
  },
  'c0mpute.pool-settlement/1': (s: PoolSettlement) => {
    rule(amountsSumTo(s.parts.map((p) => p.amount), s.price.amount), 'POOL_SETTLEMENT_SUM', 'parts', 'the parts must sum exactly to the price');
  },
});

export interface RecordTypes {
  'c0mpute.advert/1': Advert;
  'c0mpute.job/1': Job;
  'c0mpute.offer/1': Offer;
  'c0mpute.selection/1': Selection;
  'c0mpute.receipt/1': Receipt;
  'c0mpute.acceptance/1': Acceptance;
  'c0mpute.presence/1': Presence;
  'c0mpute.claim/1': Claim;
  'c0mpute.claim-refusal/1': ClaimRefusal;
  'c0mpute.delegation/1': Delegation;
  'c0mpute.nondelivery/1': NonDelivery;
  'c0mpute.nondelivery/2': NonDelivery;
  'c0mpute.nondelivery/3': ClaimNonDelivery;
  'c0mpute.pool-roster/1': PoolRoster;
  'c0mpute.pool-membership/1': PoolMembership;
  'c0mpute.pool-dispatch/1': PoolDispatch;
  'c0mpute.pool-settlement/1': PoolSettlement;
}

export const T = {
  advert: 'c0mpute.advert/1',
  job: 'c0mpute.job/1',
  offer: 'c0mpute.offer/1',
  selection: 'c0mpute.selection/1',
  receipt: 'c0mpute.receipt/1',
  acceptance: 'c0mpute.acceptance/1',
  presence: 'c0mpute.presence/1',
  claim: 'c0mpute.claim/1',
  claimRefusal: 'c0mpute.claim-refusal/1',
  delegation: 'c0mpute.delegation/1',
  nondelivery: 'c0mpute.nondelivery/1',
  /** A non-delivery on a pooled offer: /1's fields and the pooled advert (docs/pools.md "Reputation"). */
  nondelivery2: 'c0mpute.nondelivery/2',
  /** An open order's non-delivery: proved by the winning claim and the first-claim selection (docs/matching.md). */
  nondelivery3: 'c0mpute.nondelivery/3',
  poolRoster: 'c0mpute.pool-roster/1',
  poolMembership: 'c0mpute.pool-membership/1',
  poolDispatch: 'c0mpute.pool-dispatch/1',
  poolSettlement: 'c0mpute.pool-settlement/1',
} as const;

/** Every version's non-delivery content type: /1, /2 (a pooled offer's) and /3 (an open order's). */
export const NONDELIVERY_TYPES = [T.nondelivery, T.nondelivery2, T.nondelivery3] as const;
export type NonDeliveryType = (typeof NONDELIVERY_TYPES)[number];

/**
 * Validity windows, for freshness checks (which take `now`; nothing here reads
 * a clock). Returns [notBefore, notAfter] in ms, or undefined for kinds without one.
 */
export function validityWindow(type: string, rec: unknown): [number, number] | undefined {
  switch (type) {
    case T.advert:
      return [(rec as Advert).issuedAt, (rec as Advert).expiresAt];
    case T.offer:
      return [(rec as Offer).issuedAt, (rec as Offer).expiresAt];
    case T.presence:
      return [(rec as Presence).issuedAt, (rec as Presence).issuedAt + (rec as Presence).windowMs];
    case T.delegation:
      return [(rec as Delegation).issuedAt, (rec as Delegation).expiresAt];
    case T.job:
      return [(rec as Job).announcedAt, (rec as Job).deadline];
    case T.poolRoster:
      return [(rec as PoolRoster).issuedAt, (rec as PoolRoster).expiresAt];
    default:
      return undefined;
  }
}
