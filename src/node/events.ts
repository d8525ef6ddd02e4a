/**
 * Buyer events, job results and records as plain JSON (for the control API's
 * answers and NDJSON stream, the console's routes, and in-process rendering
 * alike): records become `{type, address, signer, record}`, and every byte
 * string, a record's own fields included (a job's `nonce`), becomes lowercase
 * hex; a bigint becomes its decimal string. So a field has one JSON shape
 * whether a daemon answered or the CLI ran the job itself (docs/node.md
 * "Control API": "Records in JSON").
 */
import type { Opened } from '../records/envelope.js';
import type { BuyerEvent, JobResult } from '../roles/buyer.js';

export interface WireRecord {
  type: string;
  address: string;
  signer: string;
  record: unknown;
}

/** A record as JSON: its envelope's identity, and its fields with bytes as hex (toWire). */
export function wireRecord(r: Opened): WireRecord {
  return { type: r.type, address: r.address, signer: r.signer, record: toWire(r.record) };
}

function isOpened(v: unknown): v is Opened {
  return typeof v === 'object' && v !== null && 'bytes' in v && 'address' in v && 'signer' in v && 'record' in v;
}

/** Deep-convert a value: Opened → WireRecord, Uint8Array → hex, bigint → decimal string. */
export function toWire(v: unknown): unknown {
  if (isOpened(v)) return wireRecord(v);
  if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('hex');
  if (typeof v === 'bigint') return v.toString();
  if (Array.isArray(v)) return v.map(toWire);
  if (v instanceof Map) return Object.fromEntries([...v.entries()].map(([k, x]) => [String(k), toWire(x)]));
  if (v instanceof Set) return [...v].map(toWire);
  if (typeof v === 'object' && v !== null) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, toWire(x)]));
  return v;
}

export type WireEvent = Record<string, unknown> & { e: string };

export function eventToWire(e: BuyerEvent): WireEvent {
  return toWire(e) as WireEvent;
}

export function resultToWire(r: JobResult): Record<string, unknown> {
  const { output, ...rest } = r;
  return { ...(toWire(rest) as Record<string, unknown>), ...(output ? { output: Buffer.from(output).toString('base64') } : {}) };
}
