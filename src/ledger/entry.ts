/**
 * The two record kinds of the ledger, registered with the one envelope:
 *
 * - `pool/1`: a ledger entry, sealed by the steward (pool/1 §6.5). The core
 *   carries `pool_receipt` (version marker, always 1), `seq`, `prev` (content
 *   address of the previous entry; 32 zero bytes for the first), `steward`,
 *   `at`, `event` and the event's own fields.
 * - `pool-witness/1`: a witness receipt (§6.7): the steward, the ledger length
 *   and the head address it reached, and when the witness signed.
 */
import { C0Error } from '../errors.js';
import { registerKind, seal } from '../records/envelope.js';
import { didFromPublicKey } from '../records/did.js';
import type { Signer } from '../records/ed25519.js';
import type { Schema } from '../records/schema.js';
import { GRADES, type Grade } from '../records/kinds.js';
import type { PoolEvent } from '../pool/usage.js';
import { POOL_TYPE, WITNESS_TYPE } from './kind-names.js';

export { POOL_TYPE, WITNESS_TYPE };

/** The genesis sentinel: `prev` of entry 0 is 32 zero bytes. */
export const GENESIS = 'sha256:' + '0'.repeat(64);

export const ENTRY_ERR = {
  SIGNER_NOT_STEWARD: 'LEDGER_ENTRY_SIGNER_NOT_STEWARD',
  EVENT_FIELDS: 'LEDGER_ENTRY_EVENT_FIELDS',
  WITNESS_IS_STEWARD: 'WITNESS_IS_STEWARD',
} as const;

export interface LedgerEntry {
  pool_receipt: number;
  seq: number;
  prev: string;
  steward: string;
  at: number;
  event: 'Admitted' | 'Released';
  claim: string;
  entitlement?: string;
  class?: string;
  reserved?: { uj: number; grade: Grade };
  devices?: number;
  borrowed_uj?: number;
  actual?: { uj: number; grade: Grade };
}

export interface WitnessReceipt {
  steward: string;
  length: number;
  head: string;
  witnessedAt: number;
}

const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$/;
const energy = (doc: string) =>
  ({
    t: 'object',
    optional: true,
    doc,
    fields: {
      uj: { t: 'uint', doc: 'microjoules', unit: 'µJ' },
      grade: { t: 'enum', values: GRADES, doc: 'provenance of the figure (§2.3)' },
    },
  }) as const;

export const ENTRY_SCHEMA: Schema = {
  pool_receipt: { t: 'uint', min: 1, max: 1, doc: 'version marker of the pool/1 receipt format; always 1' },
  seq: { t: 'uint', doc: 'position in the ledger, from 0' },
  prev: { t: 'addr', doc: 'content address (SHA-256 of the envelope) of the previous entry; 32 zero bytes for entry 0' },
  steward: { t: 'did', doc: 'the steward that sealed the entry; must be the signer' },
  at: { t: 'time', doc: 'when the steward appended the entry (ms since epoch); informational, not ordered' },
  event: { t: 'enum', values: ['Admitted', 'Released'], doc: 'the ledger event (§6.2)' },
  claim: { t: 'text', re: NAME_RE, maxLen: 128, doc: 'the claim id (unique in the ledger)' },
  entitlement: { t: 'text', re: NAME_RE, maxLen: 128, optional: true, doc: 'Admitted: the entitlement reserved against' },
  class: { t: 'text', maxLen: 128, optional: true, doc: 'Admitted: the class the claim declared (absent: none)' },
  reserved: energy('Admitted: the reservation (the estimate) and its grade'),
  devices: { t: 'uint', min: 1, optional: true, doc: 'Admitted: devices held by the gang' },
  borrowed_uj: { t: 'uint', optional: true, doc: 'Admitted: how much of the reservation was borrowed surplus', unit: 'µJ' },
  actual: energy('Released: the actual figure charged in place of the reservation, and its grade'),
};

export const WITNESS_SCHEMA: Schema = {
  steward: { t: 'did', doc: 'the steward whose ledger is witnessed' },
  length: { t: 'uint', min: 1, doc: 'ledger length (entries) the witness saw' },
  head: { t: 'addr', doc: 'content address of the entry at seq = length - 1' },
  witnessedAt: { t: 'time', doc: 'when the witness signed' },
};

function need(cond: boolean, field: string, msg: string): void {
  if (!cond) throw new C0Error(ENTRY_ERR.EVENT_FIELDS, `${field}: ${msg}`, { field });
}

export function entryRules(e: LedgerEntry, signer: string): void {
  if (e.steward !== signer) throw new C0Error(ENTRY_ERR.SIGNER_NOT_STEWARD, 'steward: an entry must be signed by the steward it names', { field: 'steward' });
  if (e.event === 'Admitted') {
    need(e.entitlement !== undefined, 'entitlement', 'required on Admitted');
    need(e.reserved !== undefined, 'reserved', 'required on Admitted');
    need(e.devices !== undefined, 'devices', 'required on Admitted');
    need(e.borrowed_uj !== undefined, 'borrowed_uj', 'required on Admitted');
    need(e.actual === undefined, 'actual', 'only a Released entry carries actual');
    need(e.borrowed_uj! <= e.reserved!.uj, 'borrowed_uj', 'cannot exceed the reservation');
    if (e.class !== undefined) need(e.class.trim().length > 0, 'class', 'omit an empty class');
  } else {
    need(e.actual !== undefined, 'actual', 'required on Released');
    for (const k of ['entitlement', 'class', 'reserved', 'devices', 'borrowed_uj'] as const) need(e[k] === undefined, k, 'only an Admitted entry carries it');
  }
}

export function witnessRules(w: WitnessReceipt, signer: string): void {
  if (w.steward === signer) throw new C0Error(ENTRY_ERR.WITNESS_IS_STEWARD, 'steward: a witness whose key is the steward’s establishes nothing', { field: 'steward' });
}

registerKind<LedgerEntry>({ type: POOL_TYPE, schema: ENTRY_SCHEMA, rules: entryRules });
registerKind<WitnessReceipt>({ type: WITNESS_TYPE, schema: WITNESS_SCHEMA, rules: witnessRules });

/** The pool event an entry records. */
export function eventOf(e: LedgerEntry): PoolEvent {
  if (e.event === 'Admitted') {
    const ev: PoolEvent = { event: 'Admitted', claim: e.claim, entitlement: e.entitlement!, reserved: e.reserved!, devices: e.devices!, borrowed_uj: e.borrowed_uj! };
    if (e.class !== undefined) ev.class = e.class;
    return ev;
  }
  return { event: 'Released', claim: e.claim, actual: e.actual! };
}

/** The entry fields for an event at a position. */
export function entryFor(ev: PoolEvent, seq: number, prev: string, steward: string, at: number): LedgerEntry {
  const base = { pool_receipt: 1, seq, prev, steward, at, claim: ev.claim };
  if (ev.event === 'Admitted') {
    const e: LedgerEntry = { ...base, event: 'Admitted', entitlement: ev.entitlement, reserved: { uj: ev.reserved.uj, grade: ev.reserved.grade }, devices: ev.devices, borrowed_uj: ev.borrowed_uj };
    if (ev.class !== undefined) e.class = ev.class;
    return e;
  }
  return { ...base, event: 'Released', actual: { uj: ev.actual.uj, grade: ev.actual.grade } };
}

/** Seal a run of events as entries continuing from (length, head): pure, for tests, tools and the bench. */
export function sealEntries(events: readonly PoolEvent[], signer: Signer, opts: { start?: { length: number; head: string }; at?: number } = {}): Array<{ bytes: Uint8Array; address: string }> {
  const steward = didFromPublicKey(signer.publicKey);
  let seq = opts.start?.length ?? 0;
  let prev = opts.start?.head ?? GENESIS;
  const out: Array<{ bytes: Uint8Array; address: string }> = [];
  for (const ev of events) {
    const o = seal(POOL_TYPE, entryFor(ev, seq, prev, steward, opts.at ?? 1_800_000_000_000 + seq) as never, signer);
    out.push({ bytes: o.bytes, address: o.address });
    prev = o.address;
    seq++;
  }
  return out;
}
