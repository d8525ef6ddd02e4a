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
import { closeSync, openSync, readFileSync, readSync } from 'node:fs';
import { C0Error } from '../errors.js';
import { decodeCanonical, encodeCanonical } from '../records/cbor.js';
import type { RawLedger } from './store.js';
import { encodeHeadRecord, readHeadRecord } from './head-record.js';
import { writeFileAtomic } from '../util/atomic-file.js';

export const FILE_FORMAT = 'c0mpute.ledger/1';
export const FILE_ERR = { UNREADABLE: 'LEDGER_FILE_UNREADABLE', MALFORMED: 'LEDGER_FILE_MALFORMED' } as const;
/** The keys of a ledger file's map; any other is refused (decodeLedgerFile). */
const FILE_KEYS: ReadonlySet<string> = new Set(['format', 'entries', 'receipts', 'head']);

export function encodeLedgerFile(raw: RawLedger): Uint8Array {
  const head = raw.metaRecord ?? (raw.meta ? encodeHeadRecord(raw.meta) : undefined);
  return encodeCanonical({ format: FILE_FORMAT, entries: raw.entries, receipts: raw.receipts, ...(head ? { head } : {}) });
}

/**
 * A ledger file is a CBOR map: its first byte's major type is 5 (0xa0–0xbf). Anything else (a JSON or text file, an
 * empty file, zeros) is said to be no ledger file from that byte, not from a CBOR decoder's internals ("length beyond
 * 2^32"), and a file on disk is refused on it before being read whole (QA ffLedger F6, F7).
 */
function notAMap(first: number | undefined): C0Error | undefined {
  if (first !== undefined && first >> 5 === 5) return undefined;
  const what = first === undefined ? 'the file is empty' : `it begins with byte 0x${first.toString(16).padStart(2, '0')}${first === 0x7b ? " ('{': a JSON file?)" : first >= 0x20 && first < 0x7f ? ` ('${String.fromCharCode(first)}': a text file?)` : ''}`;
  return new C0Error(FILE_ERR.MALFORMED, `not a ${FILE_FORMAT} file: a ledger file is a CBOR map, and ${what}`, { field: 'format' });
}

export function decodeLedgerFile(bytes: Uint8Array): RawLedger {
  const bad = notAMap(bytes[0]);
  if (bad) throw bad;
  let v: unknown;
  try {
    v = decodeCanonical(bytes, { recheck: false });
  } catch (e) {
    throw new C0Error(FILE_ERR.MALFORMED, `not a ledger file: ${(e as Error).message}`, { detail: { reason: (e as C0Error).code } });
  }
  const o = v as Record<string, unknown>;
  if (typeof o !== 'object' || o === null || o.format !== FILE_FORMAT) throw new C0Error(FILE_ERR.MALFORMED, `not a ${FILE_FORMAT} file`, { field: 'format' });
  // A key this build does not know is refused, not passed over: a file verified here is verified whole, and one that
  // says more than `format`, `entries`, `receipts` and `head` (a later build's, or one altered) could otherwise pass
  // "verified" with a part nobody read. Before (review s53), it was accepted silently.
  const unknown = Object.keys(o).find((k) => !FILE_KEYS.has(k));
  if (unknown !== undefined) throw new C0Error(FILE_ERR.MALFORMED, `unknown key ${JSON.stringify(unknown.slice(0, 64))} in a ${FILE_FORMAT} file: this build reads ${[...FILE_KEYS].join(', ')} only (a file from a later build, or one altered); nothing was read from it`, { field: unknown.slice(0, 64) });
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
    const first = Buffer.alloc(1);
    const fd = openSync(path, 'r');
    let n: number;
    try {
      n = readSync(fd, first, 0, 1, 0);
    } finally {
      closeSync(fd);
    }
    // refused on its first byte, not after reading (and copying) the whole file
    const bad = notAMap(n ? first[0] : undefined);
    if (bad) throw bad;
    const buf = readFileSync(path);
    b = new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
  } catch (e) {
    if (e instanceof C0Error) throw e;
    throw new C0Error(FILE_ERR.UNREADABLE, `cannot read ${path}: ${(e as Error).message}`);
  }
  return decodeLedgerFile(b);
}
