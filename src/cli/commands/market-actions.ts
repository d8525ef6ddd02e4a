/**
 * What `c0mpute market select|explain|audit` run (market.ts declares them), and
 * the record-directory reader `market probe --records` shares: loaded only when
 * one of them runs.
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { C0Error } from '../../errors.js';
import { MAX_ENVELOPE_BYTES, type Opened } from '../../records/envelope.js';
import { open, openAny } from '../record-kinds.js';
import { isAddress } from '../../records/address.js';
import { T, type Delegation, type Job, type Offer, type Selection } from '../../records/kinds.js';
import { RecordSet, auditSelection, explainMarket, parsePolicy, select, shortDid, signSelection, type Failure, type MarketExplanation, type SelectResult } from '../../market/index.js';
import { deriveReputation, type TrustSources } from '../../reputation/index.js';
import { requireDid } from '../../records/did.js';
import { EXIT, NegativeAnswer, out, outJson, readInput, UsageError, writeOutput } from '../context.js';
import { loadNodeIdentity } from '../signer.js';
import { globals } from './index.js';
import { DEFAULT_LIST_LIMIT, listLimit, moreProviders, num, pickShown } from '../summary.js';
import { parseAt } from './market.js';
import { EXPORT_FILE, checkExport, readExportManifest, type ExportCheck } from './market-export-manifest.js';
import { DEFAULT_SECOND_HAND_WEIGHT } from '../../reputation/derive.js';
import { DEFAULT_SKEW_MS } from '../../records/freshness.js';
import { printable } from '../../util/text.js';
import { readRegularFile, walkNames, WalkTooLarge, type BoundedRead } from '../../util/bounded-read.js';

interface Refused {
  file: string;
  code: string;
  message: string;
}

/** The most names a records directory may hold (a job's export holds a few thousand records), and how deep. */
export const RECORD_DIR_BOUNDS = { maxEntries: 1_000_000, maxDepth: 32 } as const;

/**
 * Read every file under `dir` (its subdirectories too; links are read as files, never followed into directories) and
 * open it; refusals are collected, not fatal. A `market export`'s summary, `export.json` at the top, is not a record:
 * it is left to `market audit` (market-export-manifest.ts). What is not a regular file (a FIFO, a socket, a device, a
 * link to a directory) is skipped; one that cannot be read (a dangling link, a link loop) is refused INPUT_UNREADABLE,
 * one larger than any record ENVELOPE_TOO_LARGE, read no further (src/util/bounded-read.ts).
 */
export function loadRecordDir(dir: string): { records: RecordSet; refused: Refused[]; read: number } {
  let names: string[];
  try {
    if (!statSync(dir).isDirectory()) throw new C0Error('RECORDS_NOT_A_DIRECTORY', `${dir} is not a directory`, { field: 'records' });
    names = walkNames(dir, RECORD_DIR_BOUNDS);
  } catch (e) {
    if (e instanceof C0Error) throw e;
    if (e instanceof WalkTooLarge) throw new C0Error('RECORDS_DIR_TOO_LARGE', `the records directory ${dir} has ${e.message}`, { field: 'records' });
    throw new C0Error('RECORDS_UNREADABLE', `cannot read the records directory ${dir}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`, { field: 'records' });
  }
  const records = new RecordSet();
  const refused: Refused[] = [];
  let read = 0;
  for (const name of names.sort()) {
    if (name === EXPORT_FILE) continue;
    const p = join(dir, name);
    let got: BoundedRead;
    try {
      got = readRegularFile(p, MAX_ENVELOPE_BYTES);
    } catch (e) {
      read++;
      refused.push({ file: name, code: 'INPUT_UNREADABLE', message: `cannot read ${p}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}` });
      continue;
    }
    if ('problem' in got && got.problem === 'not-regular') continue;
    read++;
    if ('problem' in got) {
      refused.push({ file: name, code: 'ENVELOPE_TOO_LARGE', message: `${p} is more than a record's ${MAX_ENVELOPE_BYTES} bytes` });
      continue;
    }
    try {
      records.add(openAny(got.bytes));
    } catch (e) {
      if (!(e instanceof C0Error)) throw e;
      refused.push({ file: name, code: e.code, message: e.message });
    }
  }
  return { records, refused, read };
}

/**
 * A job or selection given as a file path or as an address among the records.
 * A file that is not a valid record (a flipped byte, a bad signature) is a
 * negative answer (exit 1, README "Exit codes"); a file of another record type
 * is the operator's mistake (exit 3).
 */
function resolveRecord<R>(arg: string, type: string, records: RecordSet, what: string, json?: boolean): Opened<R> {
  if (isAddress(arg)) {
    const r = records.getTyped<R>(arg, type);
    if (!r) throw new C0Error('MARKET_RECORD_NOT_FOUND', `no ${what} ${arg} among the records`, { field: what });
    return r;
  }
  const bytes = readInput(arg);
  let r: Opened<R>;
  try {
    r = open(bytes, type) as Opened<R>;
  } catch (e) {
    if (!(e instanceof C0Error) || e.code === 'RECORD_WRONG_TYPE') throw e;
    if (json) outJson({ invalid: { what, file: arg, code: e.code, message: e.message } });
    throw new NegativeAnswer(json ? [] : [`invalid   ${what} ${arg}: ${e.code}: ${e.message}`]);
  }
  records.add(r as Opened);
  return r;
}


function pad(rows: string[][]): string[] {
  const w = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(w[i]!))).join('  '));
}

function failureLine(f: Failure): string {
  return `${f.code}: ${f.message}`;
}

function explanationLines(e: MarketExplanation, detail: boolean, limit = DEFAULT_LIST_LIMIT): string[] {
  const lines = [`summary  ${e.summary}`];
  if (e.binding.length) lines.push(`binding  ${e.binding.map((b) => `${b.constraint} (${b.failing} of ${e.known} fail)`).join(', ')}`);
  for (const r of e.relaxations) lines.push(`relax    ${r.text}`);
  if (e.expired.length) lines.push(`expired  ${e.expired.length} advert(s): ${e.expired.slice(0, limit).map(shortDid).join(', ')}${e.expired.length > limit ? ` and ${num(e.expired.length - limit)} more` : ''}`);
  if (detail) {
    const { shown, hidden } = pickShown(e.providers, limit);
    for (const v of shown) {
      lines.push(`${v.eligible ? 'eligible  ' : 'ineligible'} ${v.provider}${v.offer ? `  offer ${v.offer}` : ''}`);
      for (const f of v.failures) lines.push(`    ${failureLine(f)}`);
    }
    if (hidden.length) lines.push(moreProviders(hidden));
  }
  return lines;
}

function header(jobRec: Opened<Job>, read: number, refused: Refused[]): string[] {
  const j = jobRec.record;
  const lines = [`job      ${jobRec.address} (${j.workload}, max ${j.maxPrice.amount} ${j.maxPrice.currency})`, `records  ${read} read, ${refused.length} refused`];
  for (const r of refused) lines.push(`refused  ${r.file}: ${r.code}: ${r.message}`);
  return lines;
}

function selectLines(r: SelectResult): string[] {
  const lines: string[] = [`policy   ${r.policy}`];
  if (r.ok) {
    const rows = [['rank', 'provider', 'price', 'duration', 'tier', 'price', 'speed', 'rep', 'trust', 'total']];
    for (const x of r.ranked) {
      rows.push([String(x.rank), x.provider, `${x.price.amount} ${x.price.currency}`, `${x.durationMs} ms`, x.tier, x.scores.price.toFixed(4), x.scores.speed.toFixed(4), x.scores.reputation.toFixed(4), x.scores.trust.toFixed(2), x.total.toFixed(4)]);
    }
    lines.push('', ...pad(rows), '');
    lines.push(`winner   ${r.winner.offer} from ${r.winner.provider}`);
    lines.push(`why      ${r.why}`);
  }
  if (r.ineligible.length) {
    lines.push('ineligible offers:');
    for (const v of r.ineligible) lines.push(`  ${v.provider}: ${v.failures.map((f) => f.code).join(', ')}`);
  }
  if (!r.ok) lines.push(...explanationLines(r.explanation, false));
  return lines;
}

/** The buyer's trust sources on the command line (`market select` and `market audit` alike). */
export interface TrustOpts {
  trustedBuyers?: string;
  secondHandWeight?: string;
  dealtWith?: boolean;
}

/**
 * The trust sources `--trusted-buyers` (comma-separated DIDs), `--second-hand-weight` (in (0, 1], the config's
 * reputation.secondHandWeight) and `--dealt-with` give: the job buyer's own evidence only when none is given.
 */
export function trustFromOpts(o: TrustOpts): TrustSources {
  const trustedBuyers = (o.trustedBuyers ?? '').split(',').map((d) => d.trim()).filter(Boolean);
  for (const d of trustedBuyers) asUsage(() => requireDid(d, 'trusted-buyers'));
  const out: TrustSources = { trustedBuyers };
  if (o.secondHandWeight !== undefined) {
    const w = Number(o.secondHandWeight);
    if (o.secondHandWeight.trim() === '' || !Number.isFinite(w) || w <= 0 || w > 1) {
      throw new UsageError('MARKET_BAD_WEIGHT', `--second-hand-weight takes a number above 0 and at most 1, got "${o.secondHandWeight.slice(0, 40)}"`, { field: 'second-hand-weight' });
    }
    out.secondHandWeight = w;
  }
  if (o.dealtWith) out.dealtWith = true;
  return out;
}

/** An option value `fn` refuses (a C0Error) as a wrong command line: the same code, exit 2. */
function asUsage<T>(fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    if (e instanceof C0Error && !(e instanceof UsageError)) throw new UsageError(e.code, e.message, { ...(e.field === undefined ? {} : { field: e.field }) });
    throw e;
  }
}

/** The clock-skew window on the command line: the deciding node's `network.clockSkewMs` (default 30 s). */
export interface SkewOpts {
  skewMs?: string;
}

/** `--skew-ms`: a whole number of milliseconds, 0 or more; MARKET_BAD_SKEW otherwise. Absent: the default window. */
export function skewFromOpts(o: SkewOpts): { skewMs?: number } {
  if (o.skewMs === undefined) return {};
  const n = Number(o.skewMs);
  if (o.skewMs.trim() === '' || !Number.isSafeInteger(n) || n < 0) {
    throw new UsageError('MARKET_BAD_SKEW', `--skew-ms takes a whole number of milliseconds, 0 or more, got "${o.skewMs.slice(0, 40)}"`, { field: 'skew-ms' });
  }
  return { skewMs: n };
}

export interface SelectOpts extends TrustOpts, SkewOpts {
  job: string;
  records: string;
  policy: string;
  at?: string;
  out?: string;
  delegation?: string;
  json?: boolean;
}

/** `market select` */
export async function selectAction(opts: SelectOpts, cmd: Command): Promise<void> {
  // --policy is a command-line value: an unknown one is a wrong command line (exit 2)
  const policy = asUsage(() => parsePolicy(opts.policy));
  const now = parseAt(opts.at);
  const { records, refused, read } = loadRecordDir(opts.records);
  const jobRec = resolveRecord<Job>(opts.job, T.job, records, 'job', opts.json);
  // Reputation as the job's buyer sees it: its own jobs, plus its trust sources (docs/market.md).
  const trust = trustFromOpts(opts);
  const skew = skewFromOpts(opts);
  const reputation = deriveReputation({ receipts: records.receipts, acceptances: records.acceptances, offers: records.offers, nondeliveries: records.nondeliveries }, { self: jobRec.signer, asOf: now, trust });
  const result = select({ job: jobRec, adverts: records.adverts, offers: records.offers, policy, reputation, now, ...skew });
  let signed: Opened<Selection> | undefined;
  if (opts.out && result.ok) {
    const delegation = opts.delegation ? resolveRecord<Delegation>(opts.delegation, T.delegation, records, 'delegation') : undefined;
    const id = await loadNodeIdentity(globals(cmd).dataDir);
    signed = signSelection({ result, job: jobRec, signer: id.signer, offerAt: (a) => records.getTyped<Offer>(a, T.offer), ...skew, ...(delegation ? { delegation } : {}) });
    writeOutput(opts.out, signed.bytes);
  }
  if (opts.json) {
    outJson({ records: { read, refused }, ...result, ...(signed ? { selection: { address: signed.address, file: opts.out } } : {}) });
    if (!result.ok) process.exitCode = EXIT.NEGATIVE;
    return;
  }
  const lines = [...header(jobRec, read, refused), ...selectLines(result)];
  if (signed) lines.push(`signed   ${signed.address} → ${opts.out}`);
  if (!result.ok) throw new NegativeAnswer(lines);
  for (const l of lines) out(l);
}

export interface ExplainOpts extends SkewOpts {
  job: string;
  records: string;
  at?: string;
  json?: boolean;
  limit?: string;
  all?: boolean;
}

/** `market explain` */
export function explainAction(opts: ExplainOpts): void {
  const now = parseAt(opts.at);
  const { records, refused, read } = loadRecordDir(opts.records);
  const jobRec = resolveRecord<Job>(opts.job, T.job, records, 'job', opts.json);
  const e = explainMarket({ job: jobRec, adverts: records.adverts, offers: records.offers, now, ...skewFromOpts(opts) });
  if (opts.json) {
    outJson({ records: { read, refused }, ...e });
    return;
  }
  for (const l of [...header(jobRec, read, refused), `known    ${e.known} provider(s), ${e.eligible} eligible`, ...explanationLines(e, true, listLimit(opts))]) out(l);
}

export interface AuditOpts extends TrustOpts, SkewOpts {
  selection: string;
  records: string;
  steward?: string[];
  /** a directory without a `market export`'s export.json fails the audit (AUDIT_EXPORT_UNMARKED) instead of a warning */
  complete?: boolean;
  json?: boolean;
}

function exportLines(x: ExportCheck): string[] {
  const lines: string[] = [];
  if (x.manifest) {
    const absent = x.problems.filter((p) => p.code === 'AUDIT_EXPORT_RECORD_ABSENT').length;
    lines.push(`export    ${EXPORT_FILE}: job ${x.job}, ${x.listed} record(s) listed, ${absent ? `${absent} not here` : 'all here'}`);
    for (const m of x.missing ?? []) lines.push(`export    not held by the exporting node: ${m.address}: ${m.what}`);
    const args = x.auditArgs?.length ? x.auditArgs.join(' ') : '(the defaults)';
    if (x.settingsSource === 'current') {
      // not kept with the selection: the exporter's settings on the day it exported, not necessarily the decider's
      lines.push(`note      ${EXPORT_FILE} holds no settings kept with this selection: its options, ${args}, are the exporting node’s settings at the export, which may differ from those the selection was decided under${x.settingsDiffer ? `; this audit runs with other settings than those` : ''}`);
    } else if (x.settingsDiffer) lines.push(`note      the selection was decided under other settings than this audit's: ${args} (kept with it, ${EXPORT_FILE}); an audit without them may differ`);
  }
  for (const w of x.warnings) lines.push(`warning   ${w.code}: ${w.message}${w.code === 'AUDIT_EXPORT_UNMARKED' ? ' (--complete makes this fail the audit)' : ''}`);
  for (const p of x.problems) lines.push(`differs   ${p.code}: ${p.message}`);
  // each one line: export.json is anyone's text (its missing[].what, auditArgs), and a line break in it would print as
  // a line of the audit's own (a fake `result    reproduces`)
  return lines.map((l) => printable(l));
}

/** A command-line word as a POSIX shell reads it back: as is when plain, else single-quoted. */
function shellWord(w: string): string {
  return /^[A-Za-z0-9_./:@%+=,-]+$/.test(w) ? w : `'${w.replace(/'/g, `'\\''`)}'`;
}

/**
 * The `market select` that shows the audited selection's ranking and why: its job, these records, its policy, its
 * decision time and the trust options this audit was given. Before (QA ffRcpt F4) the hint was `market select --at T`
 * alone, which ranks under `balanced` (and without the buyer's trust sources): for a `cheapest` selection it showed
 * another ranking than the one decided.
 */
function rankingCommand(job: string, opts: AuditOpts, policy: string, decidedAt: number): string {
  const words = ['market', 'select', '--job', job, '--records', opts.records, '--policy', policy, '--at', String(decidedAt)];
  if (opts.trustedBuyers !== undefined && opts.trustedBuyers.trim() !== '') words.push('--trusted-buyers', opts.trustedBuyers);
  if (opts.secondHandWeight !== undefined) words.push('--second-hand-weight', opts.secondHandWeight);
  if (opts.dealtWith) words.push('--dealt-with');
  if (opts.skewMs !== undefined) words.push('--skew-ms', opts.skewMs);
  return words.map(shellWord).join(' ');
}

/** `market audit` */
export function auditAction(opts: AuditOpts): void {
  // the buyer's trust sources: its decision counted their evidence, so its recomputation must (docs/market.md §7)
  const trust = trustFromOpts(opts);
  const skew = skewFromOpts(opts);
  // a steward that is not a DID is a wrong command line (exit 2), not a decision no steward may take (AUDIT_*, exit 1)
  for (const d of opts.steward ?? []) asUsage(() => requireDid(d, 'steward'));
  const { records, refused, read } = loadRecordDir(opts.records);
  const manifest = readExportManifest(opts.records);
  const sel = resolveRecord<Selection>(opts.selection, T.selection, records, 'selection', opts.json);
  const a = auditSelection({ selection: sel, records, trust, ...skew, ...(opts.steward ? { stewards: opts.steward } : {}) });
  // the directory against its export.json: a record it lists and the directory lacks, or (--complete) none at all
  const settings = { trustedBuyers: [...(trust.trustedBuyers ?? [])], dealtWith: trust.dealtWith === true, secondHandWeight: trust.secondHandWeight ?? DEFAULT_SECOND_HAND_WEIGHT, skewMs: skew.skewMs ?? DEFAULT_SKEW_MS, ...(opts.steward ? { stewards: opts.steward } : {}) };
  const x = checkExport(opts.records, manifest, records, { complete: opts.complete === true, settings, job: a.job, selection: sel.address });
  const ok = a.reproduces && x.problems.length === 0;
  if (opts.json) {
    const { result: _r, ...rest } = a;
    outJson({ records: { read, refused }, ...rest, export: x });
    if (!ok) process.exitCode = EXIT.NEGATIVE;
    return;
  }
  const lines = [`selection ${a.selection} by ${a.decider}${a.authority ? ` (${a.authority.as})` : ''}`, `job       ${a.job}`, `policy    ${a.policy}`, `records   ${read} read, ${refused.length} refused`];
  for (const r of refused) lines.push(`refused   ${r.file}: ${r.code}`);
  // each winner with its provider, and when it was decided: `market select --at` that time shows the ranking and why
  const providerOf = (offer: string) => sel.record.considered.find((c) => c.offer === offer)?.provider ?? records.getTyped<Offer>(offer, T.offer)?.signer;
  const winner = (offer: string | undefined) => (offer === undefined ? '(none)' : `${offer}${providerOf(offer) ? ` (${shortDid(providerOf(offer)!)})` : ''}`);
  lines.push(`decided   ${new Date(a.decidedAt).toISOString()} (${rankingCommand(a.job, opts, a.policy, a.decidedAt)} shows the ranking)`);
  lines.push(`winner    claimed ${winner(a.claimedWinner)}`, `          recomputed ${winner(a.recomputedWinner)}`);
  for (const n of a.notes) lines.push(`note      ${n}`);
  lines.push(...exportLines(x));
  // every difference before the result: the result is always the last line
  for (const d of a.differences) lines.push(`differs   ${d.code}: ${d.message}`);
  if (ok) {
    lines.push('result    reproduces');
    for (const l of lines) out(l);
    return;
  }
  const notExport = !x.manifest ? `not a whole export (no ${EXPORT_FILE})` : x.problems.some((p) => p.code === 'AUDIT_EXPORT_OTHER_JOB') ? `not this job's export (its ${EXPORT_FILE} is another job's)` : `not the export its ${EXPORT_FILE} lists`;
  lines.push(a.reproduces ? `result    reproduces, but the directory is ${notExport} (above)` : 'result    does not reproduce');
  throw new NegativeAnswer(lines);
}
