/**
 * Reputation: what deriving the view costs, and what a busy node that counts
 * second-hand evidence spends on it (docs/market.md "When the view is derived
 * again"; src/reputation/refresh.ts).
 *
 *  (1) `deriveReputation` over 10k and 100k held evidence records (the default
 *      bound, reputation.maxEvidence): receipts, their buyers' acceptances and
 *      the offers they cite, fabricated as already-opened records (deriving
 *      never verifies: records are verified once, at the boundary);
 *  (2) a node holding 100k records that counts 50 trusted buyers, hearing a
 *      second-hand outcome every 150 ms and deciding every 500 ms, over 60 s
 *      of simulated time: the share of its event loop spent deriving, with the
 *      view re-derived after every new record (as before the fifteenth round:
 *      counted, each at the measured cost) and with ReputationCache (run).
 */
import { deriveReputation, type Evidence } from '../../src/reputation/derive.js';
import { ReputationCache } from '../../src/reputation/refresh.js';
import { T, type Acceptance, type Offer, type Opened, type Receipt } from '../../src/records/index.js';
import { settle, table, timeMs, type BenchResult } from './lib.js';

const NOW = 1_800_000_000_000;
const hex64 = (n: number, salt: string): string => 'sha256:' + (salt + n.toString(16)).padStart(64, '0');
const did = (k: string, i: number): string => `did:key:z6Mk${k}${i.toString(36).padStart(8, '0')}`;

/** `records` evidence records: a third each receipts, acceptances of them (nine in ten), and the offers they cite. */
export function evidence(records: number, buyers = 50, providers = 1_000): { ev: Evidence; trusted: string[]; held: number } {
  const receipts: Array<Opened<Receipt>> = [];
  const acceptances: Array<Opened<Acceptance>> = [];
  const offers: Array<Opened<Offer>> = [];
  const outcomes = Math.floor(records / 3);
  for (let i = 0; i < outcomes; i++) {
    const buyer = did('b', i % buyers);
    const provider = did('p', (i * 7919) % providers);
    const job = hex64(i, 'j');
    const offer: Opened<Offer> = {
      type: T.offer,
      signer: provider,
      address: hex64(i, 'o'),
      bytes: new Uint8Array(),
      record: { job, advert: hex64(i % providers, 'a'), price: { amount: '0.01', currency: 'USD' }, durationMs: 60_000, issuedAt: NOW - 10_000, startBy: NOW + 30_000, expiresAt: NOW + 30_000 },
    };
    const failed = i % 10 === 3;
    const receipt = {
      type: T.receipt,
      signer: provider,
      address: hex64(i, 'r'),
      bytes: new Uint8Array(),
      record: { job, offer: offer.address, buyer, provider, workload: 'infer.llm', status: failed ? 'failed' : 'completed', startedAt: NOW, completedAt: NOW + 30_000 + (i % 50) * 1_000, inputHash: hex64(1, 'i'), price: offer.record.price, energy: { uj: 1000, grade: 'Estimator' } },
    } as unknown as Opened<Receipt>;
    offers.push(offer);
    receipts.push(receipt);
    if (!failed) acceptances.push({ type: T.acceptance, signer: buyer, address: hex64(i, 'c'), bytes: new Uint8Array(), record: { receipt: receipt.address, verdict: 'accepted', signedAt: NOW + 40_000 } });
  }
  return { ev: { receipts, acceptances, offers, nondeliveries: [] }, trusted: Array.from({ length: buyers }, (_, i) => did('b', i)), held: receipts.length + acceptances.length + offers.length };
}

export async function run(): Promise<BenchResult> {
  const rows: Array<Record<string, string | number>> = [];
  const costs = new Map<number, number>();
  for (const n of [10_000, 100_000]) {
    const { ev, trusted, held } = evidence(n);
    settle();
    const ms = timeMs(() => deriveReputation(ev, { self: 'did:key:z6MkSelf', trust: { trustedBuyers: trusted } }), n >= 100_000 ? 5 : 20);
    costs.set(n, ms);
    rows.push({ 'evidence held': held, 'derive ms': ms.toFixed(1), 'µs a record': ((1000 * ms) / held).toFixed(2) });
  }

  // (2) a busy trusting node at the bound, 60 s simulated: one second-hand outcome every 150 ms, a decision every 500 ms
  const { ev, trusted } = evidence(100_000);
  const derive = () => deriveReputation(ev, { self: 'did:key:z6MkSelf', trust: { trustedBuyers: trusted } });
  const SIM_MS = 60_000;
  const OUTCOME_MS = 150;
  const DECIDE_MS = 500;
  // before: every new record dropped the view, so each decision after an outcome derived again
  let before = 0;
  for (let t = DECIDE_MS; t <= SIM_MS; t += DECIDE_MS) if (Math.floor(t / OUTCOME_MS) > Math.floor((t - DECIDE_MS) / OUTCOME_MS)) before++;
  const beforeMs = before * costs.get(100_000)!;
  // with the cache: the same events on a simulated clock, each derivation run for real
  let t = 0;
  let spent = 0;
  const cache = new ReputationCache(derive, { clock: () => t, onDerive: (ms) => (spent += ms) });
  cache.get();
  spent = 0;
  const firstDerivations = cache.derivations;
  let nextOutcome = OUTCOME_MS;
  for (t = DECIDE_MS; t <= SIM_MS; t += DECIDE_MS) {
    for (; nextOutcome <= t; nextOutcome += OUTCOME_MS) cache.changed(false);
    cache.get();
  }
  const after = cache.derivations - firstDerivations;
  const share = (ms: number) => `${((100 * ms) / SIM_MS).toFixed(1)} %`;
  const report = [
    'reputation: deriveReputation over held evidence (fabricated opened records; fastest of the runs)',
    table(rows),
    '',
    `a node holding 100k evidence records that counts 50 trusted buyers, a second-hand outcome every ${OUTCOME_MS} ms, a decision every ${DECIDE_MS} ms, ${SIM_MS / 1000} s simulated:`,
    table([
      { 'the view derived again': 'after every new record (before)', derivations: before, 'loop spent deriving': share(beforeMs) },
      { 'the view derived again': `ReputationCache (refresh ${(cache.refreshMs / 1000).toFixed(1)} s at this cost)`, derivations: after, 'loop spent deriving': share(spent) },
    ]),
  ].join('\n');
  return { report, targets: [] };
}
