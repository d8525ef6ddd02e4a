/**
 * What a steward's node holds against its own ledger, read offline for `c0mpute ledger verify`, `show` and `export`
 * of `<data-dir>/steward/<overlay>/ledger` (docs/pool.md "What verifies means for a ledger"; QA qaWit F2). The ledger directory never stores
 * a receipt that contradicts it (Ledger.addReceipt refuses one), nor the equivocation evidence witnesses publish: the
 * running steward keeps both in its node's store (`<data-dir>/db`), and `steward status` warns of them, so a verify
 * of the directory alone answered `problem none` for a ledger its own node knew to be forked. This reads three things:
 * the pool-evidence/1 records about its key (each pair verified again: evidencePairAgainst), the receipts kept in the
 * overlay's `steward-contradicting` sublevel (each checked again against the ledger as read, as `steward status`
 * does), and the witness receipts the node heard for the key (what the steward's start reads: QA ffLedger F3). No record is written (opening LevelDB still notes its holder and may compact its log); the node's store is LevelDB, which one process holds at a time,
 * so a store held by a running daemon (a node that runs without the steward role, a one-shot command) is not read
 * and says so (`locked`).
 */
import { existsSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { C0Error } from '../errors.js';
import { decodeCanonical } from '../records/cbor.js';
import { checkStoredReceipt } from '../ledger/attest.js';
import { evidencePairAgainst } from '../ledger/evidence.js';
import { closeDb, dbHolder, openDb, sub } from '../store/db.js';
import { RecordStore } from '../store/records.js';
import { CONTRADICTING_SUB, MAX_CONTRADICTING } from './steward-contradictions.js';

export interface HeldEvidence {
  /** The seq the pair shows two entries at. */
  seq: number;
  form: string;
  /** The witnesses that published it (distinct). */
  witnesses: string[];
}

export interface HeldContradiction {
  witness: string;
  code: 'WITNESS_LENGTH_BEYOND' | 'WITNESS_HEAD_MISMATCH';
  /** The length the witness's receipt covers. */
  length: number;
}

export type HeldAgainst =
  | { store: 'read'; path: string; steward: string; evidence: HeldEvidence[]; contradicting: HeldContradiction[] }
  | { store: 'locked'; path: string; holder?: { pid: number; cmd?: string } }
  /** the store did not open or read (damaged): the ledger's own verdict stands, said beside it */
  | { store: 'unreadable'; path: string; code: string; message: string };

/** `<data-dir>` and the overlay when `dir` is `<data-dir>/steward/<overlay>/ledger`; else undefined. */
export function stewardLedgerPlace(dir: string): { dataDir: string; overlay: string } | undefined {
  const abs = resolve(dir);
  if (basename(abs) !== 'ledger' || basename(dirname(dirname(abs))) !== 'steward') return undefined;
  return { dataDir: dirname(dirname(dirname(abs))), overlay: basename(dirname(abs)) };
}

/**
 * What the node whose data directory holds the ledger directory `dir` keeps against steward `steward`'s ledger
 * (`length` entries, `addresses` their addresses in order). Undefined when `dir` is not a steward's ledger directory in
 * a node's data directory with a store. `witnesses`: whose heard receipts count (none given: every key's);
 * `only`: the witnesses the operator named (--witness), which also narrow the receipts the steward kept as contradicting.
 */
export async function heldAgainstLedger(dir: string, steward: string, ledger: { length: number; addresses: readonly string[] }, opts: { witnesses?: readonly string[]; only?: readonly string[] } = {}): Promise<HeldAgainst | undefined> {
  const place = stewardLedgerPlace(dir);
  if (!place) return undefined;
  const path = join(place.dataDir, 'db');
  if (!existsSync(join(path, 'CURRENT'))) return undefined;
  let db: Awaited<ReturnType<typeof openDb>>;
  try {
    db = await openDb(path);
  } catch (e) {
    if (e instanceof C0Error && e.code === 'STORE_LOCKED') {
      const h = dbHolder(path);
      return { store: 'locked', path, ...(h ? { holder: { pid: h.pid, ...(h.cmd === undefined ? {} : { cmd: h.cmd }) } } : {}) };
    }
    return unreadable(path, e);
  }
  try {
    const prefix = place.overlay === 'public' ? '' : `${place.overlay}~`;
    const pairs = new Map<string, HeldEvidence>();
    for (const rec of await RecordStore.evidenceHeld(db, prefix, steward, MAX_CONTRADICTING)) {
      const pair = evidencePairAgainst(rec.record, steward);
      if (!pair) continue;
      const p = pairs.get(pair.key);
      if (p) {
        if (!p.witnesses.includes(rec.signer)) p.witnesses.push(rec.signer);
      } else pairs.set(pair.key, { seq: pair.seq, form: pair.form, witnesses: [rec.signer] });
    }
    const view = { steward, length: ledger.length, addressAt: async (seq: number) => (seq >= 0 && seq < ledger.length ? ledger.addresses[seq] : undefined) };
    const contradicting: HeldContradiction[] = [];
    for await (const [witness, value] of sub(db, `${prefix}${CONTRADICTING_SUB}`).iterator()) {
      let receipt: Uint8Array;
      try {
        receipt = (decodeCanonical(value) as { receipt: Uint8Array }).receipt;
      } catch {
        continue; // unreadable: the steward drops it at its next start
      }
      if (!(receipt instanceof Uint8Array)) continue;
      // kept by the steward for the witnesses it names or knows; the operator's --witness (`only`) narrows them too
      if (opts.only && !opts.only.includes(witness)) continue;
      const s = await checkStoredReceipt(view, receipt);
      if (s.status === 'mismatch' && s.witness === witness) contradicting.push({ witness, code: s.code, length: s.length });
    }
    // The receipts the node heard for this key (what the steward's start reads, steward-history.ts knownHistory): one
    // that covers a longer ledger or another head is what a ledger directory restored from an older copy (the node's
    // store kept) looks like, and `start` warns of it; the offline verify answered `problem none` (QA ffLedger F3).
    // Only those of `opts.witnesses` when given (`ledger verify` gives --witness, else the keys the ledger holds a
    // valid receipt from, as `steward status` gives a line only to those: anyone can sign a receipt of any length);
    // without the option, every key's.
    const named = opts.witnesses ? new Set(opts.witnesses) : undefined;
    const heard = (await RecordStore.witnessReceiptsHeld(db, prefix, steward)).sort((a, b) => b.record.length - a.record.length);
    for (const r of heard) {
      if (r.signer === steward || (named && !named.has(r.signer)) || contradicting.some((c) => c.witness === r.signer)) continue;
      const s = await checkStoredReceipt(view, r.bytes);
      if (s.status === 'mismatch' && s.witness === r.signer) contradicting.push({ witness: r.signer, code: s.code, length: s.length });
    }
    const evidence = [...pairs.values()].sort((a, b) => a.seq - b.seq);
    return { store: 'read', path, steward, evidence, contradicting };
  } catch (e) {
    // damage met while reading (a torn log): the ledger's own answer is still given (review s53)
    return unreadable(path, e);
  } finally {
    await closeDb(db);
  }
}

function unreadable(path: string, e: unknown): HeldAgainst {
  return { store: 'unreadable', path, code: e instanceof C0Error ? e.code : 'STORE_UNREADABLE', message: (e as Error)?.message ?? String(e) };
}
