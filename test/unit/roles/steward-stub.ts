/**
 * The whole Steward over a real Ledger and LevelDB in `dir`, its overlay a stub, for the steward unit tests that
 * drive it from outside (steward-admission-proof, -claims-restart, -release-race, -catch-up, -head-republish). The
 * job records and the LevelDB are the caller's, so they outlive a stop and a start on the same dir, as the node's do.
 * The stub answers direct requests with `request` (default: `[]`), records/1 syncs with `syncFrom` and `syncJobs` (default: none),
 * hands every gossip subscription to `hear`, and tells the steward a peer connected with `connect` (libp2p `peer:connect`).
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { CborValue } from '../../../src/records/cbor.js';
import type { Opened } from '../../../src/records/envelope.js';
import type { Advert, Job } from '../../../src/records/kinds.js';
import { didFromPublicKey } from '../../../src/records/index.js';
import { sub, type Db } from '../../../src/store/db.js';
import { Steward, STEWARD_PROTOCOL, type StewardConfig, type StewardPorts } from '../../../src/roles/steward.js';
import { peerIdFromDid } from '../../../src/node/peer-id.js';
import { fakeClock } from '../../../src/util/clock.js';
import { silentLogger, type Logger } from '../../../src/util/log.js';
import { steward as stewardKey } from '../ledger/helpers.js';
import { NOW, P } from '../market/fixtures.js';

export const stewardIdentity = { did: didFromPublicKey(stewardKey.publicKey), signer: stewardKey };
/** The buyer a stub steward's `admit` and `ask` speak for unless told otherwise. */
export const stubBuyer = P(1);

type Heard = (rec: unknown) => Promise<void> | void;
type Frame = Record<string, unknown>;

export interface StubOptions {
  cfg?: Partial<StewardConfig>;
  /** The answer to a direct request (usage, preempt, …). */
  request?: (to: string, protocol: string, frames: Array<{ op: string }>) => Promise<unknown[]>;
  /** records/1 sync from a peer; `hear` is the steward's own gossip handler for a kind. */
  syncFrom?: (peer: string, kinds: string[], hear: (kind: string, rec: unknown) => Promise<void>) => Promise<{ accepted: number }>;
  /** records/1 `jobs` from a peer (default: none, as a network before it); `hear` as for `syncFrom`. */
  syncJobs?: (peer: string, kinds: string[], jobs: string[], hear: (kind: string, rec: unknown) => Promise<void>) => Promise<{ accepted: number; failed: Record<string, string> }>;
  /** Called before a job record is stored (a test may hold it there). */
  beforePut?: (j: Opened<Job>) => Promise<void>;
  /** What the steward publishes (pool-head, …). */
  published?: (kind: string, bytes: Uint8Array) => void;
  /** The overlay's live adverts, by signer (default: none). */
  adverts?: Map<string, Opened<Advert>>;
  /** The DIDs of the peers connected to the steward now (default: none). */
  peers?: () => string[];
  /** The steward's logger (default: silent). */
  log?: Logger;
  /** The steward's wall clock (default: a fake clock at NOW). */
  clock?: () => number;
  /** The network's abuse score, told of steward/1's bad requests (default: none). */
  abuseReports?: StewardPorts['abuseReports'];
  /** The steward's monotonic clock (its per-peer refusal buckets; default the real one). */
  monoClock?: () => number;
  /** What the node's store knows of the steward's key (witness receipts, evidence): default nothing (a real RecordStore's, in steward-history.test.ts). */
  history?: Pick<StewardPorts['records'], 'witnessReceiptsFor' | 'evidenceAbout'>;
}

export async function stewardOnStub(dir: string, db: Db, records: Map<string, Opened<Job>>, o: StubOptions = {}) {
  const handlers = new Map<string, (frames: CborValue[], ctx: unknown) => Promise<void>>();
  const subs = new Map<string, Heard>();
  const hear = async (kind: string, rec: unknown) => void (await subs.get(kind)?.(rec));
  // the libp2p node's connection events, as far as the steward listens to them
  const events = new EventTarget();
  const ports = {
    name: 't',
    clock: o.clock ?? fakeClock(NOW),
    log: o.log ?? silentLogger(),
    net: {
      peers: () => (o.peers?.() ?? []).map((did) => ({ peerId: peerIdFromDid(did).toString(), did, addrs: [] })),
      handle: async (p: string, h: never) => void handlers.set(p, h),
      subscribe: (k: string, h: Heard) => {
        subs.set(k, h);
        return () => {};
      },
      publish: async (kind: string, bytes: Uint8Array) => {
        o.published?.(kind, bytes);
        return { recipients: 1, address: '' };
      },
      request: o.request ?? (async () => []),
      libp2p: events,
      ...(o.syncFrom ? { syncFrom: (peer: string, kinds: string[]) => o.syncFrom!(peer, kinds, hear) } : {}),
      ...(o.syncJobs ? { syncJobs: (peer: string, kinds: string[], jobs: string[]) => o.syncJobs!(peer, kinds, jobs, hear) } : {}),
    },
    records: {
      get: async (a: string) => records.get(a),
      put: async (j: Opened<Job>) => {
        await o.beforePut?.(j);
        records.set(j.address, j);
      },
      // bound: a RecordStore's methods are on its prototype, which a spread would leave behind
      ...(o.history?.witnessReceiptsFor ? { witnessReceiptsFor: o.history.witnessReceiptsFor.bind(o.history) } : {}),
      ...(o.history?.evidenceAbout ? { evidenceAbout: o.history.evidenceAbout.bind(o.history) } : {}),
    },
    market: { decide: async () => ({}), signSelection: () => ({}), adverts: { latest: o.adverts ?? new Map() } },
    sub: (n: string) => sub(db, n),
    ...(o.abuseReports ? { abuseReports: o.abuseReports } : {}),
    ...(o.monoClock ? { monoClock: o.monoClock } : {}),
  } as unknown as StewardPorts;
  const s = await Steward.start(ports, dir, { treeFile: join(dir, 'tree.yaml'), managed: false, requiredEvidence: 3, preempt: false, ...o.cfg }, stewardIdentity);
  /**
   * One request on /c0mpute/steward/1 from `from`: the frames answered (a thrown refusal rejects). `send` replaces the
   * stream's (e.g. one that fails: the buyer's stream broke while the steward decided).
   */
  const ask = async (req: Frame, from = stubBuyer.did, into: Frame[] = [], send?: (f: Frame) => Promise<void>) => {
    await handlers.get(STEWARD_PROTOCOL)!([req as never], { peer: peerIdFromDid(from), signal: new AbortController().signal, send: send ?? (async (f: CborValue) => void into.push(f as Frame)) });
    return into;
  };
  /** `admit` for `j` on entitlement ml at a 10 J guess (or `estimate`); the answer frames go to `into`. */
  const admit = (j: Opened<Job>, into: Frame[] = [], estimate: unknown = { uj: 10_000_000, grade: 'Estimator' }) => ask({ op: 'admit', job: j.bytes, entitlement: 'ml', estimate }, stubBuyer.did, into);
  const released = async () => (await s.ledger.records(0)).filter((e) => e.event === 'Released');
  /** `did` connects to the steward (libp2p `peer:connect`). */
  const connect = (did: string) => void events.dispatchEvent(new CustomEvent('peer:connect', { detail: peerIdFromDid(did) }));
  return { s, ask, admit, hear, released, connect, handlers };
}

/** Polls `cond` every 10 ms, at most `tries` times; fails naming `what` if it never holds. */
export async function until(cond: () => Promise<boolean> | boolean, what: string, tries = 1000): Promise<void> {
  for (let i = 0; i < tries && !(await cond()); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(await cond(), `timed out waiting for ${what}`);
}
