/**
 * Which witness receipts (pool-witness/1) a node keeps for one witness and one
 * steward (src/store/records.ts; docs/overlays.md "Witnesses").
 *
 * A witness cosigns every head, so keeping every receipt is one record per
 * ledger entry and witness, for ever, on every node of the overlay. A node
 * that is not the steward cannot check a receipt against the ledger, so it
 * keeps a bounded set that still shows a rewritten history:
 *
 * - **the longest** (`top`): while the witness follows one history, it covers
 *   every shorter receipt of it, since the head it signs commits to the whole
 *   prefix;
 * - **the first receipt stored of each length band** `[2^b, 2^(b+1))`: a
 *   checkpoint at about every doubling of the ledger, never replaced once
 *   stored (not by the witness's own `witnessedAt`, which it chooses: a witness
 *   in league with the steward could backdate receipts of a rewritten history
 *   to take every checkpoint's place). If the witness later cosigns a rewritten
 *   history (its state lost, or in league with the steward), its newest
 *   receipt no longer shows the rewrite, but a checkpoint from before it does,
 *   for any rewrite reaching back past the newest checkpoint below it (at
 *   worst the older half of the history witnessed). Only when receipts stored
 *   by an earlier build are sorted once, with no order of arrival known, does
 *   the earliest `witnessedAt` of a band take its place.
 *
 * So at most about log2(length) + 2 receipts per witness and steward: 33 for
 * a ledger of four billion entries. Pure bookkeeping; the store persists it.
 */

export interface KeptReceipt {
  length: number;
  /** the witness's own `witnessedAt` */
  at: number;
  address: string;
}

/** What one witness's receipts for one steward hold: the band checkpoints (by band) and the longest. */
export interface WitnessPair {
  bands: Map<number, KeptReceipt>;
  top?: KeptReceipt;
}

/** The band of a length: b with 2^b ≤ length < 2^(b+1) (length 0 counts as 1). */
export function bandOf(length: number): number {
  return Math.floor(Math.log2(Math.max(1, length)));
}

const earlier = (a: KeptReceipt, b: KeptReceipt) => a.at < b.at || (a.at === b.at && a.address < b.address);

/**
 * Offer `r` to the pair (mutated). Returns the places `r` took (its band's checkpoint, the top; neither: not kept),
 * and the addresses no longer kept in any place (to delete). A receipt already held is not offered again by the
 * caller. `bySigned` (sorting what an earlier build stored, in no known order) lets an earlier-signed receipt take
 * its band's place; otherwise a band's first receipt stays.
 */
export function offerReceipt(pair: WitnessPair, r: KeptReceipt, o: { bySigned?: boolean } = {}): { band: boolean; top: boolean; dropped: string[] } {
  const displaced: KeptReceipt[] = [];
  const bandNo = bandOf(r.length);
  const first = pair.bands.get(bandNo);
  const band = !first || (o.bySigned === true && earlier(r, first));
  if (band) {
    if (first) displaced.push(first);
    pair.bands.set(bandNo, r);
  }
  // the first held stays at equal length: an honest witness signs one head a length
  const top = !pair.top || r.length > pair.top.length;
  if (top) {
    if (pair.top) displaced.push(pair.top);
    pair.top = r;
  }
  const held = (x: KeptReceipt) => pair.top?.address === x.address || pair.bands.get(bandOf(x.length))?.address === x.address;
  return { band, top, dropped: [...new Set(displaced.filter((x) => !held(x)).map((x) => x.address))] };
}

/**
 * How many witness records (pool-evidence/1, pool-witness/1) a node keeps in all (config `witnessRecords`,
 * docs/overlays.md "What a node keeps of witness records"). Both are signed by a key anyone can make, about a
 * "steward" whose key anyone can make too, so without an overall bound a peer could have every node store them for
 * ever (about 1 KB of evidence, 290 B of receipt a message):
 *
 * - about stewards this node's config does not name, at most `maxEvidence` evidence records and `maxReceipts`
 *   receipts, each kind evicting the first to arrive (an index by arrival order, records.ts);
 * - about a steward it names (`network.steward`, `witness.stewards`, itself as a steward), outside those caps, so
 *   strangers' records never push them out: `maxEvidence` evidence records per steward, the first kept, and the
 *   receipts of the first `maxWitnesses` witness keys (each a bounded set, above).
 *
 * A steward's own ledger, with no witness list, keeps the receipts of the first `maxWitnesses` keys (ledger/store.ts).
 */
export interface WitnessRecordBounds {
  maxEvidence: number;
  maxReceipts: number;
  maxWitnesses: number;
}

/** Evidence: 2,000 (2 MB at the usual 1 KB, 128 MiB at the 64 KiB envelope bound); receipts: 5,000 (~1.5 MB); 64 witness keys per named steward. */
export const WITNESS_RECORD_DEFAULTS: WitnessRecordBounds = { maxEvidence: 2_000, maxReceipts: 5_000, maxWitnesses: 64 };
