/**
 * Reputation: what deriving the view costs, and what a busy node that counts
 * second-hand evidence spends on it (docs/market.md "How the view follows new
 * evidence"; src/reputation/live.ts).
 *
 *  (1) `deriveReputation` over 10k and 100k held evidence records (the default
 *      bound, reputation.maxEvidence): receipts, their buyers' acceptances and
 *      the offers they cite, fabricated as already-opened records (deriving
 *      never verifies: records are verified once, at the boundary);
 *  (2) a node holding 100k records that counts 50 trusted buyers, hearing a
 *      second-hand outcome every 150 ms, getting an outcome of its own every
 *      500 ms and deciding every 500 ms, over 60 s of simulated time: the time
 *      its event loop spends bringing the view up to date, with the whole view
 *      derived again at the first read after any new record (as before the
 *      fifteenth round: counted, each at the measured cost) and with
 *      LiveReputation, which derives again only the providers new records
 *      concern (run for real).
 */
import { deriveReputation, type Evidence } from '../../src/reputation/derive.js';
import { LiveReputation } from '../../src/reputation/live.js';
import { EvidenceStore } from '../../src/reputation/store.js';
import { T, type Acceptance, type Offer, type Opened, type Receipt } from '../../src/records/index.js';
import { settle, table, timeMs, type BenchResult } from './lib.js';

const NOW = 1_800_000_000_000;
const SELF = 'did:key:z6MkSelf';
const hex64 = (n: number, salt: string): string => 'sha256:' + (salt + n.toString(16)).padStart(64, '0');
const did = (k: string, i: number): string => `did:key:z6Mk${k}${i.toString(36).padStart(8, '0')}`;

/** One job's outcome: the offer, the receipt and (nine in ten) the buyer's acceptance, fabricated as opened records. */
function outcome(i: number, buyer: string, provider: string): Opened[] {
  const job = hex64(i, 'j');
  const offer: Opened<Offer> = {
    type: T.offer,
    signer: provider,
    address: hex64(i, 'o'),
    bytes: new Uint8Array(),
    record: { job, advert: hex64(i % 1_000, 'a'), price: { amount: '0.01', currency: 'USD' }, durationMs: 60_000, issuedAt: NOW - 10_000, startBy: NOW + 30_000, expiresAt: NOW + 30_000 },
  };
  const failed = i % 10 === 3;
  const receipt = {
    type: T.receipt,
    signer: provider,
    address: hex64(i, 'r'),
    bytes: new Uint8Array(),
    record: { job, offer: offer.address, buyer, provider, workload: 'infer.llm', status: failed ? 'failed' : 'completed', startedAt: NOW, completedAt: NOW + 30_000 + (i % 50) * 1_000, inputHash: hex64(1, 'i'), price: offer.record.price, energy: { uj: 1000, grade: 'Estimator' } },
  } as unknown as Opened<Receipt>;
  const out: Opened[] = [offer, receipt];
  if (!failed) out.push({ type: T.acceptance, signer: buyer, address: hex64(i, 'c'), bytes: new Uint8Array(), record: { receipt: receipt.address, verdict: 'accepted', signedAt: NOW + 40_000 } } as Opened<Acceptance>);
  return out;
}

/** About `records` evidence records: outcomes of `buyers` buyers over `providers` providers. */
export function evidence(records: number, buyers = 50, providers = 1_000): { ev: Evidence; trusted: string[]; held: number; all: Opened[] } {
  const all: Opened[] = [];
  for (let i = 0; all.length < records; i++) all.push(...outcome(i, did('b', i % buyers), did('p', (i * 7919) % providers)));
  const ev: Evidence = {
    receipts: all.filter((r) => r.type === T.receipt) as Array<Opened<Receipt>>,
    acceptances: all.filter((r) => r.type === T.acceptance) as Array<Opened<Acceptance>>,
    offers: all.filter((r) => r.type === T.offer) as Array<Opened<Offer>>,
    nondeliveries: [],
  };
  return { ev, trusted: Array.from({ length: buyers }, (_, i) => did('b', i)), held: all.length, all };
}

export async function run(): Promise<BenchResult> {
  const rows: Array<Record<string, string | number>> = [];
  let cost100k = 0;
  for (const n of [10_000, 100_000]) {
    const { ev, trusted, held } = evidence(n);
    settle();
    const ms = timeMs(() => deriveReputation(ev, { self: SELF, trust: { trustedBuyers: trusted } }), n >= 100_000 ? 5 : 20);
    if (n === 100_000) cost100k = ms;
    rows.push({ 'evidence held': held, 'derive ms': ms.toFixed(1), 'µs a record': ((1000 * ms) / held).toFixed(2) });
  }

  // (2) a busy trusting node at the bound, 60 s simulated
  const { trusted, all } = evidence(100_000);
  const store = new EvidenceStore();
  await store.add(...all);
  let spent = 0;
  const view = new LiveReputation(store, { self: SELF, trust: { trustedBuyers: trusted } }, { onDerive: (ms) => (spent += ms) });
  view.get();
  // the first read derives everything once (a node's start): not part of the busy minute
  spent = 0;
  const fullBefore = view.full;
  const SIM_MS = 60_000;
  const OUTCOME_MS = 150;
  const DECIDE_MS = 500;
  let before = 0;
  let changed = false;
  let i = 1_000_000;
  let nextOutcome = OUTCOME_MS;
  const add = async (recs: Opened[]) => {
    await store.add(...recs);
    view.added(recs);
    changed = true;
  };
  for (let t = DECIDE_MS; t <= SIM_MS; t += DECIDE_MS) {
    for (; nextOutcome <= t; nextOutcome += OUTCOME_MS) await add(outcome(i++, trusted[i % trusted.length]!, did('p', (i * 7919) % 1_000)));
    // this node's own outcome (it buys as often as it decides)
    await add(outcome(i++, SELF, did('p', (i * 104_729) % 1_000)));
    // before: the first read after any new record derived everything again
    if (changed) before++;
    changed = false;
    view.get();
  }
  const share = (ms: number) => `${((100 * ms) / SIM_MS).toFixed(2)} %`;
  const report = [
    'reputation: deriveReputation over held evidence (fabricated opened records; fastest of the runs)',
    table(rows),
    '',
    `a node holding 100k evidence records that counts 50 trusted buyers: a second-hand outcome every ${OUTCOME_MS} ms, one of its own and a decision every ${DECIDE_MS} ms, ${SIM_MS / 1000} s simulated:`,
    table([
      { 'the view after new records': 'all derived again (before)', derivations: before, 'event loop spent on it': share(before * cost100k) },
      { 'the view after new records': 'LiveReputation: the providers they concern', derivations: `${view.partial} (+${view.full - fullBefore} of everything)`, 'event loop spent on it': share(spent) },
    ]),
  ].join('\n');
  return { report, targets: [] };
}
