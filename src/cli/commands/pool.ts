/** `c0mpute pool check`: the verdict a claim would get now; writes nothing. */
import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import { C0Error } from '../../errors.js';
import type { Claim } from '../../pool/index.js';
import { NegativeAnswer, out, outJson, readInput } from '../context.js';
import { collectWitness, heldLine, isDir, loadWitnessCheck, readAny, verifyOptions, withNodeStore, WITNESS_HELP } from './ledger.js';

export function register(program: Command): void {
  const pool = program.command('pool').description('pool/1 entitlements and admission');
  pool.hook('preSubcommand', loadWitnessCheck);
  pool
    .command('check')
    .requiredOption('--tree <file>', 'entitlement tree (YAML)')
    .requiredOption('--claim <file>', 'the claim (YAML)')
    .option('--ledger <path>', 'the steward ledger (directory or exported file); usage is derived from it')
    .option('--witness <did>', WITNESS_HELP, collectWitness, [])
    .option('--json', 'machine-readable output')
    .description('print the verdict (Admit/Queue/Deny), reason, grade and reservation a claim would get now, without writing anything; exit 0 on Admit, 1 otherwise')
    .action(async (opts: { tree: string; claim: string; ledger?: string; witness: string[]; json?: boolean }) => {
      const { PoolState, claimFromYaml, treeFromYaml, UsageBook } = await import('../../pool/index.js');
      const tree = treeFromYaml(Buffer.from(readInput(opts.tree)).toString('utf8'), opts.tree);
      const spec = claimFromYaml(Buffer.from(readInput(opts.claim)).toString('utf8'), opts.claim);
      let book = new UsageBook();
      let length = 0;
      let ledgerLine: string | undefined;
      if (opts.ledger !== undefined) {
        if (!existsSync(opts.ledger)) throw new C0Error('INPUT_UNREADABLE', `--ledger ${opts.ledger}: no such file or directory`, { field: 'ledger' });
        const dir = isDir(opts.ledger);
        const raw = await readAny(opts.ledger);
        // the whole report, witness receipts included: a ledger its own receipts contradict is refused, and a steward's
        // ledger directory where it lives as `ledger verify` fails it on what its node's store holds against it
        const { assertVerified, verifyLedger } = await import('../../ledger/verify.js');
        const { rep, held } = await withNodeStore(opts.ledger, dir, verifyLedger(raw, verifyOptions(opts)), opts.witness);
        assertVerified(rep, `--ledger ${opts.ledger}`);
        // the node's store not read (held by a running daemon, or damaged): said, as verify, show and export say it
        if (held && held.store !== 'read' && !opts.json) out(`warning: node store ${heldLine(held)}`);
        book = rep.replay.book!;
        length = rep.replay.length;
        const a = rep.attestation;
        const grade = a.grade === 'witnessed' ? `witnessed by ${a.witnesses.map((w) => `${w.witness} up to length ${w.length}`).join(', ')}` : 'self-attested';
        ledgerLine = `ledger       ${length} entries, steward ${rep.replay.steward ?? '(none)'}, ${grade}`;
      }
      const lines: string[] = [];
      let claim: Claim;
      if (spec.estimate === 'derive') {
        const d = book.estimate(spec.class ?? '', spec.required_evidence === undefined ? {} : { required: spec.required_evidence });
        if (!d.ok) {
          const msg = [`verdict      none`, `reason       INSUFFICIENT_EVIDENCE: class ${d.class}: ${d.seen} observations seen, ${d.evidence} of them evidence, ${d.required} required`];
          if (opts.json) outJson({ verdict: null, reason: 'INSUFFICIENT_EVIDENCE', derivation: d });
          throw new NegativeAnswer(opts.json ? [] : msg);
        }
        lines.push(`estimate     derived from ${d.spread.evidence} observations of class ${d.class} (${d.spread.seen} seen): max ${d.spread.maxUj} µJ, min ${d.spread.minUj} µJ`);
        claim = { ...spec, estimate: d.estimate } as Claim;
      } else {
        claim = spec as Claim;
      }
      const v = new PoolState(tree, book).decide(claim);
      if (opts.json) {
        outJson({ ledgerLength: length, ...v });
        if (v.verdict !== 'Admit') process.exitCode = 1;
        return;
      }
      lines.unshift(`verdict      ${v.verdict}`);
      if (ledgerLine !== undefined) lines.push(ledgerLine);
      if (v.verdict === 'Admit') {
        lines.push(`reservation  ${v.reserved.uj} µJ (grade ${v.reserved.grade}) against ${v.entitlement}`, `devices      ${v.devices}`, `borrowed     ${v.borrowed_uj} µJ`);
        for (const l of lines) out(l);
        return;
      }
      lines.push(`reason       ${v.reason}${v.reasons.length > 1 ? ` (also: ${v.reasons.slice(1).join(', ')})` : ''}`);
      // the figures a Deny rests on, as `c0mpute run` prints them after the steward's denial (src/util/deny-text.ts)
      const figures = v.verdict === 'Deny' ? (await import('../../util/deny-text.js')).denyFiguresText(v.reason, v.basis) : undefined;
      if (figures) lines.push(`figures      ${figures}`);
      lines.push(`estimate     ${v.estimate.uj} µJ (grade ${v.estimate.grade})`, `devices      ${v.devices}`, `reservation  none`);
      throw new NegativeAnswer(lines);
    });
}
