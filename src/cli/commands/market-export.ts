/**
 * `c0mpute market export --job J --out DIR`: the records a decision about a job rests on (src/node/job-records.ts),
 * a file each, for `c0mpute market audit --selection S --records DIR` here or anywhere (docs/market.md §9). Asks the
 * running daemon (`GET /v1/jobs/:job/records`), else reads the data directory itself.
 */
import type { Command } from 'commander';
import { Buffer } from 'node:buffer';
import { join } from 'node:path';
import { C0Error } from '../../errors.js';
import { apiCall } from '../../node/api-client.js';
import { isAddress } from '../../records/address.js';
import { T } from '../../records/kinds.js';
import { out, outJson, outputDir, writeOutput } from '../context.js';
import { daemonClient, overlayQuery as q } from '../daemon-client.js';
import { globals } from './index.js';

interface ExportOpts {
  job: string;
  out: string;
  overlay?: string;
  json?: boolean;
}

interface Exported {
  job: string;
  records: Array<{ type: string; address: string; signer: string; envelope: string }>;
  missing: Array<{ address: string; what: string }>;
}

/** A record's file name: its kind and its address's hex (`offer-3f…a1.cbor`), so one directory holds every kind. */
export function recordFileName(type: string, address: string): string {
  const kind = type.replace(/^c0mpute\./, '').replace(/\/\d+$/, '').replace(/[^a-z0-9]+/gi, '-');
  return `${kind}-${address.slice('sha256:'.length)}.cbor`;
}

export function registerExport(program: Command): void {
  const market = program.commands.find((c) => c.name() === 'market') ?? program.command('market').description('the market: offline selection, explanation and audit from record files');
  market
    .command('export')
    .description('write the records a decision about a job rests on (the job, its selections, the offers and adverts they weighed, the evidence about those providers, its receipts) a file each, for `market audit`')
    .requiredOption('--job <job>', 'the job’s address (sha256:…), as `c0mpute jobs` lists it')
    .requiredOption('--out <dir>', 'directory to write them to (made if missing)')
    .option('--overlay <name>', 'the overlay (default: the node’s first)')
    .option('--json', 'machine-readable summary')
    .action(async (o: ExportOpts, cmd: Command) => {
      if (!isAddress(o.job)) throw new C0Error('ADDRESS_MALFORMED', `--job must be a job's address, sha256:<64 hex>, got "${String(o.job).slice(0, 80)}"`, { field: 'job' });
      const { dataDir } = globals(cmd);
      const c = daemonClient(dataDir);
      let r: Exported;
      if (c) r = (await apiCall(c.api, c.token, 'GET', `/v1/jobs/${encodeURIComponent(o.job)}/records${q(o.overlay)}`)) as Exported;
      else {
        const d = await (await import('./node-actions.js')).offlineNode(dataDir);
        try {
          r = (await (await import('../../node/control.js')).exportJobRecords(d.overlay(o.overlay), o.job)) as unknown as Exported;
        } finally {
          await d.stop();
        }
      }
      outputDir(o.out);
      const selections: string[] = [];
      for (const x of r.records) {
        writeOutput(join(o.out, recordFileName(x.type, x.address)), Buffer.from(x.envelope, 'hex'));
        if (x.type === T.selection) selections.push(x.address);
      }
      if (o.json) return outJson({ job: r.job, dir: o.out, written: r.records.length, selections, missing: r.missing });
      out(`job        ${r.job}`);
      out(`written    ${r.records.length} record(s) to ${o.out}`);
      if (!selections.length) out('selections none held: this node decided nothing for the job (an audit needs the buyer’s export)');
      for (const s of selections) out(`audit      c0mpute market audit --selection ${s} --records ${o.out}`);
      for (const m of r.missing) out(`missing    ${m.address}: ${m.what} (not held here; an audit will say AUDIT_MISSING_RECORD)`);
    });
}
