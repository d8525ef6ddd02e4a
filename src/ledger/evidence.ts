/**
 * `pool-evidence/1`: what a witness publishes when a steward equivocates — two
 * entries the steward signed at one seq with different content. Anyone can
 * check it from the two entries alone (verifyEquivocation); the witness's own
 * signature only says who noticed.
 */
import { C0Error } from '../errors.js';
import { registerKind } from '../records/envelope.js';
import type { Schema } from '../records/schema.js';
import { verifyEquivocation } from './attest.js';

export const EVIDENCE_TYPE = 'pool-evidence/1';

export interface EquivocationEvidence {
  steward: string;
  seq: number;
  /** the entry the witness had cosigned (steward-signed envelope) */
  held: Uint8Array;
  /** the steward-signed entry at the same seq with different content */
  conflicting: Uint8Array;
  observedAt: number;
}

export const EVIDENCE_SCHEMA: Schema = {
  steward: { t: 'did', doc: 'the steward that signed both entries' },
  seq: { t: 'uint', doc: 'the seq at which it signed two entries' },
  held: { t: 'bytes', maxLen: 65_536, doc: 'the entry the witness had cosigned (a pool/1 envelope)' },
  conflicting: { t: 'bytes', maxLen: 65_536, doc: 'the conflicting entry (a pool/1 envelope)' },
  observedAt: { t: 'time', doc: 'when the witness saw the conflict' },
};

export function evidenceRules(e: EquivocationEvidence): void {
  let v;
  try {
    v = verifyEquivocation(e.held, e.conflicting);
  } catch (err) {
    if (!(err instanceof C0Error)) throw err;
    throw new C0Error('EVIDENCE_NOT_PROVEN', `the evidence does not prove equivocation: ${err.message}`, { field: 'conflicting', detail: { reason: err.code } });
  }
  if (v.steward !== e.steward || v.seq !== e.seq) throw new C0Error('EVIDENCE_MISLABELLED', 'steward or seq do not match the two entries', { field: 'steward' });
}

registerKind<EquivocationEvidence>({ type: EVIDENCE_TYPE, schema: EVIDENCE_SCHEMA, rules: evidenceRules });
