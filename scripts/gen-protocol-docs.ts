/**
 * Render docs/protocol.md from docs/protocol.template.md and the record schemas.
 *   node dist/scripts/gen-protocol-docs.js          write docs/protocol.md
 *   node dist/scripts/gen-protocol-docs.js --check  exit 1 if it is out of date
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { SCHEMAS } from '../src/records/kinds.js';
import { schemaTable } from '../src/records/schema.js';
import { TRAIN_RULE_DOCS, TRAIN_SIGNERS } from '../src/training/record-kinds.js';

const RULES: Record<string, string[]> = {
  'c0mpute.advert/1': [
    '`expiresAt` > `issuedAt` (`ADVERT_LIFETIME_INVALID`), lifetime ≤ 24 h (`ADVERT_LIFETIME_TOO_LONG`).',
    'Every price names an offered workload (`ADVERT_PRICE_UNKNOWN_WORKLOAD`).',
    'A higher `seq` from the same provider replaces its advert; an equal or lower one does not.',
  ],
  'c0mpute.job/1': ['`deadline` > `announcedAt` (`JOB_DEADLINE_INVALID`); on arrival, at most 90 days past the receiver’s now plus the skew window (`JOB_DEADLINE_TOO_FAR`, a freshness check: §3).', 'Tier `private` requires `requirements.allowlist` (`JOB_PRIVATE_NEEDS_ALLOWLIST`).'],
  'c0mpute.offer/1': [
    '`expiresAt` ≤ `startBy` (`OFFER_EXPIRES_AFTER_START`); `expiresAt` > `issuedAt` (`OFFER_LIFETIME_INVALID`); lifetime ≤ 24 h (`OFFER_LIFETIME_TOO_LONG`).',
    'Sent by the provider to the job’s buyer (and the overlay’s steward) only, over `/c0mpute/offer/1`, with the advert it cites attached; not published on gossip (docs/network.md §13).',
  ],
  'c0mpute.selection/1': [
    '`winner` is one of the `considered` offers (`SELECTION_WINNER_NOT_CONSIDERED`); no offer twice (`SELECTION_DUPLICATE_OFFER`); `considered` in DID order, one entry per provider.',
    'The signer must be the buyer, a gateway holding a live delegation within scope, or the overlay’s steward (checked by the market, docs/market.md).',
    '`arrivals` is present exactly when `policy` is `first-claim` (`SELECTION_ARRIVALS_INVALID`): then `winner` and `considered[].offer` are `c0mpute.claim/1` addresses, `arrivals` is in increasing `seq`, ends with the winner, and holds every considered claim. An audit recomputes the first valid claim from the job, the claims and the adverts (docs/matching.md “How “first” is audited”).',
  ],
  'c0mpute.receipt/1': [
    'Signed by the provider it names (`RECEIPT_SIGNER_NOT_PROVIDER`); buyer ≠ provider (`RECEIPT_BUYER_IS_PROVIDER`); `completedAt` ≥ `startedAt` (`RECEIPT_TIMES_INVALID`).',
    '`completed` requires `outputHash` (`RECEIPT_OUTPUT_HASH_MISSING`) and no `failure` (`RECEIPT_FAILURE_ON_SUCCESS`); `failed` requires `failure` (`RECEIPT_FAILURE_MISSING`).',
    '`price` must equal the cited offer’s price (checked where the offer is held).',
  ],
  'c0mpute.acceptance/1': ['A dispute must state a non-empty reason (`ACCEPTANCE_REASON_MISSING`). Only the receipt’s own buyer’s acceptance counts.'],
  'c0mpute.presence/1': ['Live from `issuedAt` for `windowMs` (at most 10 minutes).'],
  'c0mpute.claim/1': [
    'Sent by a provider straight to the buyer’s node to take an open order (no offer window; docs/matching.md “Open orders, claims and leases”). Not gossiped.',
    'The buyer’s node takes the first valid claim by its own arrival order and refuses every other one with a stable code (src/matching/claims.ts): it opens (`CLAIM_INVALID`); names the job (`CLAIM_WRONG_JOB`); is not signed by the buyer (`CLAIM_BY_BUYER`); signed and received before the job’s `deadline` (`CLAIM_AFTER_DEADLINE`), not before `announcedAt` (`CLAIM_BEFORE_JOB`), not beyond the skew window after arrival (`CLAIM_FROM_FUTURE`); the designated provider when the order names one, or, when it names a pool, a member of it citing its pooled advert of that pool (`CLAIM_NOT_DESIGNATED`; docs/matching.md "An order designated to a pool"); `price` in the job’s currency (`CLAIM_CURRENCY_MISMATCH`) and at most the order’s bid (`CLAIM_PRICE_OVER_BID`); cites a known advert (`CLAIM_ADVERT_UNKNOWN`) signed by the claimant (`CLAIM_ADVERT_NOT_CLAIMANTS`) that passes the eligibility gates (`CLAIM_INELIGIBLE`); a claimant at or above the order’s reputation floor in the buyer’s own view (`CLAIM_REPUTATION_TOO_LOW`, buyer-local: docs/matching.md “Whom an order takes”); a valid claim after the winner gets `ORDER_TAKEN`.',
  ],
  'c0mpute.claim-refusal/1': [
    'The buyer’s answer, on the claim stream, to a claim it did not take (docs/matching.md “Open orders, claims and leases”). Not gossiped; the claimant keeps it.',
    '`provider` ≠ signer (`CLAIM_REFUSAL_SELF`); `winner` present exactly with `ORDER_TAKEN` (`CLAIM_REFUSAL_WINNER`). `ORDER_CLOSED`: the order was no longer taking claims (decided and run, or past its deadline).',
  ],
  'c0mpute.delegation/1': ['`gateway` ≠ signer (`DELEGATION_TO_SELF`); `expiresAt` > `issuedAt` (`DELEGATION_LIFETIME_INVALID`); lifetime ≤ 366 days (`DELEGATION_LIFETIME_TOO_LONG`).'],
  'c0mpute.nondelivery/1': [
    '`provider` ≠ signer (`NONDELIVERY_SELF`); `detail`, when present, is not blank (`NONDELIVERY_DETAIL_EMPTY`).',
    'It links, from the record alone (on gossip, rejected otherwise; the evidence store refuses it too): every `proof` envelope opens (`NONDELIVERY_PROOF_INVALID`); the job is the one cited (`NONDELIVERY_JOB_MISMATCH`) and signed by this record’s signer (`NONDELIVERY_NOT_BUYER`); the selection is the one cited, for that job, on the signer’s behalf, its winner the cited offer and naming `provider` with it (`NONDELIVERY_SELECTION_MISMATCH`), decided no later than `signedAt` (`NONDELIVERY_BEFORE_SELECTION`); the offer is the one cited, signed by `provider`, for that job (`NONDELIVERY_OFFER_MISMATCH`).',
    'Counts against the provider in reputation by the weight of its signer (docs/market.md “Reputation and its threat model”); one per (buyer, provider, job).',
    'A buyer signs a `/1` when the offer does not cite a pooled advert; for an offer that does, a `c0mpute.nondelivery/2` (below), which counts against the pool.',
  ],
  'c0mpute.nondelivery/2': [
    'A non-delivery on an offer that cites a **pooled** advert (docs/pools.md “Reputation”): the fields of `c0mpute.nondelivery/1` and, required, `proof.advert`. A new version rather than a new field of `/1` (§3: a previous-version node refuses unknown fields). It travels on its own topic kind, `nondelivery2` (sharded like `nondelivery`, docs/network.md §2, §14), which previous-version nodes do not join, so none is ever sent one.',
    'The same rules and links as `/1` (`NONDELIVERY_SELF`, `NONDELIVERY_DETAIL_EMPTY`, and every `NONDELIVERY_*` link check), and: `proof.advert` opens (`NONDELIVERY_PROOF_INVALID`; the advert’s pool chain is verified on open) and is the advert the offer cites, signed by `provider`, and pooled (`NONDELIVERY_ADVERT_MISMATCH`).',
    'Counts against the **pool** the advert stands for (the provider selection scored the offer as), by the weight of its signer; one per (buyer, pool, job). `provider` still names the member that quoted (the selection names it with the offer). The pool is read from the record alone, so every node charges the same provider.',
    'The buyer signs a `/2` when it holds the advert the offer cites and that advert is pooled, and the record stays within the envelope bound (64 KiB); otherwise a `/1`, which counts against the member.',
  ],
  'c0mpute.nondelivery/3': [
    'An **open order’s** non-delivery (docs/matching.md “Open orders, claims and leases”): the buyer’s `first-claim` selection took `claim` and its claimant sent no receipt. An order has no offer, so it proves by the claim: fields `claim` and `proof.claim` where `/1` has `offer` and `proof.offer`. A new version rather than new fields of `/1` (§3). It travels on its own topic kind, `nondelivery3` (sharded like `nondelivery`, by the job its proof carries: docs/network.md §2, §14), which previous-version nodes do not join, so none is ever sent one.',
    '`provider` ≠ signer (`NONDELIVERY_SELF`); `detail`, when present, is not blank (`NONDELIVERY_DETAIL_EMPTY`).',
    'It links, from the record alone (on gossip, rejected otherwise; the evidence store refuses it too): every `proof` envelope opens (`NONDELIVERY_PROOF_INVALID`); the job is the one cited (`NONDELIVERY_JOB_MISMATCH`), signed by this record’s signer (`NONDELIVERY_NOT_BUYER`) and an open order, with `order` (`NONDELIVERY_NOT_AN_ORDER`); the selection is the one cited, for that job, made for the signer, its winner the cited claim, its last arrival and `considered` naming `provider` with it (`NONDELIVERY_SELECTION_MISMATCH`), of policy `first-claim` and signed by the buyer itself (`NONDELIVERY_NOT_FIRST_CLAIM`: only the buyer’s node sees arrivals), decided no later than `signedAt` (`NONDELIVERY_BEFORE_SELECTION`); the claim is the one cited, signed by `provider`, for that job (`NONDELIVERY_CLAIM_MISMATCH`); `proof.advert`, when present, is the advert the claim cites, signed by `provider`, and pooled (`NONDELIVERY_ADVERT_MISMATCH`).',
    'Counts against the claimant (with a pooled `proof.advert`: the pool it stands for, as a `/2`, while its roster had not expired when the claim was signed) by the weight of its signer; one per (buyer, provider, job). It gives way to a receipt of that provider for the job that the buyer countersigned: a winner that stalled and signed its own failure later (`EXEC_PROVIDER_STALLED`, countersigned when it arrives) is charged that failure, not a non-delivery (docs/market.md “Outcomes”).',
    'The buyer signs it when the winner’s attempt ends for a reason it signs a `/1` for in an auction (`timeout`, `unreachable`, `refused`, `no-receipt`, `bad-receipt`), never for its own stop or freeze (`BUYER_STALLED`). It carries the claim’s advert only when the buyer holds it and it is pooled (and the record stays within 64 KiB).',
  ],
  'c0mpute.pool-roster/1': [
    '`expiresAt` > `issuedAt` (`POOL_ROSTER_LIFETIME_INVALID`), lifetime ≤ 90 days (`POOL_ROSTER_LIFETIME_TOO_LONG`); the pool’s key is not a member (`POOL_ROSTER_SELF_MEMBER`).',
    'The signer’s DID is the pool’s DID. A higher `seq` replaces; a verifier that has seen a higher seq refuses records proved by an older roster (`POOL_ROSTER_STALE`), and an expired roster proves nothing (`POOL_ROSTER_EXPIRED`) (docs/pools.md).',
  ],
  'c0mpute.pool-membership/1': [
    '`pool` ≠ signer (`POOL_MEMBERSHIP_SELF`). A member countersigns its own place on one roster (`roster` and `seq`); `left` withdraws it.',
  ],
  'c0mpute.pool-dispatch/1': [
    '`coordinator` = signer (`POOL_DISPATCH_SIGNER_NOT_COORDINATOR`). Made durable and published by the coordinator before the input goes to `member`; a member runs a job at most once (`POOL_ALREADY_RUN`) (docs/pools.md).',
  ],
  'c0mpute.pool-settlement/1': [
    'The `parts` sum exactly to `price` (`POOL_SETTLEMENT_SUM`); the split rule (precision and remainders) is in docs/pools.md “Settlement”. Only for a `completed` receipt.',
  ],
  ...TRAIN_RULE_DOCS,
};

/** The pool proof an advert or receipt may carry (docs/pools.md): the rules every verifier applies. */
RULES['c0mpute.advert/1']!.push(
  'With `pool`, the signer is a pool member signing for its pool: `pool.roster` opens as a `c0mpute.pool-roster/1` (`POOL_ROSTER_INVALID`), `pool.membership` opens (`POOL_MEMBERSHIP_INVALID`), is the signer’s own (`POOL_MEMBERSHIP_NOT_SIGNER`), countersigns that roster of that pool (`POOL_MEMBERSHIP_WRONG_ROSTER`) with status `member` (`POOL_MEMBER_LEFT`), and the roster lists the signer (`POOL_NOT_MEMBER`). The market treats the pool’s DID as the provider.',
);
RULES['c0mpute.receipt/1']!.push('With `pool` (the same chain checks as an advert’s), `provider` is the pool’s DID (`RECEIPT_POOL_NOT_PROVIDER`) and the signer any member of it.');

const SIGNERS: Record<string, string> = {
  'c0mpute.advert/1': 'provider (or a pool member for its pool)',
  'c0mpute.job/1': 'buyer',
  'c0mpute.offer/1': 'provider',
  'c0mpute.selection/1': 'decider (buyer, delegated gateway, or steward)',
  'c0mpute.receipt/1': 'provider (or a pool member for its pool)',
  'c0mpute.acceptance/1': 'buyer',
  'c0mpute.presence/1': 'provider',
  'c0mpute.claim/1': 'provider (the claimant)',
  'c0mpute.claim-refusal/1': 'buyer (the job’s signer)',
  'c0mpute.delegation/1': 'buyer',
  'c0mpute.nondelivery/1': 'buyer (the job’s signer)',
  'c0mpute.nondelivery/2': 'buyer (the job’s signer)',
  'c0mpute.nondelivery/3': 'buyer (the order’s signer)',
  'c0mpute.pool-roster/1': 'the pool’s own key (it signs rosters only)',
  'c0mpute.pool-membership/1': 'the member',
  'c0mpute.pool-dispatch/1': 'the elected coordinator (a member)',
  'c0mpute.pool-settlement/1': 'the coordinator that closed the job (a member)',
  ...TRAIN_SIGNERS,
};

export function render(root: string): string {
  const tpl = readFileSync(join(root, 'docs', 'protocol.template.md'), 'utf8');
  const sections = Object.entries(SCHEMAS).map(([type, schema]) => {
    const rules = (RULES[type] ?? []).map((r) => `- ${r}`).join('\n');
    return `### \`${type}\`\n\nSigned by: ${SIGNERS[type] ?? '?'}.\n\n${schemaTable(schema)}\n\nRules:\n\n${rules}\n`;
  });
  // A replacer function, not a string: in a replacement string `$\`` and `$'`
  // are special patterns, and the schema regexes end in `$` before a backtick.
  const records = sections.join('\n');
  return tpl.replace('{{records}}', () => records);
}

const root = join(fileURLToPath(new URL('.', import.meta.url)), '..', '..');
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const text = render(root);
  const path = join(root, 'docs', 'protocol.md');
  if (process.argv.includes('--check')) {
    const cur = readFileSync(path, 'utf8');
    if (cur !== text) {
      console.error('docs/protocol.md is out of date; run: npm run build && node dist/scripts/gen-protocol-docs.js');
      process.exit(1);
    }
  } else {
    writeFileSync(path, text);
    console.log(`wrote ${path}`);
  }
}
