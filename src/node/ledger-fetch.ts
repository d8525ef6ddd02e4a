/**
 * A steward's ledger entries fetched over `/c0mpute/ledger/1` (GET /v1/ledger/:steward, `c0mpute ledger fetch`;
 * docs/overlays.md "Reading the attestation from any node"). The steward answers ranges of at most MAX_LEDGER_RANGE
 * entries; a full range means there may be more. The whole fetch is bounded, since the answer is held in memory
 * (and then sent whole as one API answer): at most `maxBytes` of entries (LEDGER_FETCH_TOO_LARGE past it) within
 * `budgetMs` in all (LEDGER_FETCH_TIMEOUT), so a steward that answers full ranges for ever cannot grow the daemon's
 * heap without end. Each entry is checked as it comes: a `pool/1` record (type, canonical shape) sealed by that
 * steward, at its position (seq) and linking to the one before it (prev); the first that is not stops the fetch
 * (LEDGER_FETCH_BROKEN, nothing returned). Signatures are left to `ledger verify`, which checks every one (off the
 * daemon's event loop): only the steward's key can sign its entries, and it is the steward that answers.
 */
import { C0Error } from '../errors.js';
import { open } from '../records/envelope.js';
import { GENESIS, POOL_TYPE, type LedgerEntry } from '../ledger/entry.js';
import { LEDGER_PROTOCOL, MAX_LEDGER_RANGE } from '../roles/steward-ports.js';
import { NET_ERR, PROTOCOL_LIMITS } from '../net/protocols.js';
import type { Network } from '../net/node.js';

export const LEDGER_FETCH_ERR = {
  TOO_LARGE: 'LEDGER_FETCH_TOO_LARGE',
  TIMEOUT: 'LEDGER_FETCH_TIMEOUT',
  BROKEN: 'LEDGER_FETCH_BROKEN',
  BAD_LIMIT: 'LEDGER_FETCH_BAD_LIMIT',
} as const;

const MIB = 1024 * 1024;
/** Entry bytes one fetch holds by default (as a witness's catch-up: about 150,000 entries). */
export const LEDGER_FETCH_DEFAULT_MIB = 64;
/** The most a caller may ask for (`?maxMiB=`, `--max-mib`): the whole file goes back base64 in one JSON answer. */
export const LEDGER_FETCH_MAX_MIB = 256;
/** The fetch's whole time, every range included: this much per 64 MiB allowed, and never less. */
export const LEDGER_FETCH_BUDGET_MS = 120_000;
/** One range call's deadline (within the whole budget). */
const RANGE_DEADLINE_MS = 60_000;
/** What framing adds to each entry on the wire (length prefix, CBOR data frame header), at most. */
const FRAME_OVERHEAD = 16;

export interface LedgerFetchOptions {
  /** Entry bytes held at most (default LEDGER_FETCH_DEFAULT_MIB MiB). */
  maxBytes?: number;
  /** The whole fetch's time, ms (default LEDGER_FETCH_BUDGET_MS per 64 MiB of maxBytes, at least LEDGER_FETCH_BUDGET_MS). */
  budgetMs?: number;
}

/** `?maxMiB=` as the API takes it: a whole number of MiB from 1 to LEDGER_FETCH_MAX_MIB; absent, undefined. */
export function parseFetchMiB(v: string | null | undefined): number | undefined {
  if (v === null || v === undefined) return undefined;
  const n = /^[0-9]{1,4}$/.test(v) ? Number(v) : NaN;
  if (!(n >= 1 && n <= LEDGER_FETCH_MAX_MIB)) throw new C0Error(LEDGER_FETCH_ERR.BAD_LIMIT, `maxMiB must be a whole number from 1 to ${LEDGER_FETCH_MAX_MIB}, got "${v.slice(0, 40)}"`, { field: 'maxMiB' });
  return n;
}

/** A fetch's whole time by default for a bound of `maxBytes`: LEDGER_FETCH_BUDGET_MS per 64 MiB, never less (the CLI waits this long too). */
export function ledgerFetchBudgetMs(maxBytes: number = LEDGER_FETCH_DEFAULT_MIB * MIB): number {
  return Math.max(LEDGER_FETCH_BUDGET_MS, Math.ceil((maxBytes / (64 * MIB)) * LEDGER_FETCH_BUDGET_MS));
}

/** The entries of `steward`'s ledger, from seq 0, each checked to chain (see the module comment). */
export async function fetchLedgerEntries(net: Pick<Network, 'request'>, steward: string, opts: LedgerFetchOptions = {}): Promise<Uint8Array[]> {
  const maxBytes = opts.maxBytes ?? LEDGER_FETCH_DEFAULT_MIB * MIB;
  const budgetMs = opts.budgetMs ?? ledgerFetchBudgetMs(maxBytes);
  const budget = AbortSignal.timeout(budgetMs);
  const protocolCap = PROTOCOL_LIMITS[LEDGER_PROTOCOL]?.maxResponseBytes ?? MAX_LEDGER_RANGE * 64 * 1024;
  const entries: Uint8Array[] = [];
  let bytes = 0;
  let prev = GENESIS;
  const tooLarge = () =>
    new C0Error(LEDGER_FETCH_ERR.TOO_LARGE, `the steward's ledger passes ${Math.round(maxBytes / MIB)} MiB after ${entries.length} entries: fetch it with a larger bound (--max-mib, at most ${LEDGER_FETCH_MAX_MIB})`, { detail: { entries: entries.length, maxBytes } });
  const timedOut = () => new C0Error(LEDGER_FETCH_ERR.TIMEOUT, `fetching the steward's ledger took more than ${budgetMs} ms (${entries.length} entries so far)`, { detail: { entries: entries.length, budgetMs } });
  const broken = (seq: number, why: string) => new C0Error(LEDGER_FETCH_ERR.BROKEN, `entry ${seq} as the steward served it: ${why}`, { detail: { index: seq } });
  for (;;) {
    const from = entries.length;
    // no range may bring more than what is left of the bound (plus framing)
    const left = maxBytes - bytes;
    const cap = Math.min(protocolCap, left + MAX_LEDGER_RANGE * FRAME_OVERHEAD);
    let frames;
    try {
      frames = await net.request(steward, LEDGER_PROTOCOL, [{ from } as never], { limits: { deadlineMs: RANGE_DEADLINE_MS, maxResponseBytes: cap }, signal: budget });
    } catch (e) {
      if (budget.aborted) throw timedOut();
      if (e instanceof C0Error && e.code === NET_ERR.RESPONSE_TOO_LARGE && cap < protocolCap) throw tooLarge();
      throw e;
    }
    if (frames.length > MAX_LEDGER_RANGE) throw broken(from + MAX_LEDGER_RANGE, `more than ${MAX_LEDGER_RANGE} entries in one range`);
    for (const f of frames) {
      const seq = entries.length;
      if (!(f instanceof Uint8Array)) throw broken(seq, 'not a byte string');
      bytes += f.length;
      if (bytes > maxBytes) throw tooLarge();
      let o;
      try {
        o = open(f, POOL_TYPE, { trusted: true });
      } catch (e) {
        if (!(e instanceof C0Error)) throw e;
        throw broken(seq, `${e.code}: ${e.message}`);
      }
      const rec = o.record as LedgerEntry;
      if (o.signer !== steward) throw broken(seq, `sealed by ${o.signer}, not by the steward asked`);
      if (rec.seq !== seq) throw broken(seq, `its seq is ${rec.seq}`);
      if (rec.prev !== prev) throw broken(seq, `it does not link to entry ${seq - 1} (prev ${rec.prev})`);
      prev = o.address;
      entries.push(o.bytes);
    }
    if (frames.length < MAX_LEDGER_RANGE) return entries;
    if (budget.aborted) throw timedOut();
  }
}
