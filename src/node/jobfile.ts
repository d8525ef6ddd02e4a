/**
 * The job file's schema and its reading into a job spec (docs/jobfile.md;
 * docs/console.md "Run a job"): durations accept `90s`, `5m`, `1h` or
 * milliseconds (a bare number: `deadline: 60` is 60 ms, refused as too soon,
 * JOB_DEADLINE_TOO_SOON); maxPrice accepts "0.05 USD" or {amount, currency}; the input
 * comes from --input FILE, `inputFile`, or inline `input` text. Shared by the
 * CLI (src/cli/jobfile.ts reads the file) and the daemon's console
 * (`POST /v1/console/run` sends the text), so the daemon does not depend on src/cli.
 */
import { dirname, resolve } from 'node:path';
import { z } from 'zod';
import { C0Error } from '../errors.js';
import { GRADES, JOB_PARAMS_MAX, POLICIES, WORKLOAD_RE } from '../records/kinds.js';
import { AMOUNT_RE, CURRENCY_RE, parseMoney } from '../records/money.js';
import { configError } from './config.js';
import { readInputFile } from './job-input.js';
import { checkJobDeadlineMs } from '../records/freshness.js';
import { requirementsSchema } from '../matching/batch-input.js';
import { parsePlainYaml } from '../util/yaml.js';
import { parseDid } from '../records/did.js';
import { isAlias, isScalar, parseDocument } from 'yaml';

const duration = z.union([z.number().int().positive(), z.string().regex(/^[0-9]*[1-9][0-9]*(ms|s|m|h)$/, 'a positive duration like 90s, 5m, 1h or milliseconds')]);

const jobFileSchema = z
  .object({
    workload: z.string().regex(WORKLOAD_RE, 'a workload namespace like builtin.sha256'),
    params: z.union([z.string(), z.number()]).optional(),
    // said as a price, not zod's "Invalid input": a bare `maxPrice: 0.01` is a YAML number with no currency (QA s49)
    maxPrice: z.union([z.string(), z.object({ amount: z.string().regex(AMOUNT_RE), currency: z.string().regex(CURRENCY_RE) }).strict()], {
      error: 'expected a price like "0.01 USD" (quoted, with its currency) or {amount: "0.01", currency: USD}',
    }),
    deadline: duration.default('60s'),
    timeout: duration.optional(),
    policy: z.enum(POLICIES).optional(),
    sealInput: z.boolean().default(false),
    /** On an overlay with a steward: the entitlement the job runs under, its class, and an energy estimate. */
    entitlement: z.string().optional(),
    class: z.string().optional(),
    energy: z.object({ uj: z.number().int().nonnegative(), grade: z.enum(GRADES) }).strict().optional(),
    input: z.string().optional(),
    inputFile: z.string().optional(),
    requirements: requirementsSchema.optional(),
    /**
     * An open order (docs/matching.md "Open orders, claims and leases"): `order: {}` an open bid, `order: {designated: DID}`;
     * `minReputation` the least score a claimant needs in this node's reputation view ("Whom an order takes").
     */
    order: z.object({ designated: z.string().optional(), minReputation: z.number().min(0).max(1).optional() }).strict().nullable().optional(),
  })
  .strict();

/** The buyer's offer-collection window when the caller does not say (config `buyer.collectWindowMs`'s default). */
export const DEFAULT_COLLECT_WINDOW_MS = 3000;
/** What a deadline must leave after the offers are collected: to decide, reach the winner, send the input, run, and take the receipt. */
export const MIN_RUN_AFTER_COLLECT_MS = 5000;
/** The shortest deadline of an order (`order:`, `--open`, `--designated`): it collects no offers, a claim takes it. */
export const MIN_ORDER_DEADLINE_MS = 1000;
/** The shortest `timeout` a job file takes: below it a run ends EXEC_TIMEOUT before a process or a request has started. */
export const MIN_JOB_TIMEOUT_MS = 1000;

/** The shortest deadline a job may have when its buyer collects offers for `collectWindowMs`: the window plus MIN_RUN_AFTER_COLLECT_MS. */
export function minJobDeadlineMs(collectWindowMs = DEFAULT_COLLECT_WINDOW_MS): number {
  return collectWindowMs + MIN_RUN_AFTER_COLLECT_MS;
}

/**
 * A deadline (or timeout) too short to collect offers and run is refused before anything is signed: without this a
 * bare `deadline: 60` (60 ms) was published already past, and the run ended "no eligible provider", never saying why.
 */
function checkTooShort(field: 'deadline' | 'timeout', value: number | string, ms: number, minMs: number, path: string, why: string, collectWindowMs: number): void {
  if (ms >= minMs) return;
  const bare = typeof value === 'number' ? ` (a bare number is read as milliseconds; write ${value}s for seconds)` : '';
  throw new C0Error(field === 'deadline' ? 'JOB_DEADLINE_TOO_SOON' : 'JOB_TIMEOUT_TOO_SHORT', `${path}: ${field} ${value} is ${ms} ms${bare}: ${why}; give at least ${minMs} ms (${Math.ceil(minMs / 1000)}s)`, {
    field,
    detail: { value, ms, minMs, collectWindowMs },
  });
}

export function parseDuration(v: number | string): number {
  if (typeof v === 'number') return v;
  const m = /^([0-9]+)(ms|s|m|h)$/.exec(v)!;
  const n = Number(m[1]);
  return m[2] === 'ms' ? n : m[2] === 's' ? n * 1000 : m[2] === 'm' ? n * 60_000 : n * 3_600_000;
}

export interface JobFileOptions {
  input?: string;
  policy?: string;
  /** a job with no input is allowed (the probe only needs its size) */
  inputOptional?: boolean;
  /** `c0mpute run --open`: post the job as an open bid (an open order) */
  open?: boolean;
  /** `c0mpute run --designated DID`: post the job as an order designated to DID */
  designated?: string;
  /** the buyer's `buyer.collectWindowMs`, which the deadline must outlast (default DEFAULT_COLLECT_WINDOW_MS) */
  collectWindowMs?: number;
}

/** A job file's `maxPrice` text: MONEY_MALFORMED as parseMoney says it, naming the file and the field as every other job-file error does. */
function moneyIn(text: string, path: string): ReturnType<typeof parseMoney> {
  try {
    return parseMoney(text);
  } catch (e) {
    if (e instanceof C0Error) throw new C0Error(e.code, `${path}: maxPrice: ${e.message}`, { field: 'maxPrice' });
    throw e;
  }
}

/**
 * A number given as `params`, as its decimal text exactly as the file writes it (`params: 100000` is "100000",
 * `1.50` is "1.50", 30 digits stay 30 digits). Read from the YAML source, not the number it parses to: before (QA
 * ffBuyerDay2 F4) `123456789012345678901234567890` was signed as "1.2345678901234568e+29", `0x1F` as "31", `1e3` as
 * "1000". A number written otherwise (hex, octal, an exponent, `+5`, `.inf`) is JOB_FILE_INVALID: quote it.
 */
function paramsAsWritten(text: string, path: string): string {
  const node = parseDocument(text, { logLevel: 'silent' }).get('params', true);
  // only a scalar written here: an alias's `source` is its anchor's name (`params: *5` after `&5 60000` read "5"; review s56)
  if (isAlias(node)) throw new C0Error('JOB_FILE_INVALID', `${path}: params: an alias (*${String(node.source).slice(0, 40)}) is not taken for params: write the value itself, quoted`, { field: 'params' });
  const src = isScalar(node) && typeof node.source === 'string' ? node.source : undefined;
  if (src !== undefined && /^-?[0-9]+(\.[0-9]+)?$/.test(src)) return src;
  throw new C0Error('JOB_FILE_INVALID', `${path}: params: ${String(src ?? 'the number').slice(0, 40)} is a number not written in decimal digits; params are sent as text, so quote what the workload should get (params: "${String(src ?? '').slice(0, 40)}")`, { field: 'params' });
}


/**
 * The job record's own limits on what the file gives, checked where the file is named: before (QA ffBuyerDay2 F6) an
 * allowlist entry that is not a DID or an empty allowlist was `RECORD_FIELD_INVALID` and a params text over 4096
 * characters too, a timeout past what a record holds `JOB_SPEC_INVALID … timeoutMs`, none naming the file or its key.
 */
function refuseRecordLimits(j: { params?: string | undefined; requirements?: { allowlist?: string[] | undefined } | undefined }, timeoutMs: number | undefined, path: string): void {
  const bad = (field: string, why: string) => new C0Error('JOB_FILE_INVALID', `${path}: ${field}: ${why}`, { field });
  // the text sent: a number's is the digits as written (paramsAsWritten), so 5,000 of them are caught here too
  if (j.params !== undefined && j.params.length > JOB_PARAMS_MAX) throw bad('params', `longer than ${JOB_PARAMS_MAX} characters (${j.params.length}), the job record's limit`);
  const allow = j.requirements?.allowlist;
  if (allow !== undefined) {
    if (allow.length === 0) throw bad('requirements.allowlist', 'an empty allowlist admits no provider: name at least one DID, or leave allowlist out');
    allow.forEach((did, i) => {
      try {
        parseDid(did);
      } catch (e) {
        throw bad(`requirements.allowlist[${i}]`, (e as Error).message);
      }
    });
  }
  if (timeoutMs !== undefined && !Number.isSafeInteger(timeoutMs)) throw bad('timeout', `${timeoutMs} ms is more than a job record holds; the run ends at the deadline anyway (at most 2160h)`);
}

/**
 * The same checks on job-file text (the console's "Run a job" sends YAML):
 * `path` names it in errors and anchors `inputFile`; with `files: false`
 * (the console) `inputFile` is refused and the input must be inline.
 */
export function parseJobFileText(text: string, path: string, opts: JobFileOptions & { files?: boolean } = {}): Record<string, unknown> {
  let raw: unknown;
  try {
    raw = parsePlainYaml(text);
  } catch (e) {
    throw new C0Error('JOB_FILE_NOT_YAML', `${path} is not valid YAML: ${(e as Error).message}`);
  }
  const r = jobFileSchema.safeParse(raw ?? {});
  if (!r.success) {
    const err = configError(r.error, path, jobFileSchema);
    throw new C0Error('JOB_FILE_INVALID', err.message, { field: err.field ?? '' });
  }
  const j = r.data;
  let input: Uint8Array;
  if (opts.files === false && j.inputFile) throw new C0Error('JOB_FILE_INVALID', `${path}: inputFile is not read here; give the input inline (input:)`, { field: 'inputFile' });
  // both in the file: which one it meant cannot be told, and the job would be bought on one of them (QA ffBuyerDay2 F5)
  if (opts.input === undefined && j.input !== undefined && j.inputFile !== undefined) {
    throw new C0Error('JOB_FILE_INVALID', `${path}: input and inputFile: give the input one way, inline (input:) or from a file (inputFile:), not both`, { field: 'inputFile' });
  }
  const inputPath = opts.input ?? (j.inputFile ? resolve(dirname(path), j.inputFile) : undefined);
  // at most what a buyer sends (16 MiB): a larger file is refused on its size, a stream (stdin, /dev/zero) once past it
  if (inputPath) input = readInputFile(inputPath);
  else input = new TextEncoder().encode(j.input ?? '');
  if (input.length === 0 && !opts.inputOptional) throw new C0Error('JOB_FILE_INVALID', `${path}: the job has no input (give input:, inputFile: or --input)`, { field: 'input' });
  const deadlineMs = parseDuration(j.deadline);
  checkJobDeadlineMs(deadlineMs, `${path}: deadline ${j.deadline}`);
  const collectWindowMs = opts.collectWindowMs ?? DEFAULT_COLLECT_WINDOW_MS;
  // the file's designated provider is checked here, where the file is named (`market probe` took any text; `run`
  // refused it later, as JOB_SPEC_INVALID without the file); --designated is checked as a flag
  const named = j.order?.designated;
  if (named !== undefined && opts.designated === undefined) {
    try {
      parseDid(named);
    } catch (e) {
      throw new C0Error('JOB_FILE_INVALID', `${path}: order.designated: ${(e as Error).message}`, { field: 'order.designated' });
    }
  }
  // an order collects no offers: the first valid claim takes it (docs/matching.md), so a few seconds are a real deadline
  const isOrder = orderOf(j.order, opts).order !== undefined;
  const minDeadlineMs = isOrder ? MIN_ORDER_DEADLINE_MS : minJobDeadlineMs(collectWindowMs);
  checkTooShort('deadline', j.deadline, deadlineMs, minDeadlineMs, path, isOrder ? 'an order must leave a provider time to claim it' : `the buyer collects offers for ${collectWindowMs} ms and then needs time to run the job, so it would pass before anyone could run it`, collectWindowMs);
  const timeoutMs = j.timeout === undefined ? undefined : parseDuration(j.timeout);
  // what the job record would refuse later, without the file's name (RECORD_FIELD_INVALID, JOB_SPEC_INVALID): said here
  const params = j.params === undefined ? undefined : typeof j.params === 'number' ? paramsAsWritten(text, path) : j.params;
  refuseRecordLimits({ params, requirements: j.requirements }, timeoutMs, path);
  if (timeoutMs !== undefined) checkTooShort('timeout', j.timeout!, timeoutMs, MIN_JOB_TIMEOUT_MS, path, 'the run would time out before its work started', collectWindowMs);
  const policy = opts.policy ?? j.policy;
  if (policy !== undefined && !(POLICIES as readonly string[]).includes(policy)) throw new C0Error('POLICY_UNKNOWN', `unknown policy "${policy}"; one of ${POLICIES.join(', ')}`);
  return {
    workload: j.workload,
    ...(params === undefined ? {} : { params }),
    maxPrice: typeof j.maxPrice === 'string' ? moneyIn(j.maxPrice, path) : j.maxPrice,
    deadlineMs,
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
    ...(policy ? { policy } : {}),
    ...(j.sealInput ? { sealInput: true } : {}),
    ...(j.entitlement ? { entitlement: j.entitlement } : {}),
    ...(j.class ? { class: j.class } : {}),
    ...(j.energy ? { energy: j.energy } : {}),
    ...(j.requirements ? { requirements: normaliseRequirements(j.requirements) } : {}),
    ...orderOf(j.order, opts),
    input: Buffer.from(input).toString('base64'),
  };
}

/** The job's `order` from the file's `order:` key and the flags (`--designated` wins over the file's). */
function orderOf(file: { designated?: string | undefined; minReputation?: number | undefined } | null | undefined, opts: JobFileOptions): { order?: { designated?: string; minReputation?: number } } {
  // `--open` asks for an order any provider may claim: a file that designates one provider asks otherwise
  if (opts.open && opts.designated === undefined && file?.designated !== undefined) {
    throw new C0Error('JOB_ORDER_CONFLICT', `--open posts an order any provider may claim, and the job file's order.designated names one (${file.designated.slice(0, 80)}): drop one of them`, { field: 'order.designated' });
  }
  const designated = opts.designated ?? file?.designated;
  const floor = file?.minReputation === undefined ? {} : { minReputation: file.minReputation };
  if (designated !== undefined) return { order: { designated, ...floor } };
  if (opts.open || file !== undefined) return { order: { ...floor } };
  return {};
}

/** Sorted, de-duplicated lists as the record format requires. */
function normaliseRequirements(r: Record<string, unknown>): Record<string, unknown> {
  const out = { ...r };
  const sortU = (a: unknown) => [...new Set(a as string[])].sort();
  if (out.regions) out.regions = sortU(out.regions);
  if (out.allowlist) out.allowlist = sortU(out.allowlist);
  if (out.gpu && (out.gpu as { features?: string[] }).features) out.gpu = { ...(out.gpu as object), features: sortU((out.gpu as { features: string[] }).features) };
  return out;
}
