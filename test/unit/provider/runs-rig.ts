/**
 * What the store-backed provider tests (crashed-runs, receipt-unacked-restart, stop-drains-runs) build alike: a
 * provider config of builtin workloads, the Provider deps that do not vary between them, its `state` over a
 * ProviderRuns store, and the buyer's job and selection for a run.
 */
import { Ed25519Signer } from '../../../src/records/ed25519.js';
import { seal, type Opened } from '../../../src/records/envelope.js';
import { didFromPublicKey } from '../../../src/records/did.js';
import { hashHex } from '../../../src/records/address.js';
import { T, type Job, type Offer, type Selection } from '../../../src/records/kinds.js';
import type { fakeClock } from '../../../src/util/clock.js';
import { silentLogger } from '../../../src/util/log.js';
import { generateBoxKeyPair } from '../../../src/crypto/sealed-box.js';
import { parseConfig, type ProviderConfig } from '../../../src/node/config.js';
import { EstimatorMeter } from '../../../src/roles/provider/meters.js';
import type { ProviderDeps } from '../../../src/roles/provider/provider.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { closeDb, openDb, sub, type Db } from '../../../src/store/db.js';
import { ProviderRuns } from '../../../src/store/provider-runs.js';

export const NOW = 1_800_000_000_000;
export const signer = Ed25519Signer.generate();
export const did = didFromPublicKey(signer.publicKey);
export const buyer = Ed25519Signer.generate();
export const buyerDid = didFromPublicKey(buyer.publicKey);

/** A provider config running each of `workloads` (builtins) at 0.001 USD. */
export function runsConfig(workloads: string[], slots?: number): ProviderConfig {
  const entries = workloads.map((w) => [w, { executor: { type: 'builtin', name: w }, price: { amount: '0.001', currency: 'USD' }, duration: { baseMs: 1000 } }]);
  return parseConfig({ roles: ['provider'], provider: { ...(slots === undefined ? {} : { slots }), workloads: Object.fromEntries(entries) } }).provider!;
}

/** The Provider deps these tests share: identity, hardware, meter, box, clock, log, no eligibility, `state` over `runs`. */
export function runsDeps(runs: ProviderRuns, clock: ReturnType<typeof fakeClock>): Pick<ProviderDeps, 'signer' | 'did' | 'hardware' | 'meter' | 'box' | 'clock' | 'log' | 'eligibility' | 'state'> {
  return {
    signer,
    did,
    hardware: { cpuCores: 4, memoryMiB: 8192 },
    meter: new EstimatorMeter(50, clock),
    box: generateBoxKeyPair(),
    clock,
    log: silentLogger(),
    eligibility: () => [],
    state: {
      loadSeq: async () => 0,
      saveSeq: async () => {},
      hasReceiptFor: (job) => runs.has(job),
      noteRun: (n, until) => runs.note(n, until),
      dropNote: (job) => runs.dropNote(job),
      notes: () => runs.notes(),
    },
  };
}

/** A job of the buyer's for `workload` over `input`, with `params`. */
export function runsJob(workload: string, input: Uint8Array, params: string): Opened<Job> {
  return seal(T.job, { workload, requirements: {}, maxPrice: { amount: '0.01', currency: 'USD' }, announcedAt: NOW, deadline: NOW + 600_000, timeoutMs: 300_000, input: { hash: hashHex(input), size: input.length }, inputSealed: 'no', params, nonce: Uint8Array.of(Math.floor(Math.random() * 256)) }, buyer);
}

/** The buyer's selection of the provider's `offer` on `j`. */
export function selectionOf(j: Opened<Job>, offer: Opened<Offer>): Opened<Selection> {
  return seal(T.selection, { job: j.address, buyer: buyerDid, policy: 'balanced', winner: offer.address, considered: [{ provider: did, offer: offer.address }], decidedAt: NOW }, buyer);
}

/** Run `f` over a ProviderRuns store on a fresh LevelDB in a temp dir (`c0-<name>-…`), closed and removed after. */
export async function withStore(name: string, f: (runs: ProviderRuns, db: Db) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), `c0-${name}-`));
  const db = await openDb(join(dir, 'db'));
  try {
    await f(await ProviderRuns.open(db, sub(db, 'provider-runs'), NOW), db);
  } finally {
    await closeDb(db);
    rmSync(dir, { recursive: true, force: true });
  }
}
