/**
 * Export and import of a ledger as one file: a canonical CBOR map
 *   { format: "c0mpute.ledger/1", entries: [bstr…], receipts: [bstr…], head?: bstr }
 * Entries are the pool/1 envelopes in seq order; receipts are pool-witness/1
 * envelopes; `head`, in a file exported from a directory, is that directory's
 * head record (`meta/head`) as it was stored (head-record.ts). The file is
 * verified exactly like a directory: a stored head that does not match the
 * entries, or cannot be read, fails it (LEDGER_HEAD_MISMATCH). A file without
 * `head` (`ledger fetch`, or an export by an earlier build) has no head to check.
 */
import { readFileSync } from 'node:fs';
import { C0Error } from '../errors.js';
import { decodeCanonical, encodeCanonical } from '../records/cbor.js';
import type { RawLedger } from './store.js';
import { encodeHeadRecord, readHeadRecord } from './head-record.js';
import { writeFileAtomic } from '../util/atomic-file.js';

export const FILE_FORMAT = 'c0mpute.ledger/1';
export const FILE_ERR = { UNREADABLE: 'LEDGER_FILE_UNREADABLE', MALFORMED: 'LEDGER_FILE_MALFORMED' } as const;

export function encodeLedgerFile(raw: RawLedger): Uint8Array {
  const head = raw.metaRecord ?? (raw.meta ? encodeHeadRecord(raw.meta) : undefined);
  return encodeCanonical({ format: FILE_FORMAT, entries: raw.entries, receipts: raw.receipts, ...(head ? { head } : {}) });
}

export function decodeLedgerFile(bytes: Uint8Array): RawLedger {
  let v: unknown;
  try {
    v = decodeCanonical(bytes, { recheck: false });
  } catch (e) {
    throw new C0Error(FILE_ERR.MALFORMED, `not a ledger file: ${(e as Error).message}`, { detail: { reason: (e as C0Error).code } });
  }
  const o = v as Record<string, unknown>;
  if (typeof o !== 'object' || o === null || o.format !== FILE_FORMAT) throw new C0Error(FILE_ERR.MALFORMED, `not a ${FILE_FORMAT} file`, { field: 'format' });
  const list = (k: string): Uint8Array[] => {
    const a = o[k];
    if (!Array.isArray(a) || !a.every((x) => x instanceof Uint8Array)) throw new C0Error(FILE_ERR.MALFORMED, `${k}: expected a list of byte strings`, { field: k });
    return a as Uint8Array[];
  };
  const head = o.head;
  if (head !== undefined && !(head instanceof Uint8Array)) throw new C0Error(FILE_ERR.MALFORMED, 'head: expected the head record as a byte string', { field: 'head' });
  return { entries: list('entries'), receipts: list('receipts'), ...(head ? { ...readHeadRecord(head), metaRecord: head } : {}) };
}

/** Write the ledger file whole or not at all (util/atomic-file.ts): an existing file is replaced only by a complete one. */
export function writeLedgerFile(path: string, raw: RawLedger): void {
  writeFileAtomic(path, encodeLedgerFile(raw));
}

export function readLedgerFile(path: string): RawLedger {
  let b: Uint8Array;
  try {
    b = new Uint8Array(readFileSync(path));
  } catch (e) {
    throw new C0Error(FILE_ERR.UNREADABLE, `cannot read ${path}: ${(e as Error).message}`);
  }
  return decodeLedgerFile(b);
}
