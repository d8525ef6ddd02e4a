/**
 * A batch as the planner takes it (docs/matching.md "Batch plans"; issue #12
 * "Batch plans"): validated with zod, so the CLI's batch.yaml and the API's
 * `POST /v1/batch/plan` body are checked by one schema. Bad input is
 * BATCH_FIELD_INVALID naming the field; nothing is stored.
 */
import { z } from 'zod';
import { C0Error } from '../errors.js';
import { FEATURE_RE, REGION_RE, TIERS, WORKLOAD_RE } from '../records/kinds.js';
import { AMOUNT_RE, CURRENCY_RE } from '../records/money.js';
import type { Batch } from './batch-plan.js';

/** At most this many lines in one batch (a plan is built in memory). */
export const BATCH_MAX_LINES = 1_000_000;
/** At most this many workloads in one batch. */
export const BATCH_MAX_WORKLOADS = 64;

const money = z.object({ amount: z.string().regex(AMOUNT_RE, 'a decimal amount like 0.05'), currency: z.string().regex(CURRENCY_RE, 'a currency code like USD') }).strict();
/** A job's requirements as a job file or a batch line states them (the same fields as `c0mpute.job/1`'s). */
export const requirementsSchema = z
  .object({
    gpu: z.object({ count: z.number().int().positive(), vramMiB: z.number().int().nonnegative(), features: z.array(z.string().regex(FEATURE_RE)).optional() }).strict().optional(),
    cpuCores: z.number().int().positive().optional(),
    memoryMiB: z.number().int().positive().optional(),
    regions: z.array(z.string().regex(REGION_RE)).optional(),
    tier: z.enum(TIERS).optional(),
    allowlist: z.array(z.string()).optional(),
  })
  .strict();
const ms = z.number().int().positive().max(366 * 24 * 3_600_000);

export const batchSchema = z
  .object({
    windowMs: ms,
    workloads: z
      .array(
        z
          .object({
            workload: z.string().regex(WORKLOAD_RE, 'a workload namespace like builtin.sha256'),
            lines: z.number().int().positive().max(BATCH_MAX_LINES),
            units: z.record(z.string().regex(/^[a-z][a-z0-9_-]{0,23}$/, 'a pricing unit like second or mib'), z.string().regex(AMOUNT_RE, 'a decimal amount (summed units)')).default({}),
            lineMs: ms,
            timeoutMs: ms.optional(),
            lineInputBytes: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER).optional(),
            maxPrice: money,
            requirements: requirementsSchema.optional(),
          })
          .strict(),
      )
      .min(1, 'a batch names at least one workload')
      .max(BATCH_MAX_WORKLOADS),
  })
  .strict();

/** Validate a batch (already in wire shape); BATCH_FIELD_INVALID names the first bad field. */
export function parseBatch(raw: unknown, source = 'batch'): Batch {
  const r = batchSchema.safeParse(raw ?? {});
  if (!r.success) throw batchFieldError(r.error, source);
  const b = r.data as Batch;
  const total = b.workloads.reduce((s, w) => s + w.lines, 0);
  if (total > BATCH_MAX_LINES) throw new C0Error('BATCH_FIELD_INVALID', `${source}: ${total} lines in all; at most ${BATCH_MAX_LINES}`, { field: 'workloads' });
  const seen = new Set<string>();
  for (const [i, w] of b.workloads.entries()) {
    // ⌊window ÷ lineMs⌋ = 0: no line could ever be placed; the field is wrong, not the network's capacity
    if (w.lineMs > b.windowMs) throw new C0Error('BATCH_FIELD_INVALID', `${source}: workloads.${i}.lineMs (${w.lineMs}) is longer than windowMs (${b.windowMs}), so no line fits in the window`, { field: `workloads.${i}.lineMs` });
    if (seen.has(w.workload)) throw new C0Error('BATCH_FIELD_INVALID', `${source}: workload ${w.workload} is listed twice (sum its lines and units into one entry)`, { field: `workloads.${i}.workload` });
    seen.add(w.workload);
  }
  return b;
}

export function batchFieldError(err: z.ZodError, source: string): C0Error {
  const issues = err.issues.map((i) => `${i.path.join('.') || '(top)'}: ${i.message}`);
  const first = err.issues[0];
  return new C0Error('BATCH_FIELD_INVALID', `${source}: ${issues.slice(0, 5).join('; ')}${issues.length > 5 ? ` (+${issues.length - 5} more)` : ''}`, {
    field: first ? first.path.join('.') : '',
    detail: { issues },
  });
}
