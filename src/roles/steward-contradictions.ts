/**
 * Witness receipts that contradict the steward's own ledger (docs/overlays.md "A steward whose ledger went back"): a
 * witness holding more entries than the ledger has (WITNESS_LENGTH_BEYOND: restored from an older copy, or truncated)
 * or another head at a length it has (WITNESS_HEAD_MISMATCH: rewritten). The ledger never stores such a receipt
 * (Ledger.addReceipt refuses it), so the steward keeps the last one of each witness here, in the node's store
 * (sublevel `steward-contradicting`: the witness's DID → canonical CBOR `{receipt, at}`), at most MAX_CONTRADICTING.
 *
 * What is shown is worked out again from the current ledger every time it is asked for (`view`), not frozen at the
 * moment the receipt came: a restored ledger of 20 that a witness holds at 24 is WITNESS_LENGTH_BEYOND while it is
 * shorter than 24, and once it has grown past 24 with other entries it is WITNESS_HEAD_MISMATCH at 24; a receipt that
 * covers the ledger again (the right copy put back) no longer contradicts it and goes. Kept across a restart: the
 * witnesses refuse a forked ledger's heads and send nothing again, so a warning held only in memory was gone after
 * one (QA witness pass, finding 2).
 */
import { C0Error } from '../errors.js';
import { decodeCanonical, encodeCanonical } from '../records/cbor.js';
import { open } from '../records/envelope.js';
import { checkStoredReceipt, type StoredLedgerView } from '../ledger/attest.js';
import { WITNESS_TYPE, type WitnessReceipt } from '../ledger/entry.js';
import type { Sub } from '../store/db.js';
import type { Logger } from '../util/log.js';

/** The sublevel of the overlay's store (under its prefix) the kept receipts are in. */
export const CONTRADICTING_SUB = 'steward-contradicting';

/** Witnesses whose contradicting receipt status() shows at most (the most recent; the log has each). */
export const MAX_CONTRADICTING = 64;

export interface Contradiction {
  witness: string;
  code: 'WITNESS_LENGTH_BEYOND' | 'WITNESS_HEAD_MISMATCH';
  /** The length the witness's receipt covers. */
  length: number;
  /** This ledger's length now (when shown), not when the receipt came. */
  ours: number;
  witnessedAt: number;
  /** When the receipt was heard. */
  at: number;
}

interface Kept {
  bytes: Uint8Array;
  length: number;
  witnessedAt: number;
  at: number;
}

export class Contradictions {
  /** By witness, oldest heard first. */
  readonly #kept = new Map<string, Kept>();

  constructor(
    private readonly o: {
      sub: Sub;
      /** The ledger as it is now (its steward, length and the address at a seq). */
      ledger: () => StoredLedgerView;
      clock: () => number;
      log: Logger;
      /** The witnesses named (network.witnesses): a receipt kept from another key is dropped at load. */
      named?: readonly string[];
    },
  ) {}

  /**
   * The receipts kept before a restart, each checked again: one that does not open, or is from a witness no longer
   * named, is deleted; one that no longer contradicts the ledger goes at the next `view`.
   */
  async load(): Promise<void> {
    const drop: string[] = [];
    const rows: Array<[string, Kept]> = [];
    for await (const [witness, v] of this.o.sub.iterator()) {
      try {
        const { receipt, at } = decodeCanonical(v) as { receipt: Uint8Array; at: number };
        const o = open(receipt, WITNESS_TYPE);
        const w = o.record as WitnessReceipt;
        if (o.signer !== witness || (this.o.named && !this.o.named.includes(witness)) || typeof at !== 'number') drop.push(witness);
        else rows.push([witness, { bytes: receipt, length: w.length, witnessedAt: w.witnessedAt, at }]);
      } catch (e) {
        if (!(e instanceof C0Error)) throw e;
        drop.push(witness);
      }
    }
    for (const [w, k] of rows.sort(([, a], [, b]) => a.at - b.at)) this.#kept.set(w, k);
    while (this.#kept.size > MAX_CONTRADICTING) drop.push(this.#first()!);
    for (const w of drop) this.#kept.delete(w);
    if (drop.length) await this.o.sub.batch(drop.map((key) => ({ type: 'del' as const, key })), { sync: true } as never);
    if (!this.#kept.size) return;
    // checked against the ledger opened now: one it covers again (the right copy put back) goes without a warning
    const still = await this.view();
    if (still.length) this.o.log.warn({ witnesses: still.map((c) => ({ witness: c.witness, code: c.code, length: c.length, ours: c.ours })) }, 'witness receipts that contradicted this ledger before the restart still do: see c0mpute steward status');
  }

  /** Keep `bytes`, `witness`'s receipt the ledger refused as a mismatch (the last one of each witness). */
  async note(witness: string, bytes: Uint8Array): Promise<void> {
    let w: WitnessReceipt;
    try {
      w = open(bytes, WITNESS_TYPE, { trusted: true }).record as WitnessReceipt;
    } catch {
      return;
    }
    const at = this.o.clock();
    this.#kept.delete(witness);
    this.#kept.set(witness, { bytes, length: w.length, witnessedAt: w.witnessedAt, at });
    const ops: Array<{ type: 'put' | 'del'; key: string; value?: Uint8Array }> = [{ type: 'put', key: witness, value: encodeCanonical({ receipt: bytes, at }) }];
    if (this.#kept.size > MAX_CONTRADICTING) {
      const oldest = this.#first()!;
      this.#kept.delete(oldest);
      ops.push({ type: 'del', key: oldest });
    }
    await this.o.sub.batch(ops as never, { sync: true } as never);
  }

  /**
   * A valid receipt of `witness` covering `length`, signed at `witnessedAt`: its contradiction is cleared only by one
   * that covers at least the contradicting length or was signed after the contradicting one (a replay of the witness's
   * old receipt to a length the restored ledger still has clears nothing).
   */
  async resolved(witness: string, length: number, witnessedAt: number | undefined): Promise<void> {
    const c = this.#kept.get(witness);
    if (!c) return;
    if (length >= c.length || (witnessedAt !== undefined && witnessedAt > c.witnessedAt)) await this.#forget([witness]);
  }

  get size(): number {
    return this.#kept.size;
  }

  /** Whether a contradicting receipt of `witness` is kept. */
  has(witness: string): boolean {
    return this.#kept.has(witness);
  }

  /**
   * The contradictions as they stand against the ledger now: each kept receipt checked again (one entry read at its
   * length), its code and this ledger's length as they are now. One that no longer contradicts the ledger (it covers
   * it exactly: the right copy was put back) is forgotten.
   */
  async view(): Promise<Contradiction[]> {
    const ledger = this.o.ledger();
    const out: Contradiction[] = [];
    const gone: string[] = [];
    for (const [witness, k] of this.#kept) {
      const s = await checkStoredReceipt(ledger, k.bytes);
      if (s.status !== 'mismatch') {
        gone.push(witness);
        continue;
      }
      out.push({ witness, code: s.code, length: k.length, ours: ledger.length, witnessedAt: k.witnessedAt, at: k.at });
    }
    if (gone.length) {
      this.o.log.info({ witnesses: gone }, 'witness receipts that contradicted this ledger cover it now: no longer shown');
      await this.#forget(gone);
    }
    return out;
  }

  async #forget(witnesses: string[]): Promise<void> {
    for (const w of witnesses) this.#kept.delete(w);
    await this.o.sub.batch(witnesses.map((key) => ({ type: 'del' as const, key })), { sync: true } as never);
  }

  #first(): string | undefined {
    return this.#kept.keys().next().value;
  }
}
