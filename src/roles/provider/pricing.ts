/**
 * The provider's pricing rule (from config): a unit price per workload, and a
 * quoted duration model (base + per MiB of input). Exact decimal arithmetic.
 */
import type { Money } from '../../records/money.js';
import { scaleAmount } from '../../records/money.js';
import type { WorkloadConfig } from '../../node/config.js';

const MIB = 1024 * 1024;

export function quotedDurationMs(w: WorkloadConfig, inputBytes: number): number {
  return w.duration.baseMs + Math.ceil((inputBytes / MIB) * w.duration.perInputMiBMs);
}

export function quotePrice(w: WorkloadConfig, inputBytes: number, durationMs: number): Money {
  const qty = w.unit === 'job' ? 1 : w.unit === 'second' ? Math.max(1, Math.ceil(durationMs / 1000)) : Math.max(1, Math.ceil(inputBytes / MIB));
  return { amount: scaleAmount(w.price.amount, qty), currency: w.price.currency };
}
