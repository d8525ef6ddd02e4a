/**
 * The witness role (src/roles/witness.ts) when something goes wrong around it: a receipt that never left (the witness
 * killed after the synced write, a publish that reached nobody) is given again while the steward still asks for it;
 * what it holds and the evidence it kept read back after a restart, and that evidence is gossiped again; a steward that
 * never answers does not hold its stop, and a head whose fetch failed is not fetched again at once, but is by itself once
 * its hold-back ends (gossip drops the steward's republications of it as duplicates); heads from
 * throwaway keys nobody can reach cost a bounded number of dials and log lines.
 * Real LevelDB and signatures; the network is a fake serving each steward's sealed entries over ledger/1, whose
 * publish reports how many peers it reached.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { Ed25519Signer, didFromPublicKey, open, type Opened } from '../../../src/records/index.js';
import { openDb, closeDb, sub, type Db } from '../../../src/store/db.js';
import { encodeCanonical } from '../../../src/records/cbor.js';
import { fakeClock } from '../../../src/util/clock.js';
import { C0Error } from '../../../src/errors.js';
import type { Logger } from '../../../src/util/log.js';
import { POOL_TYPE, sealEntries, type LedgerEntry } from '../../../src/ledger/index.js';
import { EVIDENCE_TYPE, type EquivocationEvidence } from '../../../src/ledger/evidence.js';
import { Witness } from '../../../src/ledger/witness.js';
import * as W from '../../../src/roles/witness.js';
import { admitted, tempDir } from '../ledger/helpers.js';

type Chain = Array<{ bytes: Uint8Array; address: string }>;
const head = (e: { bytes: Uint8Array }): Opened<LedgerEntry> => open(e.bytes, POOL_TYPE) as Opened<LedgerEntry>;

function stewardChain(n: number): { did: string; chain: Chain; signer: Ed25519Signer } {
  const signer = Ed25519Signer.generate();
  return { did: didFromPublicKey(signer.publicKey), chain: sealEntries(Array.from({ length: n }, (_, i) => admitted(`c${i}`)), signer), signer };
}

interface Rig {
  role: W.WitnessRole;
  onHead: (e: Opened<LedgerEntry>) => void;
  calls: Array<{ steward: string; from: number }>;
  /** Every warning's message. */
  warnings: string[];
  published: Array<{ kind: string; bytes: Uint8Array }>;
  /** What publish reports reached: 0 is a publish to no peer (libp2p allows it). */
  net: { recipients: number; unreachable: Set<string>; silent: Set<string>; timeouts: Set<string> };
  db: Db;
  me: Ed25519Signer;
  clock: ReturnType<typeof fakeClock>;
  /** Step the wall clock only (NTP correcting it): the monotonic clock, `clock`, does not move. */
  stepWall: (ms: number) => void;
  /** The role started again on the same database and key (a restarted node). */
  restart: (cfg?: W.WitnessConfig) => Promise<W.WitnessRole>;
}

async function rig(chains: Map<string, Chain>, fn: (r: Rig) => Promise<void>, cfg: W.WitnessConfig = { startCatchUpMs: [] }): Promise<void> {
  const t = tempDir('c0-witness-recovery-');
  const db: Db = await openDb(t.dir);
  const calls: Rig['calls'] = [];
  const warnings: string[] = [];
  const published: Rig['published'] = [];
  const net: Rig['net'] = { recipients: 1, unreachable: new Set(), silent: new Set(), timeouts: new Set() };
  let onHead: (e: Opened<LedgerEntry>) => void = () => undefined;
  const log = pino({ level: 'warn' }, { write: (s: string) => void warnings.push((JSON.parse(s) as { msg: string }).msg) }) as unknown as Logger;
  const clock = fakeClock(1_000);
  // seeded (mulberry32): which waiting stranger head goes next is drawn at random; the tests replay the same draws
  let seed = 0x5eed;
  const random = () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  let wallOffset = 0;
  const ports: W.WitnessPorts = {
    name: 'labs',
    clock: () => clock() + wallOffset,
    monoClock: clock,
    log,
    random,
    net: {
      subscribe: ((_kind: string, h: (rec: unknown) => void) => void (onHead = h as typeof onHead)) as never,
      publish: (async (kind: string, bytes: Uint8Array) => {
        published.push({ kind, bytes });
        return { recipients: net.recipients, address: '' };
      }) as never,
      request: (async (steward: string, _p: string, frames: Array<{ from: number; to: number }>, o: { limits?: { deadlineMs?: number }; signal?: AbortSignal }) => {
        const { from, to } = frames[0]!;
        calls.push({ steward, from });
        if (net.unreachable.has(steward)) throw new C0Error('NET_DIAL', 'cannot open /c0mpute/ledger/1: no route');
        if (net.timeouts.has(steward)) throw new C0Error('NET_DEADLINE', 'no answer within the deadline');
        if (net.silent.has(steward)) {
          // a peer that never answers: the call ends at its deadline, or when the caller aborts it (as protocols.ts does)
          await new Promise<void>((_, reject) => {
            const timer = setTimeout(() => reject(new C0Error('NET_DEADLINE', 'no answer within the deadline')), o.limits?.deadlineMs ?? 30_000);
            o.signal?.addEventListener('abort', () => (clearTimeout(timer), reject(new C0Error('NET_ABORTED', 'aborted'))), { once: true });
          });
        }
        return (chains.get(steward) ?? []).slice(from, to).map((e) => e.bytes);
      }) as never,
    },
  };
  const me = Ed25519Signer.generate();
  const start = (c: W.WitnessConfig) => W.WitnessRole.start(ports, db, { signer: me, did: didFromPublicKey(me.publicKey) } as never, c);
  let role = await start(cfg);
  try {
    const restart = async (c: W.WitnessConfig = cfg) => {
      await role.stop();
      return (role = await start(c));
    };
    await fn({ role, onHead: (e) => onHead(e), calls, warnings, published, net, db, me, clock, stepWall: (ms) => void (wallOffset += ms), restart });
  } finally {
    await role.stop();
    await closeDb(db);
    t.cleanup();
  }
}

const receipts = (p: Rig['published']) => p.filter((x) => x.kind === 'pool-witness');

describe('a receipt that never reached the overlay is given again', () => {
  it('published to no peer: given again (the same bytes) when the steward republishes the head, then no more often than RECEIPT_REPUBLISH_MS', async () => {
    const s = stewardChain(2);
    await rig(new Map([[s.did, s.chain]]), async ({ role, onHead, net, published, calls, clock }) => {
      net.recipients = 0;
      onHead(head(s.chain[1]!));
      await role.settled();
      assert.equal(receipts(published).length, 1, 'cosigned, published to nobody');
      const first = receipts(published)[0]!.bytes;
      net.recipients = 3;
      clock.advance(W.RECEIPT_RETRY_MS);
      onHead(head(s.chain[1]!)); // the steward republishes: it has no receipt
      await role.settled();
      assert.equal(receipts(published).length, 2, 'the receipt is given again');
      assert.deepEqual(receipts(published)[1]!.bytes, first, 'the same receipt, not a new one');
      onHead(head(s.chain[1]!));
      await role.settled();
      assert.equal(receipts(published).length, 2, 'it reached peers: not again at every republication');
      clock.advance(W.RECEIPT_REPUBLISH_MS);
      onHead(head(s.chain[1]!));
      await role.settled();
      assert.equal(receipts(published).length, 3, 'the steward still asks after a while: given again');
      assert.equal(calls.length, 1, 'nothing fetched for it');
    });
  });

  it('killed between the synced write and the publish: after a restart the kept receipt is published, at the start catch-up and on the republished head', async () => {
    const s = stewardChain(2);
    await rig(new Map([[s.did, s.chain]]), async ({ me, db, published, restart, onHead, clock }) => {
      // what the witness wrote before it was killed: the head held, no receipt ever published
      const kept = await new Witness(db, me, { now: fakeClock(500) }).cosign(s.did, s.chain.map((e) => e.bytes));
      let role = await restart({ startCatchUpMs: [0] });
      for (let i = 0; i < 200 && !receipts(published).length; i++) await new Promise((r) => setTimeout(r, 10));
      await role.settled();
      assert.deepEqual(receipts(published).map((p) => p.bytes), [kept.bytes], 'the start catch-up finds nothing new, and gives the kept receipt');
      // and without a start catch-up (the steward not reached then): the republished head gets it
      role = await restart({ startCatchUpMs: [] });
      clock.advance(1);
      onHead(head(s.chain[1]!));
      await role.settled();
      assert.equal(receipts(published).length, 2);
      assert.deepEqual(receipts(published)[1]!.bytes, kept.bytes);
    });
  });
});

describe('what the witness publishes stays under its neighbours\' flood limits', () => {
  it('many held stewards re-announcing their heads at once: the receipts given again are paced (RECEIPT_PACE), the rest at a later republication', async () => {
    const K = 200;
    const stewards = Array.from({ length: K }, () => stewardChain(1));
    await rig(new Map(stewards.map((s) => [s.did, s.chain])), async ({ me, db, published, restart, onHead, clock }) => {
      const w = new Witness(db, me, { now: fakeClock(500) });
      for (const s of stewards) await w.cosign(s.did, [s.chain[0]!.bytes]);
      const role = await restart({ startCatchUpMs: [], evidenceGossipMs: [1e9, 1e9] });
      for (const s of stewards) onHead(head(s.chain[0]!));
      await role.settled();
      const burst = receipts(published).length;
      assert.ok(burst <= W.RECEIPT_PACE.burst, `${burst} receipts published at once (neighbours admit ${W.RECEIPT_PACE.burst * 2})`);
      assert.ok(burst >= W.RECEIPT_PACE.burst - 1, `${burst}: the bucket is used`);
      assert.ok(W.RECEIPT_PACE.ratePerSec * 2 <= 20 && W.EVIDENCE_PACE.ratePerSec * 2 <= 1 && W.EVIDENCE_PACE.burst * 2 <= 10);
      // the others are given when they ask again, at the pace
      clock.advance(10_000);
      for (const s of stewards) onHead(head(s.chain[0]!));
      await role.settled();
      const more = receipts(published).length - burst;
      assert.ok(more > 0 && more <= W.RECEIPT_PACE.burst, `${more} more`);
    });
  });

  it('an evidence gossip round publishes at most EVIDENCE_PACE.burst at once, the rest spread', async () => {
    const caught = Array.from({ length: 20 }, () => stewardChain(2));
    await rig(new Map(), async ({ me, db, published, restart }) => {
      const w = new Witness(db, me, { now: fakeClock(500) });
      for (const s of caught) {
        await w.cosign(s.did, s.chain.map((e) => e.bytes));
        const other = sealEntries([admitted('other')], s.signer, { start: { length: 1, head: s.chain[0]!.address } })[0]!;
        assert.ok(await w.keep(s.did, s.chain[1]!.bytes, other.bytes));
      }
      await restart({ startCatchUpMs: [], evidenceGossipMs: [0, 1e9] });
      await new Promise((r) => setTimeout(r, 300)); // the fake clock stands still: no token comes back
      const evidence = published.filter((p) => p.kind === 'pool-evidence').length;
      assert.ok(evidence > 0 && evidence <= W.EVIDENCE_PACE.burst, `${evidence} evidence records published at once`);
    });
  });
});

describe('a caught steward after a restart', () => {
  it('a pair kept by a build that kept no record with it: sealed once and kept, the same record on every read and round', async () => {
    const s = stewardChain(2);
    const other = sealEntries([admitted('other')], s.signer, { start: { length: 1, head: s.chain[0]!.address } })[0]!;
    await rig(new Map(), async ({ me, db, published, restart, clock }) => {
      // as the previous build stored it: the two entries, no record
      await sub(db, 'witness-evidence').put(`${s.did}/1/${other.address}`, encodeCanonical({ a: s.chain[1]!.bytes, b: other.bytes }));
      const role = await restart({ startCatchUpMs: [], evidenceGossipMs: [0, 20] });
      const first = (await role.evidenceOf(s.did)).evidence[0]!.record;
      clock.advance(1_000);
      assert.equal((await role.evidenceOf(s.did)).evidence[0]!.record, first, 'the same record on a second read');
      for (let i = 0; i < 200 && published.filter((p) => p.kind === 'pool-evidence').length < 3; i++) await new Promise((r) => setTimeout(r, 10));
      const rounds = published.filter((p) => p.kind === 'pool-evidence').map((p) => Buffer.from(p.bytes).toString('base64'));
      assert.ok(rounds.length >= 3);
      assert.deepEqual(new Set(rounds), new Set([first]), 'each round the same record');
      // kept: a new Witness over the store reads it back
      assert.equal(Buffer.from((await new Witness(db, me, { now: fakeClock(9e12) }).evidence(s.did))[0]!.record).toString('base64'), first);
    });
  });

  it('GET /v1/witness still shows its held head and evidence; the pair reads back as signed records; it is gossiped again, the same record', async () => {
    const s = stewardChain(2);
    const honest = stewardChain(1);
    // the steward signed another entry at seq 1
    const other = sealEntries([admitted('other')], s.signer, { start: { length: 1, head: s.chain[0]!.address } })[0]!;
    await rig(new Map([[s.did, s.chain]]), async ({ me, db, published, restart }) => {
      const w = new Witness(db, me, { now: fakeClock(500) });
      await w.cosign(s.did, s.chain.map((e) => e.bytes));
      await w.cosign(honest.did, [honest.chain[0]!.bytes]);
      const kept = await w.keep(s.did, s.chain[1]!.bytes, other.bytes);
      assert.ok(kept, 'kept: a steward held');
      // restarted, the caught steward gone: nothing happens on the overlay
      const role = await restart({ startCatchUpMs: [], evidenceGossipMs: [0, 40] });
      const st = (await role.status()) as { stewards: Record<string, unknown> };
      assert.deepEqual(st.stewards[s.did], { held: { length: 2, head: s.chain[1]!.address }, evidence: 1 });
      assert.deepEqual(st.stewards[honest.did], { held: { length: 1, head: honest.chain[0]!.address }, evidence: 0 });
      const ev = await role.evidenceOf(s.did);
      assert.equal(ev.evidence.length, 1);
      const e = ev.evidence[0]!;
      assert.deepEqual([e.seq, e.form, e.a, e.b], [1, 'same-seq', Buffer.from(s.chain[1]!.bytes).toString('base64'), Buffer.from(other.bytes).toString('base64')]);
      // the record is the witness's pool-evidence/1, checked in full on open (the two entries prove it)
      const rec = open(new Uint8Array(Buffer.from(e.record, 'base64')), EVIDENCE_TYPE) as Opened<EquivocationEvidence>;
      assert.equal(rec.signer, didFromPublicKey(me.publicKey));
      assert.deepEqual([rec.record.steward, rec.record.seq], [s.did, 1]);
      assert.deepEqual((await role.evidenceOf(honest.did)).evidence, []);
      // gossiped again after start, and again each period: the very record kept (nodes drop it as a duplicate)
      for (let i = 0; i < 200 && published.filter((p) => p.kind === 'pool-evidence').length < 2; i++) await new Promise((r) => setTimeout(r, 10));
      const gossiped = published.filter((p) => p.kind === 'pool-evidence');
      assert.ok(gossiped.length >= 2, 'at start and again');
      for (const g of gossiped) assert.deepEqual(g.bytes, kept.record);
      assert.deepEqual(new Uint8Array(Buffer.from(e.record, 'base64')), kept.record);
    });
  });
});

describe('a steward that never answers', () => {
  it('does not hold the witness’s stop: the fetch in flight is aborted', async () => {
    const s = stewardChain(2);
    await rig(new Map([[s.did, s.chain]]), async ({ role, onHead, net, calls, warnings }) => {
      net.silent.add(s.did);
      onHead(head(s.chain[1]!));
      for (let i = 0; i < 200 && !calls.length; i++) await new Promise((r) => setTimeout(r, 10));
      const t0 = Date.now();
      await role.stop();
      assert.ok(Date.now() - t0 < 2_000, `stop took ${Date.now() - t0} ms (the fetch deadline is 30 s)`);
      assert.deepEqual(warnings.filter((w) => w.includes('catch-up failed')), [], 'an abort at stop is no failure to warn about');
    });
  });

  it('a head whose fetch timed out is held back, with a growing wait, and shown in the status', async () => {
    const s = stewardChain(3);
    await rig(new Map([[s.did, s.chain]]), async ({ role, onHead, net, calls, clock }) => {
      onHead(head(s.chain[0]!));
      await role.settled();
      assert.equal((await role.witness.held(s.did)).length, 1);
      net.timeouts.add(s.did);
      onHead(head(s.chain[1]!));
      await role.settled();
      assert.equal(calls.length, 2);
      const last = ((await role.status()) as { stewards: Record<string, { last?: { refused?: string; head?: string } }> }).stewards[s.did]?.last;
      assert.deepEqual([last?.refused, last?.head], ['NET_DEADLINE', s.chain[1]!.address]);
      onHead(head(s.chain[1]!)); // announced again at once: not fetched again
      await role.settled();
      assert.equal(calls.length, 2);
      clock.advance(W.UNREACHED_RETRY_MS);
      onHead(head(s.chain[1]!));
      await role.settled();
      assert.equal(calls.length, 3, 'after the wait it is tried again');
      clock.advance(W.UNREACHED_RETRY_MS);
      onHead(head(s.chain[1]!));
      await role.settled();
      assert.equal(calls.length, 3, 'failed twice: the wait doubled');
      clock.advance(W.UNREACHED_RETRY_MS);
      net.timeouts.delete(s.did);
      onHead(head(s.chain[1]!));
      await role.settled();
      assert.equal(calls.length, 4);
      assert.equal((await role.witness.held(s.did)).length, 2, 'answering again, it is cosigned');
    }, { stewards: [s.did], startCatchUpMs: [] });
  });

  it('the hold-back is measured on the monotonic clock: a wall clock stepped back 10 min does not stretch it, nor one stepped forward cut it', async () => {
    const s = stewardChain(3);
    await rig(new Map([[s.did, s.chain]]), async ({ role, onHead, net, calls, clock, stepWall }) => {
      onHead(head(s.chain[0]!));
      await role.settled();
      assert.equal((await role.witness.held(s.did)).length, 1);
      net.timeouts.add(s.did);
      onHead(head(s.chain[1]!));
      await role.settled();
      assert.equal(calls.length, 2);
      stepWall(+10 * 60_000); // forward: the hold-back is not over for it
      onHead(head(s.chain[1]!));
      await role.settled();
      assert.equal(calls.length, 2, 'a wall clock stepped forward does not end the hold-back');
      stepWall(-20 * 60_000); // then 10 min behind where it began
      clock.advance(W.UNREACHED_RETRY_MS);
      net.timeouts.delete(s.did);
      onHead(head(s.chain[1]!));
      await role.settled();
      assert.equal(calls.length, 3, 'after the hold-back (30 s on the monotonic clock) it is fetched again, the wall clock 10 min back notwithstanding');
    }, { stewards: [s.did], startCatchUpMs: [] });
  });
});

describe('a head held back while the steward was cut off', () => {
  // Gossip delivers a message once: the steward's republications of the same head are the same message, dropped as a
  // duplicate by the witness's own pipeline before the role sees them. So the role must retry a held-back head itself.
  it('the fetch failed, then the steward is reachable again and announces nothing new: cosigned once the hold-back ends', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const s = stewardChain(3);
    await rig(new Map([[s.did, s.chain]]), async ({ role, onHead, net, calls, clock, published }) => {
      onHead(head(s.chain[0]!));
      await role.settled();
      assert.equal((await role.witness.held(s.did)).length, 1);
      net.unreachable.add(s.did); // the partition: the head is heard through other members, the steward is not reached
      onHead(head(s.chain[2]!));
      await role.settled();
      assert.equal(calls.length, 2);
      assert.equal((await role.witness.held(s.did)).length, 1, 'held back');
      net.unreachable.delete(s.did); // healed; its republications are duplicates nobody delivers
      clock.advance(W.UNREACHED_RETRY_MS - 1);
      t.mock.timers.tick(W.UNREACHED_RETRY_MS - 1);
      await role.settled();
      assert.equal(calls.length, 2, 'not before the hold-back ends');
      clock.advance(1);
      t.mock.timers.tick(1);
      await role.settled();
      assert.equal(calls.length, 3, 'retried by itself when the hold-back ends');
      assert.equal((await role.witness.held(s.did)).length, 3, 'the head heard is cosigned');
      assert.equal(receipts(published).length, 2);
      const last = ((await role.status()) as { stewards: Record<string, { last?: { length?: number } }> }).stewards[s.did]?.last;
      assert.equal(last?.length, 3);
      clock.advance(W.REFUSED_HEAD_MS * 3);
      t.mock.timers.tick(W.REFUSED_HEAD_MS * 3);
      await role.settled();
      assert.equal(calls.length, 3, 'covered: no further retry');
    }, { stewards: [s.did], startCatchUpMs: [] });
  });

  it('a cosign this node could not store (its disk full: STORE_WRITE_FAILED) is tried again on the short backoff, not after REFUSED_HEAD_MS', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const s = stewardChain(3);
    await rig(new Map([[s.did, s.chain]]), async ({ role, onHead, calls, clock }) => {
      onHead(head(s.chain[0]!));
      await role.settled();
      assert.equal((await role.witness.held(s.did)).length, 1);
      const cosign = role.witness.cosign.bind(role.witness);
      role.witness.cosign = async () => {
        throw new C0Error('STORE_WRITE_FAILED', 'IO error: No space left on device');
      };
      onHead(head(s.chain[2]!));
      await role.settled();
      assert.equal(calls.length, 2);
      role.witness.cosign = cosign; // space came back; the store reopened
      clock.advance(W.UNREACHED_RETRY_MS);
      t.mock.timers.tick(W.UNREACHED_RETRY_MS);
      await role.settled();
      assert.equal(calls.length, 3, 'fetched again when the short hold-back ended');
      assert.equal((await role.witness.held(s.did)).length, 3, 'cosigned');
    }, { stewards: [s.did], startCatchUpMs: [] });
  });

  it('a steward that stays unreachable is retried on the doubling backoff only (at most one a REFUSED_HEAD_MS), never after a receipt covers the head or after stop', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const s = stewardChain(4);
    await rig(new Map([[s.did, s.chain]]), async ({ role, onHead, net, calls, clock, restart }) => {
      onHead(head(s.chain[0]!));
      await role.settled();
      net.unreachable.add(s.did);
      const t0 = clock();
      onHead(head(s.chain[1]!));
      await role.settled();
      const at: number[] = [];
      const step = 5_000;
      for (let ms = 0; ms < 40 * 60_000; ms += step) {
        const n = calls.length;
        clock.advance(step);
        t.mock.timers.tick(step);
        await role.settled();
        for (let i = n; i < calls.length; i++) at.push((clock() - t0) / 1000);
      }
      // 30 s, then 60, 120, 240, 480 s after each failure, then every 10 minutes
      assert.deepEqual(at, [30, 90, 210, 450, 930, 1530, 2130]);
      // a newer head, with the steward reachable again: cosigned; the held-back one's retry is gone with it
      net.unreachable.delete(s.did);
      onHead(head(s.chain[2]!));
      await role.settled();
      assert.equal((await role.witness.held(s.did)).length, 3);
      const n = calls.length;
      clock.advance(W.REFUSED_HEAD_MS * 2);
      t.mock.timers.tick(W.REFUSED_HEAD_MS * 2);
      await role.settled();
      assert.equal(calls.length, n, 'nothing retried once covered');
      // held back again, then stopped: no retry fires after stop
      net.unreachable.add(s.did);
      onHead(head(s.chain[3]!));
      await role.settled();
      const m = calls.length;
      const again = await restart();
      clock.advance(W.REFUSED_HEAD_MS * 2);
      t.mock.timers.tick(W.REFUSED_HEAD_MS * 2);
      await again.settled();
      assert.equal(calls.length, m, 'the stopped role retries nothing (the restarted one has no start catch-up here)');
    }, { stewards: [s.did], startCatchUpMs: [] });
  });

  it('a retry that settles nothing (the steward, reachable again, answers with no entries) is not retried in a loop', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const s = stewardChain(3);
    const served = [...s.chain];
    await rig(new Map([[s.did, served]]), async ({ role, onHead, net, calls, clock }) => {
      onHead(head(s.chain[0]!));
      await role.settled();
      net.unreachable.add(s.did);
      onHead(head(s.chain[2]!));
      await role.settled();
      assert.equal(calls.length, 2);
      net.unreachable.delete(s.did);
      served.length = 0; // it serves nothing (a ledger rolled back, or a hostile steward that announced a head it does not serve)
      for (let ms = 0; ms < 60_000; ms += 1_000) {
        clock.advance(1_000);
        t.mock.timers.tick(1_000);
        await role.settled();
      }
      assert.equal(calls.length, 3, `one retry when the hold-back ended, then none until the head is announced again (${calls.length} fetches)`);
    }, { stewards: [s.did], startCatchUpMs: [] });
  });
});

describe('heads from throwaway keys nobody can reach', () => {
  it('cost a bounded number of dials and log lines, are not dialled again when announced again, and are counted in the status', async () => {
    const keys = Array.from({ length: 300 }, () => stewardChain(1));
    await rig(new Map(), async ({ role, onHead, net, calls, warnings, clock }) => {
      for (const k of keys) net.unreachable.add(k.did);
      for (let round = 0; round < 3; round++) {
        for (const k of keys) onHead(head(k.chain[0]!));
        await role.settled();
        clock.advance(1_000);
      }
      const dialled = new Set(calls.map((c) => c.steward));
      // per burst: those started at once, and those left waiting (drawn at random as places free)
      assert.ok(calls.length <= 3 * (W.MAX_STRANGER_CATCHUPS + W.MAX_STRANGER_WAITING), `${calls.length} dials for 900 heads`);
      assert.equal(dialled.size, calls.length, 'no key dialled twice');
      assert.ok(warnings.filter((w) => w.startsWith('witness catch-up failed')).length <= 1, 'not one warning per key');
      const st = (await role.status()) as { strangers: { heldBack: number; unreached: number; waiting: number; ignored: number } };
      const { heldBack, unreached, waiting, ignored } = st.strangers;
      assert.deepEqual([heldBack, unreached], [calls.length, calls.length]);
      assert.ok(waiting <= W.MAX_STRANGER_WAITING);
      // each head dialled, waiting, or dropped and counted (a head of a key already waiting takes its place)
      assert.ok(ignored <= 900 - calls.length - waiting && ignored >= 900 - calls.length - 3 * W.MAX_STRANGER_WAITING, `${ignored} ignored`);
      // a burst spread over time is still bounded by the dials a minute
      for (const k of keys) {
        onHead(head(k.chain[0]!));
        await role.settled();
      }
      assert.ok(calls.length <= W.STRANGER_DIALS_PER_MINUTE + 3 * (W.MAX_STRANGER_CATCHUPS + W.MAX_STRANGER_WAITING), `${calls.length} dials`);
    });
  });

  it('a flood of them (10 heads/s, each a fresh key) does not shut out a new honest steward that republishes its head every 30 s', async () => {
    const honest = stewardChain(1);
    await rig(new Map([[honest.did, honest.chain]]), async ({ role, onHead, net, calls, clock }) => {
      const spin = async () => {
        for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
      };
      let republished = 0;
      for (let tick = 0; tick < 10 * 600 && (await role.witness.held(honest.did)).length === 0; tick++) {
        clock.advance(100);
        const k = stewardChain(1); // a throwaway key: one signature, no reachable node
        net.unreachable.add(k.did);
        onHead(head(k.chain[0]!));
        if (tick % 300 === 150) {
          onHead(head(honest.chain[0]!)); // the steward republishes its head every 30 s
          republished++;
        }
        await spin();
      }
      const flooded = calls.filter((c) => c.steward !== honest.did).length;
      assert.equal((await role.witness.held(honest.did)).length, 1, `not taken on after ${republished} republications (${flooded} flood dials)`);
      assert.ok(republished <= 3, `taken on after ${republished} republications`);
    });
  });
});
