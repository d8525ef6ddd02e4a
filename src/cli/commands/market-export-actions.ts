/**
 * `c0mpute market export` (market-export.ts registers it; docs/market.md §9 "Exporting a job's records"): loaded only
 * when it runs, so the CLI's start stays light (test/e2e/cli-lazy.test.ts).
 */
import { Buffer } from 'node:buffer';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { C0Error } from '../../errors.js';
import { apiStream } from '../../node/api-client.js';
import { isAddress } from '../../records/address.js';
import { T } from '../../records/kinds.js';
import { DEFAULT_SECOND_HAND_WEIGHT } from '../../reputation/derive.js';
import { DEFAULT_SKEW_MS } from '../../records/freshness.js';
import { out, outJson, outputDir, writingTo } from '../context.js';
import { daemonClient, overlayQuery as q } from '../daemon-client.js';

export interface ExportOpts {
  job: string;
  out: string;
  overlay?: string;
  json?: boolean;
}

interface Exported {
  records: Array<{ type: string; address: string; signer: string; envelope: string }>;
}

/** The export's last word (exportJobRecords): the records came before it, one event each. */
interface Summary {
  job: string;
  written: number;
  missing: Array<{ address: string; what: string }>;
  /** The deciding node's trust sources, skew window and steward: the audit needs the same (docs/market.md §7). */
  audit?: { trustedBuyers: string[]; dealtWith: boolean; secondHandWeight: number; skewMs: number; stewards?: string[] };
}

/** `market audit`'s options for the deciding node's settings, those that differ from the audit's defaults. */
export function auditFlags(a: Summary['audit']): string[] {
  if (!a) return [];
  const f: string[] = [];
  if (a.trustedBuyers.length) f.push('--trusted-buyers', a.trustedBuyers.join(','));
  if ((a.trustedBuyers.length || a.dealtWith) && a.secondHandWeight !== DEFAULT_SECOND_HAND_WEIGHT) f.push('--second-hand-weight', String(a.secondHandWeight));
  if (a.dealtWith) f.push('--dealt-with');
  if (a.skewMs !== DEFAULT_SKEW_MS) f.push('--skew-ms', String(a.skewMs));
  if (a.stewards?.length) f.push('--steward', ...a.stewards);
  return f;
}

/** A record's file name: its kind and its address's hex (`offer-3f…a1.cbor`), so one directory holds every kind. */
export function recordFileName(type: string, address: string): string {
  const kind = type.replace(/^c0mpute\./, '').replace(/\/\d+$/, '').replace(/[^a-z0-9]+/gi, '-');
  return `${kind}-${address.slice('sha256:'.length)}.cbor`;
}

export async function exportAction(o: ExportOpts, dataDir: string): Promise<void> {
      if (!isAddress(o.job)) throw new C0Error('ADDRESS_MALFORMED', `--job must be a job's address, sha256:<64 hex>, got "${String(o.job).slice(0, 80)}"`, { field: 'job' });
      const c = daemonClient(dataDir);
      // each record a file as it comes (an export at the evidence bound is ~100,000 of them): no fsync each, a
      // directory of records is written again whole if anything went wrong
      let made = false;
      const selections: string[] = [];
      let written = 0;
      const write = (x: Omit<Exported['records'][number], 'e'>): void => {
        if (!made) outputDir(o.out);
        made = true;
        const path = join(o.out, recordFileName(x.type, x.address));
        writingTo(path, () => writeFileSync(path, Buffer.from(x.envelope, 'hex')));
        written++;
        if (x.type === T.selection) selections.push(x.address);
      };
      let r: Summary | undefined;
      if (c) {
        for await (const ev of apiStream(c.api, c.token, `/v1/jobs/${encodeURIComponent(o.job)}/records${q(o.overlay)}`, undefined)) {
          if (ev.e === 'record') write(ev as unknown as Exported['records'][number]);
          else if (ev.e === 'result') r = ev.result as Summary;
          else if (ev.e === 'error') {
            const err = ev.error as { code: string; message: string };
            throw new C0Error(err.code, err.message);
          }
        }
        if (!r) throw new C0Error('DAEMON_BAD_ANSWER', 'the daemon’s export ended without its summary: the files written may be incomplete');
      } else {
        const d = await (await import('./node-actions.js')).offlineNode(dataDir);
        try {
          const control = await import('../../node/control.js');
          const ov = d.overlay(o.overlay);
          r = (await control.exportJobRecords(ov, await control.findJobRecords(ov, o.job), write)) as unknown as Summary;
        } finally {
          await d.stop();
        }
      }
      if (!made) outputDir(o.out);
      const flags = auditFlags(r.audit);
      if (o.json) return outJson({ job: r.job, dir: o.out, written, selections, missing: r.missing, auditArgs: flags });
      out(`job        ${r.job}`);
      out(`written    ${written} record(s) to ${o.out}`);
      if (!selections.length) out('selections none held: this node decided nothing for the job (an audit needs the buyer’s export)');
      for (const s of selections) out(`audit      c0mpute market audit --selection ${s} --records ${o.out}${flags.length ? ` ${flags.join(' ')}` : ''}`);
      if (flags.length) out('           (the options give the audit this node’s trust sources and settings: its decisions counted them)');
      for (const m of r.missing) out(`missing    ${m.address}: ${m.what} (not held here; an audit will say AUDIT_MISSING_RECORD)`);
}
