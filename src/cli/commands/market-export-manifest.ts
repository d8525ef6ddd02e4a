/**
 * `export.json`, the file `c0mpute market export` writes last (docs/market.md §9 "Exporting a job's records"): what the
 * export holds (the job, every record written, its address and file), what the node did not hold (`missing`) and the
 * settings the audit needs: those each selection was decided under, kept with it (`decisions`), or the exporter's at
 * the export when none were kept, said so (`settings: current`). Written whole (atomically) only once the export has ended well, so a
 * directory without it is an export cut short (the daemon died mid-stream) or one put together by hand; `market
 * audit` says so, and checks a directory against the file it has. Plain data and checks, no I/O but reading the file.
 */
import { join } from 'node:path';
import { C0Error } from '../../errors.js';
import { readRegularFile } from '../../util/bounded-read.js';
import { DEFAULT_SECOND_HAND_WEIGHT } from '../../reputation/derive.js';
import { DEFAULT_SKEW_MS } from '../../records/freshness.js';
import { isAddress } from '../../records/address.js';
import { isAuditSettings, type AuditSettings } from '../../market/audit-settings.js';
import { isDid } from '../../records/did.js';
import { T } from '../../records/kinds.js';
import type { RecordSet } from '../../market/index.js';

/** The export's summary file, beside the records. */
export const EXPORT_FILE = 'export.json';
export const EXPORT_FORMAT = 'c0mpute.export/1';

export type { AuditSettings };

/**
 * Where an export's settings for a selection come from: `recorded` with the selection when the exporting node signed
 * it; `current`: the exporting node's settings at the export (a selection it signed before it kept them, or one
 * another node signed), which need not be those it was decided under.
 */
export type SettingsSource = 'recorded' | 'current';
export const SETTINGS_SOURCES: readonly SettingsSource[] = ['recorded', 'current'];

/** One selection's settings in an export (the daemon's summary, export.json). */
export interface ExportDecision {
  selection: string;
  /** the selection's signer (absent: a daemon before these did not say) */
  decider?: string;
  settings: SettingsSource;
  audit: AuditSettings;
  /** `market audit`'s options for them (auditFlags); in export.json */
  auditArgs?: string[];
}

export interface ExportManifest {
  format: typeof EXPORT_FORMAT;
  job: string;
  /** every record written, in the order written */
  records: Array<{ type: string; address: string; file: string }>;
  selections: string[];
  /** records a selection names that the exporting node did not hold (the audit will say AUDIT_MISSING_RECORD) */
  missing: Array<{ address: string; what: string }>;
  /** the settings of the job's latest selection (else the exporting node's now), and where they come from */
  audit?: AuditSettings;
  settings?: SettingsSource;
  /** `market audit`'s options for those settings (auditFlags) */
  auditArgs: string[];
  /** each selection's settings (an export before they were kept per selection has none) */
  decisions?: ExportDecision[];
}

/** `market audit`'s options for the deciding node's settings, those that differ from the audit's defaults. */
export function auditFlags(a: AuditSettings | undefined): string[] {
  if (!a) return [];
  const f: string[] = [];
  if (a.trustedBuyers.length) f.push('--trusted-buyers', a.trustedBuyers.join(','));
  if ((a.trustedBuyers.length || a.dealtWith) && a.secondHandWeight !== DEFAULT_SECOND_HAND_WEIGHT) f.push('--second-hand-weight', String(a.secondHandWeight));
  if (a.dealtWith) f.push('--dealt-with');
  if (a.skewMs !== DEFAULT_SKEW_MS) f.push('--skew-ms', String(a.skewMs));
  if (a.stewards?.length) f.push('--steward', ...a.stewards);
  return f;
}

/** The same settings in one order (DIDs sorted), so two that mean the same compare equal. */
function canonicalFlags(a: AuditSettings | undefined): string {
  if (!a) return '[]';
  return JSON.stringify(auditFlags({ ...a, trustedBuyers: [...a.trustedBuyers].sort(), ...(a.stewards ? { stewards: [...a.stewards].sort() } : {}) }));
}

const bad = (file: string, why: string) => new C0Error('EXPORT_MANIFEST_INVALID', `${file} is not a market export's summary: ${why}`, { field: 'records' });
const isStr = (x: unknown): x is string => typeof x === 'string';
/** the record types a market export writes (the job's records, src/node/job-records.ts) */
const RECORD_TYPES: ReadonlySet<string> = new Set(Object.values(T));
/** a record file's name in the export's directory: no path in it */
const isFileName = (x: unknown): x is string => isStr(x) && x !== '' && x !== '.' && x !== '..' && !/[/\\]/.test(x);

/** The most of export.json read: a few hundred bytes a record, for a job's records by the ten thousand. */
export const EXPORT_MANIFEST_MAX_BYTES = 64 * 1024 * 1024;


function isDecision(d: unknown): d is ExportDecision {
  if (typeof d !== 'object' || d === null) return false;
  const x = d as Record<string, unknown>;
  return isAddress(x.selection) && (x.decider === undefined || (isStr(x.decider) && isDid(x.decider))) && SETTINGS_SOURCES.includes(x.settings as SettingsSource) && isAuditSettings(x.audit) && Array.isArray(x.auditArgs) && x.auditArgs.every(isStr);
}

/** `dir`'s export.json; undefined when there is none; EXPORT_MANIFEST_INVALID (exit 3) when it cannot be read as one. */
export function readExportManifest(dir: string): ExportManifest | undefined {
  const file = join(dir, EXPORT_FILE);
  let text: string;
  try {
    // a regular file of a bounded size: a FIFO would block the read for ever, a link to /dev/zero fill the memory
    const got = readRegularFile(file, EXPORT_MANIFEST_MAX_BYTES);
    if ('problem' in got) throw bad(file, got.problem === 'not-regular' ? 'not a regular file' : `more than the ${EXPORT_MANIFEST_MAX_BYTES} bytes read`);
    text = new TextDecoder().decode(got.bytes);
  } catch (e) {
    if (e instanceof C0Error) throw e;
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw bad(file, `cannot be read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  let m: ExportManifest;
  try {
    m = JSON.parse(text) as ExportManifest;
  } catch {
    throw bad(file, 'not JSON');
  }
  if (typeof m !== 'object' || m === null || m.format !== EXPORT_FORMAT) throw bad(file, `format is not "${EXPORT_FORMAT}"`);
  // what it names is checked to be what an export writes: a job's address, records of known types by address, files
  // in the directory (so no other job passes for a sha256:00, and the audit's answer quotes nothing else from it)
  if (!isAddress(m.job)) throw bad(file, 'job is not an address (sha256:<64 hex>)');
  if (!Array.isArray(m.records) || !m.records.every((r) => r && isAddress(r.address) && isStr(r.type) && RECORD_TYPES.has(r.type) && isFileName(r.file))) {
    throw bad(file, 'records is not a list of {type, address, file}: a known record type, an address (sha256:<64 hex>), a file name');
  }
  if (!Array.isArray(m.missing) || !m.missing.every((r) => r && isAddress(r.address) && isStr(r.what))) throw bad(file, 'missing is not a list of {address, what}');
  if (!Array.isArray(m.selections) || !m.selections.every(isAddress)) throw bad(file, 'selections is not a list of addresses');
  if (!Array.isArray(m.auditArgs) || !m.auditArgs.every(isStr)) throw bad(file, 'auditArgs is not a list of options');
  if (m.audit !== undefined && !isAuditSettings(m.audit)) {
    throw bad(file, 'audit is not {trustedBuyers: [DIDs], dealtWith: true|false, secondHandWeight: number, skewMs: number, stewards?: [DIDs]}');
  }
  if (m.settings !== undefined && !SETTINGS_SOURCES.includes(m.settings)) throw bad(file, `settings is not one of ${SETTINGS_SOURCES.join(', ')}`);
  if (m.decisions !== undefined && !(Array.isArray(m.decisions) && m.decisions.every(isDecision))) {
    throw bad(file, `decisions is not a list of {selection: address, decider?: DID, settings: ${SETTINGS_SOURCES.join('|')}, audit: settings, auditArgs: [options]}`);
  }
  return m;
}

/** What `market audit` says about a directory against its export.json. */
export interface ExportCheck {
  /** the directory has an export.json */
  manifest: boolean;
  job?: string;
  listed?: number;
  /** what the exporting node did not hold */
  missing?: ExportManifest['missing'];
  /** the exporter's audit options for the selection audited */
  auditArgs?: string[];
  /** where those come from: `current` when they are the exporter's settings at the export, not kept with the decision */
  settingsSource?: SettingsSource;
  /** the audit ran with other settings than the exporter's */
  settingsDiffer?: boolean;
  /** stable codes; any of them makes the audit exit 1 */
  problems: Array<{ code: string; message: string; address?: string }>;
  /** said, not failed: no export.json or another job's (without --complete) */
  warnings: Array<{ code: string; message: string }>;
}

/**
 * Check the records read from `dir` against its export.json (`m`): a record it lists that is not among the records
 * that verify is AUDIT_EXPORT_RECORD_ABSENT; no export.json is AUDIT_EXPORT_UNMARKED and another job's is
 * AUDIT_EXPORT_OTHER_JOB, each a warning, or a problem when `complete` (`market audit --complete`) asks for the job's
 * whole export.
 */
export function checkExport(dir: string, m: ExportManifest | undefined, records: RecordSet, opts: { complete?: boolean; settings?: AuditSettings; job?: string; selection?: string }): ExportCheck {
  if (!m) {
    const w = { code: 'AUDIT_EXPORT_UNMARKED', message: `no ${EXPORT_FILE} in ${dir}: not a whole \`market export\` (one cut short, or a directory put together by hand), so records may be missing without a word` };
    return opts.complete ? { manifest: false, problems: [w], warnings: [] } : { manifest: false, problems: [], warnings: [w] };
  }
  const problems: ExportCheck['problems'] = [];
  const warnings: ExportCheck['warnings'] = [];
  for (const r of m.records) {
    if (!records.get(r.address)) problems.push({ code: 'AUDIT_EXPORT_RECORD_ABSENT', address: r.address, message: `${EXPORT_FILE} lists ${r.type} ${r.address} (${r.file}), not among the records that verify here` });
  }
  // another job's export.json says nothing about this job's records: --complete, which asks for this job's whole
  // export, fails on it; without it, as for no export.json, a warning
  if (opts.job !== undefined && opts.job !== m.job) {
    const w = { code: 'AUDIT_EXPORT_OTHER_JOB', message: `${EXPORT_FILE} is the export of job ${m.job}, the selection is for job ${opts.job}` };
    (opts.complete ? problems : warnings).push(w);
  }
  // the settings of the selection audited (kept with it), else the export's one set (an export.json before they were
  // kept per selection: the exporter's settings at the export, as `settings` absent says)
  const d = opts.selection === undefined ? undefined : m.decisions?.find((x) => x.selection === opts.selection);
  const audit = d ? d.audit : m.audit;
  const settingsSource: SettingsSource = d ? d.settings : (m.settings ?? 'current');
  const settingsDiffer = audit !== undefined && opts.settings !== undefined && canonicalFlags(audit) !== canonicalFlags(opts.settings);
  return { manifest: true, job: m.job, listed: m.records.length, missing: m.missing, auditArgs: d?.auditArgs ?? (d ? auditFlags(d.audit) : m.auditArgs), ...(audit !== undefined ? { settingsSource } : {}), settingsDiffer, problems, warnings };
}
