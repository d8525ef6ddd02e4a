/** One report for a ledger (directory or file): replay, then attestation. Pure over the raw contents. */
import { replay, type ReplayResult } from './replay.js';
import { gradeAttestation, type Attestation } from './attest.js';
import type { RawLedger } from './store.js';

export interface VerifyReport {
  ok: boolean;
  replay: ReplayResult;
  attestation: Attestation;
  /** the first problem: a chain problem, else a receipt that verifies but covers a different head */
  problem?: { index?: number; code: string; message: string };
}

export function verifyLedger(raw: RawLedger, opts: { steward?: string } = {}): VerifyReport {
  const r = replay(raw.entries, opts);
  const attestation = gradeAttestation({ ...(r.steward === undefined ? {} : { steward: r.steward }), addresses: r.ok ? r.addresses : [] }, r.ok ? raw.receipts : []);
  if (!r.ok) return { ok: false, replay: r, attestation: { grade: 'self-attested', witnesses: [], witnessedLength: 0, receipts: [] }, problem: { ...r.problem! } };
  if (raw.meta && (raw.meta.length !== r.length || raw.meta.head !== r.head)) {
    return { ok: false, replay: r, attestation, problem: { code: 'LEDGER_HEAD_MISMATCH', message: `stored head (${raw.meta.length}, ${raw.meta.head}) does not match the entries (${r.length}, ${r.head})` } };
  }
  const mismatch = attestation.receipts.find((s) => s.status === 'mismatch');
  if (mismatch && mismatch.status === 'mismatch') return { ok: false, replay: r, attestation, problem: { code: mismatch.code, message: `witness ${mismatch.witness}: ${mismatch.message}` } };
  return { ok: true, replay: r, attestation };
}
