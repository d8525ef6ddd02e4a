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
 *
 * This node's own ledger (`steward` is this node, the steward of the overlay asked: `own`) is read from its store,
 * with the same checks and bounds and no dial (a node cannot dial itself: NET_DIAL_FAILED "Can not dial self"); this
 * node asked on an overlay it is not the steward of is LEDGER_FETCH_SELF. Another steward is reached first, within
 * STEWARD_REACH_MS: no address for it known or found on this overlay, or its dial failing, is
 * LEDGER_STEWARD_UNREACHABLE naming the overlay searched, at once rather than at a range's 60 s deadline.
 */
import { C0Error } from '../errors.js';
import { open } from '../records/envelope.js';
import { GENESIS, POOL_TYPE, type LedgerEntry } from '../ledger/entry.js';
import { LEDGER_PROTOCOL, MAX_LEDGER_RANGE } from '../roles/steward-ports.js';
import { NET_ERR, PROTOCOL_LIMITS, neverOpened } from '../net/protocols.js';
import type { Network } from '../net/node.js';

export const LEDGER_FETCH_ERR = {
  TOO_LARGE: 'LEDGER_FETCH_TOO_LARGE',
  TIMEOUT: 'LEDGER_FETCH_TIMEOUT',
  BROKEN: 'LEDGER_FETCH_BROKEN',
  BAD_LIMIT: 'LEDGER_FETCH_BAD_LIMIT',
  SELF: 'LEDGER_FETCH_SELF',
  UNREACHABLE: 'LEDGER_STEWARD_UNREACHABLE',
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
/** How long finding the steward's addresses, and then dialling it, may each take before the fetch says it is unreachable. */
export const STEWARD_REACH_MS = 10_000;
/** What framing adds to each entry on the wire (length prefix, CBOR data frame header), at most. */
const FRAME_OVERHEAD = 16;

export interface LedgerFetchOptions {
  /** Entry bytes held at most (default LEDGER_FETCH_DEFAULT_MIB MiB). */
  maxBytes?: number;
  /** The whole fetch's time, ms (default LEDGER_FETCH_BUDGET_MS per 64 MiB of maxBytes, at least LEDGER_FETCH_BUDGET_MS). */
  budgetMs?: number;
  /** This node's own ledger, when `steward` is this node and steward of the overlay asked: read here, not dialled. */
  own?: OwnLedger;
  /**
   * The other overlays this node is on: an unreachable steward's error suggests asking on one of them (`--overlay`)
   * only when there is one (a node on a single overlay has nowhere else to ask).
   */
  otherOverlays?: readonly string[];
}

/** The part of a steward's Ledger (src/ledger/store.ts) the fetch reads. */
export interface OwnLedger {
  readonly length: number;
  entries(from: number, to: number): Promise<Uint8Array[]>;
}

/** What the fetch uses of the overlay's network; without `did`, `overlay`, `findPeer` and `dial` (a test's fake) it only requests. */
export type LedgerFetchNet = Pick<Network, 'request'> & Partial<Pick<Network, 'did' | 'overlay' | 'findPeer' | 'dial'>>;

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
export async function fetchLedgerEntries(net: LedgerFetchNet, steward: string, opts: LedgerFetchOptions = {}): Promise<Uint8Array[]> {
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
  const where = net.overlay === undefined ? 'this overlay' : `overlay ${net.overlay}`;
  const own = opts.own;
  if (!own && net.did !== undefined && steward === net.did) {
    throw new C0Error(LEDGER_FETCH_ERR.SELF, `${steward} is this node, which is not the steward of ${where}: ask on the overlay it stewards (--overlay NAME; \`c0mpute overlay list\`)`, { field: 'steward', detail: { overlay: net.overlay } });
  }
  if (!own) await reach(net, steward, opts.otherOverlays);
  for (;;) {
    const from = entries.length;
    // no range may bring more than what is left of the bound (plus framing)
    const left = maxBytes - bytes;
    const cap = Math.min(protocolCap, left + MAX_LEDGER_RANGE * FRAME_OVERHEAD);
    let frames;
    try {
      // this node's own ledger: the range its steward would serve (steward-handlers.ts serveLedgerRange), read here
      frames = own
        ? await own.entries(Math.min(from, own.length), Math.min(own.length, from + MAX_LEDGER_RANGE))
        : await net.request(steward, LEDGER_PROTOCOL, [{ from } as never], { limits: { deadlineMs: RANGE_DEADLINE_MS, maxResponseBytes: cap }, signal: budget });
    } catch (e) {
      if (budget.aborted) throw timedOut();
      if (e instanceof C0Error && e.code === NET_ERR.RESPONSE_TOO_LARGE && cap < protocolCap) throw tooLarge();
      if (e instanceof C0Error && neverOpened(e.code) && from === 0) throw unreachable(steward, net.overlay, e.code === NET_ERR.PROTOCOL ? `it is connected but serves no ledger here: ${e.message}` : `the dial failed: ${e.message}`, opts.otherOverlays);
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

function unreachable(steward: string, overlay: string | undefined, why: string, others: readonly string[] = []): C0Error {
  const where = overlay === undefined ? 'this overlay' : `overlay ${overlay}`;
  // the other overlays, when there are any: on a node of one overlay the hint named a choice it does not have (QA witness pass, finding 10)
  const elsewhere = others.length ? `: if it stewards another overlay this node is on (${others.slice(0, 8).join(', ')}${others.length > 8 ? ', …' : ''}), ask there with --overlay NAME` : '';
  return new C0Error(LEDGER_FETCH_ERR.UNREACHABLE, `cannot reach steward ${steward} on ${where} (${why})${elsewhere}`, {
    field: 'steward',
    detail: { overlay },
  });
}

/**
 * The steward's addresses (the peer store, else the overlay's DHT) and a connection to it, each within
 * STEWARD_REACH_MS, before any range is asked: a steward not on this overlay is said to be so at once, not by a
 * range's deadline 60 s on (NET_DEADLINE). A network without `findPeer`/`dial` (a test's fake) skips this.
 */
async function reach(net: LedgerFetchNet, steward: string, others?: readonly string[]): Promise<void> {
  if (net.findPeer) {
    try {
      await net.findPeer(steward, { timeoutMs: STEWARD_REACH_MS });
    } catch (e) {
      if (!(e instanceof C0Error)) throw e;
      throw unreachable(steward, net.overlay, `no address for it known or found: ${e.message}`, others);
    }
  }
  if (net.dial) {
    try {
      await net.dial(steward, { timeoutMs: STEWARD_REACH_MS });
    } catch (e) {
      if (!(e instanceof C0Error)) throw e;
      throw unreachable(steward, net.overlay, `the dial failed: ${e.message}`, others);
    }
  }
}
