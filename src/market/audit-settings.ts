/**
 * The settings a decision was taken under that its audit must be given (docs/market.md §7 "An auditor needs the
 * buyer's trust sources", §9 "Exporting a job's records"): the decider's trust sources, its clock-skew window and the
 * steward it takes as a decider. A `selection/1` cannot carry them, so the node that signs a selection keeps them with
 * it in its own store (RecordStore.putDecision: local, never on the wire), and `market export` writes them into
 * `export.json`. Plain data and checks, no I/O.
 */
import { isDid } from '../records/did.js';

/** The deciding node's trust sources, skew window and steward: the audit needs the same (docs/market.md §7). */
export interface AuditSettings {
  trustedBuyers: string[];
  dealtWith: boolean;
  secondHandWeight: number;
  skewMs: number;
  stewards?: string[];
}

const isStr = (x: unknown): x is string => typeof x === 'string';
const isDidList = (x: unknown): x is string[] => Array.isArray(x) && x.every((d) => isStr(d) && isDid(d));
const isNum = (x: unknown): x is number => typeof x === 'number' && Number.isFinite(x);

/** True when `a` has the shape of AuditSettings (DIDs that parse, finite numbers). */
export function isAuditSettings(a: unknown): a is AuditSettings {
  if (typeof a !== 'object' || a === null || Array.isArray(a)) return false;
  const x = a as Record<string, unknown>;
  return isDidList(x.trustedBuyers) && typeof x.dealtWith === 'boolean' && isNum(x.secondHandWeight) && isNum(x.skewMs) && (x.stewards === undefined || isDidList(x.stewards));
}

/** The settings as the store keeps them with a selection (JSON, DIDs sorted: the same settings are the same bytes). */
export function encodeAuditSettings(a: AuditSettings): Uint8Array {
  const v: AuditSettings = {
    trustedBuyers: [...a.trustedBuyers].sort(),
    dealtWith: a.dealtWith,
    secondHandWeight: a.secondHandWeight,
    skewMs: a.skewMs,
    ...(a.stewards?.length ? { stewards: [...a.stewards].sort() } : {}),
  };
  return new TextEncoder().encode(JSON.stringify(v));
}

/** Settings kept with a selection; undefined when the bytes are not such settings (a damaged entry is not trusted). */
export function decodeAuditSettings(bytes: Uint8Array): AuditSettings | undefined {
  try {
    const v: unknown = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
    return isAuditSettings(v) ? v : undefined;
  } catch {
    return undefined;
  }
}
