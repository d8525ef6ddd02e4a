/**
 * A ledger directory's head record (`meta/head`): canonical CBOR `{length, head (32 bytes), steward?}`, the length and
 * last entry address the steward wrote with every append. Read by the store (src/ledger/store.ts) and carried in an
 * exported file (src/ledger/file.ts), so a file verifies exactly as the directory it came from: a stored head that
 * does not match the entries (an acknowledged entry lost) stays provable after `ledger export --unverified`.
 */
import { C0Error } from '../errors.js';
import { decodeCanonical, encodeCanonical } from '../records/cbor.js';
import { addressToBytes, bytesToAddress } from '../records/address.js';

export interface HeadRecord {
  length: number;
  head: string;
  steward?: string;
}

/** The code a head record that cannot be read is reported with (as a stored head that does not match: store.ts LEDGER_ERR). */
const HEAD_MISMATCH = 'LEDGER_HEAD_MISMATCH';

export function encodeHeadRecord(m: HeadRecord): Uint8Array {
  return encodeCanonical({ length: m.length, head: addressToBytes(m.head), ...(m.steward === undefined ? {} : { steward: m.steward }) });
}

/**
 * The head record, checked: canonical CBOR `{length, head (32 bytes), steward?}`. Anything else (a damaged disk, a
 * tool writing the wrong sublevel) throws LEDGER_HEAD_MISMATCH with `detail.reason`: the head cannot be read, so it
 * cannot be shown to match the entries.
 */
export function decodeHeadRecord(b: Uint8Array): HeadRecord {
  const unreadable = (reason: string) => new C0Error(HEAD_MISMATCH, `the stored head record (meta/head) is unreadable: ${reason}`, { detail: { reason } });
  let m;
  try {
    m = decodeCanonical(b);
  } catch (e) {
    if (!(e instanceof C0Error)) throw e;
    throw unreadable(`${e.code}: ${e.message}`);
  }
  if (typeof m !== 'object' || m === null || Array.isArray(m) || m instanceof Uint8Array) throw unreadable('not a map');
  const { length, head, steward } = m as Record<string, unknown>;
  if (typeof length !== 'number' || !Number.isSafeInteger(length) || length < 0) throw unreadable('length: not a count of entries');
  if (!(head instanceof Uint8Array) || head.length !== 32) throw unreadable('head: not a 32-byte address');
  if (steward !== undefined && typeof steward !== 'string') throw unreadable('steward: not text');
  return { length, head: bytesToAddress(head), ...(steward === undefined ? {} : { steward }) };
}

/** A head record's bytes read as RawLedger holds them: `meta`, or why it cannot be read (`metaUnreadable`). */
export function readHeadRecord(b: Uint8Array): { meta: HeadRecord } | { metaUnreadable: string } {
  try {
    return { meta: decodeHeadRecord(b) };
  } catch (e) {
    if (!(e instanceof C0Error) || e.code !== HEAD_MISMATCH) throw e;
    return { metaUnreadable: (e.detail as { reason: string }).reason };
  }
}
