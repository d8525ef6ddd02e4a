/**
 * One report for a ledger (directory or file): replay, then attestation
 * (pool/1 §6.4–§6.8). Pure over the raw contents. A ledger fails when its chain
 * does not verify, when a directory's stored head does not match its entries,
 * or when one of its own witness receipts contradicts it: a receipt that
 * verifies but covers another head or a longer history (rewritten or
 * truncated), or one that verifies and names another steward (the ledger was
 * re-signed under another key). With `witnesses`, only those keys' receipts
 * count, toward the grade or as a contradiction (attest.ts).
 */
import { C0Error } from '../errors.js';
import { replay, type ReplayResult } from './replay.js';
import { gradeAttestation, type Attestation, type GradeOptions } from './attest.js';
import type { RawLedger } from './store.js';

export const VERIFY_ERR = {
  /** a receipt of the ledger names another steward */
  OTHER_STEWARD: 'WITNESS_OTHER_STEWARD',
  /** refusing a ledger whose own witness receipts contradict it (import, pool check) */
  CONTRADICTED: 'LEDGER_WITNESS_CONTRADICTS',
} as const;

export interface VerifyReport {
  ok: boolean;
  replay: ReplayResult;
  attestation: Attestation;
  /** the first problem: a chain problem, else a receipt that verifies but covers a different head */
  problem?: { index?: number; code: string; message: string };
}

export function verifyLedger(raw: RawLedger, opts: { steward?: string } & GradeOptions = {}): VerifyReport {
  const r = replay(raw.entries, opts.steward === undefined ? {} : { steward: opts.steward });
  const attestation = gradeAttestation(
    { ...(r.steward === undefined ? {} : { steward: r.steward }), addresses: r.ok ? r.addresses : [] },
    r.ok ? raw.receipts : [],
    opts.witnesses === undefined ? {} : { witnesses: opts.witnesses },
  );
  if (!r.ok) return { ok: false, replay: r, attestation: { grade: 'self-attested', witnesses: [], witnessedLength: 0, receipts: [] }, problem: { ...r.problem! } };
  if (raw.metaUnreadable !== undefined) {
    return { ok: false, replay: r, attestation, problem: { code: 'LEDGER_HEAD_MISMATCH', message: `the stored head record (meta/head) is unreadable (${raw.metaUnreadable}); the entries verify (${r.length}, ${r.head})` } };
  }
  if (raw.meta && (raw.meta.length !== r.length || raw.meta.head !== r.head)) {
    return { ok: false, replay: r, attestation, problem: { code: 'LEDGER_HEAD_MISMATCH', message: `stored head (${raw.meta.length}, ${raw.meta.head}) does not match the entries (${r.length}, ${r.head})` } };
  }
  const mismatch = attestation.receipts.find((s) => s.status === 'mismatch');
  if (mismatch && mismatch.status === 'mismatch') return { ok: false, replay: r, attestation, problem: { code: mismatch.code, message: `witness ${mismatch.witness}: ${mismatch.message}` } };
  const other = attestation.receipts.find((s) => s.status === 'other-ledger');
  if (other && other.status === 'other-ledger') {
    return {
      ok: false,
      replay: r,
      attestation,
      problem: { code: VERIFY_ERR.OTHER_STEWARD, message: `witness ${other.witness} cosigned this ledger for steward ${other.steward}, but its entries are signed by ${r.steward ?? '(none)'} (re-signed under another key?)` },
    };
  }
  return { ok: true, replay: r, attestation };
}

/**
 * Throw unless the report verifies: LEDGER_CORRUPT for a chain that does not
 * verify, LEDGER_HEAD_MISMATCH for a stored head that does not match,
 * LEDGER_WITNESS_CONTRADICTS for a receipt that contradicts the ledger,
 * LEDGER_EQUIVOCATION_EVIDENCE for evidence a steward's node holds against it;
 * the problem is the error's detail.
 */
export function assertVerified(rep: VerifyReport, what: string): void {
  if (rep.ok) return;
  const p = rep.problem!;
  // evidence a steward's node holds against its ledger (`export` of its ledger directory: src/cli/commands/ledger.ts) keeps its own code
  const code = !rep.replay.ok ? 'LEDGER_CORRUPT' : p.code === 'LEDGER_HEAD_MISMATCH' || p.code === 'LEDGER_EQUIVOCATION_EVIDENCE' ? p.code : VERIFY_ERR.CONTRADICTED;
  throw new C0Error(code, `${what}: the ledger does not verify: ${p.index !== undefined ? `entry ${p.index}: ` : ''}${p.code}: ${p.message}`, { detail: { ...p } });
}
