/**
 * `c0mpute witness status|evidence`: what the running node's witness role holds (GET /v1/witness) and the evidence it
 * kept about a steward (GET /v1/witness/evidence/:steward), written out as pool-evidence/1 records an operator can hand
 * to others (each checks with `c0mpute record verify FILE`, from the two steward-signed entries alone).
 */
import { join } from 'node:path';
import type { Command } from 'commander';
import { apiCall } from '../../node/api-client.js';
import { C0Error } from '../../errors.js';
import { out, outputDir, outJson, requireDidArg, writeOutput } from '../context.js';
import { globals } from './index.js';
import { daemonClient, overlayQuery, requireDaemon } from '../daemon-client.js';
import { agoText } from '../../util/ago-text.js';

interface WitnessStatus {
  witness: string;
  overlay: string;
  stewards: Record<string, { held: { length: number; head: string }; evidence: number; last?: { length?: number; head?: string; refused?: string; at: number };
    rolledBack?: { held: number; heard?: number; served?: number; at: number } }>;
  strangers?: { heldBack: number; unreached: number; waiting?: number; ignored: number };
  foreignHeads?: { dropped: number; last: { signer: string; at: number } };
  notNamed?: { witnesses: string[] };
  /** `off`: the witness role is off on this overlay; what is listed is what it kept (docs/node.md "Changing roles"). */
  role?: 'off';
}

interface WitnessEvidence {
  witness: string;
  overlay: string;
  steward: string;
  evidence: Array<{ seq: number; form: string; a: string; b: string; record: string }>;
}

export { agoText };

export function register(program: Command): void {
  const w = program.command('witness').description('the witness role of the running node: heads held, evidence kept');
  w.command('status')
    .description('per steward: the head held, the evidence pairs kept, and the last head cosigned or refusal since start')
    .option('--overlay <name>', 'the overlay (default: the node’s first)')
    .option('--json', 'machine-readable output')
    .action(async (o: { overlay?: string; json?: boolean }, cmd: Command) => {
      const c = requireDaemon(globals(cmd).dataDir);
      const r = (await apiCall(c.api, c.token, 'GET', `/v1/witness${overlayQuery(o.overlay)}`)) as WitnessStatus;
      if (o.json) return outJson(r);
      out(`witness ${r.witness} on overlay ${r.overlay}`);
      if (r.role === 'off') out('the witness role is off on this overlay: nothing is fetched or cosigned; below is what this node kept as a witness (its evidence is still gossiped and handed out)');
      if (r.notNamed) out(notNamedNote(r.notNamed.witnesses));
      if (r.strangers) out(`keys neither held nor named: ${r.strangers.heldBack} held back (${r.strangers.unreached} not reached), ${r.strangers.waiting ?? 0} heads waiting, ${r.strangers.ignored} heads dropped since start`);
      if (r.foreignHeads) {
        // the real steward's heads, when network.steward names another key: dropped before the witness hears them
        const f = r.foreignHeads;
        out(`heads signed by a key other than network.steward dropped since start: ${f.dropped}, the last by ${f.last.signer} ${agoText(Date.now() - f.last.at)} [HEAD_FOREIGN_STEWARD]: if that key is the steward, network.steward names the wrong one`);
      }
      const rows = Object.entries(r.stewards);
      if (!rows.length) return out('no steward held, none with evidence kept');
      for (const [steward, s] of rows) {
        // with its time: a refusal stays the last word until the next head, and read as a problem now after the steward
        // was put right (QA pass, session 48)
        const last = !s.last ? '' : `${s.last.refused ? `, last refused ${s.last.refused}` : `, last cosigned length ${s.last.length}`} ${agoText(Date.now() - s.last.at)}`;
        out(`${steward}  held length ${s.held.length}${s.held.length ? ` head ${s.held.head}` : ''}, evidence ${s.evidence}${last}`);
        const why = unreachedNote(s.last?.refused);
        if (why) out(`  ${why}`);
        const rb = s.rolledBack;
        if (rb) {
          const seen = [rb.heard === undefined ? '' : `heard a head of length ${rb.heard}`, rb.served === undefined ? '' : `it serves ${rb.served} entries`].filter(Boolean).join(', ');
          out(`  WITNESS_LEDGER_ROLLED_BACK: the steward’s ledger is shorter than the length ${rb.held} held${seen ? ` (${seen})` : ''}, ${new Date(rb.at).toISOString()}: restored from an old copy or truncated`);
        }
      }
    });
  w.command('evidence')
    .argument('<steward>', 'the steward’s DID')
    .option('--out <dir>', 'write each pair’s pool-evidence/1 record to DIR/evidence-<seq>-<n>.rec (check with c0mpute record verify)')
    .option('--overlay <name>', 'the overlay (default: the node’s first)')
    .option('--json', 'machine-readable output (the pairs and records, base64)')
    .description('the equivocation evidence this witness kept about a steward, as signed records')
    .action(async (steward: string, o: { out?: string; overlay?: string; json?: boolean }, cmd: Command) => {
      // a wrong DID is a wrong command line (exit 2), not the daemon's 400 passed through (exit 3); a steward's DID is
      // LEDGER_BAD_STEWARD, as `ledger verify --steward` and `ledger fetch` say it
      await requireDidArg(steward, 'steward', 'LEDGER_BAD_STEWARD');
      // the directory first: one that cannot be made is refused (OUTPUT_UNWRITABLE) before the daemon is asked
      if (o.out) outputDir(o.out);
      const { dataDir } = globals(cmd);
      // through the daemon, or without one from the node's own store (the proof stays readable with the node down)
      const c = daemonClient(dataDir);
      const r = c ? ((await apiCall(c.api, c.token, 'GET', `/v1/witness/evidence/${encodeURIComponent(steward)}${overlayQuery(o.overlay)}`)) as WitnessEvidence) : await offlineEvidence(dataDir, steward, o.overlay);
      const files: string[] = [];
      if (o.out) {
        r.evidence.forEach((e, i) => {
          const f = join(o.out!, `evidence-${e.seq}-${i}.rec`);
          writeOutput(f, Buffer.from(e.record, 'base64'));
          files.push(f);
        });
      }
      if (o.json) return outJson({ ...r, ...(o.out ? { files } : {}) });
      if (!r.evidence.length) return out(`no evidence kept about ${steward}`);
      for (const [i, e] of r.evidence.entries()) out(`seq ${e.seq} (${e.form})${files[i] ? `: wrote ${files[i]}` : ''}`);
      if (!o.out) out('(--out DIR writes them as pool-evidence/1 records)');
    });
}

/**
 * What a steward's last refusal says when it is that the steward was not reached (a network code) or serves no ledger
 * (WITNESS_NOT_A_STEWARD): what to check. Undefined for any other refusal (a verdict on its entries, said by its code).
 */
export function unreachedNote(refused: string | undefined): string | undefined {
  if (refused === 'WITNESS_NOT_A_STEWARD') return 'WITNESS_NOT_A_STEWARD: this key answers but serves no ledger (/c0mpute/ledger/1): it is not a steward, so nothing is witnessed for it; check network.steward (or witness.stewards)';
  if (refused?.startsWith('NET_')) return `not reached (${refused}): nothing of its ledger is witnessed until it is; is it running? check network.steward, the overlay's swarm key and bootstrap`;
  return undefined;
}

/** The line `witness status` opens with on a witness its overlay's network.witnesses does not name. */
export function notNamedNote(witnesses: readonly string[]): string {
  return `⚠ not named in network.witnesses (${witnesses.length} named): every member configured alike drops this witness's receipts [WITNESS_NOT_NAMED], so what it cosigns counts nowhere; add its DID to network.witnesses on every member`;
}

/**
 * The evidence kept about `steward`, read from the node's store with no daemon running (an offline display node:
 * nothing dialled, published or cosigned). ROLE_NOT_ENABLED when the store holds nothing a witness kept.
 */
async function offlineEvidence(dataDir: string, steward: string, overlay: string | undefined): Promise<WitnessEvidence> {
  const d = await (await import('./node-actions.js')).offlineNode(dataDir);
  try {
    const o = d.overlay(overlay);
    if (!o.witness) throw new C0Error('ROLE_NOT_ENABLED', `this node holds nothing a witness kept (no head cosigned, no evidence) on overlay ${o.name}`);
    return await o.witness.evidenceOf(steward);
  } finally {
    await d.stop();
  }
}
