/**
 * `pool-evidence/1`: what a witness publishes when a steward equivocates — two
 * entries the steward signed that no single append-only history holds: at one
 * seq with different content (`form` absent), or (`form: successor`) the
 * held entry and an entry at the next seq that does not link to it (a fork
 * beginning right after the head the witness held). Anyone can check it from
 * the two entries alone (verifyEvidence); the witness's own signature only
 * says who noticed.
 */
import { C0Error } from '../errors.js';
import { registerKind } from '../records/envelope.js';
import type { Schema } from '../records/schema.js';
import { verifyEvidence } from './attest.js';
import { EVIDENCE_TYPE } from './kind-names.js';

export { EVIDENCE_TYPE };

export interface EquivocationEvidence {
  steward: string;
  seq: number;
  /** the entry the witness had cosigned (steward-signed envelope) */
  held: Uint8Array;
  /** the steward-signed entry at the same seq with different content (form `successor`: at the next seq, not linking to `held`) */
  conflicting: Uint8Array;
  observedAt: number;
  /** absent: both entries at one seq; `successor`: a fork right after the held entry */
  form?: 'successor';
}

export const EVIDENCE_SCHEMA: Schema = {
  steward: { t: 'did', doc: 'the steward that signed both entries' },
  seq: { t: 'uint', doc: 'the seq at which it signed two entries' },
  held: { t: 'bytes', maxLen: 65_536, doc: 'the entry the witness had cosigned (a pool/1 envelope)' },
  conflicting: { t: 'bytes', maxLen: 65_536, doc: 'the conflicting entry (a pool/1 envelope)' },
  observedAt: { t: 'time', doc: 'when the witness saw the conflict' },
  form: { t: 'enum', values: ['successor'], optional: true, doc: 'absent: both entries at `seq`; `successor`: `conflicting` is at seq + 1 and does not link to `held`' },
};

export function evidenceRules(e: EquivocationEvidence): void {
  let v;
  try {
    v = verifyEvidence(e.held, e.conflicting, e.form === 'successor' ? 'successor' : 'same-seq');
  } catch (err) {
    if (!(err instanceof C0Error)) throw err;
    throw new C0Error('EVIDENCE_NOT_PROVEN', `the evidence does not prove equivocation: ${err.message}`, { field: 'conflicting', detail: { reason: err.code } });
  }
  if (v.steward !== e.steward || v.seq !== e.seq) throw new C0Error('EVIDENCE_MISLABELLED', 'steward or seq do not match the two entries', { field: 'steward' });
}

/** The pair an evidence record proves against one steward key. */
export interface EvidencePair {
  /** the two entries' addresses, sorted and joined: one pair, however many witnesses published it */
  key: string;
  seq: number;
  form: 'same-seq' | 'successor';
}

/**
 * The pair evidence record `e` proves against `steward`, checked again from its two entries; undefined when it is
 * about another key or does not prove anything. Used by the running steward (src/roles/steward.ts) and the offline
 * `ledger verify`, `show` and `export` of its directory (src/roles/steward-held.ts), which must agree on what counts as
 * one pair.
 */
export function evidencePairAgainst(e: EquivocationEvidence | undefined, steward: string): EvidencePair | undefined {
  if (e?.steward !== steward) return undefined;
  const form = e.form === 'successor' ? 'successor' : 'same-seq';
  let v: ReturnType<typeof verifyEvidence>;
  try {
    v = verifyEvidence(e.held, e.conflicting, form);
  } catch {
    return undefined; // not proven: nothing about this steward
  }
  if (v.steward !== steward) return undefined;
  return { key: [...v.addresses].sort().join(' '), seq: v.seq, form };
}

registerKind<EquivocationEvidence>({ type: EVIDENCE_TYPE, schema: EVIDENCE_SCHEMA, rules: evidenceRules });
