/**
 * Attestation grading (pool/1 §6.7–§6.8) and equivocation evidence.
 *
 * A ledger is `self-attested` unless at least one receipt verifies, comes from
 * a key other than the steward's, names this steward, and covers exactly the
 * head this ledger has at the receipt's length: then it is `witnessed` (by
 * whom, up to which length). A receipt that does not verify (`invalid`) is
 * kept apart from one that verifies but covers a different head or length
 * (`mismatch`, what a rewritten history looks like from outside).
 *
 * Anyone can sign a receipt, so a reader who knows who the steward's witnesses
 * are names them (`witnesses`): a receipt signed by any other key is then
 * `not-named` and counts for nothing, neither toward the grade nor as a
 * mismatch (else any key could make an honest ledger read as rewritten, or
 * pad "witnessed by" with keys of its own). Without the list every key counts,
 * and the grade names each witness for the reader to weigh.
 */
import { C0Error } from '../errors.js';
import { open, peekType, type Opened } from '../records/envelope.js';
import { compareBytes } from '../records/cbor.js';
import { POOL_TYPE, WITNESS_TYPE, ENTRY_ERR, type LedgerEntry, type WitnessReceipt } from './entry.js';
import { compareDids } from '../records/did.js';

export type ReceiptStatus =
  | { status: 'valid'; witness: string; length: number; head: string }
  | { status: 'invalid'; code: string; message: string; witness?: string }
  | { status: 'refused'; code: typeof ENTRY_ERR.WITNESS_IS_STEWARD; witness: string; message: string }
  | { status: 'other-ledger'; witness: string; steward: string }
  /** signed by a key the reader did not name as a witness (or not readable enough to say by whom): not counted */
  | { status: 'not-named'; witness?: string }
  | { status: 'mismatch'; code: 'WITNESS_HEAD_MISMATCH' | 'WITNESS_LENGTH_BEYOND'; witness: string; length: number; head: string; ours?: string; message: string };

export interface Attestation {
  grade: 'self-attested' | 'witnessed';
  /** valid witnesses, each with the longest length it covers, in DID order */
  witnesses: Array<{ witness: string; length: number }>;
  /** the longest witnessed length (0 when self-attested) */
  witnessedLength: number;
  receipts: ReceiptStatus[];
}

export interface LedgerView {
  steward?: string;
  /** content address of every entry, by seq */
  addresses: readonly string[];
}

/**
 * A ledger read through its store (src/ledger/store.ts): its length now, and the address of the entry at a seq,
 * read when a receipt asks for it (an open ledger keeps its head, not every entry's address).
 */
export interface StoredLedgerView {
  steward?: string;
  length: number;
  /** undefined for a seq not in 0 ≤ seq < length */
  addressAt(seq: number): Promise<string | undefined>;
}

/** A receipt opened and placed against the ledger's steward and length; its head is compared next (placeReceipt). */
type Opened1 = { w: WitnessReceipt; witness: string };

/** Everything checkReceipt decides before it needs the ledger's address at the receipt's length. */
function openReceipt(steward: string | undefined, length: number, bytes: Uint8Array): ReceiptStatus | Opened1 {
  let w: WitnessReceipt;
  let witness: string;
  try {
    const o = open(bytes, WITNESS_TYPE);
    w = o.record as WitnessReceipt;
    witness = o.signer;
  } catch (e) {
    if (!(e instanceof C0Error)) throw e;
    let signer: string | undefined;
    try {
      signer = peekType(bytes).signer;
    } catch {
      /* unreadable */
    }
    if (e.code === ENTRY_ERR.WITNESS_IS_STEWARD) return { status: 'refused', code: ENTRY_ERR.WITNESS_IS_STEWARD, witness: signer!, message: e.message };
    return { status: 'invalid', code: e.code, message: e.message, ...(signer === undefined ? {} : { witness: signer }) };
  }
  if (steward !== undefined && w.steward !== steward) return { status: 'other-ledger', witness, steward: w.steward };
  if (w.length > length) {
    return { status: 'mismatch', code: 'WITNESS_LENGTH_BEYOND', witness, length: w.length, head: w.head, message: `the witness saw length ${w.length}; this ledger has ${length} entries (history was truncated or rewritten)` };
  }
  return { w, witness };
}

/** `ours`: this ledger's address at the receipt's length. */
function placeReceipt({ w, witness }: Opened1, ours: string | undefined): ReceiptStatus {
  if (ours !== w.head) {
    return { status: 'mismatch', code: 'WITNESS_HEAD_MISMATCH', witness, length: w.length, head: w.head, ours: ours!, message: `at length ${w.length} the witness saw ${w.head}; this ledger has ${ours} (history was rewritten)` };
  }
  return { status: 'valid', witness, length: w.length, head: w.head };
}

export function checkReceipt(ledger: LedgerView, bytes: Uint8Array): ReceiptStatus {
  const o = openReceipt(ledger.steward, ledger.addresses.length, bytes);
  return 'status' in o ? o : placeReceipt(o, ledger.addresses[o.w.length - 1]);
}

/** checkReceipt against a ledger read through its store: one entry read, at the receipt's length. */
export async function checkStoredReceipt(ledger: StoredLedgerView, bytes: Uint8Array): Promise<ReceiptStatus> {
  const o = openReceipt(ledger.steward, ledger.length, bytes);
  return 'status' in o ? o : placeReceipt(o, await ledger.addressAt(o.w.length - 1));
}

export interface GradeOptions {
  /** The witnesses whose receipts count (DIDs); absent: every key's. */
  witnesses?: Iterable<string>;
}

/** The signer a receipt claims, without verifying it; undefined when the envelope cannot be read. */
function claimedSigner(bytes: Uint8Array): string | undefined {
  try {
    return peekType(bytes).signer;
  } catch {
    return undefined;
  }
}

/** The reader's list of witnesses applied to a receipt's status (checkNamedReceipt). */
function nameReceipt(s: ReceiptStatus, bytes: Uint8Array, named: ReadonlySet<string> | undefined): ReceiptStatus {
  if (!named || s.status === 'refused') return s;
  const signer = s.witness ?? claimedSigner(bytes);
  return signer !== undefined && named.has(signer) ? s : { status: 'not-named', ...(signer === undefined ? {} : { witness: signer }) };
}

/**
 * checkReceipt, then the reader's list of witnesses (when there is one): a receipt from any other key is `not-named`,
 * whatever else it is, except one signed with the steward's own key, which stays `refused` (§6.7).
 */
export function checkNamedReceipt(ledger: LedgerView, bytes: Uint8Array, named: ReadonlySet<string> | undefined): ReceiptStatus {
  return nameReceipt(checkReceipt(ledger, bytes), bytes, named);
}

/** checkNamedReceipt against a ledger read through its store. */
export async function checkNamedStoredReceipt(ledger: StoredLedgerView, bytes: Uint8Array, named: ReadonlySet<string> | undefined): Promise<ReceiptStatus> {
  return nameReceipt(await checkStoredReceipt(ledger, bytes), bytes, named);
}

function gradeStatuses(statuses: ReceiptStatus[]): Attestation {
  const best = new Map<string, number>();
  for (const s of statuses) if (s.status === 'valid') best.set(s.witness, Math.max(best.get(s.witness) ?? 0, s.length));
  const witnesses = [...best.entries()].map(([witness, length]) => ({ witness, length })).sort((a, b) => compareDids(a.witness, b.witness));
  const witnessedLength = witnesses.reduce((m, w) => Math.max(m, w.length), 0);
  return { grade: witnesses.length > 0 ? 'witnessed' : 'self-attested', witnesses, witnessedLength, receipts: statuses };
}

export function gradeAttestation(ledger: LedgerView, receipts: readonly Uint8Array[], opts: GradeOptions = {}): Attestation {
  const named = opts.witnesses === undefined ? undefined : new Set(opts.witnesses);
  return gradeStatuses(receipts.map((r) => checkNamedReceipt(ledger, r, named)));
}

/** gradeAttestation against a ledger read through its store. */
export async function gradeStoredAttestation(ledger: StoredLedgerView, receipts: readonly Uint8Array[], opts: GradeOptions = {}): Promise<Attestation> {
  const named = opts.witnesses === undefined ? undefined : new Set(opts.witnesses);
  const statuses: ReceiptStatus[] = [];
  for (const r of receipts) statuses.push(await checkNamedStoredReceipt(ledger, r, named));
  return gradeStatuses(statuses);
}

/**
 * Evidence of equivocation, two entries signed by one steward:
 * - form `same-seq` (the default, and the only form before forks were kept): both at one seq, different content;
 * - form `successor`: `b` is at `a`'s seq + 1 but its `prev` is not `a`'s address — the steward signed `a` at
 *   that seq and also signed a history in which that seq holds another entry (a fork beginning right after `a`).
 * `seq` is `a`'s seq in both forms.
 */
export interface Equivocation {
  steward: string;
  seq: number;
  a: Uint8Array;
  b: Uint8Array;
  form?: EquivocationForm;
}

export type EquivocationForm = 'same-seq' | 'successor';

export const EQUIV_ERR = { NOT_PROVEN: 'EQUIVOCATION_NOT_PROVEN' } as const;

/** Open both entries of a piece of evidence; they must verify and share one signer (else EQUIVOCATION_NOT_PROVEN). */
function openEvidencePair(a: Uint8Array, b: Uint8Array): { oa: Opened; ob: Opened; ra: LedgerEntry; rb: LedgerEntry } {
  let oa: Opened;
  let ob: Opened;
  try {
    oa = open(a, POOL_TYPE);
    ob = open(b, POOL_TYPE);
  } catch (e) {
    if (!(e instanceof C0Error)) throw e;
    throw new C0Error(EQUIV_ERR.NOT_PROVEN, `an entry of the evidence does not verify: ${e.code}`, { detail: { reason: e.code } });
  }
  if (oa.signer !== ob.signer) throw new C0Error(EQUIV_ERR.NOT_PROVEN, 'the two entries are signed by different keys');
  return { oa, ob, ra: oa.record as LedgerEntry, rb: ob.record as LedgerEntry };
}

/** Verify equivocation evidence from the two records alone. Returns the steward and seq, or throws. */
export function verifyEquivocation(a: Uint8Array, b: Uint8Array): { steward: string; seq: number; addresses: [string, string] } {
  const { oa, ob, ra, rb } = openEvidencePair(a, b);
  if (ra.seq !== rb.seq) throw new C0Error(EQUIV_ERR.NOT_PROVEN, `the two entries have different seq (${ra.seq}, ${rb.seq})`);
  if (compareBytes(a, b) === 0 || oa.address === ob.address) throw new C0Error(EQUIV_ERR.NOT_PROVEN, 'the two entries are the same entry');
  return { steward: oa.signer, seq: ra.seq, addresses: [oa.address, ob.address] };
}

/**
 * Verify fork evidence from the two records alone: `b` is signed by `a`'s
 * signer at `a`'s seq + 1 and does not link to `a` (its prev is not a's
 * address). Returns the steward and `a`'s seq, or throws.
 */
export function verifySuccessorFork(a: Uint8Array, b: Uint8Array): { steward: string; seq: number; addresses: [string, string] } {
  const { oa, ob, ra, rb } = openEvidencePair(a, b);
  if (rb.seq !== ra.seq + 1) throw new C0Error(EQUIV_ERR.NOT_PROVEN, `the second entry is not the first's successor (seq ${ra.seq}, ${rb.seq})`);
  if (rb.prev === oa.address) throw new C0Error(EQUIV_ERR.NOT_PROVEN, 'the second entry links to the first: no fork');
  return { steward: oa.signer, seq: ra.seq, addresses: [oa.address, ob.address] };
}

/** Verify evidence of either form. */
export function verifyEvidence(a: Uint8Array, b: Uint8Array, form: EquivocationForm = 'same-seq'): { steward: string; seq: number; addresses: [string, string] } {
  return form === 'successor' ? verifySuccessorFork(a, b) : verifyEquivocation(a, b);
}
