/**
 * A pool member's output travels back to the coordinator in one frame of
 * `/c0mpute/pool/1` (src/roles/pool-member/wiring.ts): two members wired by
 * startPoolMember over real libp2p connections, the real exec executor. An
 * output of POOL_MAX_OUTPUT_BYTES comes back; a larger one fails
 * EXEC_OUTPUT_TOO_LARGE whichever member the hash picks (never
 * POOL_MEMBER_UNREACHABLE after the member ran it), although the provider's
 * own `maxOutputBytes` is the 16 MiB default.
 */
import '../../../src/polyfill.js';
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { randomBytes } from 'node:crypto';
import { Registry } from 'prom-client';
import { C0Error } from '../../../src/errors.js';
import { seal, type Opened } from '../../../src/records/envelope.js';
import { hashHex } from '../../../src/records/address.js';
import { T, type Job, type Offer } from '../../../src/records/kinds.js';
import { closeDb, openDb, sub, type Db } from '../../../src/store/db.js';
import { fakeClock } from '../../../src/util/clock.js';
import { pino } from 'pino';
import type { Logger } from '../../../src/util/log.js';
import { createNetwork, type Network } from '../../../src/net/node.js';
import { selectMember } from '../../../src/pools/choice.js';
import { createExecutor } from '../../../src/roles/provider/executors.js';
import { startPoolMember, POOL_MAX_OUTPUT_BYTES } from '../../../src/roles/pool-member/wiring.js';
import { POOL_PROTOCOL } from '../../../src/roles/pool-member/member.js';
import type { PoolMember } from '../../../src/roles/pool-member/member.js';
import { signerFrom } from '../records/fixtures.js';
import { MEMBERS, keyOf, membership, roster } from './helpers.js';

const buyer = signerFrom(2);
const clock = fakeClock(1_800_000_000_000);
const two = MEMBERS.slice(0, 2);
const r = roster({ members: two.map((did) => ({ did })) });
// `params` is how many bytes of output the command writes (the executor's C0MPUTE_PARAMS).
const executor = createExecutor({ type: 'exec', command: ['sh', '-c', 'head -c "$C0MPUTE_PARAMS" /dev/zero | tr "\\000" A'] });

function job(outputBytes: number): { job: Opened<Job>; input: Uint8Array } {
  const input = new Uint8Array(randomBytes(16));
  const now = clock();
  const j = seal(
    T.job,
    {
      workload: 'infer.big',
      requirements: {},
      maxPrice: { amount: '0.01', currency: 'USD' },
      announcedAt: now,
      deadline: now + 120_000,
      timeoutMs: 60_000,
      input: { hash: hashHex(input), size: input.length },
      inputSealed: 'no',
      params: String(outputBytes),
      nonce: new Uint8Array(randomBytes(8)),
    },
    buyer,
  ) as Opened<Job>;
  return { job: j, input };
}

function offer(j: Opened<Job>, by: string): Opened<Offer> {
  const now = clock();
  return seal(T.offer, { job: j.address, advert: 'sha256:' + 'a'.repeat(64), price: { amount: '0.009', currency: 'USD' }, durationMs: 1000, issuedAt: now, startBy: now + 10_000, expiresAt: now + 10_000 }, keyOf(by)) as Opened<Offer>;
}

/** A job of `outputBytes` whose member by hash is (or is not) the coordinator `a`. */
function jobFor(outputBytes: number, a: string, self: boolean): { job: Opened<Job>; input: Uint8Array } {
  for (;;) {
    const jj = job(outputBytes);
    if ((selectMember(jj.job.address, two) === a) === self) return jj;
  }
}

async function outcome(p: Promise<Uint8Array>): Promise<string | number> {
  try {
    return (await p).length;
  } catch (e) {
    return e instanceof C0Error ? e.code : String(e);
  }
}

async function waitFor<T>(find: () => T | undefined, ms = 5000): Promise<T> {
  for (const end = Date.now() + ms; ; ) {
    const v = find();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error('not logged');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('pool member output over the member protocol (real network, wiring.ts)', () => {
  let dir: string;
  const nets: Network[] = [];
  const dbs: Db[] = [];
  const members: PoolMember[] = [];
  /** Each member's log lines (info and up): the member's side of dispatched work (QA qaPnet F3). */
  const logs: Array<Array<Record<string, unknown>>> = [];

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'c0-pool-out-'));
    writeFileSync(join(dir, 'roster.cose'), r.bytes);
    for (const did of two) {
      const name = did.slice(-8);
      writeFileSync(join(dir, `${name}.cose`), membership(r, keyOf(did)).bytes);
      const net = await createNetwork({ signer: keyOf(did), listen: ['/ip4/127.0.0.1/tcp/0'], loopback: true, syncOnConnect: [], topics: [], verifyThreads: 0 });
      await net.start();
      nets.push(net);
      const db = await openDb(join(dir, `db-${name}`));
      const lines: Array<Record<string, unknown>> = [];
      logs.push(lines);
      const log = pino({ level: 'info' }, { write: (l: string) => void lines.push(JSON.parse(l) as Record<string, unknown>) }) as unknown as Logger;
      dbs.push(db);
      members.push(
        await startPoolMember({
          config: { roster: join(dir, 'roster.cose'), membership: join(dir, `${name}.cose`), maxInputBytes: 512 * 1024, sizeParam: 'maxTokens', maxSizeParam: 8192, memberTimeoutMs: 30_000, livenessMs: 1000, maxOpenDispatches: 64, maxKeptDispatches: 4096, maxKeptBytes: 16 * 1024 * 1024 },
          did,
          signer: keyOf(did),
          clock,
          log,
          sub: (n) => sub(db, n),
          registry: new Registry(),
          executor: () => executor,
          maxOutputBytes: 16 * 1024 * 1024, // provider.maxOutputBytes' default
          net: net as never,
          publishReceipt: async () => {},
        }),
      );
    }
    await nets[0]!.dial(nets[1]!.addrs()[0]!);
    for (const m of members) await m.start();
    for (const m of members) assert.deepEqual(m.live().sort(), [...two].sort(), 'both members live');
  });

  after(async () => {
    for (const m of members) m.stop();
    for (const n of nets) await n.stop();
    for (const db of dbs) await closeDb(db);
    rmSync(dir, { recursive: true, force: true });
  });

  const ctx = (input: Uint8Array) => ({ input, signal: new AbortController().signal, onProgress: () => {}, maxOutputBytes: 16 * 1024 * 1024 });

  test('an output of POOL_MAX_OUTPUT_BYTES run by the other member comes back whole', async () => {
    const a = two[0]!;
    const { job: j, input } = jobFor(POOL_MAX_OUTPUT_BYTES, a, false);
    assert.equal(await outcome(members[0]!.run(j, offer(j, a), ctx(input))), POOL_MAX_OUTPUT_BYTES);
    // the member that ran it says so at info: received (from whom), done, and its answer read by the coordinator
    const said = async (msg: string) => waitFor(() => logs[1]!.find((l) => l.msg === msg && l.job === j.address));
    assert.equal((await said('pool: work received from the coordinator')).coordinator, a);
    assert.equal((await said('pool: work done here; answering the coordinator')).bytes, POOL_MAX_OUTPUT_BYTES);
    assert.equal((await said('pool: answer delivered to the coordinator')).answer, 'output');
  });

  test('a 5 MiB output fails EXEC_OUTPUT_TOO_LARGE, on the other member and on the coordinator itself alike', async () => {
    const a = two[0]!;
    const other = jobFor(5 * 1024 * 1024, a, false);
    assert.equal(await outcome(members[0]!.run(other.job, offer(other.job, a), ctx(other.input))), 'EXEC_OUTPUT_TOO_LARGE');
    assert.equal((await waitFor(() => logs[1]!.find((l) => l.msg === 'pool: work failed here; answering the coordinator with the code' && l.job === other.job.address))).failure, 'EXEC_OUTPUT_TOO_LARGE');
    const self = jobFor(5 * 1024 * 1024, a, true);
    assert.equal(await outcome(members[0]!.run(self.job, offer(self.job, a), ctx(self.input))), 'EXEC_OUTPUT_TOO_LARGE');
    // One byte over the limit too (it would fit in the frame, but the limit is the same for every member).
    const over = jobFor(POOL_MAX_OUTPUT_BYTES + 1, a, false);
    assert.equal(await outcome(members[0]!.run(over.job, offer(over.job, a), ctx(over.input))), 'EXEC_OUTPUT_TOO_LARGE');
  });

  test('a key outside the roster is refused POOL_NOT_MEMBER before its request is read', async () => {
    // a stranger that sends 1 MiB of a frame and then nothing: before, the member read it for the request phase
    // (62 s) and only then refused it; now the refusal comes at once, whatever the caller has sent
    const stranger = await createNetwork({ signer: signerFrom(9), listen: ['/ip4/127.0.0.1/tcp/0'], loopback: true, syncOnConnect: [], topics: [], verifyThreads: 0 });
    await stranger.start();
    try {
      await stranger.dial(nets[0]!.addrs()[0]!);
      const s = await stranger.openStream(two[0]!, POOL_PROTOCOL, { limits: { deadlineMs: 10_000, maxFrameBytes: 4 * 1024 * 1024 } });
      await s.send(new Uint8Array(1024 * 1024)).catch(() => undefined);
      await assert.rejects(s.next(), (e: C0Error) => e.code === 'POOL_NOT_MEMBER' && (e.detail as { remote?: boolean }).remote === true);
      await s.close().catch(() => undefined);
      // a member is still served
      assert.deepEqual(members[1]!.live().sort(), [...two].sort());
    } finally {
      await stranger.stop();
    }
  });
});
