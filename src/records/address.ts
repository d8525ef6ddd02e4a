/** Content addresses and hashes: SHA-256, shown as `sha256:<hex>`. */
import { createHash } from 'node:crypto';
import { C0Error } from '../errors.js';

export const ADDR_PREFIX = 'sha256:';
const ADDR_RE = /^sha256:[0-9a-f]{64}$/;

export function sha256(bytes: Uint8Array): Uint8Array {
  return new Uint8Array(createHash('sha256').update(bytes).digest());
}

export function hashHex(bytes: Uint8Array): string {
  return ADDR_PREFIX + createHash('sha256').update(bytes).digest('hex');
}

export function isAddress(s: unknown): s is string {
  return typeof s === 'string' && ADDR_RE.test(s);
}

export function addressToBytes(s: string, field = 'address'): Uint8Array {
  if (!isAddress(s)) throw new C0Error('ADDRESS_MALFORMED', `${field}: expected sha256:<64 hex>, got "${String(s).slice(0, 80)}"`, { field });
  return new Uint8Array(Buffer.from(s.slice(ADDR_PREFIX.length), 'hex'));
}

export function bytesToAddress(b: Uint8Array): string {
  return ADDR_PREFIX + Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');
}
