/**
 * Three pool members in one process with their own LevelDB stores, the protocol calls wired straight to each other's
 * `serve` (as coordinator.test.ts does), for the tests of what a member believes of another: a hostile member is one
 * on the roster with its own key, sending the frames any member can send. `intercept` answers a call in place of the
 * member called (a lying or crashing member); `workloads` says which workloads a member's executors run; `kept` is
 * each node's receipt store as the provider role keeps it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { randomBytes } from 'node:crypto';
import { C0Error } from '../../../src/errors.js';
import { seal, type Opened } from '../../../src/records/envelope.js';
import { hashHex } from '../../../src/records/address.js';
import { T, type Job, type Offer, type PoolRoster, type Receipt } from '../../../src/records/kinds.js';
import type { CborValue } from '../../../src/records/cbor.js';
import type { Ed25519Signer } from '../../../src/records/ed25519.js';
import { closeDb, openDb, sub, type Db } from '../../../src/store/db.js';
import { fakeClock } from '../../../src/util/clock.js';
import { silentLogger } from '../../../src/util/log.js';
import { DispatchTrail, RunLog } from '../../../src/pools/trail.js';
import { PoolMember, POOL_MEMBER_DEFAULTS, type PoolMemberDeps, type PoolMemberOptions, type PoolReply } from '../../../src/roles/pool-member/member.js';
import { createExecutor, type Executor } from '../../../src/roles/provider/executors.js';
import { receiptFor } from '../../../src/roles/provider/provider.js';
import { signerFrom } from '../records/fixtures.js';
import { MEMBERS, keyOf, membership, roster } from './helpers.js';
import { selectMember } from '../../../src/pools/choice.js';

export const buyer = signerFrom(2);
export const clock = fakeClock(1_800_000_000_000);
export const r = roster();

export interface RigOptions {
  /** Answer a call instead of the member called (undefined: the member answers). */
  intercept?: (from: string, to: string, frame: Record<string, CborValue>) => Promise<PoolReply | undefined>;
  /** The workloads each member runs (default: every one). */
  workloads?: (did: string) => string[];
  keepDays?: number;
  options?: Partial<PoolMemberOptions>;
  extra?: (did: string, w: World) => Partial<PoolMemberDeps>;
  /** The pool's roster (default `r`: the three MEMBERS); its members must be keys helpers.ts knows (keyOf). */
  roster?: Opened<PoolRoster>;
}

export interface World {
  members: Map<string, PoolMember>;
  down: Set<string>;
  runs: Map<string, number>;
  published: Array<{ by: string; rec: Opened<Receipt> }>;
  /** The receipts each node's provider role stored (its receipt store), by job. */
  kept: Map<string, Map<string, Opened<Receipt>>>;
}

export class Rig {
  #dir = mkdtempSync(join(tmpdir(), 'c0-pools-rig-'));
  #dbs = new Map<string, Db>();

  async world(name: string, o: RigOptions = {}): Promise<World> {
    const w: World = { members: new Map(), down: new Set(), runs: new Map(), published: [], kept: new Map() };
    for (const did of (o.roster ?? r).record.members.map((m) => m.did)) await this.addMember(w, name, did, o);
    for (const m of w.members.values()) {
      await m.start();
      m.stop();
    }
    return w;
  }

  /** A member (again, over the same store: a restart). */
  async addMember(w: World, name: string, did: string, o: RigOptions = {}): Promise<PoolMember> {
    const path = join(this.#dir, `${name}-${did.slice(-6)}`);
    const db = this.#dbs.get(path) ?? (await openDb(path));
    this.#dbs.set(path, db);
    const base = createExecutor({ type: 'builtin', name: 'builtin.sha256' });
    const counted: Executor = {
      kind: 'builtin',
      run: async (ctx) => {
        w.runs.set(did, (w.runs.get(did) ?? 0) + 1);
        return base.run(ctx);
      },
    };
    const runs = o.workloads?.(did);
    if (!w.kept.has(did)) w.kept.set(did, new Map());
    const m = new PoolMember({
      did,
      signer: keyOf(did),
      roster: o.roster ?? r,
      membership: membership(o.roster ?? r, keyOf(did)),
      options: { ...POOL_MEMBER_DEFAULTS, livenessMs: 1000, memberTimeoutMs: 400, ...o.options },
      clock,
      monoClock: clock, // the fake time stands for elapsed time too
      log: silentLogger(),
      trail: await DispatchTrail.open(sub(db, 'pool-trail'), clock),
      runs: await RunLog.open(sub(db, 'pool-runs')),
      executor: (wl) => (runs && !runs.includes(wl) ? undefined : counted),
      maxOutputBytes: 1 << 20,
      ...(o.keepDays !== undefined ? { keepDays: o.keepDays } : {}),
      publishReceipt: async (rec) => void w.published.push({ by: did, rec }),
      call: async (to, frame): Promise<PoolReply> => {
        if (w.down.has(to) || w.down.has(did)) throw new C0Error('NET_DIAL_FAILED', 'down');
        const x = await o.intercept?.(did, to, frame);
        if (x) return x;
        return w.members.get(to)!.serve(frame, did);
      },
      ...(o.extra?.(did, w) ?? {}),
    });
    w.members.set(did, m);
    return m;
  }

  async close(): Promise<void> {
    for (const db of this.#dbs.values()) await closeDb(db);
    rmSync(this.#dir, { recursive: true, force: true });
  }
}

export function job(opts: { deadline?: number; by?: Ed25519Signer } = {}): { job: Opened<Job>; input: Uint8Array } {
  const input = new Uint8Array(randomBytes(16));
  const now = clock();
  const j = seal(
    T.job,
    {
      workload: 'builtin.sha256',
      requirements: {},
      maxPrice: { amount: '0.01', currency: 'USD' },
      announcedAt: now,
      deadline: opts.deadline ?? now + 120_000,
      timeoutMs: 60_000,
      input: { hash: hashHex(input), size: input.length },
      inputSealed: 'no',
      nonce: new Uint8Array(randomBytes(8)),
    },
    opts.by ?? buyer,
  ) as Opened<Job>;
  return { job: j, input };
}

/** A job whose chosen member (selectMember over MEMBERS) passes `chosen`: e.g. one not run by a hostile member. */
export function jobChosen(chosen: (member: string) => boolean): { job: Opened<Job>; input: Uint8Array } {
  let jj = job();
  while (!chosen(selectMember(jj.job.address, MEMBERS))) jj = job();
  return jj;
}

export function offer(j: Opened<Job>, by: string, amount = '0.009'): Opened<Offer> {
  const now = clock();
  return seal(T.offer, { job: j.address, advert: 'sha256:' + 'a'.repeat(64), price: { amount, currency: 'USD' }, durationMs: 1000, issuedAt: now, startBy: now + 10_000, expiresAt: now + 10_000 }, keyOf(by)) as Opened<Offer>;
}

export const ctx = (input: Uint8Array) => ({ input, signal: new AbortController().signal, onProgress: () => {}, maxOutputBytes: 1 << 20 });

export async function codeOfAsync(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'none';
  } catch (e) {
    return e instanceof C0Error ? e.code : String(e);
  }
}

/** A receipt for `j` as member `did` signs it for the pool (the provider role's shape). */
export function pooledReceipt(m: PoolMember, j: Opened<Job>, o: Opened<Offer>, did: string, outcome: { output?: Uint8Array; failure?: Receipt['failure'] }): Opened<Receipt> {
  return seal(T.receipt, m.receipt(receiptFor(j, o, { startedAt: clock(), completedAt: clock(), energy: { uj: 0, grade: 'Estimator' }, ...outcome })), keyOf(did)) as Opened<Receipt>;
}

/** What the provider role does after the run: sign the pooled receipt, store it, and call `closed`. */
export async function finish(w: World, m: PoolMember, j: Opened<Job>, o: Opened<Offer>, did: string, run: Promise<Uint8Array>): Promise<Opened<Receipt>> {
  let output: Uint8Array | undefined;
  let failure: Receipt['failure'];
  try {
    output = await run;
  } catch (e) {
    failure = { code: (e as C0Error).code ?? 'X', message: 'x' };
  }
  const rec = pooledReceipt(m, j, o, did, { ...(failure ? { failure } : {}), ...(output ? { output } : {}) });
  w.kept.get(did)!.set(j.address, rec);
  await m.closed(rec);
  return rec;
}

/** Each member's earnings (USD) as `m` tallies them, and its jobs completed and failed, summed. */
export async function tallyOf(m: PoolMember): Promise<{ earned: Record<string, string>; sum: number; completed: number; failed: number; dispatched: number }> {
  const st = (await m.status()) as { members: Array<{ did: string; earned: Record<string, string>; jobs: { dispatched: number; completed: number; failed: number } }> };
  return {
    earned: Object.fromEntries(st.members.map((x) => [x.did, x.earned.USD ?? '0'])),
    sum: st.members.reduce((s, x) => s + Number(x.earned.USD ?? '0'), 0),
    completed: st.members.reduce((s, x) => s + x.jobs.completed, 0),
    failed: st.members.reduce((s, x) => s + x.jobs.failed, 0),
    dispatched: st.members.reduce((s, x) => s + x.jobs.dispatched, 0),
  };
}

export { signerFrom, MEMBERS, keyOf };
