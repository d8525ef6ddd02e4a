/**
 * A steward's admission parts over a real ledger and store, for the steward
 * unit tests (steward-admit-race, steward-gangs): the pool tree given, a
 * reclaimer that decides on the pool without preempting (overridable), claim
 * accounts and the gang machinery. Reopened by calling again with the same dir. A test that builds a real Reclaimer
 * over the accounts hands it over with useReclaimer (the accounts ask it whether a provider was asked to stop).
 */
import { join } from 'node:path';
import { openDb, closeDb, sub } from '../../../src/store/db.js';
import { PoolState, treeFromYaml } from '../../../src/pool/index.js';
import { Ledger } from '../../../src/ledger/index.js';
import { ClaimAccounts, ClaimStore } from '../../../src/roles/steward-accounts.js';
import { Gangs } from '../../../src/roles/steward-gangs.js';
import { WinnerResolver } from '../../../src/roles/steward-winners.js';
import type { Opened } from '../../../src/records/envelope.js';
import type { Advert, Offer } from '../../../src/records/kinds.js';
import { stillAdmits, type Reclaimer } from '../../../src/roles/steward-reclaim.js';
import type { StewardConfig, StewardPorts } from '../../../src/roles/steward-ports.js';
import { fakeClock } from '../../../src/util/clock.js';
import { silentLogger } from '../../../src/util/log.js';
import { Serial } from '../../../src/util/serial.js';
import { steward } from '../ledger/helpers.js';
import { NOW } from '../market/fixtures.js';

export interface RigOptions {
  /** The admission section (default: a plain Serial). */
  serial?: Serial;
  /** Replace parts of the reclaimer (e.g. a preempt that records its victims). */
  reclaimOver?: (pool: PoolState) => Partial<Reclaimer>;
  /** The gang machinery's pass over the line (AdmissionLine.serve), when the test builds one. */
  line?: () => Promise<boolean>;
  /** Keep single jobs' receipts and winners in the `steward-claims` sublevel, as the steward does (default: memory only). */
  claimStore?: boolean;
}

export async function stewardRig(dir: string, treeYaml: string, o: RigOptions = {}) {
  const clock = fakeClock(NOW);
  const ledger = await Ledger.open(join(dir, 'ledger'), { signer: steward, now: clock });
  const pool = new PoolState(treeFromYaml(treeYaml, 'tree.yaml'), ledger.book);
  ledger.attach(pool);
  const db = await openDb(join(dir, 'db'));
  const log = silentLogger();
  const ports = { name: 't', clock, log, records: { get: async () => undefined, put: async () => {} }, sub: (n: string) => sub(db, n) } as unknown as StewardPorts;
  const reclaim = { decideNow: (c: never) => ({ v: pool.decide(c), victims: [] }), stillAdmits: (c: never, a: never) => stillAdmits(pool, c, a), sampleRunning: async () => {}, preempt: async () => {}, ...o.reclaimOver?.(pool) } as unknown as Reclaimer;
  const append: Ledger['append'] = (e, opts) => ledger.append(e, opts);
  const serial = o.serial ?? new Serial();
  const cfg = { requiredEvidence: 3 } as StewardConfig;
  const ref: { gangs?: Gangs; reclaim?: Pick<Reclaimer, 'stopAsked' | 'restoreAsked' | 'reclaimedNote'> } = {};
  // The offers (and adverts) the steward holds: a selection's winning offer is resolved from here (steward-winners.ts).
  const offers = new Map<string, Opened<Offer>>();
  const adverts = new Map<string, Opened<Advert>>();
  const winners = new WinnerResolver({ offer: async (a) => offers.get(a), advert: async (a) => adverts.get(a) });
  // No automatic pass after a release (freed is a no-op): a test asks for it when it wants one.
  const accounts = new ClaimAccounts({
    ledger,
    did: 'did:key:steward',
    clock,
    log,
    stopped: () => false,
    append,
    forget: () => {},
    freed: async () => {},
    winners,
    // whether the steward asked a provider to stop a claim: a test that builds a Reclaimer hands it over (useReclaimer)
    stopAsked: (c, p) => ref.reclaim?.stopAsked(c, p) ?? false,
    restoreAsked: (c, b, d, m) => ref.reclaim?.restoreAsked(c, b, d, m),
    reclaimedNote: (c) => ref.reclaim?.reclaimedNote(c),
    ...(o.claimStore ? { store: new ClaimStore(sub(db, 'steward-claims')) } : {}),
    gangs: { claimOf: (j) => ref.gangs!.claimOf(j), memberOf: (j) => ref.gangs!.memberOf(j), signedByMember: (r) => ref.gangs!.signedByMember(r), noteReceipt: (c, r) => ref.gangs!.noteReceipt(c, r), released: (c) => ref.gangs!.released(c) },
  });
  const gangs = (ref.gangs = new Gangs({ ports, ledger, cfg, accounts, reclaim, append, serial, ...(o.line ? { line: o.line } : {}) }));
  const close = async () => {
    accounts.stop();
    await ledger.close();
    await closeDb(db);
  };
  /** The Reclaimer a test built over these accounts: who it asked to stop is what the accounts read (stopAsked, restoreAsked). */
  const useReclaimer = (r: Pick<Reclaimer, 'stopAsked' | 'restoreAsked' | 'reclaimedNote'>) => void (ref.reclaim = r);
  return { clock, ledger, pool, tree: pool.tree, ports, reclaim, append, serial, cfg, accounts, gangs, db, close, offers, adverts, useReclaimer };
}
