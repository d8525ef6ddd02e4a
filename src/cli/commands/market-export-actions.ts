/**
 * `c0mpute market export` (market-export.ts registers it; docs/market.md §9 "Exporting a job's records"): loaded only
 * when it runs, so the CLI's start stays light (test/e2e/cli-lazy.test.ts).
 */
import { Buffer } from 'node:buffer';
import { rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { C0Error } from '../../errors.js';
import { apiStream } from '../../node/api-client.js';
import { isAddress } from '../../records/address.js';
import { T } from '../../records/kinds.js';
import { NegativeAnswer, out, outJson, outputDir, UsageError, writeOutput, writingTo } from '../context.js';
import { MAX_ENVELOPE_BYTES, type Opened } from '../../records/envelope.js';
import { readRegularFile } from '../../util/bounded-read.js';
import { daemonClient, overlayQuery as q } from '../daemon-client.js';
import { EXPORT_FILE, EXPORT_FORMAT, auditFlags, type AuditSettings, type ExportDecision, type ExportManifest, type SettingsSource } from './market-export-manifest.js';

export { auditFlags };

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
  /** The settings of the job's latest selection (else the exporting node's now): the audit needs the same (docs/market.md §7). */
  audit?: AuditSettings;
  settings?: SettingsSource;
  /** Each selection's settings: kept with it as it was decided (`recorded`), or this node's now (`current`). A daemon before these has none. */
  decisions?: ExportDecision[];
}

/** A record's file name: its kind and its address's hex (`offer-3f…a1.cbor`), so one directory holds every kind. */
export function recordFileName(type: string, address: string): string {
  const kind = type.replace(/^c0mpute\./, '').replace(/\/\d+$/, '').replace(/[^a-z0-9]+/gi, '-');
  return `${kind}-${address.slice('sha256:'.length)}.cbor`;
}

/**
 * `--job`: a job's address, or a file holding a job record (docs/market.md §9: `J` is a file or an address), whose
 * address is exported. A file that is not a valid record is a negative answer, as for `select` and `audit` (`invalid
 * job FILE: CODE`, exit 1); one holding another kind of record is RECORD_WRONG_TYPE (exit 3), naming its job when it
 * has one (a selection's, an offer's). Neither an address nor a file: ADDRESS_MALFORMED, a wrong command line (exit 2).
 * Before (QA, reputation and audit pass, F12), a file was refused ADDRESS_MALFORMED though §9 said it was taken.
 */
export async function jobArgument(arg: string, json?: boolean): Promise<string> {
  if (isAddress(arg)) return arg;
  const isFile = (() => {
    try {
      return statSync(arg).isFile();
    } catch {
      return false;
    }
  })();
  if (!isFile) throw new UsageError('ADDRESS_MALFORMED', `--job must be a job's address, sha256:<64 hex>, or a file holding a job record, got "${String(arg).slice(0, 80)}"`, { field: 'job' });
  const got = readRegularFile(arg, MAX_ENVELOPE_BYTES);
  if ('problem' in got) {
    throw got.problem === 'too-large' ? new C0Error('ENVELOPE_TOO_LARGE', `--job ${arg}: larger than any record (${MAX_ENVELOPE_BYTES} bytes)`, { field: 'job' }) : new C0Error('INPUT_UNREADABLE', `--job ${arg}: not a regular file`, { field: 'job' });
  }
  const { openAny } = await import('../record-kinds.js');
  let r: Opened;
  try {
    r = openAny(got.bytes);
  } catch (e) {
    if (!(e instanceof C0Error)) throw e;
    if (json) outJson({ invalid: { what: 'job', file: arg, code: e.code, message: e.message } });
    throw new NegativeAnswer(json ? [] : [`invalid   job ${arg}: ${e.code}: ${e.message}`]);
  }
  if (r.type !== T.job) {
    const of = (r.record as { job?: unknown }).job;
    const theirs = typeof of === 'string' && isAddress(of) ? `; its job is ${of}: c0mpute market export --job ${of}` : '';
    throw new C0Error('RECORD_WRONG_TYPE', `--job ${arg} holds a ${r.type} (${r.address}), not a job${theirs}`, { field: 'job', detail: { type: r.type, ...(theirs ? { job: of } : {}) } });
  }
  return r.address;
}

export async function exportAction(o: ExportOpts, dataDir: string): Promise<void> {
      o = { ...o, job: await jobArgument(o.job, o.json) };
      const c = daemonClient(dataDir);
      // each record a file as it comes (an export at the evidence bound is ~100,000 of them): no fsync each, a
      // directory of records is written again whole if anything went wrong
      let made = false;
      const selections: string[] = [];
      const listed: ExportManifest['records'] = [];
      let written = 0;
      // the directory made, and an earlier export's export.json taken away first: it is written again, last, only
      // when this export ends well, so a directory cut short has none (docs/market.md §9)
      const begin = (): void => {
        if (made) return;
        outputDir(o.out);
        const summary = join(o.out, EXPORT_FILE);
        writingTo(summary, () => rmSync(summary, { force: true }));
        made = true;
      };
      const write = (x: Omit<Exported['records'][number], 'e'>): void => {
        begin();
        const file = recordFileName(x.type, x.address);
        const path = join(o.out, file);
        writingTo(path, () => writeFileSync(path, Buffer.from(x.envelope, 'hex')));
        written++;
        listed.push({ type: x.type, address: x.address, file });
        if (x.type === T.selection) selections.push(x.address);
      };
      let r: Summary | undefined;
      try {
        r = await fetchRecords(o, dataDir, c, write);
      } catch (e) {
        // the daemon died mid-stream (DAEMON_STREAM_LOST), its stream ended without the summary, a file not written:
        // say that what is in the directory is not the whole export
        if (e instanceof C0Error && written > 0) {
          throw new C0Error(e.code, `${e.message} (the ${written} record file(s) in ${o.out} are an incomplete export, with no ${EXPORT_FILE}: export again)`, {
            ...(e.field === undefined ? {} : { field: e.field }),
            ...(e.detail === undefined ? {} : { detail: e.detail }),
          });
        }
        throw e;
      }
      begin();
      const flags = auditFlags(r.audit);
      const decisions = exportDecisions(r, selections);
      const manifest: ExportManifest = { format: EXPORT_FORMAT, job: r.job, records: listed, selections, missing: r.missing, ...(r.audit ? { audit: r.audit } : {}), settings: r.settings ?? 'current', auditArgs: flags, decisions };
      writeOutput(join(o.out, EXPORT_FILE), JSON.stringify(manifest, null, 1) + '\n');
      if (o.json) return outJson({ job: r.job, dir: o.out, written, selections, missing: r.missing, auditArgs: flags, decisions, summary: join(o.out, EXPORT_FILE) });
      out(`job        ${r.job}`);
      out(`written    ${written} record(s) to ${o.out}, listed in ${EXPORT_FILE} (written last: a directory without it is not a whole export)`);
      if (!selections.length) out('selections none held: this node decided nothing for the job (an audit needs the buyer’s export)');
      for (const l of exportAuditLines(decisions, o.out)) out(l);
      for (const m of r.missing) out(`missing    ${m.address}: ${m.what} (not held here; an audit will say AUDIT_MISSING_RECORD)`);
}

/**
 * Each selection's settings as export.json keeps them, with their `market audit` options. A daemon before settings
 * were kept per selection gives one set, this node's at the export: each selection gets it, said to be `current`.
 */
export function exportDecisions(r: Pick<Summary, 'audit' | 'decisions'>, selections: readonly string[]): ExportDecision[] {
  const given = new Map((r.decisions ?? []).map((d) => [d.selection, d]));
  const out: ExportDecision[] = [];
  for (const s of selections) {
    const d = given.get(s);
    if (d) out.push({ ...d, auditArgs: auditFlags(d.audit) });
    else if (r.audit) out.push({ selection: s, settings: 'current', audit: r.audit, auditArgs: auditFlags(r.audit) });
  }
  return out;
}

/**
 * What `market export` prints for each selection: the audit command with the options of the settings it was decided
 * under, and, when those are not known here (decided before this node kept them, or signed by another node), that the
 * options are this node's settings now, which may not be the decider's: such an audit can fail an honest decision.
 */
export function exportAuditLines(decisions: readonly ExportDecision[], dir: string): string[] {
  const lines: string[] = [];
  const flagsOf = (d: ExportDecision) => d.auditArgs ?? auditFlags(d.audit);
  for (const d of decisions) lines.push(`audit      c0mpute market audit --selection ${d.selection} --records ${dir}${flagsOf(d).length ? ` ${flagsOf(d).join(' ')}` : ''}`);
  if (decisions.some((d) => d.settings === 'recorded' && flagsOf(d).length)) lines.push(`           (the options give the audit the trust sources and settings each decision was taken under, kept with its selection; ${EXPORT_FILE} keeps them)`);
  for (const d of decisions) {
    if (d.settings !== 'current') continue;
    lines.push(`note       ${d.selection}${d.decider ? ` (signed by ${d.decider})` : ''}: no settings were kept with this selection (a node keeps them for the selections it signs, from this version on), so its options are this node’s settings now, which may differ from those it was decided under: an audit under other settings than the decider’s may not reproduce an honest decision`);
  }
  return lines;
}

/** The records, one `write` each, from the running daemon (`c`) or else the data directory; the summary last. */
async function fetchRecords(o: ExportOpts, dataDir: string, c: ReturnType<typeof daemonClient>, write: (x: Omit<Exported['records'][number], 'e'>) => void): Promise<Summary> {
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
      return r;
}
