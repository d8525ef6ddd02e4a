import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ed25519Signer } from '../../../src/records/index.js';
import type { PoolEvent } from '../../../src/pool/index.js';

export function tempDir(prefix = 'c0-ledger-'): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export const steward = Ed25519Signer.generate();

export function admitted(claim: string, entitlement = 'a', uj = 100, o: Partial<Extract<PoolEvent, { event: 'Admitted' }>> = {}): PoolEvent {
  return { event: 'Admitted', claim, entitlement, class: 'train.small', reserved: { uj, grade: 'HwShunt' }, devices: 1, borrowed_uj: 0, ...o };
}

export function released(claim: string, uj = 90, grade: 'HwShunt' | 'ModelBased' | 'Estimator' = 'HwShunt'): PoolEvent {
  return { event: 'Released', claim, actual: { uj, grade } };
}
