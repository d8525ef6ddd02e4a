/**
 * What the console says about a ledger's trust, worded as the CLI says it
 * (`c0mpute steward status`, `c0mpute witness status`, `c0mpute status`'s
 * witness line): a steward whose witnesses hold receipts that contradict its
 * ledger, or equivocation evidence against it, is warned about whatever its
 * attestation grade; a witness says what it holds and flags a steward whose
 * ledger went back. Plain functions (no DOM), so the unit tests run them.
 */
import { agoText } from '../src/util/ago-text.js';
import { plural } from './format.js';
import { selfAttestedTail } from '../src/util/attestation-text.js';

export interface Contradiction {
  witness: string;
  code: string;
  length: number;
  ours: number;
}

export interface StewardEvidence {
  pairs: number;
  witnesses: number;
  seqs: number[];
}

/** The part of GET /v1/steward these read. */
export interface StewardTrust {
  steward: string;
  ledger: { length: number };
  attestation: { grade: string; witnessedLength: number };
  contradictingWitnesses?: Contradiction[];
  evidence?: StewardEvidence;
}


/** The warnings `c0mpute steward status` prints (attestation WARNING: …), one a line; none for a ledger nobody contradicts. */
export function stewardWarnings(d: StewardTrust, short: (did: string) => string): string[] {
  const out = (d.contradictingWitnesses ?? []).map((c) =>
    c.code === 'WITNESS_LENGTH_BEYOND'
      ? `witness ${short(c.witness)} holds length ${c.length}, this ledger has ${c.ours} (WITNESS_LENGTH_BEYOND: truncated, or restored from an older copy)`
      : `witness ${short(c.witness)} saw another head at length ${c.length} (${c.code}: this history was rewritten)`,
  );
  const e = d.evidence;
  if (e) {
    out.push(
      `equivocation evidence against this steward: ${plural(e.pairs, 'pair', 'pairs')} from ${plural(e.witnesses, 'witness', 'witnesses')} (seq ${e.seqs.join(', ')}): anyone holding it can prove this key signed two histories, so its ledger and attestation are not to be trusted (c0mpute witness evidence ${d.steward} on a witness)`,
    );
  }
  return out;
}

/**
 * The word the witness coverage shows: `contradicted` (a failure) when any warning stands, whatever the grade;
 * `complete` when witnesses cosigned the whole of a non-empty ledger; `partly witnessed` (a warning, never a good mark)
 * when they cosigned only a part of it, the rest self-attested (QA qaCon F1: "witnessed to length 64 of 80 ✓
 * witnessed" in green while the only witness was down); else the attestation's grade (`self-attested`, or an empty
 * ledger's).
 */
export function coverageStatus(d: StewardTrust): string {
  if (d.contradictingWitnesses?.length || d.evidence) return 'contradicted';
  const { length } = d.ledger;
  const w = d.attestation.witnessedLength;
  if (length > 0 && w >= length) return 'complete';
  if (length > 0 && w > 0) return 'partly witnessed';
  return d.attestation.grade;
}

/**
 * What is and is not witnessed, as `c0mpute steward status` and `c0mpute ledger verify` say it: "witnessed to length
 * 64 of 80 (the last 16 entries are self-attested)"; a ledger no witness cosigned, "no entry witnessed (the 80 entries
 * are self-attested)".
 */
export function coverageText(d: StewardTrust): string {
  const { length } = d.ledger;
  const w = Math.min(d.attestation.witnessedLength, length);
  if (length > 0 && w === 0) return `no entry witnessed (${length === 1 ? 'the 1 entry is' : `the ${length} entries are`} self-attested)`;
  return `witnessed to length ${w} of ${length}${selfAttestedTail(length, w)}`;
}

/** The part of GET /v1/witness these read. */
export interface WitnessStewardView {
  held: { length: number; head?: string };
  evidence: number;
  last?: { length?: number; head?: string; refused?: string; at: number };
  rolledBack?: { held: number; heard?: number; served?: number; at: number };
}

export interface WitnessView {
  witness: string;
  overlay?: string;
  stewards: Record<string, WitnessStewardView>;
  strangers?: { heldBack: number; unreached: number; waiting?: number; ignored: number };
}

/** `c0mpute status`'s witness line: stewards held, the longest length held, evidence pairs kept, stewards rolled back. */
export function witnessSummary(w: WitnessView): { text: string; warn: boolean } {
  const all = Object.values(w.stewards);
  const held = all.filter((s) => s.held.length > 0);
  const longest = held.reduce((m, s) => Math.max(m, s.held.length), 0);
  const evidence = all.reduce((n, s) => n + s.evidence, 0);
  const rolledBack = all.filter((s) => s.rolledBack).length;
  const flags = [evidence ? `⚠ evidence ${plural(evidence, 'pair', 'pairs')} kept` : 'evidence 0', ...(rolledBack ? [`⚠ ${plural(rolledBack, 'steward', 'stewards')} rolled back [WITNESS_LEDGER_ROLLED_BACK]`] : [])];
  return { text: `${plural(held.length, 'steward', 'stewards')} held${held.length ? ` (longest length ${longest})` : ''}, ${flags.join(', ')}`, warn: evidence > 0 || rolledBack > 0 };
}

/** `c0mpute witness status`'s line for one steward: the head held, evidence kept, the last head cosigned or refused. */
export function witnessStewardLine(s: WitnessStewardView, now = Date.now()): string {
  // with its age, as `c0mpute witness status` says it: a refusal stays the last word until the next head
  const last = !s.last ? '' : `${s.last.refused ? `, last refused ${s.last.refused}` : `, last cosigned length ${s.last.length}`} ${agoText(now - s.last.at)}`;
  // the head held, as the CLI prints it: what a steward's own status can be compared with
  return `held length ${s.held.length}${s.held.length && s.held.head ? ` head ${s.held.head}` : ''}, evidence ${plural(s.evidence, 'pair', 'pairs')} kept${last}`;
}

/** `c0mpute witness status`'s warning for a steward whose ledger is shorter than the head this witness holds (undefined: none). */
export function rolledBackWarning(s: WitnessStewardView): string | undefined {
  const rb = s.rolledBack;
  if (!rb) return undefined;
  const seen = [rb.heard === undefined ? '' : `heard a head of length ${rb.heard}`, rb.served === undefined ? '' : `it serves ${rb.served} entries`].filter(Boolean).join(', ');
  return `WITNESS_LEDGER_ROLLED_BACK: the steward’s ledger is shorter than the length ${rb.held} held${seen ? ` (${seen})` : ''}, ${new Date(rb.at).toISOString()}: restored from an old copy or truncated`;
}
