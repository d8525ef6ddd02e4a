/**
 * The coordinator and member paths of src/roles/pool-member/member.ts, three
 * members in one process with their own LevelDB stores and the real executors,
 * the protocol calls wired straight to each other's `serve` (the e2e test runs
 * them as processes): same member from two coordinators and one run, the trail
 * a crashed coordinator leaves is closed, the output guard, the gates.
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { randomBytes } from 'node:crypto';
import { Registry } from 'prom-client';
import { C0Error } from '../../../src/errors.js';
import { open, seal, type Opened } from '../../../src/records/envelope.js';
import { hashHex } from '../../../src/records/address.js';
import { T, type Job, type Offer, type Receipt } from '../../../src/records/kinds.js';
import { closeDb, openDb, sub, type Db } from '../../../src/store/db.js';
import { fakeClock } from '../../../src/util/clock.js';
import { silentLogger } from '../../../src/util/log.js';
import { DispatchTrail, RunLog } from '../../../src/pools/trail.js';
import { selectMember } from '../../../src/pools/choice.js';
import { PoolMember, POOL_MEMBER_DEFAULTS, type PoolMemberDeps, type PoolReply } from '../../../src/roles/pool-member/member.js';
import { createExecutor, type Executor } from '../../../src/roles/provider/executors.js';
import { receiptFor } from '../../../src/roles/provider/provider.js';
import { signerFrom } from '../records/fixtures.js';
import { MEMBERS, POOL, keyOf, membership, roster } from './helpers.js';

const buyer = signerFrom(2);
const clock = fakeClock(1_800_000_000_000);
let dir: string;
const dbs: Db[] = [];
const r = roster();

interface World {
  members: Map<string, PoolMember>;
  down: Set<string>;
  hang: Set<string>;
  runs: Map<string, number>;
  published: Array<Opened<Receipt>>;
  crashOnRun: Set<string>;
  /** A member whose `run` answer is a refusal with the code this makes (a misbehaving member). */
  refuseWith: Map<string, () => string>;
  registries: Map<string, Registry>;
}

async function world(name: string, output: (did: string) => Executor | undefined = () => undefined, gates: Partial<typeof POOL_MEMBER_DEFAULTS> = {}, keepDays?: number, extra: (did: string) => Partial<PoolMemberDeps> = () => ({})): Promise<World> {
  const w: World = { members: new Map(), down: new Set(), hang: new Set(), runs: new Map(), published: [], crashOnRun: new Set(), refuseWith: new Map(), registries: new Map() };
  for (const did of MEMBERS) await addMember(w, name, did, output, gates, keepDays, extra(did));
  for (const m of w.members.values()) {
    await m.start();
    m.stop();
  }
  return w;
}

async function addMember(w: World, name: string, did: string, output: (did: string) => Executor | undefined, gates: Partial<typeof POOL_MEMBER_DEFAULTS> = {}, keepDays?: number, extra: Partial<PoolMemberDeps> = {}): Promise<PoolMember> {
  const db = await openDb(join(dir, `${name}-${did.slice(-6)}`));
  if (!dbs.includes(db)) dbs.push(db);
  const base = createExecutor({ type: 'builtin', name: 'builtin.sha256' });
  const counted: Executor = {
    kind: 'builtin',
    run: async (ctx) => {
      w.runs.set(did, (w.runs.get(did) ?? 0) + 1);
      return (output(did) ?? base).run(ctx);
    },
  };
  const registry = new Registry();
  w.registries.set(did, registry);
  const m = new PoolMember({
    did,
    registry,
    signer: keyOf(did),
    roster: r,
    membership: membership(r, keyOf(did)),
    options: { ...POOL_MEMBER_DEFAULTS, livenessMs: 1000, memberTimeoutMs: 400, ...gates },
    clock,
    monoClock: clock, // the fake time stands for elapsed time too
    log: silentLogger(),
    trail: await DispatchTrail.open(sub(db, 'pool-trail'), clock),
    runs: await RunLog.open(sub(db, 'pool-runs')),
    executor: () => counted,
    maxOutputBytes: 1 << 20,
    ...(keepDays !== undefined ? { keepDays } : {}),
    publishReceipt: async (rec) => void w.published.push(rec),
    call: async (to, frame, timeoutMs, signal): Promise<PoolReply> => {
      if (w.down.has(to)) throw new C0Error('NET_DIAL_FAILED', 'down');
      if (frame.op === 'run' && w.crashOnRun.has(did)) throw new C0Error('TEST_CRASH', 'the coordinator died here');
      const refusal = frame.op === 'run' ? w.refuseWith.get(to) : undefined;
      if (refusal) return { code: refusal(), message: 'refused' } as PoolReply;
      if (frame.op === 'run' && w.hang.has(to)) {
        await new Promise((res) => setTimeout(res, timeoutMs + 50));
        throw new C0Error('NET_DEADLINE', 'no answer');
      }
      const answer = w.members.get(to)!.serve(frame, did);
      if (!signal) return answer;
      // The caller's side of the stream: it gives up with its signal (the member is not told: its own bounds end its run).
      return Promise.race([answer, new Promise<never>((_, reject) => (signal.aborted ? reject(signal.reason) : signal.addEventListener('abort', () => reject(signal.reason), { once: true })))]);
    },
    ...extra,
  });
  w.members.set(did, m);
  return m;
}

function job(opts: { params?: string; size?: number; deadline?: number } = {}): { job: Opened<Job>; input: Uint8Array } {
  const input = new Uint8Array(randomBytes(opts.size ?? 16));
  const now = clock();
  const j = seal(
    T.job,
    {
      workload: 'builtin.sha256',
      requirements: {},
      maxPrice: { amount: '0.01', currency: 'USD' },
      announcedAt: opts.deadline === undefined ? now : Math.min(now, opts.deadline - 120_000),
      deadline: opts.deadline ?? now + 120_000,
      timeoutMs: 60_000,
      input: { hash: hashHex(input), size: input.length },
      inputSealed: 'no',
      ...(opts.params === undefined ? {} : { params: opts.params }),
      nonce: new Uint8Array(randomBytes(8)),
    },
    buyer,
  ) as Opened<Job>;
  return { job: j, input };
}

function offer(j: Opened<Job>, by: string, amount = '0.009'): Opened<Offer> {
  const now = clock();
  return seal(T.offer, { job: j.address, advert: 'sha256:' + 'a'.repeat(64), price: { amount, currency: 'USD' }, durationMs: 1000, issuedAt: now, startBy: now + 10_000, expiresAt: now + 10_000 }, keyOf(by)) as Opened<Offer>;
}

const ctx = (input: Uint8Array) => ({ input, signal: new AbortController().signal, onProgress: () => {}, maxOutputBytes: 1 << 20 });

async function codeOfAsync(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'none';
  } catch (e) {
    return e instanceof C0Error ? e.code : String(e);
  }
}

/** What the provider role does after the run: sign the (pooled) receipt and close. */
/** The first member coordinates a job whose member is another one, and crashes between the dispatch and the call to it. */
async function crashAfterDispatch(w: World): Promise<{ a: string; j: Opened<Job> }> {
  const a = MEMBERS[0]!;
  w.crashOnRun.add(a);
  let jj;
  do jj = job();
  while (selectMember(jj.job.address, MEMBERS) === a);
  const { job: j, input } = jj;
  assert.equal(await codeOfAsync(w.members.get(a)!.run(j, offer(j, a), ctx(input))), 'POOL_MEMBER_UNREACHABLE');
  return { a, j };
}

async function finish(m: PoolMember, j: Opened<Job>, o: Opened<Offer>, did: string, run: Promise<Uint8Array>): Promise<Opened<Receipt>> {
  let output: Uint8Array | undefined;
  let failure: Receipt['failure'];
  try {
    output = await run;
  } catch (e) {
    failure = { code: (e as C0Error).code ?? 'X', message: 'x' };
  }
  const rec = seal(T.receipt, m.receipt(receiptFor(j, o, { startedAt: clock(), completedAt: clock(), energy: { uj: 0, grade: 'Estimator' }, ...(failure ? { failure } : {}), ...(output ? { output } : {}) })), keyOf(did));
  await m.closed(rec);
  return rec;
}

describe('pool coordinator and members (in process, real stores)', () => {
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'c0-pools-'));
  });
  after(async () => {
    for (const db of dbs) await closeDb(db);
    rmSync(dir, { recursive: true, force: true });
  });

  test('a walk: the member by hash runs it; the receipt is the pool’s; the settlement sums to the price', async () => {
    const w = await world('walk');
    const coord = w.members.get(MEMBERS[0]!)!;
    const { job: j, input } = job();
    const o = offer(j, MEMBERS[0]!);
    const rec = await finish(coord, j, o, MEMBERS[0]!, coord.run(j, o, ctx(input)));
    assert.equal(rec.record.status, 'completed');
    assert.equal(open(rec.bytes, T.receipt).record.provider, POOL);
    const chosen = selectMember(j.address, MEMBERS);
    assert.equal(w.runs.get(chosen), 1);
    assert.equal([...w.runs.values()].reduce((a, b) => a + b, 0), 1);
    const st = (await coord.status()) as { members: Array<{ did: string; jobs: { completed: number }; earned: Record<string, string> }> };
    assert.equal(st.members.find((m) => m.did === chosen)!.jobs.completed, 1);
    const earned = st.members.map((m) => Number(m.earned.USD ?? '0'));
    assert.ok(Math.abs(earned.reduce((a, b) => a + b, 0) - 0.009) < 1e-12);
    // Every member holds the closed trail (the dispatch was sent to all before the input).
    for (const m of w.members.values()) assert.equal((await (m as unknown as { d: { trail: DispatchTrail } }).d.trail.get(j.address))?.state, 'completed');
  });

  test('status keeps a member the roster in use no longer lists: its figures, marked off the roster, so the members add up to the pool', async () => {
    const w = await world('off-roster');
    const chosenFor = (j: Opened<Job>) => selectMember(j.address, MEMBERS);
    // a job run by a member other than the one that stays coordinator
    let j = job();
    while (chosenFor(j.job) === MEMBERS[0]) j = job();
    const coord = w.members.get(MEMBERS[0]!)!;
    const o = offer(j.job, MEMBERS[0]!);
    await finish(coord, j.job, o, MEMBERS[0]!, coord.run(j.job, o, ctx(j.input)));
    const gone = chosenFor(j.job);
    // roster seq 2 without it: before, status listed only the roster's members and their earnings no longer summed to the price
    const r2 = roster({ seq: 2, members: MEMBERS.filter((d) => d !== gone).map((did) => ({ did })) });
    await coord.adopt(r2.bytes, membership(r2, keyOf(MEMBERS[0]!)).bytes);
    const st = (await coord.status()) as { members: Array<{ did: string; offRoster?: boolean; weight?: number; jobs: { completed: number }; earned: Record<string, string> }> };
    const off = st.members.filter((m) => m.offRoster);
    assert.deepEqual(
      off.map((m) => [m.did, m.jobs.completed, m.weight]),
      [[gone, 1, undefined]],
    );
    assert.ok(Math.abs(st.members.reduce((a, m) => a + Number(m.earned.USD ?? '0'), 0) - 0.009) < 1e-12, 'the members shown sum to the price');
    assert.equal(st.members.filter((m) => !m.offRoster).length, MEMBERS.length - 1);
  });

  test('two coordinators that both believe they are elected choose the same member, and it runs the job once', async () => {
    const w = await world('race');
    const [a, b] = [MEMBERS[0]!, MEMBERS[1]!];
    const { job: j, input } = job();
    const [oa, ob] = [offer(j, a), offer(j, b)];
    const [ra, rb] = await Promise.allSettled([w.members.get(a)!.run(j, oa, ctx(input)), w.members.get(b)!.run(j, ob, ctx(input))]);
    const chosen = selectMember(j.address, MEMBERS);
    assert.equal(w.runs.get(chosen), 1, 'ran once');
    assert.equal([...w.runs.values()].reduce((x, y) => x + y, 0), 1);
    const outcomes = [ra, rb].map((x) => (x.status === 'fulfilled' ? 'ok' : (x.reason as C0Error).code)).sort();
    assert.deepEqual(outcomes, ['POOL_ALREADY_RUN', 'ok']);
    // Each coordinator closes its own dispatch: the refused one fails, the one that ran settles.
    const [wa, wb] = ra.status === 'fulfilled' ? [a, b] : [b, a];
    const [wo, lo] = ra.status === 'fulfilled' ? [oa, ob] : [ob, oa];
    const out = ra.status === 'fulfilled' ? ra.value : (rb as PromiseFulfilledResult<Uint8Array>).value;
    await finish(w.members.get(wb)!, j, lo, wb, Promise.reject(new C0Error('POOL_ALREADY_RUN', 'refused')));
    await finish(w.members.get(wa)!, j, wo, wa, Promise.resolve(out));
    for (const m of w.members.values()) {
      const st = (await m.status()) as { members: Array<{ earned: Record<string, string> }> };
      const sum = st.members.reduce((s2, x) => s2 + Number(x.earned.USD ?? '0'), 0);
      assert.ok(Math.abs(sum - 0.009) < 1e-12, `settled on every member (${sum})`);
    }
  });

  test('a coordinator that crashes after the dispatch, before the call: the job is failed from the trail, on restart and by the next coordinator', async () => {
    const w = await world('crash');
    const { a } = await crashAfterDispatch(w);
    // (The provider would now sign the failed receipt; a crash means it never did.) Nothing ran.
    assert.equal([...w.runs.values()].reduce((x, y) => x + y, 0), 0);
    // The next coordinator: a is gone (unheard for longer than 3 × livenessMs).
    w.down.add(a);
    clock.advance(10_000);
    const b = w.members.get(MEMBERS[1]!)!;
    assert.equal(await b.recover(), 1);
    const failed = w.published.at(-1)!;
    assert.equal(failed.record.status, 'failed');
    assert.equal(failed.record.failure?.code, 'POOL_COORDINATOR_LOST');
    assert.equal(failed.record.provider, POOL);
    // a restarts (a fresh instance on the same store): it learns the outcome instead of failing the job again.
    w.down.delete(a);
    const n = w.published.length;
    const a2 = await addMember(w, 'crash', a, () => undefined);
    assert.equal(await a2.recover(), 1);
    assert.equal(w.published.length, n, 'no second receipt');
    assert.equal((await b.recover()) + (await a2.recover()), 0, 'nothing pending anywhere');
  });

  test('between the run and `closed` (the provider storing the receipt, streaming the output) recovery leaves the coordinator’s own job alone, whether the run ended or failed', async () => {
    const w = await world('gap');
    const a = MEMBERS[0]!;
    const coord = w.members.get(a)!;
    const trail = (coord as unknown as { d: { trail: DispatchTrail } }).d.trail;
    // completed: the settlement is made at `closed`
    const { job: j, input } = job();
    const o = offer(j, a);
    const out = await coord.run(j, o, ctx(input));
    assert.equal(await coord.recover(), 0, 'not orphaned while its receipt is on its way');
    assert.equal(w.published.length, 0, 'no failed receipt');
    await finish(coord, j, o, a, Promise.resolve(out));
    const e = await trail.get(j.address);
    assert.equal(e?.state, 'completed');
    assert.ok(e?.settlement, 'settled');
    // failed (the member refused): the provider's failed receipt closes it, not recovery's
    let pick = job();
    while (selectMember(pick.job.address, MEMBERS) === a) pick = job();
    const { job: j2, input: i2 } = pick;
    const o2 = offer(j2, a);
    w.down.add(selectMember(j2.address, MEMBERS));
    const run2 = coord.run(j2, o2, ctx(i2));
    assert.notEqual(await codeOfAsync(run2), 'none');
    assert.equal(await coord.recover(), 0);
    w.down.clear();
    const rec2 = await finish(coord, j2, o2, a, run2);
    assert.equal((await trail.get(j2.address))?.receipt?.length, rec2.bytes.length, 'closed with the provider’s own receipt');
    assert.equal(w.published.length, 0);
    // a run whose receipt could not be stored (no `closed` follows) is recovery's again once the provider says so
    const { job: j3, input: i3 } = job();
    const o3 = offer(j3, a);
    await coord.run(j3, o3, ctx(i3));
    assert.equal(await coord.recover(), 0);
    coord.hooks().abandoned!(j3.address);
    assert.equal(await coord.recover(), 1);
    assert.equal(w.published.at(-1)?.record.failure?.code, 'POOL_COORDINATOR_LOST');
  });

  test('a member that missed `closed`, then the coordinator died: the next coordinator takes the completed receipt and its settlement from a member that holds them', async () => {
    const w = await world('lent');
    const a = MEMBERS[0]!;
    const coord = w.members.get(a)!;
    const { job: j, input } = job();
    const o = offer(j, a);
    const out = await coord.run(j, o, ctx(input));
    // c misses the `closed` broadcast (and the settlement in it)
    const c = MEMBERS[2]!;
    w.down.add(c);
    await finish(coord, j, o, a, Promise.resolve(out));
    w.down.delete(c);
    // then a is gone; c is elected and closes the dispatch from b's copy
    w.down.add(a);
    clock.advance(10_000);
    const cm = w.members.get(c)!;
    assert.equal(await cm.recover(), 1);
    const e = await (cm as unknown as { d: { trail: DispatchTrail } }).d.trail.get(j.address);
    assert.equal(e?.state, 'completed');
    assert.ok(e?.settlement, 'the settlement is kept with the lent receipt');
    const st = (await cm.status()) as { members: Array<{ earned: Record<string, string> }> };
    assert.ok(Math.abs(st.members.reduce((s2, x) => s2 + Number(x.earned.USD ?? '0'), 0) - 0.009) < 1e-12, 'c counts the earnings');
    assert.equal(w.published.length, 0, 'no failed receipt');
    w.down.delete(a);
  });

  test('a dispatch never closed, past its history window (history.keepDays after its deadline): recovery neither fails it nor asks about it', async () => {
    const w = await world('window', () => undefined, {}, 1 / 86_400);
    const { a, j } = await crashAfterDispatch(w);
    w.down.add(a);
    // past the deadline and the one second kept after it: the other members may have dropped how it ended
    clock.set(j.record.deadline + 1001);
    const b = w.members.get(MEMBERS[1]!)!;
    const n = w.published.length;
    assert.equal(await b.recover(), 0);
    assert.equal(w.published.length, n, 'no failed receipt for a job whose outcome may have been dropped elsewhere');
  });

  test('output guard: whitespace or empty output, a member that times out or cannot be reached → failed, no settlement', async () => {
    const blank: Executor = { kind: 'exec', run: async () => new TextEncoder().encode(' \n\t ') };
    const w = await world('guard', () => blank);
    const a = MEMBERS[0]!;
    const coord = w.members.get(a)!;
    const one = async () => {
      const { job: j, input } = job();
      const o = offer(j, a);
      return { j, rec: await finish(coord, j, o, a, coord.run(j, o, ctx(input))) };
    };
    const ws = await one();
    assert.equal(ws.rec.record.failure?.code, 'POOL_OUTPUT_EMPTY');
    for (const did of MEMBERS) if (did !== a) w.hang.add(did);
    // A job whose member is another one: pick until the hash lands elsewhere.
    let r2;
    do r2 = await one();
    while (selectMember(r2.j.address, MEMBERS) === a);
    assert.equal(r2.rec.record.failure?.code, 'POOL_MEMBER_TIMEOUT');
    w.hang.clear();
    for (const did of MEMBERS) if (did !== a) w.down.add(did);
    let r3;
    do r3 = await one();
    while (selectMember(r3.j.address, MEMBERS) === a);
    assert.equal(r3.rec.record.failure?.code, 'POOL_MEMBER_UNREACHABLE');
    const st = (await coord.status()) as { members: Array<{ earned: Record<string, string> }> };
    assert.ok(st.members.every((m) => Object.keys(m.earned).length === 0), 'no settlement for failed work');
  });

  test('a member cannot add outcome label values: a refusal code outside pool/1 and exec failure codes counts as remote_other; the error keeps it', async () => {
    const w = await world('labels');
    const a = MEMBERS[0]!;
    const coord = w.members.get(a)!;
    let n = 0;
    const runOne = async (): Promise<string> => {
      let jj;
      do jj = job();
      while (selectMember(jj.job.address, MEMBERS) === a);
      const chosen = selectMember(jj.job.address, MEMBERS);
      w.refuseWith.set(chosen, () => (n < 10 ? 'X'.repeat(40) + String(n++) : 'POOL_MEMBER_BUSY'));
      return codeOfAsync(coord.run(jj.job, offer(jj.job, a), ctx(jj.input)));
    };
    for (let i = 0; i < 10; i++) assert.equal(await runOne(), 'X'.repeat(40) + String(i));
    assert.equal(await runOne(), 'POOL_MEMBER_BUSY');
    const m = await w.registries.get(a)!.getSingleMetric('c0mpute_pool_member_outcomes_total')!.get();
    const byOutcome = new Map<string, number>();
    for (const v of m.values) byOutcome.set(String(v.labels.outcome), (byOutcome.get(String(v.labels.outcome)) ?? 0) + v.value);
    assert.deepEqual([...byOutcome].sort(), [['POOL_MEMBER_BUSY', 1], ['remote_other', 10]]);
  });

  test('pooled exec work records its process group and ends with the provider: the coordinator choosing itself (the exec stream’s hooks), a member in its slot (the slot’s signal and hooks)', async () => {
    const cat = createExecutor({ type: 'exec', command: ['sh', '-c', 'cat'] });
    const sleeper = createExecutor({ type: 'exec', command: ['sh', '-c', 'sleep 30; echo late'] });
    let slow = false;
    const groups: string[] = [];
    const slotCtl = new Map<string, AbortController>();
    const given: string[] = [];
    const w = await world('groups', () => (slow ? sleeper : cat), { memberTimeoutMs: 60_000 }, undefined, (did) => ({
      slots: {
        take: (job) => {
          const c = new AbortController();
          slotCtl.set(job, c);
          return { signal: c.signal, onSpawn: (pid) => void groups.push(`spawn ${did} ${pid}`), onExit: (pid) => void groups.push(`exit ${did} ${pid}`) };
        },
        give: (job) => void given.push(job),
      },
    }));
    const a = MEMBERS[0]!;
    const coord = w.members.get(a)!;
    const pick = (mine: boolean) => {
      let p = job();
      while ((selectMember(p.job.address, MEMBERS) === a) !== mine) p = job();
      return p;
    };
    // a chooses itself: the hooks of its exec stream (the provider's) see the group
    const self = pick(true);
    const mine: string[] = [];
    const sctx = { ...ctx(self.input), onSpawn: (pid: number) => void mine.push(`spawn ${pid}`), onExit: (pid: number) => void mine.push(`exit ${pid}`) };
    assert.deepEqual(await coord.run(self.job, offer(self.job, a), sctx), self.input);
    assert.equal(mine.length, 2);
    assert.match(mine[0]!, /^spawn \d+$/);
    assert.equal(mine[1], mine[0]!.replace('spawn', 'exit'));
    // another member: the slot's hooks see the group, and the slot goes back
    const other = pick(false);
    const m = selectMember(other.job.address, MEMBERS);
    assert.deepEqual(await coord.run(other.job, offer(other.job, a), ctx(other.input)), other.input);
    assert.equal(groups.length, 2);
    assert.match(groups[0]!, new RegExp(`^spawn ${m} \\d+$`));
    assert.deepEqual(given, [other.job.address]);
    // the member's provider stops (its slot's signal): the run ends at once, and the coordinator hears how
    slow = true;
    const late = pick(false);
    const t0 = Date.now();
    const run = coord.run(late.job, offer(late.job, a), ctx(late.input));
    while (!slotCtl.has(late.job.address) || groups.length < 3) await new Promise((res) => setTimeout(res, 5));
    slotCtl.get(late.job.address)!.abort(new C0Error('EXEC_ABORTED', 'provider shutting down'));
    assert.equal(await codeOfAsync(run), 'EXEC_ABORTED');
    assert.ok(Date.now() - t0 < 10_000, 'not left to run out');
    assert.equal(groups.length, 4, 'the group exited');
    assert.deepEqual(given.at(-1), late.job.address);
  });

  test('a member ends a dispatched run at its own pool.memberTimeoutMs, or when the stream ends, and gives its slot back; a coordinator whose run is given up stops waiting at once', async () => {
    const sleeper = createExecutor({ type: 'builtin', name: 'builtin.sleep' });
    const given: string[] = [];
    const slots = { take: () => ({ signal: new AbortController().signal }), give: (job: string) => void given.push(job) };
    const w = await world('member-bounds', () => sleeper, { memberTimeoutMs: 300 }, undefined, () => ({ slots }));
    const [a, m] = [MEMBERS[0]!, MEMBERS[1]!];
    const member = w.members.get(m)!;
    /** A dispatch of a job that would sleep a minute (its own timeout allows it), made by `a` for `m`. */
    const slowRun = () => {
      const { job: j, input } = job({ params: '60000' });
      const o = offer(j, a);
      const d = seal(T.poolDispatch, { pool: POOL, roster: r.address, job: j.address, offer: o.address, member: m, coordinator: a, epoch: 1, issuedAt: clock() }, keyOf(a));
      return { j, frame: { op: 'run', dispatch: d.bytes, job: j.bytes, offer: o.bytes, input } };
    };
    const within = async <X,>(p: Promise<X>, ms: number): Promise<X | 'still running'> => Promise.race([p, new Promise<'still running'>((res) => setTimeout(() => res('still running'), ms).unref())]);
    // the member's own bound: pool.memberTimeoutMs (300 ms), not the job's minute
    const one = slowRun();
    const r1 = await within(member.serve(one.frame, a), 5_000);
    assert.notEqual(r1, 'still running', 'bounded by pool.memberTimeoutMs');
    assert.equal((r1 as PoolReply).code, 'EXEC_TIMEOUT');
    assert.deepEqual(given, [one.j.address], 'the slot went back');
    // the stream ends (its signal): so does the run
    const two = slowRun();
    const stream = new AbortController();
    const pending = member.serve(two.frame, a, stream.signal);
    setTimeout(() => stream.abort(new C0Error('NET_STREAM_FAILED', 'the caller reset the stream')), 20);
    const r2 = await within(pending, 5_000);
    assert.notEqual(r2, 'still running');
    assert.equal((r2 as PoolReply).code, 'NET_STREAM_FAILED');
    assert.deepEqual(given, [one.j.address, two.j.address]);
    // the coordinator's run is given up (the buyer gone): its call to the member stops at once
    const w2 = await world('coordinator-gives-up', () => sleeper, { memberTimeoutMs: 60_000 });
    let pick = job({ params: '3000' });
    while (selectMember(pick.job.address, MEMBERS) === a) pick = job({ params: '3000' });
    const gone = new AbortController();
    const run = w2.members.get(a)!.run(pick.job, offer(pick.job, a), { ...ctx(pick.input), signal: gone.signal });
    setTimeout(() => gone.abort(new C0Error('EXEC_BUYER_GONE', 'the buyer closed the stream')), 50);
    assert.equal(await within(codeOfAsync(run), 1_500), 'EXEC_BUYER_GONE', 'not after the member’s 3 s');
  });

  test('admission gates, each with its own code, before anything is recorded', async () => {
    const w = await world('gates', () => undefined, { minPrice: { amount: '0.005', currency: 'USD' }, maxInputBytes: 64, maxSizeParam: 100 });
    const a = MEMBERS[0]!;
    const coord = w.members.get(a)!;
    const cases: Array<[ReturnType<typeof job>, string, string]> = [
      [job(), '0.001', 'POOL_GATE_MIN_PRICE'],
      [job({ size: 65 }), '0.009', 'POOL_GATE_INPUT_TOO_LARGE'],
      [job({ params: '{"maxTokens":101}' }), '0.009', 'POOL_GATE_SIZE_PARAM'],
    ];
    for (const [{ job: j, input }, price, want] of cases) {
      assert.equal(await codeOfAsync(coord.run(j, offer(j, a, price), ctx(input))), want);
      assert.equal(await (coord as unknown as { d: { trail: DispatchTrail } }).d.trail.get(j.address), undefined, 'nothing recorded');
    }
    assert.equal([...w.runs.values()].reduce((x, y) => x + y, 0), 0);
  });

  test('a member refuses a dispatch from outside the roster, or one naming another member', async () => {
    const w = await world('authz');
    const m = w.members.get(MEMBERS[1]!)!;
    assert.equal((await m.serve({ op: 'ping' }, 'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK')).code, 'POOL_NOT_MEMBER');
    const { job: j, input } = job();
    const o = offer(j, MEMBERS[0]!);
    const d = seal(T.poolDispatch, { pool: POOL, roster: r.address, job: j.address, offer: o.address, member: MEMBERS[2]!, coordinator: MEMBERS[0]!, epoch: 1, issuedAt: clock() }, keyOf(MEMBERS[0]!));
    assert.equal((await m.serve({ op: 'run', dispatch: d.bytes, job: j.bytes, offer: o.bytes, input }, MEMBERS[0]!)).code, 'POOL_NOT_CHOSEN');
    assert.equal((await m.serve({ op: 'run', dispatch: d.bytes, job: j.bytes, offer: o.bytes, input }, MEMBERS[2]!)).code, 'POOL_DISPATCH_NOT_CALLERS');
  });

  test('a member refuses a dispatch of a job past its deadline before claiming it (so a run note pruned with the history never lets it run twice)', async () => {
    const w = await world('late');
    const m = w.members.get(MEMBERS[2]!)!;
    const runs = (m as unknown as { d: { runs: RunLog } }).d.runs;
    const { job: j, input } = job({ deadline: clock() });
    const o = offer(j, MEMBERS[0]!);
    const d = seal(T.poolDispatch, { pool: POOL, roster: r.address, job: j.address, offer: o.address, member: MEMBERS[2]!, coordinator: MEMBERS[0]!, epoch: 1, issuedAt: clock() }, keyOf(MEMBERS[0]!));
    assert.equal((await m.serve({ op: 'run', dispatch: d.bytes, job: j.bytes, offer: o.bytes, input }, MEMBERS[0]!)).code, 'EXEC_DEADLINE_PASSED');
    assert.equal(w.runs.get(MEMBERS[2]!) ?? 0, 0, 'not run');
    // not claimed either: a claim of it now is the first
    await runs.claim(j.address, MEMBERS[0]!, clock(), clock() + 1000);
    assert.equal(await codeOfAsync(runs.claim(j.address, MEMBERS[1]!, clock(), clock() + 1000)), 'POOL_ALREADY_RUN');
  });

  test('a member leaves a running pool: the others drop it from the active list at once (told, or from its ping answer), it refuses dispatches and stops quoting', async () => {
    const w = await world('leave');
    const [a, x, c] = [MEMBERS[0]!, MEMBERS[1]!, MEMBERS[2]!];
    const leaver = w.members.get(x)!;
    // A job the full roster would give to the leaver.
    let pick = job();
    while (selectMember(pick.job.address, MEMBERS) !== x) pick = job();
    const { job: j, input } = pick;
    assert.equal(leaver.mayQuote(j) || w.members.get(a)!.mayQuote(j) || w.members.get(c)!.mayQuote(j), true, 'someone quotes before');
    // c is unreachable while x leaves: it misses the `left` message.
    w.down.add(c);
    const res = await leaver.adopt(r.bytes, membership(r, keyOf(x), 'left').bytes);
    w.down.delete(c);
    assert.equal(res.left, true);
    assert.deepEqual(w.members.get(a)!.live(), [a, c], 'a was told: x is out at once');
    assert.ok(w.members.get(c)!.live().includes(x), 'c missed it so far');
    // c's next ping round: x answers POOL_MEMBER_LEFT with its record.
    await w.members.get(c)!.start();
    w.members.get(c)!.stop();
    assert.deepEqual(w.members.get(c)!.live(), [a, c]);
    // The one that left: no quote, a withdrawn advert, its won work and any dispatch refused.
    assert.equal(leaver.mayQuote(j), false);
    assert.equal(leaver.live().includes(x), false);
    const adv = leaver.advert({ seq: 1, issuedAt: clock(), expiresAt: clock() + 1000, workloads: ['builtin.sha256'], tier: 'community', hardware: { cpuCores: 1, memoryMiB: 1024 }, prices: [] });
    assert.equal(adv.pool, undefined, 'the pooled advert is withdrawn: signed again as the machine’s own');
    assert.deepEqual(adv.hardware, { cpuCores: 1, memoryMiB: 1024 });
    assert.equal(await codeOfAsync(leaver.run(j, offer(j, x), ctx(input))), 'POOL_MEMBER_LEFT');
    const o = offer(j, a);
    const d = seal(T.poolDispatch, { pool: POOL, roster: r.address, job: j.address, offer: o.address, member: x, coordinator: a, epoch: 1, issuedAt: clock() }, keyOf(a));
    assert.equal((await leaver.serve({ op: 'run', dispatch: d.bytes, job: j.bytes, offer: o.bytes, input }, a)).code, 'POOL_MEMBER_LEFT');
    assert.equal(w.runs.get(x) ?? 0, 0);
    // The coordinator picks among the two left: same formula, the smaller active list.
    const rec = await finish(w.members.get(a)!, j, o, a, w.members.get(a)!.run(j, o, ctx(input)));
    assert.equal(rec.record.status, 'completed');
    assert.equal(w.runs.get(selectMember(j.address, [a, c])), 1);
    assert.equal(w.runs.get(x) ?? 0, 0);
    const st = (await w.members.get(a)!.status()) as { members: Array<{ did: string; left: boolean; live: boolean }> };
    assert.deepEqual(st.members.map((m) => [m.did, m.left, m.live]), [[a, false, true], [x, true, false], [c, false, true]]);
    assert.equal(((await leaver.status()) as { left: boolean; quoting: boolean }).left, true);
  });

  test('a coordinator that leaves while another member runs its dispatch: the others leave the job to it (it answers and runs it), and it finishes and settles as usual', async () => {
    let release!: () => void;
    const gate = new Promise<void>((res) => (release = res));
    const base = createExecutor({ type: 'builtin', name: 'builtin.sha256' });
    const slow: Executor = { kind: 'builtin', run: async (c) => (await gate, base.run(c)) };
    const w = await world('leave-running', () => slow);
    const x = MEMBERS[0]!;
    const co = w.members.get(x)!;
    const others = MEMBERS.filter((m) => m !== x);
    const pickOther = () => {
      let p = job();
      while (selectMember(p.job.address, MEMBERS) === x) p = job();
      return p;
    };
    const { job: j, input } = pickOther();
    const o = offer(j, x);
    const running = co.run(j, o, ctx(input));
    while ((w.runs.get(selectMember(j.address, MEMBERS)) ?? 0) === 0) await new Promise((res) => setTimeout(res, 5));
    await co.adopt(r.bytes, membership(r, keyOf(x), 'left').bytes);
    for (const m of others) assert.equal(w.members.get(m)!.live().includes(x), false, 'x is out of the election');
    // each remaining member, elected or not, would leave the job to x: it answers and still runs it
    for (const m of others) assert.equal(await w.members.get(m)!.recover(), 0);
    assert.equal(w.published.length, 0, 'no failed receipt while x runs it');
    release();
    await finish(co, j, o, x, running);
    for (const m of w.members.values()) {
      const e = await (m as unknown as { d: { trail: DispatchTrail } }).d.trail.get(j.address);
      assert.equal(e?.state, 'completed');
      assert.ok(e?.settlement, 'settled everywhere');
    }
  });

  test('a coordinator that left: its dispatch is failed by the next coordinator once it no longer runs it, or cannot be reached', async () => {
    const w = await world('leave-gone');
    const x = MEMBERS[0]!;
    const co = w.members.get(x)!;
    const b = w.members.get(MEMBERS[1]!)!;
    const pickOther = () => {
      let p = job();
      while (selectMember(p.job.address, MEMBERS) === x) p = job();
      return p;
    };
    const [one, two] = [pickOther(), pickOther()];
    for (const p of [one, two]) await co.run(p.job, offer(p.job, x), ctx(p.input));
    await co.adopt(r.bytes, membership(r, keyOf(x), 'left').bytes);
    // `one`: its receipt was never stored, so x will not close it (it answers that it no longer runs it)
    co.hooks().abandoned!(one.job.address);
    assert.equal(await b.recover(), 1);
    assert.equal(w.published.at(-1)?.record.job, one.job.address);
    assert.equal(w.published.at(-1)?.record.failure?.code, 'POOL_COORDINATOR_LOST');
    // `two`: x still runs it, until it cannot be reached past the dispatch's budget and the grace after it (silent is
    // not gone: a paused coordinator resumes, paused-coordinator.test.ts)
    assert.equal(await b.recover(), 0);
    w.down.add(x);
    assert.equal(await b.recover(), 0, 'silent, within the grace');
    clock.advance(400 + 3 * 1000);
    assert.equal(await b.recover(), 1);
    assert.equal(w.published.at(-1)?.record.job, two.job.address);
    assert.equal(w.published.length, 2);
  });

  test('a coordinator that leaves with work in flight still tells every member how it ended', async () => {
    const w = await world('leave-inflight');
    const x = MEMBERS[0]!;
    const co = w.members.get(x)!;
    const { job: j, input } = job();
    const o = offer(j, x);
    const out = await co.run(j, o, ctx(input));
    await co.adopt(r.bytes, membership(r, keyOf(x), 'left').bytes);
    await finish(co, j, o, x, Promise.resolve(out));
    for (const m of w.members.values()) assert.equal((await (m as unknown as { d: { trail: DispatchTrail } }).d.trail.get(j.address))?.state, 'completed');
  });
});
