/**
 * Wires a pool member into a node's provider role (docs/pools.md "Running a
 * member"): reads the roster and membership files the config names, checks the
 * chain for this node's key, opens the dispatch trail and run log in the node's
 * LevelDB, serves `/c0mpute/pool/1` and starts the liveness loop. A roster
 * adopted while running (PoolMember.adopt) is kept in the `pool-roster` store;
 * at start the newer of that and the config's files is used (a kept `left`
 * record of the same seq too: a member that left stays left across a restart).
 * The other members' `left` records are kept there too, so a restart still
 * holds them out and hands them back to one that calls again.
 */
import { readFileSync } from 'node:fs';
import type { Registry } from 'prom-client';
import type { PeerId } from '@libp2p/interface';
import { C0Error } from '../../errors.js';
import { open, type Opened } from '../../records/envelope.js';
import { T, type PoolMembership, type PoolRoster, type Receipt } from '../../records/kinds.js';
import { decodeCanonical, encodeCanonical } from '../../records/cbor.js';
import type { Signer } from '../../records/ed25519.js';
import type { CborValue } from '../../records/cbor.js';
import { storeProblem, type Sub } from '../../store/db.js';
import type { Clock } from '../../util/clock.js';
import type { Logger } from '../../util/log.js';
import type { NodeConfig } from '../../node/config.js';
import { didFromPeerId } from '../../node/peer-id.js';
import { DispatchTrail, RunLog } from '../../pools/trail.js';
import type { Executor } from '../provider/executors.js';
import { PoolMember, POOL_PROTOCOL, type PoolMemberOptions, type PoolReply, type PoolSlots } from './member.js';
import { admitMembers } from './serve.js';
import { verifyPoolProof } from '../../pools/chain.js';
import { RECEIPT_ASK_FRAMES, RECEIPT_ASK_MS } from './coordinator.js';
import { PROTOCOLS, REQUEST_BASE_MS } from '../../net/protocols.js';
import { encodeRecordsRequest } from '../../net/records-protocol.js';
import { hashHex } from '../../records/address.js';

export interface PoolWiringDeps {
  config: NonNullable<NodeConfig['pool']>;
  did: string;
  signer: Signer;
  clock: Clock;
  log: Logger;
  sub: (name: string) => Sub;
  registry: Registry;
  executor: (workload: string) => Executor | undefined;
  /** The workloads this node runs (`provider.workloads`): told to the other members (member choice). */
  workloads?: readonly string[];
  /** The receipt this node's provider role stored for a job (its run entry and the evidence store). */
  ownReceipt?: (job: string) => Promise<Opened<Receipt> | undefined>;
  /** The receipts this node holds for a job (its evidence store): recovery closes a silent coordinator's dispatch with that coordinator's own. */
  heardReceipts?: (job: string) => ReadonlyArray<Opened<Receipt>>;
  maxOutputBytes: number;
  net: {
    request(peer: string, protocol: string, frames: CborValue[], opts?: { signal?: AbortSignal; limits?: { deadlineMs?: number; maxFrameBytes?: number; maxResponseFrames?: number } }): Promise<CborValue[]>;
    handle(
      protocol: string,
      handler: (frames: CborValue[], ctx: { peer: PeerId; signal: AbortSignal; send(f: CborValue): Promise<void>; callerEnded?(): Promise<'closed' | 'reset' | 'lost'> }) => Promise<void>,
      limits?: { maxFrameBytes?: number; deadlineMs?: number; maxRequestFrames?: number; requestMs?: number },
      opts?: { admit?: (peer: PeerId) => C0Error | undefined },
    ): Promise<void>;
  };
  publishReceipt: (env: Opened<Receipt>) => Promise<void>;
  /** The provider role's slots: dispatched work from another coordinator runs inside one (under its signal, its process group recorded). */
  slots?: PoolSlots;
  /** The roster in use changed (sign the advert again). */
  onRosterChanged?: () => void;
  /** `history.keepDays`: how long the trail and run log keep each job (pruned by the node, history-prune.ts). */
  keepDays?: number;
  /** Called at named failpoints; the CLI sets it from C0MPUTE_FAILPOINT (tests only). */
  failpoint?: (name: string) => void;
  /** network.clockSkewMs: a member whose clock is further than this from the pool's is not elected (PoolMemberOptions.clockSkewMs). */
  clockSkewMs?: number;
}

/** Frames carry an input or output of up to 3 MiB (pool.maxInputBytes is bounded below that). */
const FRAME_BYTES = 4 * 1024 * 1024;
/**
 * The slowest link a `run` request (one frame of up to 4 MiB) must still get through: pool/1's request phase is 30 s
 * plus a whole frame at this rate, 158 s. The default (128 KiB/s, 62 s) cut a coordinator's 4 MiB input to a member on a
 * 60 KiB/s link (review s40 E F3); only the roster's members can hold it that long (ServeOptions.admit).
 */
export const POOL_MIN_REQUEST_RATE = 32 * 1024;

/** How pool/1 is served: one request frame, answered within the member timeout (at least 10 min). */
export function poolServeLimits(memberTimeoutMs: number): { maxFrameBytes: number; deadlineMs: number; maxRequestFrames: number; requestMs: number } {
  const deadlineMs = Math.max(memberTimeoutMs, 600_000);
  return { maxFrameBytes: FRAME_BYTES, deadlineMs, maxRequestFrames: 1, requestMs: Math.min(deadlineMs, REQUEST_BASE_MS + Math.ceil((FRAME_BYTES / POOL_MIN_REQUEST_RATE) * 1000)) };
}
/**
 * The largest output a pool member runs for (docs/pools.md "Output size"): it
 * must fit in one answer frame, so `provider.maxOutputBytes` is clamped to it;
 * a larger output fails EXEC_OUTPUT_TOO_LARGE on whichever member ran it.
 */
export const POOL_MAX_OUTPUT_BYTES = 3 * 1024 * 1024;

/** Keys of the other members' `left` records in the `pool-roster` store. */
const LEFT = 'left!';

/** The member's options from its `pool` config section (docs/config.md): its gates, timing and trail bounds. */
export function poolMemberOptions(c: NonNullable<NodeConfig['pool']>): PoolMemberOptions {
  return {
    ...(c.minPrice ? { minPrice: c.minPrice } : {}),
    maxInputBytes: c.maxInputBytes,
    sizeParam: c.sizeParam,
    maxSizeParam: c.maxSizeParam,
    memberTimeoutMs: c.memberTimeoutMs,
    livenessMs: c.livenessMs,
    maxOpenDispatches: c.maxOpenDispatches,
    maxKeptDispatches: c.maxKeptDispatches,
    maxKeptBytes: c.maxKeptBytes,
  };
}

/**
 * PoolMemberDeps.askReceipts over the network: records/1 `jobs` (kinds `receipt`, the one job) to `peer`, at most
 * RECEIPT_ASK_FRAMES frames, within `deadlineMs` (dial included) and given up when `signal` aborts. The frames come
 * back unchecked: recovery checks each (src/pools/outcome.ts). A node that keeps no records by job answers
 * NET_BAD_REQUEST, which rejects as any failure does.
 */
export function askReceiptsOver(net: Pick<PoolWiringDeps['net'], 'request'>, deadlineMs = RECEIPT_ASK_MS): (peer: string, job: string, signal: AbortSignal) => Promise<unknown[]> {
  return (peer, job, signal) => net.request(peer, PROTOCOLS.records, [encodeRecordsRequest({ op: 'jobs', kinds: ['receipt'], jobs: [job] })], { signal, limits: { deadlineMs, maxResponseFrames: RECEIPT_ASK_FRAMES } });
}

export async function startPoolMember(d: PoolWiringDeps): Promise<PoolMember> {
  const maxOutputBytes = Math.min(d.maxOutputBytes, POOL_MAX_OUTPUT_BYTES);
  if (maxOutputBytes < d.maxOutputBytes) {
    d.log.info({ maxOutputBytes, configured: d.maxOutputBytes }, 'pool: outputs are bounded by one frame between members; provider.maxOutputBytes is clamped to 3 MiB for pool work');
  }
  // Each file named in what is said of it: a bad one is found without guessing which of the two it is.
  const load = <K extends typeof T.poolRoster | typeof T.poolMembership>(path: string, kind: K, what: string) => {
    try {
      return open(new Uint8Array(readFileSync(path)), kind);
    } catch (e) {
      throw new C0Error(e instanceof C0Error ? e.code : 'CONFIG_INVALID', `pool: cannot load the ${what} ${path} (pool.${what}): ${(e as Error).message}`, { field: `pool.${what}` });
    }
  };
  let roster = load(d.config.roster, T.poolRoster, 'roster') as Opened<PoolRoster>;
  let membership = load(d.config.membership, T.poolMembership, 'membership') as Opened<PoolMembership>;
  // Whether the config's pair is this node's place on that roster (the chain PoolMember checks): the error, if not.
  let unfit: C0Error | undefined;
  try {
    verifyPoolProof({ roster: roster.bytes, membership: membership.bytes }, d.did, membership.record.status === 'left' ? 'left' : 'member');
  } catch (e) {
    unfit = e instanceof C0Error ? e : new C0Error('POOL_PROOF_INVALID', (e as Error).message);
  }
  const kept = d.sub('pool-roster');
  const saved = await kept.get('current');
  // the pair kept while running, opened once (read below as the pair a roster that drops this node finds it on)
  let pair: { roster: Opened<PoolRoster>; membership: Opened<PoolMembership> } | undefined;
  if (saved !== undefined) {
    const v = decodeCanonical(saved) as { roster: Uint8Array; membership: Uint8Array };
    pair = { roster: open(v.roster, T.poolRoster), membership: open(v.membership, T.poolMembership) };
    const { roster: r, membership: m } = pair;
    // A `left` record kept while running (PoolMember.leave) also wins over the config's files of the same seq; and so
    // does the pair kept when the config's of the same seq is not this node's place on it (a membership file
    // overwritten since: docs/pools.md "Running a member").
    if (r.signer === roster.signer && (r.record.seq > roster.record.seq || (r.record.seq === roster.record.seq && (m.record.status === 'left' || unfit !== undefined)))) {
      if (unfit && r.record.seq === roster.record.seq) {
        d.log.warn({ code: unfit.code, membership: d.config.membership, roster: d.config.roster, seq: r.record.seq }, `pool: ${d.config.membership} (pool.membership) is not this node's place on roster seq ${roster.record.seq} in ${d.config.roster} (${unfit.code}: ${unfit.message}); using the pair of that seq kept in the database instead. Run pool-provider join --roster ${d.config.roster} --out ${d.config.membership} to write it again`);
      }
      roster = r;
      membership = m;
      unfit = undefined;
    }
  }
  // The config's roster does not list this node: a newer roster removed it (the operator signed it over the file the
  // config names, as docs/pools.md "Operating a pool" does). It starts as it ran before its restart: on the pair it
  // kept, removed by that roster (quoting nothing, answering the members, closing the dispatches in its trail); with
  // no pair of this pool kept, it cannot start for the pool, and the error says so.
  let removedBy: Opened<PoolRoster> | undefined;
  if (unfit && !roster.record.members.some((m) => m.did === d.did)) {
    const r = pair?.roster;
    // (an expired config roster is not one the member can be removed by: RosterState.heard ignores it, so the node would
    // quote on its older pair; it is refused as before)
    // (a kept pair of a seq at least the config's was taken above: only an older one, or none, comes here)
    if (!pair || !r || r.signer !== roster.signer || roster.record.expiresAt <= d.clock()) {
      const why = roster.record.expiresAt <= d.clock() ? `; and that roster expired at ${new Date(roster.record.expiresAt).toISOString()} (POOL_ROSTER_EXPIRED)` : ': the pool removed it, or it never joined it';
      throw new C0Error('POOL_NOT_MEMBER', `pool: this node (${d.did}) is not on roster seq ${roster.record.seq} in ${d.config.roster} (pool.roster)${why}. To serve alone, drop \`pool\` from its config; to serve the pool, point pool.roster at a roster that lists it and run pool-provider join`, { field: 'pool.roster' });
    }
    d.log.warn({ code: 'POOL_NOT_MEMBER', roster: d.config.roster, seq: roster.record.seq, using: r.record.seq }, `pool: roster seq ${roster.record.seq} in ${d.config.roster} (pool.roster) does not list this node: the pool removed it. It starts on roster seq ${r.record.seq} kept in the database, removed: it quotes nothing for the pool and closes the dispatches in its trail. To serve alone, drop \`pool\` from its config`);
    removedBy = roster;
    roster = r;
    membership = pair.membership;
    unfit = undefined;
  }
  if (unfit) throw new C0Error(unfit.code, `pool: ${d.config.membership} (pool.membership) is not this node's place on roster seq ${roster.record.seq} in ${d.config.roster} (pool.roster): ${unfit.message}`, { field: 'pool.membership' });
  // The other members' `left` records (PoolMember keeps them as they come: `left!<member>`).
  const membersLeft: Array<{ roster: Opened<PoolRoster>; membership: Opened<PoolMembership> }> = [];
  for await (const [, v] of kept.iterator({ gt: LEFT, lt: `${LEFT}\uffff` })) {
    try {
      const x = decodeCanonical(v) as { roster: Uint8Array; membership: Uint8Array };
      membersLeft.push({ roster: open(x.roster, T.poolRoster), membership: open(x.membership, T.poolMembership) });
    } catch (e) {
      d.log.warn({ err: (e as Error).message }, 'pool: a kept `left` record of another member does not open; ignored');
    }
  }
  const trailStore = d.sub('pool-trail');
  const member = new PoolMember({
    did: d.did,
    signer: d.signer,
    roster,
    membership,
    options: { ...poolMemberOptions(d.config), ...(d.clockSkewMs !== undefined ? { clockSkewMs: d.clockSkewMs } : {}) },
    clock: d.clock,
    log: d.log,
    trail: await DispatchTrail.open(trailStore, d.clock, d.log),
    runs: await RunLog.open(d.sub('pool-runs')),
    executor: d.executor,
    ...(d.workloads ? { workloads: d.workloads } : {}),
    // the database the trail and run log are in (the node's): while it takes no writes the other members are told so
    // in pings, and dispatch nothing here (docs/pools.md "Member choice")
    storeProblem: () => storeProblem(trailStore.db),
    ...(d.ownReceipt ? { ownReceipt: d.ownReceipt } : {}),
    ...(d.heardReceipts ? { heardReceipts: d.heardReceipts } : {}),
    askReceipts: askReceiptsOver(d.net, Math.min(RECEIPT_ASK_MS, d.config.livenessMs)),
    maxOutputBytes,
    registry: d.registry,
    publishReceipt: d.publishReceipt,
    saveRoster: async (r, m) => {
      await kept.batch([{ type: 'put', key: 'current', value: encodeCanonical({ roster: r.bytes, membership: m.bytes }) }], { sync: true } as never);
    },
    membersLeft,
    ...(removedBy ? { removedBy } : {}),
    syncBeforeRuns: true,
    keepMemberLeft: async (r, m) => {
      await kept.batch([{ type: 'put', key: `${LEFT}${m.signer}`, value: encodeCanonical({ roster: r.bytes, membership: m.bytes }) }], { sync: true } as never);
    },
    ...(d.onRosterChanged ? { onRosterChanged: d.onRosterChanged } : {}),
    ...(d.slots ? { slots: d.slots } : {}),
    ...(d.failpoint ? { failpoint: d.failpoint } : {}),
    ...(d.keepDays !== undefined ? { keepDays: d.keepDays } : {}),
    call: async (to, frame, timeoutMs, signal) => {
      const frames = await d.net.request(to, POOL_PROTOCOL, [frame], { ...(signal ? { signal } : {}), limits: { deadlineMs: Math.max(100, timeoutMs), maxFrameBytes: FRAME_BYTES, maxResponseFrames: 1 } });
      return (frames[0] ?? {}) as PoolReply;
    },
  });
  await d.net.handle(
    POOL_PROTOCOL,
    async (frames, ctx) => {
      const from = didFromPeerId(ctx.peer);
      const reply = await member.serve(frames[0], from, ctx.signal);
      await ctx.send(reply as CborValue);
      // The answer to dispatched work: whether the coordinator read it (closed its side) or the stream ended first
      // (reset: its process paused past the answer's linger, its connection dropped), when that is known.
      const f = frames[0] as { op?: unknown; job?: unknown; dispatch?: unknown } | undefined;
      if ((f?.op === 'run' || f?.op === 'result') && ctx.callerEnded) {
        const what = { coordinator: from, op: f.op, ...(f.job instanceof Uint8Array ? { job: hashHex(f.job) } : typeof f.dispatch === 'string' ? { dispatch: f.dispatch } : {}), answer: reply.ok === 'yes' ? 'output' : reply.code };
        void ctx.callerEnded().then((end) => {
          if (end === 'closed') d.log.info(what, 'pool: answer delivered to the coordinator');
          else d.log.info({ ...what, stream: end }, 'pool: answer not read by the coordinator (the stream ended first); kept for it to ask again within its budget (op: result)');
        });
      }
    },
    poolServeLimits(d.config.memberTimeoutMs),
    // a key outside the roster in use is refused POOL_NOT_MEMBER before its request is read
    { admit: admitMembers(() => member.members) },
  );
  d.log.info({ pool: member.pool, roster: roster.address, seq: roster.record.seq }, 'pool member ready');
  return member;
}
