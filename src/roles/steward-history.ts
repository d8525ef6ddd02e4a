/**
 * What this node already knows of its own key's ledger, checked before the steward opens one (pool/1 §6.4, §6.5,
 * §6.7; docs/overlays.md "A new accounting window").
 *
 * In pool/1 a ledger has no identity of its own: every entry carries `steward`, `seq` and `prev` from one genesis
 * sentinel, and a witness receipt names only the steward, a length and a head. A steward key therefore has one
 * ledger. A second chain begun under the same key (its `ledger` directory moved aside and `ledger.created` removed,
 * meant as a new accounting window) signs other entries at the seqs the first already used: every witness that
 * cosigned the first keeps the two as equivocation evidence against the key, for good, and publishes it. So a steward
 * about to begin a ledger while this node's store holds witness receipts for its key (or evidence against it) is
 * refused STEWARD_KEY_HAS_LEDGER, nothing created; a new accounting window is a new steward key. A ledger that is
 * there but shorter than what a witness cosigned (restored from an old copy, truncated) is warned about at start.
 *
 * The receipts counted: with `network.witnesses` named, only theirs (any other key can sign a receipt of any length);
 * without, every key's the node kept (a bounded set: docs/overlays.md "What a node keeps of witness records"), said so.
 */
import { readdirSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { C0Error } from '../errors.js';
import { ledgerOwner } from '../ledger/store.js';
import type { Opened } from '../records/envelope.js';
import type { WitnessReceipt } from '../ledger/entry.js';
import type { EquivocationEvidence } from '../ledger/evidence.js';
import type { RecordStore } from '../store/records.js';

export const STEWARD_KEY_HAS_LEDGER = 'STEWARD_KEY_HAS_LEDGER';

/** The store's reads used here; either may be absent (a stub), then nothing is known. */
export type HistoryRecords = Partial<Pick<RecordStore, 'witnessReceiptsFor' | 'evidenceAbout'>>;

/** The longest length each counted witness cosigned of `steward`'s ledger, longest first. */
export interface KnownHistory {
  witnesses: Array<{ witness: string; length: number }>;
  /** whether the witnesses counted were named (`network.witnesses`) or every key held */
  named: boolean;
  /** each counted witness's receipt of its longest length, by witness (what a ledger shorter than it contradicts) */
  receipts?: ReadonlyMap<string, Uint8Array>;
}

export async function knownHistory(records: HistoryRecords, steward: string, witnesses: readonly string[] | undefined): Promise<KnownHistory> {
  const receipts: Array<Opened<WitnessReceipt>> = (await records.witnessReceiptsFor?.(steward)) ?? [];
  const named = witnesses ? new Set(witnesses) : undefined;
  const longest = new Map<string, Opened<WitnessReceipt>>();
  const latest = new Map<string, number>();
  for (const r of receipts) {
    if (r.record.steward !== steward || r.signer === steward || (named && !named.has(r.signer))) continue;
    const held = longest.get(r.signer);
    if (!held || r.record.length > held.record.length) longest.set(r.signer, r);
    latest.set(r.signer, Math.max(latest.get(r.signer) ?? 0, r.record.witnessedAt));
  }
  return {
    witnesses: [...longest].map(([witness, r]) => ({ witness, length: r.record.length })).sort((a, b) => b.length - a.length || (a.witness < b.witness ? -1 : 1)),
    named: named !== undefined,
    // a witness that cosigned again after its longest (its own state went back) no longer holds that length: as a
    // receipt heard now would be cleared (steward.ts #resolved), it is not shown (review s55)
    receipts: new Map([...longest].filter(([witness, r]) => r.record.witnessedAt >= latest.get(witness)!).map(([witness, r]) => [witness, r.bytes])),
  };
}

/**
 * How many equivocation evidence records the store holds against `steward` (at most 16 read). Read only when a ledger
 * is about to be begun (refuseSecondLedger); a start on a ledger that is there reads the evidence once, for status().
 */
export async function evidenceHeld(records: HistoryRecords, steward: string): Promise<number> {
  const evidence: Array<Opened<EquivocationEvidence>> = (await records.evidenceAbout?.(steward, 16)) ?? [];
  return evidence.length;
}

/** A ledger of this key kept in the data directory for another overlay (`<data-dir>/steward/<overlay>/ledger`). */
export interface LedgerElsewhere {
  overlay: string;
  dir: string;
  /** Its entries, from its head; absent when the head cannot be read. */
  length?: number;
}

/** A ledger directory of another overlay whose owner could not be read: whether this key's is unknown. */
export const STEWARD_OTHER_LEDGER_UNREADABLE = 'STEWARD_OTHER_LEDGER_UNREADABLE';

/**
 * The ledgers `steward` already has in the data directory for overlays other than `ledgerDir`'s
 * (`<data-dir>/steward/<overlay>/ledger`, beside it): a
 * steward whose overlay was renamed (or moved to another one) keeps its key, and the ledger it wrote under the old
 * name is that key's one chain. Each is read from its stored head (store.ts ledgerOwner); a ledger of another key
 * (the data directory went on under a new identity) is not this key's. One whose owner cannot be read (held by a
 * one-shot `ledger` command, damaged, a head naming nobody over entries that cannot be read) is
 * STEWARD_OTHER_LEDGER_UNREADABLE, naming it: it may be this key's, and beginning a second chain is what this check
 * is for (review s57: a locked one said only the store's STORE_LOCKED, a damaged one was taken for none).
 */
export async function ledgersElsewhere(ledgerDir: string, steward: string): Promise<LedgerElsewhere[]> {
  // ledgerDir is <data-dir>/steward/<overlay>/ledger
  const stewardRoot = dirname(dirname(ledgerDir));
  const overlay = basename(dirname(ledgerDir));
  let names: string[];
  try {
    names = readdirSync(stewardRoot).filter((n) => n !== overlay);
  } catch {
    return []; // no steward directory yet: no ledger anywhere
  }
  const out: LedgerElsewhere[] = [];
  for (const name of names.sort()) {
    const dir = join(stewardRoot, name, 'ledger');
    let owner: Awaited<ReturnType<typeof ledgerOwner>>;
    try {
      owner = await ledgerOwner(dir);
    } catch (e) {
      throw otherLedgerUnreadable(ledgerDir, name, dir, e instanceof C0Error ? `${e.code}: ${e.message}` : (e as Error).message);
    }
    if (owner && owner.steward === undefined && owner.length !== 0) throw otherLedgerUnreadable(ledgerDir, name, dir, owner.length === undefined ? 'its head cannot be read' : 'its head names no steward and its first entry cannot be read');
    if (owner?.steward === steward) out.push({ overlay: name, dir, ...(owner.length === undefined ? {} : { length: owner.length }) });
  }
  return out;
}

function otherLedgerUnreadable(ledgerDir: string, overlay: string, dir: string, why: string): C0Error {
  return new C0Error(
    STEWARD_OTHER_LEDGER_UNREADABLE,
    `${ledgerDir} holds no ledger; before one is begun, this node checks that its key has none for another overlay in this data directory, and the one kept for ${overlay} (${dir}) cannot be read: ${why.slice(0, 300)}. Run the node again once it is free (a \`c0mpute ledger\` command may hold it) or repaired, or move it out of ${dirname(dirname(dir))} if it is not this key's ledger. Nothing was created.`,
    { field: 'steward', detail: { overlay, dir } },
  );
}

function whom(h: KnownHistory): string {
  const list = h.witnesses.slice(0, 4).map((w) => `${w.witness} to length ${w.length}`).join(', ');
  const more = h.witnesses.length > 4 ? ` and ${h.witnesses.length - 4} more` : '';
  return `${list}${more}${h.named ? '' : ' (network.witnesses names none: every key whose receipt this node kept is counted)'}`;
}

/**
 * STEWARD_KEY_HAS_LEDGER when `ledgerDir` is about to be begun (no ledger there, no ledger.created: the ledger's
 * openDb beforeCreate) while the store shows the key has a ledger already (`h`, and `evidence` records against it);
 * nothing is created.
 */
export function refuseSecondLedger(h: KnownHistory, evidence: number, steward: string, ledgerDir: string, elsewhere: readonly LedgerElsewhere[] = []): void {
  if (!h.witnesses.length && !evidence && !elsewhere.length) return;
  const seen = [
    ...(elsewhere.length ? [`its ledger for overlay ${elsewhere.map((l) => `${l.overlay} (${l.dir}, ${l.length === undefined ? 'its head unreadable' : `${l.length} entries`})`).join(', ')}`] : []),
    ...(h.witnesses.length ? [`witness receipts for its ledger: ${whom(h)}`] : []),
    ...(evidence ? [`${evidence} equivocation evidence record${evidence === 1 ? '' : 's'} against it`] : []),
  ].join('; and ');
  const putBack = elsewhere.length
    ? `Name the overlay as it was (network.overlay: ${elsewhere[0]!.overlay}) to go on with that ledger`
    : 'Put the ledger back (the directory as it was, and steward/<overlay>/ledger.created)';
  throw new C0Error(
    STEWARD_KEY_HAS_LEDGER,
    `${ledgerDir} holds no ledger, but this node's key ${steward} already has one: ${elsewhere.length ? 'this data directory holds' : 'its store holds'} ${seen}. A new ledger under the same key would sign other entries at the seqs the first one used, and every witness that cosigned the first keeps and publishes the two as equivocation evidence against this key, for good (pool/1 §6.5, §6.7: a ledger is its steward key's one chain). ${putBack}, or begin the new accounting window under a new steward key (docs/overlays.md "A new accounting window"). Nothing was created.`,
    { field: 'steward', detail: { steward, witnesses: h.witnesses.slice(0, 16), evidence, named: h.named ? 'yes' : 'no', ...(elsewhere.length ? { ledgers: elsewhere.slice(0, 16) } : {}) } },
  );
}

/** The start warning for a ledger shorter than what a counted witness cosigned (undefined: none is). */
export function shorterThanWitnessed(h: KnownHistory, length: number): { fields: Record<string, unknown>; msg: string } | undefined {
  const beyond = h.witnesses.filter((w) => w.length > length);
  if (!beyond.length) return undefined;
  return {
    fields: { length, witnesses: beyond.slice(0, 16), code: 'WITNESS_LENGTH_BEYOND' },
    msg: `this ledger has ${length} entries, but this node holds receipts of witnesses that cosigned more of this key's ledger (${whom({ ...h, witnesses: beyond })}): it was restored from an older copy or truncated. Once it grows past their length it has signed other entries at seqs they cosigned, which they keep and publish as equivocation evidence against this key: stop the steward and put back the ledger they cosigned (docs/overlays.md "A steward whose ledger went back")`,
  };
}
