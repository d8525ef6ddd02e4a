/**
 * The pooled-provider scenario (`c0mpute devnet --pool`, `npm start -- --pool`;
 * docs/pools.md, issue #13): a pool of three member processes next to two
 * independent providers and a buyer. Jobs land on members by hash; a job whose
 * member returns whitespace gets the pool's failed receipt and the buyer fails
 * over to an independent provider; the elected coordinator is killed mid-job
 * and the next one closes the job from the dispatch trail; the settlements sum
 * to the prices.
 */
import { join } from 'node:path';
import { Decimal } from 'decimal.js';
import { apiCall } from '../node/api.js';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { C0Error } from '../errors.js';
import type { Identity } from '../node/identity.js';
import { open, seal, type Opened } from '../records/envelope.js';
import { compareDids } from '../records/did.js';
import { T, type PoolMember, type PoolRoster } from '../records/kinds.js';
import { selectMember } from '../pools/choice.js';
import { verifyPoolProof } from '../pools/chain.js';
import { nextRosterSeq } from '../pools/roster-seq.js';
import type { WireEvent } from '../node/events.js';
import { devnetIdentity, freePort, waitFor, type Devnet, type NodeProc } from './devnet.js';

export interface PoolView {
  pool: string;
  epoch: number;
  coordinator?: string;
  nextCoordinator?: string;
  members: Array<{ did: string; weight?: number; offRoster?: boolean; live: boolean; jobs: { dispatched: number; completed: number; failed: number }; earned: Record<string, string> }>;
}

const MEMBERS = ['m1', 'm2', 'm3'] as const;
const SOLOS = ['solo1', 'solo2'] as const;

/** The pool's coordinator epoch, ms. */
export const POOL_EPOCH_MS = 5000;
/** How long a roster the devnet signs is valid. */
export const POOL_ROSTER_LIFETIME_MS = 7 * 24 * 3600_000;
/** A stored roster with less than this left is signed again (seq + 1) rather than reused. */
export const POOL_ROSTER_MIN_LEFT_MS = 24 * 3600_000;

/** The pool's keys, roster and memberships in a devnet's directory (preparePool). */
export interface PoolKeys {
  pool: Identity;
  /** The members', the independent providers' and the buyer's keys, by node name. */
  ids: Record<string, Identity>;
  rosterFile: string;
  roster: Opened<PoolRoster>;
  /** Each member's membership file, by node name. */
  memberships: Record<string, string>;
  /** Whether the roster is the one stored by an earlier run on this directory (else it was signed now). */
  reused: boolean;
}

function sameMembers(a: readonly PoolMember[], b: readonly PoolMember[]): boolean {
  const key = (m: PoolMember) => JSON.stringify([m.did, m.weight, m.hardware.cpuCores, m.hardware.memoryMiB, m.hardware.gpus ?? []]);
  return a.length === b.length && a.every((m, i) => key(m) === key(b[i]!));
}

/**
 * The pool's keys, roster and memberships in `dir`, made on the first run and reused on every later run on the
 * same `--dir` (README "--dir"): each key stored there is loaded, not made again. The stored roster (roster.cose)
 * is kept when this pool signed it for these members and epoch and it is valid for another day
 * (POOL_ROSTER_MIN_LEFT_MS); a member's membership that does not countersign it is signed again. Otherwise a new
 * roster is signed with a seq above the stored one (nextRosterSeq): members, and buyers that heard the earlier
 * roster, refuse one of the same seq (POOL_ROSTER_STALE). A roster.cose that is not a roster is refused
 * (DEVNET_STATE_INVALID), not overwritten.
 */
export function preparePool(dir: string, now = Date.now()): PoolKeys {
  const pool = devnetIdentity(join(dir, 'poolkey'));
  const ids = Object.fromEntries([...MEMBERS, ...SOLOS, 'buyer'].map((n) => [n, devnetIdentity(join(dir, n))]));
  const members: PoolMember[] = MEMBERS.map((n, i) => ({ did: ids[n]!.did, weight: i + 1, hardware: { cpuCores: 8, memoryMiB: 16384 } })).sort((a, b) => compareDids(a.did, b.did));
  const rosterFile = join(dir, 'roster.cose');
  const memberships = Object.fromEntries(MEMBERS.map((n) => [n, join(dir, n, 'membership.cose')]));
  let stored: Opened<PoolRoster> | undefined;
  if (existsSync(rosterFile)) {
    try {
      stored = open(readFileSync(rosterFile), T.poolRoster) as Opened<PoolRoster>;
    } catch (e) {
      throw new C0Error('DEVNET_STATE_INVALID', `${rosterFile} is not a pool roster (${(e as Error).message}): move it away, or run the devnet in another --dir`, { field: 'dir', detail: { file: rosterFile }, cause: e });
    }
    // signed by another key (the pool's key folder was removed since): this pool has signed nothing yet
    if (stored.signer !== pool.did) stored = undefined;
  }
  const reused = !!stored && sameMembers(stored.record.members, members) && stored.record.epochMs === POOL_EPOCH_MS && stored.record.expiresAt - now >= POOL_ROSTER_MIN_LEFT_MS;
  let roster: Opened<PoolRoster>;
  if (reused) roster = stored!;
  else {
    const seq = nextRosterSeq(undefined, stored && { seq: stored.record.seq, where: `at ${rosterFile}` });
    roster = seal(T.poolRoster, { seq, issuedAt: now, expiresAt: now + POOL_ROSTER_LIFETIME_MS, epochMs: POOL_EPOCH_MS, members }, pool.signer);
    writeFileSync(rosterFile, roster.bytes);
  }
  for (const n of MEMBERS) {
    if (reused && countersigns(memberships[n]!, roster, ids[n]!.did)) continue;
    writeFileSync(memberships[n]!, seal(T.poolMembership, { pool: pool.did, roster: roster.address, seq: roster.record.seq, status: 'member', signedAt: now }, ids[n]!.signer).bytes);
  }
  return { pool, ids, rosterFile, roster, memberships, reused };
}

/** Whether the membership at `file` is `did`'s countersignature of `roster` (a missing or unreadable one is not). */
function countersigns(file: string, roster: Opened<PoolRoster>, did: string): boolean {
  if (!existsSync(file)) return false;
  try {
    return verifyPoolProof({ roster: roster.bytes, membership: new Uint8Array(readFileSync(file)) }, did).roster.address === roster.address;
  } catch {
    return false;
  }
}

export interface PoolNet {
  ids: Record<string, { did: string }>;
  procs: Record<string, NodeProc>;
  apis: Record<string, { api: string; token: string }>;
  bapi: { api: string; token: string };
  pool: (n: string) => Promise<PoolView>;
  live: () => string[];
  poolDid: string;
}

/** Start the pool (3 members), two independent providers and a buyer; wait until the buyer sees 5 adverts and the members agree. */
export async function startPoolNet(net: Devnet, print: (s: string) => void): Promise<PoolNet> {
  const { peerIdFromDid } = await import('../node/peer-id.js');
  const { pool: poolId, ids, rosterFile, roster, memberships, reused } = preparePool(net.dir);
  const ports: Record<string, number> = {};
  for (const n of Object.keys(ids)) ports[n] = await freePort();
  const addr = (n: string) => `/ip4/127.0.0.1/tcp/${ports[n]}/p2p/${peerIdFromDid(ids[n]!.did).toString()}`;
  const base = (n: string, boot: string[]) => ({ log: { level: 'info', format: 'json' }, network: { listen: [`/ip4/127.0.0.1/tcp/${ports[n]}`], loopback: true, bootstrap: boot }, api: { listen: '127.0.0.1:0' } });
  const provider = (price: string, echo: string[]) => ({
    tier: 'standard',
    detectGpus: false,
    hardware: { cpuCores: 8, memoryMiB: 16384, gpus: [] },
    meter: { type: 'estimator', estimatorWatts: 65 },
    workloads: {
      'builtin.sha256': { executor: { type: 'builtin', name: 'builtin.sha256' }, price: { amount: price, currency: 'USD' }, duration: { baseMs: 1000 } },
      'builtin.sleep': { executor: { type: 'builtin', name: 'builtin.sleep' }, price: { amount: price, currency: 'USD' }, duration: { baseMs: 200 } },
      'demo.echo': { executor: { type: 'exec', command: echo }, price: { amount: price, currency: 'USD' }, duration: { baseMs: 500 } },
    },
  });
  print(`c0mpute devnet --pool: a pool of 3 members, 2 independent providers and a buyer on 127.0.0.1, in ${net.dir}`);
  print(`  pool     ${poolId.did} (roster seq ${roster.record.seq}${reused ? ', kept from an earlier run' : ''}, epochs of ${POOL_EPOCH_MS / 1000} s, pay weights 1:2:3; its key stays offline)`);
  const procs: Record<string, NodeProc> = {};
  // every node starts at once (Devnet.start): each address is known before its node listens
  for (const [i, n] of MEMBERS.entries()) {
    const boot = MEMBERS.slice(0, i).map(addr);
    // The members' demo.echo is broken: it prints whitespace (the output guard's case).
    procs[n] = net.spawn(n, 'provider', { ...base(n, boot), roles: ['provider'], provider: provider('0.003', ['sh', '-c', 'cat >/dev/null; printf "   \\n"']), pool: { roster: rosterFile, membership: memberships[n]!, livenessMs: 500, memberTimeoutMs: 10_000 } }, ports[n]!);
    print(`  member   ${n.padEnd(6)} ${ids[n]!.did} weight ${i + 1}, 0.003 USD/job`);
  }
  for (const [i, n] of SOLOS.entries()) {
    procs[n] = net.spawn(n, 'provider', { ...base(n, [addr('m1')]), roles: ['provider'], provider: provider(i ? '0.005' : '0.004', ['sh', '-c', 'cat; echo " (echoed)"']) }, ports[n]!);
    print(`  provider ${n.padEnd(6)} ${ids[n]!.did} ${i ? '0.005' : '0.004'} USD/job`);
  }
  // three offers (the pool's and the two solos') end the offer window: a job need not wait out all of it
  const buyer = net.spawn('buyer', 'buyer', { ...base('buyer', [addr('m1'), addr('solo1')]), roles: ['buyer'], buyer: { policy: 'cheapest', collectWindowMs: 2500, enoughOffers: 3 } }, ports.buyer!);
  const apis: Record<string, { api: string; token: string }> = {};
  for (const n of Object.keys(procs)) apis[n] = await net.apiOf(procs[n]!);
  const bapi = await net.apiOf(buyer);
  const pool = async (n: string) => (await apiCall(apis[n]!.api, apis[n]!.token, 'GET', '/v1/pool')) as PoolView;
  const live = () => MEMBERS.filter((n) => procs[n]!.child.exitCode === null && procs[n]!.child.signalCode === null);
  // the pool is one provider to the buyer: 3 entries (the pool, with its 3 members' adverts seen, and the 2 solos)
  // (each of the 3 heard in this run, not only kept from an earlier run on the same --dir)
  await net.waitForMarket('the buyer', bapi, 3, (v) => v.market.total === 3 && v.market.adverts.some((a) => a.pool?.members === 3));
  await waitFor(`the members to agree within ${net.startTimeoutMs / 1000} s (--start-timeout)`, net.startTimeoutMs, async () => {
    const v = await Promise.all(live().map(pool));
    return v.every((x) => x.members.every((m) => m.offRoster || m.live)) && new Set(v.map((x) => x.coordinator)).size === 1 ? true : undefined;
  });
  return { ids, procs, apis, bapi, pool, live, poolDid: poolId.did };
}

/** What the pool scenario ran: each job's outcome, the member it killed, and the members still running. */
export interface PoolScenarioResult {
  outcomes: string[];
  killed?: string;
  live: string[];
}

/**
 * What a pooled job's line says of where it ran: the member the job's hash picks when a member ran it, else who did
 * (the pool did not win it: no offer from it in the window). Before, the pick was printed whoever ran the job, so a job
 * a solo provider ran read as the pool's.
 */
export function pooledJobLine(status: string, job: string, ran: string | undefined, members: readonly string[], name: (did: string) => string): string {
  if (ran !== undefined && !members.includes(ran)) return `  ${status} at ${name(ran)}, not at the pool: the pool did not win this job (the buyer's ranking above says why)`;
  return `  ${status}: keccak256(${job.slice(7, 19)}…) picks ${name(selectMember(job, members))} (active[u64(last 8 bytes) mod 3])`;
}

/**
 * Who ran a job the pool never tried (the receipt's signer, else the last provider tried), undefined when a member was
 * tried: a job the pool won and then failed over from is still the pool's line (review s57: the last attempt named a
 * failover's provider as if the pool never won, and a failed run's "not tried" entry as the provider).
 */
export function ranElsewhere(r: Record<string, unknown>, members: readonly string[]): string | undefined {
  const tried = ((r.attempts ?? []) as Array<{ provider: string; outcome?: string }>).filter((a) => !String(a.outcome ?? '').startsWith('not tried'));
  if (tried.some((a) => members.includes(a.provider))) return undefined;
  return (r.receipt as { record?: { provider?: string } } | undefined)?.record?.provider ?? tried.at(-1)?.provider;
}

export async function runPoolScenario(net: Devnet, render: (label: string, ev: WireEvent) => void, print: (s: string) => void): Promise<PoolScenarioResult> {
  print('▸ starting; waiting for the market and for the members to agree on a coordinator…');
  const { ids, procs, bapi, pool, live } = await startPoolNet(net, print);
  const name = net.names();
  const v0 = await pool('m1');
  // jobs completed in earlier runs on the same --dir (the status figures are the whole trail's)
  const completedBefore = v0.members.reduce((s, m) => s + m.jobs.completed, 0);
  print(`  epoch ${v0.epoch}: coordinator ${name(v0.coordinator!)}, next epoch ${name(v0.nextCoordinator!)}`);
  const run = async (label: string, spec: Record<string, unknown>, onEv: (ev: WireEvent) => void = () => {}) =>
    net.runJob(bapi, { maxPrice: { amount: '0.01', currency: 'USD' }, deadlineMs: 60_000, ...spec }, (ev) => {
      onEv(ev);
      render(label, ev);
    });
  const outcomes: string[] = [];
  const memberDids = MEMBERS.map((n) => ids[n]!.did);
  for (let i = 1; i <= 3; i++) {
    print(`\n=== job ${i}: SHA-256 through the cheapest provider (the pool) ===`);
    const r = await run(`job ${i}`, { workload: 'builtin.sha256', params: '1000', input: Buffer.from(`pooled job ${i}`).toString('base64') });
    const job = (r.job as { address: string }).address;
    print(pooledJobLine(String(r.status), job, ranElsewhere(r, memberDids), memberDids, name));
    outcomes.push(String(r.status));
  }
  print('\n=== job 4: the members’ demo.echo prints whitespace: the pool signs a failed receipt, the buyer fails over ===');
  const r4 = await run('job 4', { workload: 'demo.echo', input: Buffer.from('hello').toString('base64') });
  print(`  ${r4.status}; attempts: ${(r4.attempts as Array<{ provider: string; outcome: string }>).map((a) => `${name(a.provider)}: ${a.outcome}`).join('; ')}`);
  outcomes.push(String(r4.status));
  print('\n=== job 5: the elected coordinator is killed mid-job ===');
  const failedBefore = Math.max(...(await Promise.all(live().map(pool))).map((x) => x.members.reduce((s, m) => s + m.jobs.failed, 0)));
  let killed: string | undefined;
  const r5 = await run('job 5', { workload: 'builtin.sleep', params: '6000', input: Buffer.from('slow').toString('base64') }, (ev) => {
    if (ev.e === 'accepted' && !killed) {
      killed = MEMBERS.find((n) => ids[n]!.did === ev.provider);
      if (killed) {
        const k = killed;
        setTimeout(() => {
          print(`  ✂ killing ${k} (the coordinator running job 5)`);
          procs[k]!.child.kill('SIGKILL');
        }, 1500);
      }
    }
  });
  print(`  buyer: ${r5.status}`);
  outcomes.push(String(r5.status));
  await waitFor('a live member to close the orphaned dispatch', 60_000, async () => {
    const v = await Promise.all(live().map(pool));
    return Math.max(...v.map((x) => x.members.reduce((s, m) => s + m.jobs.failed, 0))) > failedBefore ? true : undefined;
  });
  const rest = live()[0]!;
  const fin = await pool(rest);
  print(`  the coordinator elected after it (now ${name(fin.coordinator!)}) closed the dispatch from its trail with a failed receipt (POOL_COORDINATOR_LOST)`);
  print('\n=== the pool’s status (from ' + rest + ') ===');
  let total = new Decimal(0);
  for (const m of fin.members) {
    const e = m.earned.USD ?? '0';
    total = total.add(e);
    print(`  ${name(m.did).padEnd(6)} ${m.offRoster ? 'not on the roster now' : `weight ${m.weight} ${m.live ? 'live' : 'gone'}`}  jobs ${m.jobs.completed} completed / ${m.jobs.failed} failed of ${m.jobs.dispatched}  earned ${e} USD`);
  }
  // The trail's figures: on a reused --dir they hold the earlier runs' jobs too, so the count is the trail's, not this run's three.
  const completed = fin.members.reduce((s, m) => s + m.jobs.completed, 0);
  const each = new Decimal('0.003');
  if (total.equals(each.times(completed))) print(`  settlements sum to ${total.toFixed()} USD = ${completed} completed jobs × ${each.toFixed()} USD`);
  else print(`  settlements sum to ${total.toFixed()} USD over ${completed} completed jobs (× ${each.toFixed()} USD would be ${each.times(completed).toFixed()} USD)`);
  if (completedBefore > 0) print(`  (totals over the whole trail: ${completed - completedBefore} of these jobs completed in this run, ${completedBefore} in earlier runs on this --dir)`);
  return { outcomes, ...(killed ? { killed } : {}), live: live() };
}
