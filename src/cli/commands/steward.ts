/** `c0mpute steward status`: each team's guarantee, spent, reserved, borrowed, and the queued claims. */
import { joulesText } from '../../util/joules.js';
import type { Command } from 'commander';
import { apiCall } from '../../node/api-client.js';
import { codeOf } from '../../errors.js';
import { out, outJson, requireDidArg, UsageError, writeOutput } from '../context.js';
import { short } from '../short.js';
import { selfAttestedTail } from '../../util/attestation-text.js';
import { globals } from './index.js';
import { overlayQuery, requireDaemon } from '../daemon-client.js';
import { inTreeOrder, teamTotals, type TeamRow } from '../../util/team-tree.js';

export type { TeamRow };

/** A `steward status` row of an entitlement the ledger charges and the tree lacks (src/roles/steward-tree-usage.ts). */
export type NotInTreeRow = Pick<TeamRow, 'id' | 'spent_uj' | 'reserved_uj' | 'borrowed_uj' | 'held_devices' | 'open_claims'>;


export function register(program: Command): void {
  const st = program.command('steward').description('the pool/1 steward of a private overlay');
  st.command('status')
    .description('each team’s guarantee, spent, reserved and borrowed energy, held devices, queued claims, and the ledger’s attestation')
    .option('--overlay <name>', 'the overlay (default: the node’s first)')
    .option('--json', 'machine-readable output')
    .action(async (o: { overlay?: string; json?: boolean }, cmd: Command) => {
      const { dataDir } = globals(cmd);
      const c = requireDaemon(dataDir);
      const r = (await apiCall(c.api, c.token, 'GET', `/v1/steward${overlayQuery(o.overlay)}`)) as {
        steward: string;
        overlay: string;
        ledger: { length: number; head: string };
        teams: TeamRow[];
        notInTree?: NotInTreeRow[];
        queued: Array<{ claim: string; entitlement: string; reason: string; waitingMs: number; buyer?: 'waiting' | 'away' }>;
        attestation: { grade: string; witnessedLength?: number; witnesses: Array<{ witness: string; length: number }> };
        contradictingWitnesses?: Array<{ witness: string; code: string; length: number; ours: number }>;
        evidence?: { pairs: number; witnesses: number; seqs: number[] };
        contradictingOthers?: { receipts: number; at: number };
      };
      if (o.json) return outJson(r);
      out(`steward ${r.steward} on overlay ${r.overlay}`);
      out(`ledger  length ${r.ledger.length}, head ${r.ledger.head}`);
      // the part no witness countersigned, as `ledger verify` and the console say it (QA qaCon F1)
      out(`attestation ${r.attestation.grade}${r.attestation.witnesses.length ? `: ${r.attestation.witnesses.map((w) => `${short(w.witness)} to length ${w.length}`).join(', ')}` : ''}${r.attestation.witnessedLength !== undefined && r.attestation.witnessedLength > 0 ? selfAttestedTail(r.ledger.length, r.attestation.witnessedLength) : ''}`);
      for (const c of r.contradictingWitnesses ?? []) {
        out(
          c.code === 'WITNESS_LENGTH_BEYOND'
            ? `attestation WARNING: witness ${short(c.witness)} holds length ${c.length}, this ledger has ${c.ours} (WITNESS_LENGTH_BEYOND: truncated, or restored from an older copy)`
            : `attestation WARNING: witness ${short(c.witness)} saw another head at length ${c.length} (WITNESS_HEAD_MISMATCH: this history was rewritten)`,
        );
      }
      if (r.contradictingOthers) {
        // keys this ledger holds no receipt from (no network.witnesses named): counted, not believed one by one
        const n = r.contradictingOthers.receipts;
        out(`attestation note: ${n} contradicting receipt${n === 1 ? '' : 's'} from keys this ledger holds no receipt from (anyone can sign one; name network.witnesses to hear only yours)`);
      }
      if (r.evidence) {
        const e = r.evidence;
        out(`attestation WARNING: equivocation evidence against this steward: ${e.pairs} pair${e.pairs === 1 ? '' : 's'} from ${e.witnesses} witness${e.witnesses === 1 ? '' : 'es'} (seq ${e.seqs.join(', ')}): anyone holding it can prove this key signed two histories, so its ledger and attestation are not to be trusted (c0mpute witness evidence ${r.steward} on a witness)`);
      }
      for (const l of teamLines(r.teams, r.notInTree)) out(l);
      if (!r.queued.length) out('no queued claims');
      // the buyer's side too (docs/overlays.md): a claim restored after a restart whose buyer has not asked again read
      // "waiting 7 s" as if a buyer waited, and left the line silently when its grace ended (QA pass, session 48)
      for (const q of r.queued) out(queuedLine(q));
    });
}

/**
 * The team table of `steward status`, in tree order (each entitlement under its parent, indented by depth; siblings
 * by id). A row counts the claims made under that entitlement itself (pool/1 usage is per entitlement: a parent is
 * not charged for its children); a row with entitlements below it is followed by their totals, "(all below)", so a root no longer
 * reads "0.0 J spent" beside teams that spent (QA pass, session 48). Entitlements the ledger charges that the tree no
 * longer has (`notInTree`) follow under "not in the tree", then the whole ledger's total, so the figures still add up
 * to the ledger's after a team is taken out of the tree (QA qaUp F3: its spend vanished, and the root's total with it).
 */
export function teamLines(teams: readonly TeamRow[], notInTree: readonly NotInTreeRow[] = []): string[] {
  const lines = ['team            prio  guarantee     devices  spent        reserved     borrowed     held  open'];
  const cells = (spent: number, reserved: number, borrowed: number, held: number, open: number) => `${joulesText(spent).padEnd(13)}${joulesText(reserved).padEnd(13)}${joulesText(borrowed).padEnd(13)}${String(held).padEnd(6)}${open}`;
  for (const { team: t, depth, below } of inTreeOrder(teams)) {
    const pad = '  '.repeat(depth);
    lines.push(`${pad}${t.id}`.padEnd(16) + `${String(t.priority).padEnd(6)}${joulesText(t.guarantee_uj).padEnd(14)}${String(t.guarantee_devices).padEnd(9)}` + cells(t.spent_uj, t.reserved_uj, t.borrowed_uj, t.held_devices, t.open_claims));
    if (below.length === 0) continue;
    const all = teamTotals(below);
    lines.push(`${pad}  (all below)`.padEnd(16) + ' '.repeat(29) + cells(all.spent_uj, all.reserved_uj, all.borrowed_uj, all.held_devices, all.open_claims));
  }
  if (notInTree.length === 0) return lines;
  lines.push('not in the tree (the ledger charges them; the tree file no longer has them, so nothing new is admitted under them)');
  for (const t of notInTree) lines.push(`  ${t.id}`.padEnd(16) + ' '.repeat(29) + cells(t.spent_uj, t.reserved_uj, t.borrowed_uj, t.held_devices, t.open_claims));
  const all = teamTotals([...teams, ...notInTree]);
  lines.push('(ledger total)'.padEnd(16) + ' '.repeat(29) + cells(all.spent_uj, all.reserved_uj, all.borrowed_uj, all.held_devices, all.open_claims));
  return lines;
}

/** One queued claim of `steward status`: its reason, how long it has been in line, and whether its buyer is there. */
export function queuedLine(q: { claim: string; entitlement: string; reason: string; waitingMs: number; buyer?: 'waiting' | 'away' }): string {
  const buyer = q.buyer === 'away' ? '; buyer: away (restored after a restart; it leaves the line unless its buyer asks again within steward.reaskGraceMs)' : q.buyer === 'waiting' ? '; buyer: waiting' : '';
  return `queued ${q.claim.slice(0, 20)}… (${q.entitlement}): ${q.reason}, in line ${Math.round(q.waitingMs / 1000)} s${buyer}`;
}

/** `c0mpute ledger fetch <steward> <file>`: a steward's ledger and the witness receipts this node heard, for `ledger verify`. */
export function registerLedgerFetch(program: Command): void {
  const led = program.commands.find((c) => c.name() === 'ledger') ?? program.command('ledger');
  led
    .command('fetch')
    .argument('<steward>', 'the steward’s DID')
    .argument('<file>', 'where to write the ledger file')
    .option('--overlay <name>', 'the overlay (default: the node’s first)')
    .option('--max-mib <n>', 'the most entry bytes the node fetches and holds, MiB (default 64, at most 256); past it LEDGER_FETCH_TOO_LARGE')
    .description('through the running node: fetch a steward’s ledger entries and the witness receipts this node heard (then: c0mpute ledger verify FILE)')
    .action(async (steward: string, file: string, o: { overlay?: string; maxMib?: string }, cmd: Command) => {
      const { dataDir } = globals(cmd);
      // a steward that is not a DID is a wrong command line (exit 2), LEDGER_BAD_STEWARD as `ledger verify --steward` and
      // `witness evidence` say it: not the daemon's 400 DID_MALFORMED passed through (exit 3; QA witness pass, finding 7)
      await requireDidArg(steward, 'steward', 'LEDGER_BAD_STEWARD');
      const { ledgerFetchBudgetMs, parseFetchMiB, LEDGER_FETCH_DEFAULT_MIB, LEDGER_FETCH_MAX_MIB } = await import('../../node/ledger-fetch.js');
      // a bad --max-mib is a wrong command line (exit 2), said before the daemon is asked (which refuses it too)
      if (codeOf(() => parseFetchMiB(o.maxMib)) !== undefined) {
        throw new UsageError('LEDGER_FETCH_BAD_LIMIT', `--max-mib takes a whole number of MiB from 1 to ${LEDGER_FETCH_MAX_MIB}, got "${String(o.maxMib).slice(0, 40)}"`, { field: 'max-mib' });
      }
      const c = requireDaemon(dataDir);
      const q = new URLSearchParams({ ...(o.overlay ? { overlay: o.overlay } : {}), ...(o.maxMib === undefined ? {} : { maxMiB: o.maxMib }) }).toString();
      // the daemon answers once the whole fetch is done: wait as long as it may take
      const mib = Math.min(Number(o.maxMib ?? LEDGER_FETCH_DEFAULT_MIB) || LEDGER_FETCH_MAX_MIB, LEDGER_FETCH_MAX_MIB);
      const r = (await apiCall(c.api, c.token, 'GET', `/v1/ledger/${encodeURIComponent(steward)}${q ? `?${q}` : ''}`, undefined, { workMs: ledgerFetchBudgetMs(mib * 1024 * 1024) })) as { entries: number; receipts: number; file: string };
      writeOutput(file, Buffer.from(r.file, 'base64'));
      out(`wrote ${file}: ${r.entries} entries, ${r.receipts} witness receipt(s)`);
    });
}
